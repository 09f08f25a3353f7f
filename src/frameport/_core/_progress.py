"""Progress bars for long reads, exports, uploads and downloads (tqdm.auto).

`progress=None` means "on, unless FRAMEPORT_PROGRESS=0", and the bar appears only once the
work has taken `DELAY` seconds, so quick operations print nothing; `progress=True` shows it
at once; `progress=False` turns a bar off.

A total that is unknown or capped (the service caps `total` at 5000) is passed as None, so
the bar counts without pretending to know the end.

>>> with progress_bar(total=None, unit="rows", desc="people", enabled=None) as bar:
...     bar.update(5000)
"""

from __future__ import annotations

import os
import time
from typing import Any

from tqdm.auto import tqdm

#: Seconds an operation runs before its bar appears, unless asked for with progress=True.
DELAY = 0.5


class DelayedBar(tqdm):  # type: ignore[type-arg]  # generic in the stubs only
    """A tqdm bar whose forced refreshes (a new total, a postfix) wait for `delay` too:
    tqdm's own `refresh` draws at once, which would show a quick operation's bar anyway."""

    _show_from = 0.0  # bars without a delay draw from the start (also inside tqdm.__init__)
    _drawn = False

    def __init__(self, *, delay: float = 0.0, **options: Any) -> None:
        super().__init__(delay=delay, **options)
        self._show_from = time.time() + delay

    def refresh(self, nolock: bool = False, lock_args: Any = None) -> None:
        if self.disable or time.time() < self._show_from:
            return  # the first update after the delay draws the bar, changes included
        self._drawn = True
        super().refresh(nolock, lock_args)

    def close(self) -> None:
        if self._drawn and not self.disable:
            # tqdm clears only bars it drew in `update`; make it clear one drawn by `refresh`
            self.last_print_t = max(self.last_print_t, self._show_from)
        super().close()


def progress_enabled(progress: bool | None) -> bool:
    """Resolve a `progress=` argument against FRAMEPORT_PROGRESS."""
    if progress is not None:
        return progress
    return os.environ.get("FRAMEPORT_PROGRESS", "1").strip().lower() not in ("0", "false", "no")


def progress_bar(
    *, total: float | None, unit: str, desc: str, enabled: bool | None, **options: Any
) -> tqdm[Any]:
    """A tqdm bar (disabled when progress is off; shown after `DELAY` seconds unless
    `enabled` is True); bytes bars scale with binary prefixes."""
    if unit == "B":
        options.setdefault("unit_scale", True)
        options.setdefault("unit_divisor", 1024)
    return DelayedBar(
        total=total,
        unit=unit,
        desc=desc,
        disable=not progress_enabled(enabled),
        leave=False,
        dynamic_ncols=True,
        delay=0.0 if enabled is True else DELAY,
        **options,
    )
