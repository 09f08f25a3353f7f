"""The peak resident memory of a process while a benchmark runs."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import psutil

CHILD_LIST_EVERY = 25
"""Samples between two listings of the children (listing them reads all of ``/proc``)."""


class PeakRss:
    """The peak resident memory of the process `pid` (this one by default) and its children
    while the block runs; `start` is the reading when it was made (`own_start` and
    `own_peak`: the process alone).

    On Linux the process's own peak is the kernel's high-water mark (``VmHWM``), reset when
    the block starts by writing 5 to ``/proc/PID/clear_refs``: exact, and free while the
    benchmark runs. Elsewhere, and for the children, a background thread samples every
    `every` seconds (a sampler that lists the children every millisecond takes a core of its
    own and slows what it measures).
    """

    def __init__(self, pid: int | None = None, every: float = 0.02) -> None:
        self.process = psutil.Process(os.getpid() if pid is None else pid)
        self.every = every
        self.start = self.peak = self.current()
        self.own_start = self.process.memory_info().rss  # the process alone, no children
        self.own_peak = self.process.memory_info().rss
        self._children_peak = 0
        self._kernel_peak = False
        self._marks = Path(f"/proc/{self.process.pid}")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def current(self) -> int:
        processes = [self.process, *self.process.children(recursive=True)]
        return sum(process.memory_info().rss for process in processes)

    def _high_water_mark(self) -> int | None:
        try:
            for line in (self._marks / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def _reset_high_water_mark(self) -> bool:
        try:
            (self._marks / "clear_refs").write_text("5")
        except OSError:
            return False
        return self._high_water_mark() is not None

    def _run(self) -> None:
        children: list[psutil.Process] = []
        samples = 0
        while not self._stop.wait(self.every):
            if samples % CHILD_LIST_EVERY == 0:
                children = self.process.children(recursive=True)
            samples += 1
            total = 0
            for child in children:
                with contextlib.suppress(psutil.Error):  # it ended since the listing
                    total += child.memory_info().rss
            self._children_peak = max(self._children_peak, total)
            if not self._kernel_peak:
                self.own_peak = max(self.own_peak, self.process.memory_info().rss)
            self.peak = self.own_peak + self._children_peak

    def __enter__(self) -> PeakRss:
        self._kernel_peak = self._reset_high_water_mark()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._kernel_peak:
            self.own_peak = max(self.own_peak, self._high_water_mark() or 0)
        self.peak = max(self.start, self.own_peak + self._children_peak)
