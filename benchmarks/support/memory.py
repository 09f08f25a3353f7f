"""The peak resident memory of a process while a benchmark runs."""

from __future__ import annotations

import os
import threading

import psutil


class PeakRss:
    """Samples the resident memory of the process `pid` (this one by default) and its
    children in a background thread; `start` is the reading when it was made."""

    def __init__(self, pid: int | None = None, every: float = 0.02) -> None:
        self.process = psutil.Process(os.getpid() if pid is None else pid)
        self.every = every
        self.start = self.peak = self.current()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def current(self) -> int:
        processes = [self.process, *self.process.children(recursive=True)]
        return sum(process.memory_info().rss for process in processes)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self.current())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
