"""Fixed-window rate limits and their `X-RateLimit-*` headers (service interface, "Rate limits")."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RateLimit:
    """A route's limit: `limit` requests per `period` seconds for one key.

    `key` adds the route's own key parts (e-mail, chunk index, ...) to the URL template;
    `by_ip`/`by_user`/`by_method` add those parts; `reset_on_success` clears the counter
    after a 201 (as e-mail sessions do).
    """

    limit: int
    period: int
    key: Callable[[Any], str] | None = None
    by_ip: bool = True
    by_user: bool = False
    by_method: bool = False
    reset_on_success: bool = False


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    headers: dict[str, str]
    counter_key: str


class RateLimiter:
    """In-memory fixed windows aligned to multiples of the period."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._hits: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def hit(self, counter_key: str, limit: int, period: int) -> Verdict:
        """Count one request and say whether it is within the limit."""
        now = int(self._clock())
        window = now - now % period
        with self._lock:
            hits = self._hits.get((counter_key, window), 0)
            self._hits[(counter_key, window)] = hits + 1
            if len(self._hits) > 100_000:
                self._hits = {k: v for k, v in self._hits.items() if k[1] == window}
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(limit - hits - 1, 0)),
            "X-RateLimit-Reset": str(window + period),
        }
        return Verdict(hits < limit, headers, counter_key)

    def reset(self, counter_key: str, period: int) -> None:
        now = int(self._clock())
        with self._lock:
            self._hits.pop((counter_key, now - now % period), None)
