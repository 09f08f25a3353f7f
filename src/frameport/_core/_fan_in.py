"""Fan-in in order: several sources running at once, their items handed on source by source.

>>> slots_and_reads = [(Slot(), read(part)) for part in parts]    # doctest: +SKIP
>>> async for batch in in_order(slots_and_reads, window=4): ...    # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import collections
import functools
from collections.abc import AsyncGenerator, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from ._together import cancel_and_wait

T = TypeVar("T")

ITEMS_AHEAD = 2
"""Items a source may have waiting for the consumer (unless `keep_all`) before it pauses, so
memory holds a few items per running source. Two, so that a range of several pages fetches
its next page while the consumer takes the one before: a stream keeps a collecting read's
pace."""


class Slot:
    """A source's place among the sources `in_order` runs at once. The source calls
    `release` once its requests are done while its last items are still coming (being
    decoded, say), so that the next source may start."""

    def __init__(self) -> None:
        self._give_up: Callable[[], None] | None = None

    def release(self) -> None:
        """Give up the place (once running; later calls change nothing)."""
        if self._give_up is not None:
            give_up, self._give_up = self._give_up, None
            give_up()


Source = tuple[Slot, AsyncGenerator[T, None]]
"""A source of `in_order`: its slot and its items (a generator not started yet)."""


@dataclass(frozen=True)
class _Event:
    """What a source did: made an item (`value`), ended, released its slot, or failed (its
    error the `value`)."""

    kind: Literal["item", "done", "released", "failed"]
    source: int
    value: Any = None


async def in_order(
    sources: Iterable[Source[T]],
    window: int | Callable[[], int],
    *,
    keep_all: bool = False,
) -> AsyncGenerator[T, None]:
    """Every item of every source, source after source; the items of sources ahead of the
    current one wait in memory. Sources start within `window` (asked again whenever one could
    start) of the current one, each pausing with `ITEMS_AHEAD` items waiting. With `keep_all`
    (the caller keeps every item anyway) a source starts whenever fewer than `window` run
    (released slots not counted) and never pauses, so one slow source holds no other back.
    `sources` is drawn from as they start. A failure in a running source is raised at once;
    leaving early cancels those running.
    """
    events: asyncio.Queue[_Event] = asyncio.Queue()
    waiting: dict[int, collections.deque[T]] = {}
    finished: set[int] = set()
    released: set[int] = set()
    running: dict[int, asyncio.Task[None]] = {}
    room: dict[int, asyncio.Semaphore] = {}  # per source: items it may still put (not keep_all)
    pending = iter(sources)
    exhausted = False
    started = 0

    def width() -> int:
        return max(1, window() if callable(window) else window)

    def may_start(current: int) -> bool:
        if keep_all:  # finished ones wait in `running`
            return len(running) - len(finished | released) < width()
        return started < current + width()

    def start_up_to(current: int) -> None:
        nonlocal started, exhausted
        while not exhausted and may_start(current):
            source = next(pending, None)
            if source is None:
                exhausted = True
                return
            slot, items = source
            waiting[started] = collections.deque()
            slot._give_up = functools.partial(events.put_nowait, _Event("released", started))
            limit = None if keep_all else asyncio.Semaphore(ITEMS_AHEAD)
            if limit is not None:
                room[started] = limit
            running[started] = asyncio.create_task(_run_source(started, items, events, limit))
            started += 1

    try:
        current = 0
        while True:
            start_up_to(current)
            if current >= started:
                return
            queued = waiting[current]
            if queued:
                item = queued.popleft()
                if current in room:
                    room[current].release()
                yield item
                continue
            if current in finished:
                del waiting[current]
                room.pop(current, None)
                running.pop(current, None)
                finished.discard(current)
                released.discard(current)
                current += 1
                continue
            event = await events.get()
            if event.kind == "failed":
                raise event.value
            if event.kind == "done":
                finished.add(event.source)
            elif event.kind == "released":
                if event.source in running:
                    released.add(event.source)
            else:
                waiting[event.source].append(event.value)
    finally:
        await cancel_and_wait(*running.values())


async def _run_source(
    index: int,
    items: AsyncGenerator[Any, None],
    events: asyncio.Queue[_Event],
    room: asyncio.Semaphore | None,
) -> None:
    try:
        async with aclosing(items):
            async for item in items:
                if room is not None:
                    await room.acquire()
                events.put_nowait(_Event("item", index, item))
    except Exception as exc:  # raised by the reader, in the caller's task
        events.put_nowait(_Event("failed", index, exc))
        return
    events.put_nowait(_Event("done", index))
