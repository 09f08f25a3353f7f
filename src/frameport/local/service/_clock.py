"""The service's clock: the time rows and transactions are stamped and expire by.

It is the system clock, plus an offset a test can move forward (`LocalService.advance_clock`)
to see a transaction expire without waiting for it.
"""

from __future__ import annotations

import time

from ..wire._timefmt import from_timestamp


class ServiceClock:
    """Seconds since the epoch, and the same instant in the service's time format."""

    def __init__(self) -> None:
        self._offset = 0.0

    def now(self) -> float:
        return time.time() + self._offset

    def text(self) -> str:
        """Now as `2020-10-15T06:38:00.000+00:00`."""
        return from_timestamp(self.now())

    def advance(self, seconds: float) -> None:
        """Move the clock `seconds` forward (never back: stamps already given stay past)."""
        if seconds < 0:
            raise ValueError("the service's clock only moves forward: give seconds >= 0")
        self._offset += seconds
