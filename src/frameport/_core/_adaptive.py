"""How much to keep in flight: concurrency chosen from what the transfer itself shows.

A read hands pages from the network to a decoder; an upload hands parts from a reader (which
hashes them) to the network. Each unit (a page, a part) has a *wait*, the time it spends on
the network (the request sent, the answer in), and *work*, the time the client's own CPU
spends on it (decoding, reading and hashing). One unit in flight keeps the CPU busy when
the wait is no longer than the work; a service far away needs about ``wait / work`` of them.
`AdaptiveConcurrency` keeps that estimate:

* **target** — ``ceil(HEADROOM × fastest wait / typical work)``: the fastest wait is the
  round trip without queueing (the distance), the typical work a moving average;
* **queueing** — ``limit × (1 − fastest wait / recent wait)`` units wait at the service (as
  TCP Vegas estimates); more than `QUEUED` means the service is the limit and more in flight
  only queues: the ceiling drops by one, at most once per window of units (the waits that
  follow still show the queue that was), and rises by one after `RECOVERY` calm waits;
* **bounds** — at most `cap`, at most what `budget` bytes hold (``budget // (largest unit ×
  units_per_slot)``), at least 1.

>>> concurrency = AdaptiveConcurrency(cap=16, budget=2**30)
>>> concurrency.waited(0.070, nbytes=1_000_000); concurrency.worked(0.017)
>>> concurrency()
6
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Literal

from ._together import cancel_and_wait

Auto = Literal["auto"]
AUTO: Auto = "auto"

Parallel = int | Auto | None
"""How a read runs: ``"auto"``, a fixed number of concurrent ranges, or None (serial)."""

HEADROOM = 1.25
"""Units in flight beyond the bare ``wait / work``, for waits that vary."""

QUEUED = 4.0
"""More units than this waiting at the service (on top of the round trip) mean it is the
limit: a few keep it busy, more only hold memory."""

RECOVERY = 4
"""Waits without queueing after which a lowered ceiling rises by one."""

SMOOTHING = 0.3
"""Weight of the newest sample in the moving averages."""


class AdaptiveConcurrency:
    """The number of units to keep in flight, re-estimated with every wait and work measured;
    starts at `start`. Thread-safe: work is often measured in a worker thread.

    `units_per_slot` is how many units one slot may hold at once (a read range buffers a few
    page bodies), for the memory `budget`.
    """

    def __init__(self, *, cap: int, budget: int, start: int = 1, units_per_slot: int = 1) -> None:
        self.pinned = False
        self.cap = cap
        self.budget = budget
        self.units_per_slot = units_per_slot
        self._limit = max(1, min(start, cap))
        self._ceiling = cap
        self._fastest_wait = math.inf
        self._recent_wait: float | None = None
        self._work: float | None = None
        self._largest_unit = 0
        self._calm = 0
        self._since_lowered = 0
        self._lock = threading.Lock()
        self.history: list[int] = [self._limit]
        """Every limit taken, in order (what `explain`-like reports and tests look at)."""

    @classmethod
    def pinned_at(cls, units: int) -> AdaptiveConcurrency:
        """A controller that keeps `units` in flight whatever it is told (a fixed number)."""
        concurrency = cls(cap=units, budget=0, start=units)
        concurrency.pinned = True
        return concurrency

    def __call__(self) -> int:
        """How many units to keep in flight now."""
        return self._limit

    def waited(self, seconds: float, *, nbytes: int = 0) -> None:
        """One unit of `nbytes` spent `seconds` on the network."""
        with self._lock:
            self._largest_unit = max(self._largest_unit, nbytes)
            self._fastest_wait = min(self._fastest_wait, seconds)
            self._recent_wait = _smoothed(self._recent_wait, seconds)
            self._since_lowered += 1
            queued = self._limit * (1 - self._fastest_wait / self._recent_wait)
            if queued > QUEUED:
                if self._since_lowered >= self._limit:
                    self._ceiling = max(1, min(self._ceiling, self._limit) - 1)
                    self._since_lowered = 0
                self._calm = 0
            else:
                self._calm += 1
                if self._calm >= RECOVERY:
                    self._ceiling = min(self.cap, self._ceiling + 1)
                    self._calm = 0
            self._update()

    def guess(self, wait: float, work: float) -> None:
        """Before any unit is measured: units will likely wait `wait` seconds and take `work`;
        as many start as that needs. The first measurements replace the guess."""
        with self._lock:
            if not self.pinned and (self._work is None or math.isinf(self._fastest_wait)):
                guessed = min(self.cap, math.ceil(HEADROOM * wait / max(work, 1e-6)))
                if guessed > self._limit:
                    self._limit = guessed
                    self.history.append(guessed)

    def worked(self, seconds: float) -> None:
        """The client's CPU spent `seconds` on one unit."""
        with self._lock:
            self._work = _smoothed(self._work, seconds)
            self._update()

    def _update(self) -> None:
        if self.pinned or self._work is None or math.isinf(self._fastest_wait):
            return
        target = math.ceil(HEADROOM * self._fastest_wait / max(self._work, 1e-6))
        limit = min(target, self._ceiling, self.cap)
        if self._largest_unit:
            limit = min(limit, self.budget // (self._largest_unit * self.units_per_slot))
        limit = max(1, limit)
        if limit != self._limit:
            self._limit = limit
            self.history.append(limit)


def check_concurrency(value: object, name: str = "concurrency", *, also: str = "") -> int | Auto:
    """`value` if it is ``"auto"`` or a whole number >= 1; else ValueError naming the argument
    `name` and what it takes (`also`: further choices, e.g. ``", None"``)."""
    if value == AUTO:
        return AUTO
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'{name} must be "auto"{also} or a whole number >= 1 (got {value!r}).')
    return value


def _smoothed(average: float | None, sample: float) -> float:
    return sample if average is None else (1 - SMOOTHING) * average + SMOOTHING * sample


class AdaptiveSlots:
    """Like `asyncio.Semaphore`, with as many slots as `window` says whenever one is wanted
    (an `AdaptiveConcurrency`): a lowered window lets the units in flight finish and holds
    new ones back.

    >>> slots = AdaptiveSlots(concurrency)
    >>> await slots.acquire(); ...; slots.release()             # doctest: +SKIP
    """

    def __init__(self, window: Callable[[], int]) -> None:
        self._window = window
        self._taken = 0
        self._freed = asyncio.Event()

    async def acquire(self) -> None:
        while self._taken >= max(1, self._window()):
            self._freed.clear()
            await self._freed.wait()
        self._taken += 1

    def release(self) -> None:
        self._taken -= 1
        self._freed.set()


class TaskWindow:
    """Jobs run as tasks, as many at once as `window` says (`AdaptiveSlots`). `start` waits
    for a slot and raises the first failure of an earlier job; `drain` waits for every job
    and raises the first failure; leaving the ``async with`` cancels the jobs still running.

    >>> async with TaskWindow(concurrency) as jobs:
    ...     for batch in batches:
    ...         await jobs.start(send(batch))
    ...     await jobs.drain()                                   # doctest: +SKIP
    """

    def __init__(self, window: Callable[[], int]) -> None:
        self._slots = AdaptiveSlots(window)
        self._tasks: set[asyncio.Task[None]] = set()
        self._failures: list[BaseException] = []

    async def start(self, job: Coroutine[Any, Any, None]) -> None:
        await self._slots.acquire()
        if self._failures:
            self._slots.release()
            job.close()
            raise self._failures[0]
        task = asyncio.ensure_future(job)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()
        if not task.cancelled() and task.exception() is not None:
            self._failures.append(task.exception())  # type: ignore[arg-type]

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.wait(set(self._tasks))
        if self._failures:
            raise self._failures[0]

    async def __aenter__(self) -> TaskWindow:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await cancel_and_wait(*self._tasks)
