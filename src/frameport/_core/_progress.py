"""Progress bars for long reads, exports, uploads, downloads, writes and column waits (tqdm).

`progress=None` means "on, unless FRAMEPORT_PROGRESS=0", and the bar appears only once the
work has taken `DELAY` seconds, so quick operations print nothing; `progress=True` shows it
at once; `progress=False` turns a bar off.

A bar without a known total only counts; a finished bar stays. `tqdm.auto` draws it: a widget
in a notebook, a line redrawn in place in a terminal, and, in a file or a pipe (a log, CI), a
new line every `LINE_INTERVAL` seconds.

>>> with progress_bar(total=None, unit="rows", desc="people", enabled=None) as bar:
...     bar.update(5000)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from tqdm.auto import tqdm
from tqdm.autonotebook import tqdm as chosen_tqdm
from tqdm.std import tqdm as std_tqdm

#: Seconds an operation runs before its bar appears, unless asked for with progress=True.
DELAY = 0.5
#: Seconds between two lines of a bar written to a file or a pipe rather than a terminal.
LINE_INTERVAL = 5.0

_IN_NOTEBOOK = chosen_tqdm is not std_tqdm  # tqdm.auto chose its notebook widget


class DelayedBar(tqdm):  # type: ignore[type-arg]  # generic in the stubs only
    """A tqdm bar whose forced refreshes (a new total, a postfix) wait for `delay` too:
    tqdm's own `refresh` draws at once, which would show a quick operation's bar anyway."""

    _show_from = 0.0  # bars without a delay draw from the start (also inside tqdm.__init__)

    def __init__(self, *, delay: float = 0.0, **options: Any) -> None:
        super().__init__(delay=delay, **options)
        self._show_from = time.time() + delay

    def refresh(self, nolock: bool = False, lock_args: Any = None) -> None:
        if self.disable or time.time() < self._show_from:
            return  # the first update after the delay draws the bar, changes included
        super().refresh(nolock, lock_args)

    def close(self) -> None:
        if not self.disable and time.time() >= self._show_from:
            # tqdm leaves a bar only if `update` drew it; one drawn by `refresh` counts too
            self.last_print_t = max(self.last_print_t, self._show_from)
        super().close()


class LineBar(DelayedBar):
    """A bar for a file or a pipe: each state it shows is a line of its own (no carriage
    return redraws the previous one), at most one every `LINE_INTERVAL` seconds, and the
    final state when the work ends."""

    _lines = 0
    _shown: tuple[object, ...] | None = None  # what the last line showed

    def status_printer(self, file: IO[str]) -> Callable[[str], None]:  # type: ignore[override]
        def print_line(text: str) -> None:
            state = (self.n, self.total, self.postfix)  # the count, the total, the label
            if not text or state == self._shown:  # a clear, or no news: a line stays
                return
            file.write(("\n" if self._lines else "") + text)  # tqdm ends the last one
            file.flush()
            self._lines += 1
            self._shown = state

        return print_line


UPPER_BOUND = "total is an upper bound"
"""The label of a bar whose total is an upper bound of the work (some may not come)."""


def set_total(bar: std_tqdm[Any], total: float, *, upper_bound: bool = False) -> None:
    """Give `bar` the total it learned, an upper bound labelled as such; the bar then shows a
    percentage and a time left (a notebook's widget bar too, whose scale is set here)."""
    bar.total = total
    container = getattr(bar, "container", None)  # tqdm.notebook's widgets
    if container is not None and not bar.disable:
        widget = container.children[1]
        widget.max, widget.bar_style = max(total, 1), ""
        widget.layout.width = None
    bar.set_postfix_str(UPPER_BOUND if upper_bound else "", refresh=True)


def finish(bar: std_tqdm[Any]) -> None:
    """The work ended as it should: what `bar` counted is its total."""
    if bar.total != bar.n or bar.postfix:
        set_total(bar, bar.n)


def progress_enabled(progress: bool | None) -> bool:
    """Resolve a `progress=` argument against FRAMEPORT_PROGRESS."""
    if progress is not None:
        return progress
    return os.environ.get("FRAMEPORT_PROGRESS", "1").strip().lower() not in ("0", "false", "no")


def progress_bar(
    *, total: float | None, unit: str, desc: str, enabled: bool | None, **options: Any
) -> tqdm[Any]:
    """A tqdm bar (disabled when progress is off; shown after `DELAY` seconds unless
    `enabled` is True) that stays in its final state; bytes bars scale with binary
    prefixes."""
    if unit == "B":
        options.setdefault("unit_scale", True)
        options.setdefault("unit_divisor", 1024)
    bar = DelayedBar
    isatty = getattr(options.get("file") or sys.stderr, "isatty", None)
    if not _IN_NOTEBOOK and not (isatty is not None and isatty()):
        bar = LineBar
        options.setdefault("mininterval", LINE_INTERVAL)
    return bar(
        total=total,
        unit=unit,
        desc=desc,
        disable=not progress_enabled(enabled),
        leave=True,
        dynamic_ncols=True,
        delay=0.0 if enabled is True else DELAY,
        **options,
    )
