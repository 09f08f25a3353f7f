"""The one ranged strategy: a read cut into ranges of ``$sequence`` read at once, handed on in
order with the serial read's result (the scale-out guide tells the whole story).

Three requests open it (its `Opening`): the first page and the row at either end (the near one
counted), sent at once to a far service; a near one is asked for the ends once the first page
came full (a short one holds every row). Past the first page's share, the rows are read in
ranges that start once the ends are known (`tapering_ranges`), each a serial read of the plan
within it that fetches no page ahead of the decoder; the fan-in (`in_order`) hands them on in
order, as many at once as the controller says (adaptive for ``"auto"``, pinned at N for
``parallel=N``).
Collecting reads start a range whenever a slot is free; streaming reads only within the
window of the range being written, which bounds their memory. `range_reads` reads given
ranges the same way (a resumable export's segments, a deletes scan's ranges).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ..._core._adaptive import AdaptiveConcurrency
from ..._core._fan_in import Slot, Source, in_order
from ..._core._pages import last_row_value, rows_at_most
from ..._core._together import cancel_and_wait
from .._decode import decoded
from ._plan import Plan
from ._prefetch import show_total, up_to_head
from ._probes import Opening
from ._ranges import SEQUENCE, SequenceRange, tapering_ranges
from ._serial import serial_batches

if TYPE_CHECKING:
    from tqdm import tqdm

    from ..._core import Requester

GUESSED_WORK_PER_ROW = 1e-6
"""Seconds of decoding a row is guessed to take before a page was decoded. It is on the low
side (a row of a dozen columns takes 1.4 to 3 µs here) because the ends' round trip the
guess divides leaves out what a page adds to it, its building and its transfer: the read
starts wide, and the first measurements narrow it."""


async def ranged_batches(
    requester: Requester,
    plan: Plan,
    concurrency: AdaptiveConcurrency,
    bar: tqdm[object] | None,
    *,
    streaming: bool,
    opening: Opening | None,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The result batches of `plan` (one request, rows in ``$sequence`` order) read in ranges,
    as many at once as `concurrency` says, from its `opening` (None: no row to read)."""
    if opening is None:
        return
    assert opening.ends is not None, "a ranged read opens with its ends"
    first_page = asyncio.create_task(_first_page(opening, plan, concurrency, kept=not streaming))
    try:
        (total, near), (_, far), round_trip = await opening.ends  # every read of the same
        # rows sends the same requests: the ends are always awaited
        # Their round trip is the distance: ranges start before the first page is decoded.
        concurrency.guess(round_trip, GUESSED_WORK_PER_ROW * plan.page_size)
        if bar is not None:
            span = None if near is None or far is None else abs(far - near) + 1
            show_total(bar, total, exact=plan.every_row_kept, head=plan.head, span=span)
        descending = plan.spec.sequence_order is False
        share = _beyond_first_page(near, far, plan.page_size, descending=descending)

        def in_ranges(span: SequenceRange) -> AsyncGenerator[pa.RecordBatch, None]:
            return _in_ranges(
                requester, plan, span, concurrency, descending=descending, streaming=streaming
            )

        if total >= plan.page_size and share is not None:
            batches = _first_page_then_ranges(plan, first_page, share, in_ranges, descending)
        else:
            batches = _first_page_then_rest(plan, first_page, far, in_ranges, descending)
        async with aclosing(batches):
            async for batch in up_to_head(batches, plan.head, bar):
                yield batch
    finally:
        await cancel_and_wait(first_page)


def range_reads(
    requester: Requester,
    plan: Plan,
    ranges: Iterable[SequenceRange],
    concurrency: AdaptiveConcurrency,
    *,
    collect: bool,
) -> Iterator[Source[pa.RecordBatch]]:
    """The reads of `plan`'s rows in each of `ranges`, made as they are drawn (by `in_order`),
    each telling `concurrency` how its pages went and giving up its slot once its last page
    is in."""
    ascending = plan.spec.sequence_order is True
    for part in ranges:
        slot = Slot()
        batches = serial_batches(
            requester,
            plan.within(part),
            None,
            None,
            collect=collect,
            concurrency=concurrency,
            slot=slot,
            last_sequence=part.upto if ascending else None,
        )
        yield slot, batches


def _in_ranges(
    requester: Requester,
    plan: Plan,
    span: SequenceRange,
    concurrency: AdaptiveConcurrency,
    *,
    descending: bool,
    streaming: bool,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The rows of `plan` in `span`, read in ranges cut as they start: whole ranges for
    streaming reads (a range that ended early would hold its slot in their window without
    fetching), tapering ones for collecting reads."""
    width = 1 if streaming else concurrency
    ranges = tapering_ranges(span.after, span.upto, plan.page_size, width, descending=descending)
    reads = range_reads(requester, plan, ranges, concurrency, collect=not streaming)
    return in_order(reads, concurrency, keep_all=not streaming)


def _beyond_first_page(
    near: int | None, far: int | None, page_size: int, *, descending: bool
) -> SequenceRange | None:
    """The ``$sequence`` values from `near` to `far` beyond the `page_size` nearest, which
    no first page can hold all of (None: there are none)."""
    if near is None or far is None:
        return None
    if descending:
        span = SequenceRange(far - 1, near - page_size)
    else:
        span = SequenceRange(near + page_size - 1, far)
    return span if span.span > 0 else None


@dataclass(frozen=True)
class _FirstPage:
    """The first page decoded (not projected), and what its body said of the rows after it
    (the body itself is let go)."""

    batch: pa.RecordBatch
    last_sequence: str | None
    full: bool


async def _first_page(
    opening: Opening, plan: Plan, concurrency: AdaptiveConcurrency, *, kept: bool
) -> _FirstPage:
    """The plan's first page, its wait and decoding told to `concurrency` (`kept`: the read
    keeps every batch)."""
    body = await opening.take()
    concurrency.waited(opening.waited, nbytes=len(body))
    _, batch = await decoded(plan.decoder(None, kept=kept), body, concurrency)
    full = rows_at_most(body) >= plan.page_size
    return _FirstPage(batch, last_row_value(body, SEQUENCE.encode()), full)


_InRanges = Callable[[SequenceRange], AsyncGenerator[pa.RecordBatch, None]]
"""The rows of a span of ``$sequence``, read in ranges (`_in_ranges` with the read's settings)."""


async def _first_page_then_ranges(
    plan: Plan,
    first_page: asyncio.Task[_FirstPage],
    span: SequenceRange,
    in_ranges: _InRanges,
    descending: bool,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The first page's rows outside `span`, then the rows in `span`, read in ranges that
    start while the first page still arrives."""
    rest = in_ranges(span)
    started = asyncio.ensure_future(anext(rest, None))  # the ranges start now
    try:
        batch = (await first_page).batch
        sequence = batch.column(SEQUENCE)
        if descending:
            share = pc.greater(sequence, pa.scalar(span.upto, pa.int64()))
        else:
            share = pc.less_equal(sequence, pa.scalar(span.after, pa.int64()))
        # The page is in $sequence order: its share is a prefix, sliced without a copy.
        yield plan.project(batch.slice(0, share.true_count))
        ranged = await started
        if ranged is None:
            return
        yield ranged
        async for ranged in rest:
            yield ranged
    finally:
        await cancel_and_wait(started)
        await rest.aclose()


async def _first_page_then_rest(
    plan: Plan,
    first_page: asyncio.Task[_FirstPage],
    far: int | None,
    in_ranges: _InRanges,
    descending: bool,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The first page; when it is full (rows came since they were counted), the rows after
    it up to `far`, read in ranges."""
    page = await first_page
    if page.batch.num_rows:
        yield plan.project(page.batch)
    if page.last_sequence is None or far is None or not page.full:
        return
    last = int(page.last_sequence)
    span = SequenceRange(far - 1, last - 1) if descending else SequenceRange(last, far)
    if span.span <= 0:
        return
    async with aclosing(in_ranges(span)) as batches:
        async for batch in batches:
            yield batch
