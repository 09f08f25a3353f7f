"""What uploads and downloads share: progress reporting and the integrity check's error.

>>> with TransferProgress(10, desc="demo.bin", progress=False, on_progress=print) as done:
...     done.advance(4)
...     done.advance(6)
4 10
10 10
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack

from .._core._progress import progress_bar

#: ``on_progress(done_bytes, total_bytes)``, called as a transfer advances.
ProgressCallback = Callable[[int, int], object]


class TransferProgress(ExitStack[bool | None]):
    """Bytes moved so far, shown as a tqdm bar (unless `progress` is off) and reported to
    `on_progress`. `done` counts bytes moved before this call (a resumed transfer). Closing
    it (or leaving its ``with`` block) closes the bar."""

    def __init__(
        self,
        total: int,
        *,
        desc: str,
        progress: bool | None,
        on_progress: ProgressCallback | None,
        done: int = 0,
    ) -> None:
        super().__init__()
        self.total = total
        self.done = done
        self._on_progress = on_progress
        bar = progress_bar(total=total, unit="B", desc=desc, enabled=progress, initial=done)
        self._bar = self.enter_context(bar)

    def advance(self, amount: int) -> None:
        """Count `amount` more bytes as moved."""
        self.done += amount
        self._bar.update(amount)
        if self._on_progress is not None:
            self._on_progress(self.done, self.total)
