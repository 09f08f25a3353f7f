"""Running a plan: the serial read, the parallel read in ``$sequence`` ranges, and the choice
between them. What to send and how to decode it was decided by `_plan`; the pages come from
`_pager`; this module turns them into the result's batches (types settled when inferred,
sorted on the client when the service cannot sort, projected to the output columns).

>>> plan = await make_plan(requester, location, QuerySpec(condition=col("age") > 30), None)
>>> async for batch in query_batches(requester, location, plan, (), bar, collect=False,
...                                  parallel=None): ...                  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Sequence,
)
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..._core._adaptive import AUTO, AdaptiveConcurrency, timed_work
from ..._exceptions import RowDecodeError
from ..._schema import SYSTEM_SCHEMA, InferredSchema
from .._location import TableLocation
from ._cursor import (
    PREFETCH_PAGES,
    TOTAL_CAP,
    Decode,
    PagedRead,
    decoded,
    read_batches,
    rows_at_most,
    show_total,
    up_to_head,
)
from ._decode import last_row_value
from ._ordering import sort_table
from ._plan import Plan, page_decoder, project
from ._ranged import (
    GUESSED_WORK_PER_ROW,
    SEQUENCE,
    Parallel,
    ReadOpening,
    SequenceRange,
    Source,
    check_parallel,
    in_order,
    open_read,
    range_count,
    ranged_plan,
    read_concurrency,
    sequence_ascending,
    sequence_bounds,
    serial_reason,
    split_ranges,
    tapering_ranges,
)

if TYPE_CHECKING:
    from ..._core import Requester

HOLD_BACK_ROWS = 100_000
"""Rows a streaming read with inferred types holds back while a column has shown no value."""


async def parallel_batches(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    order: Sequence[tuple[str, bool]],
    bar: Any,
    *,
    parallel: int,
    streaming: bool,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The result batches of `plan` read in ``$sequence`` ranges between the bounds of its
    rows, `parallel` at a time, in the order of the serial read. `order` is the query's sort
    (empty, or led by ``$sequence``); `bar` counts the rows."""
    if not plan.requests or plan.head == 0:
        return
    bounds = await sequence_bounds(requester, location, plan.compiled.requests)
    if bounds is None:
        return
    if plan.every_row_kept and bounds.total < TOTAL_CAP and bar is not None:
        bar.total = bounds.total if plan.head is None else min(bounds.total, plan.head)
        bar.refresh()
    windowed = streaming or plan.head is not None
    count = range_count(bounds, parallel, plan.page_size, streaming=windowed)
    ranges = split_ranges(bounds.first, bounds.last, count)
    async with aclosing(
        _ranged_batches(requester, location, plan, order, ranges, parallel, streaming=streaming)
    ) as batches:
        async for batch in up_to_head(batches, plan.head, bar):
            yield batch


async def auto_batches(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    order: Sequence[tuple[str, bool]],
    bar: Any,
    *,
    streaming: bool,
    opening: ReadOpening | None = None,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """``parallel="auto"`` for a plan of one request. Three requests open it, at once
    (`open_read`; `opening` when they went out before the plan was made): the first page,
    as the serial read asks for it, and two one-row requests for the ``$sequence`` at either
    end of the rows (the near one also counted). When the count shows more than a page, the
    rows beyond the first page's share of ``$sequence`` values are read in ranges that start
    as soon as the ends are known, as many at once as `read_concurrency` says; else the first
    page is the result (or, if rows came meanwhile, the rest after it is read in ranges)."""
    ascending = sequence_ascending(order)
    if opening is not None and not opening.serves(plan, ascending=ascending):
        await opening.close()
        opening = None
    if not plan.requests or plan.head == 0:
        return
    if opening is None:
        (filters,) = plan.compiled.requests
        queries = plan.requests[0][len(filters) :]
        opening = open_read(
            requester, location, filters, queries, plan.page_size, ascending=ascending
        )
    concurrency = read_concurrency()
    first_page = asyncio.create_task(_first_page(opening, plan, concurrency))
    try:
        (total, near), (_, far), round_trip = await opening.ends  # every read of the same
        # rows sends the same requests: the ends are always awaited
        # Their round trip is the distance: ranges start before the first page is decoded.
        concurrency.guess(round_trip, GUESSED_WORK_PER_ROW * plan.page_size)
        if bar is not None:
            show_total(bar, total, exact=plan.every_row_kept, head=plan.head)
        descending = not ascending
        share = _beyond_first_page(near, far, plan.page_size, descending=descending)
        if total >= plan.page_size and share is not None:
            batches = _first_page_then_ranges(
                requester, location, plan, first_page, share, concurrency,
                descending=descending, streaming=streaming,
            )  # fmt: skip
        else:
            batches = _first_page_then_rest(
                requester, location, plan, first_page, far, concurrency,
                descending=descending, streaming=streaming,
            )  # fmt: skip
        async with aclosing(batches):
            async for batch in up_to_head(batches, plan.head, bar):
                yield batch
    finally:
        first_page.cancel()
        await asyncio.gather(first_page, return_exceptions=True)
        await opening.close()


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
    opening: ReadOpening, plan: Plan, concurrency: AdaptiveConcurrency
) -> _FirstPage:
    """The plan's first page, its wait and decoding told to `concurrency`."""
    body, waited = await opening.take_first_page()
    concurrency.waited(waited, nbytes=len(body))
    _, batch = await decoded(timed_work(concurrency, plan.decode), body)
    full = rows_at_most(body) >= plan.page_size
    return _FirstPage(batch, last_row_value(body, SEQUENCE.encode()), full)


async def _first_page_then_ranges(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    first_page: asyncio.Task[_FirstPage],
    span: SequenceRange,
    concurrency: AdaptiveConcurrency,
    *,
    descending: bool,
    streaming: bool,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The first page's rows outside `span`, then the rows in `span`, read in ranges that
    start while the first page still arrives."""

    async def first() -> AsyncGenerator[pa.RecordBatch, None]:
        batch = (await first_page).batch
        sequence = batch.column(SEQUENCE)
        if descending:
            share = pc.greater(sequence, pa.scalar(span.upto, pa.int64()))
        else:
            share = pc.less_equal(sequence, pa.scalar(span.after, pa.int64()))
        # The page is in $sequence order: its share is a prefix, sliced without a copy.
        yield project(plan, batch.slice(0, share.true_count))

    def window() -> int:
        return concurrency() + (0 if first_page.done() else 1)

    sources = itertools.chain(
        [lambda release: first()],
        _range_sources(
            requester,
            location,
            plan,
            span,
            concurrency,
            window,
            descending=descending,
            streaming=streaming,
        ),
    )
    async with aclosing(in_order(sources, window, keep_all=not streaming)) as batches:
        async for batch in batches:
            yield batch


async def _first_page_then_rest(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    first_page: asyncio.Task[_FirstPage],
    far: int | None,
    concurrency: AdaptiveConcurrency,
    *,
    descending: bool,
    streaming: bool,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The first page; when it is full (rows came since they were counted), the rows after
    it up to `far`, read in ranges."""
    page = await first_page
    if page.batch.num_rows:
        yield project(plan, page.batch)
    if page.last_sequence is None or far is None or not page.full:
        return
    last = int(page.last_sequence)
    span = SequenceRange(far - 1, last - 1) if descending else SequenceRange(last, far)
    if span.span <= 0:
        return
    sources = _range_sources(
        requester, location, plan, span, concurrency, concurrency,
        descending=descending, streaming=streaming,
    )  # fmt: skip
    async with aclosing(in_order(sources, concurrency, keep_all=not streaming)) as batches:
        async for batch in batches:
            yield batch


def _range_sources(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    span: SequenceRange,
    concurrency: AdaptiveConcurrency,
    window: Callable[[], int],
    *,
    descending: bool,
    streaming: bool,
) -> Iterator[Source[pa.RecordBatch]]:
    """The readers of `plan`'s rows in `span`, cut by `tapering_ranges` as they start (each
    telling `concurrency` how its pages went); `window` is how many run at once. Streaming
    reads keep whole ranges: theirs start only within the window of the range handed on, so
    a range that ended early would hold its slot without fetching."""
    member = requester.query_member_for(location.rows_path)
    widths = (lambda: 1) if streaming else window
    for part in tapering_ranges(
        span.after, span.upto, plan.page_size, widths, descending=descending
    ):
        yield _range_source(requester, location, plan, part, member, streaming, concurrency)


def _range_source(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    sequence_range: SequenceRange,
    member: str,
    streaming: bool,
    concurrency: AdaptiveConcurrency | None = None,
) -> Source[pa.RecordBatch]:
    """The reader of `plan`'s rows in `sequence_range`, to start when its turn comes; it
    gives up its slot once its last page is in."""
    part = ranged_plan(plan, sequence_range, member)
    return lambda release: plan_batches(
        requester, location, part, None, collect=not streaming, concurrency=concurrency,
        ranged=True, on_fetched=release,
    )  # fmt: skip


def _ranged_batches(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    order: Sequence[tuple[str, bool]],
    ranges: list[SequenceRange],
    parallel: int,
    *,
    streaming: bool,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The batches of `plan` over `ranges` (in ascending order; read from the last one when
    `order` is descending), `parallel` ranges at a time, handed on in order."""
    if not sequence_ascending(order):
        ranges = ranges[::-1]
    member = requester.query_member_for(location.rows_path)
    sources = [_range_source(requester, location, plan, part, member, streaming) for part in ranges]
    return in_order(sources, parallel)


async def query_batches(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    order: Sequence[tuple[str, bool]],
    bar: Any,
    *,
    collect: bool,
    parallel: Parallel,
    opening: ReadOpening | None = None,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The result batches of `plan`: read in ``$sequence`` ranges when `parallel` asks for it
    and the query allows it (`serial_reason`), else by the serial engine. `collect` says the
    caller keeps every batch (no need to bound memory); `opening` is the requests of an
    ``auto`` read sent before the plan was made (`early_opening`), closed if unused."""
    batches: AsyncGenerator[pa.RecordBatch, None]
    try:
        concurrency = check_parallel(parallel)
        if serial_reason(plan, order, concurrency) is not None:
            batches = plan_batches(requester, location, plan, bar, collect=collect)
        elif concurrency == AUTO:
            batches = auto_batches(
                requester, location, plan, order, bar, streaming=not collect, opening=opening
            )
            opening = None  # auto_batches closes it
        else:
            batches = parallel_batches(
                requester, location, plan, order, bar, parallel=concurrency,
                streaming=not collect,
            )  # fmt: skip
    finally:
        if opening is not None:
            await opening.close()
    async with aclosing(batches):
        async for batch in batches:
            yield batch


async def plan_batches(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    bar: Any,
    *,
    collect: bool,
    concurrency: AdaptiveConcurrency | None = None,
    ranged: bool = False,
    on_fetched: Callable[[], None] | None = None,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The result batches of `plan`: paged, stabilised (inferred types), sorted on the client
    when needed, projected to the output columns. `collect` says the caller keeps every batch
    anyway, so inferred types may be settled over all rows; `concurrency` hears how each page
    went (see `_core._adaptive`); `ranged` says the plan is one of many concurrent ranges,
    which fetch no page ahead of the decoder (they overlap fetching among themselves);
    `on_fetched` is called once the last page is in."""
    if not plan.requests or plan.head == 0:
        if plan.inferred is not None:
            await learn_columns(requester, location, plan)
        return
    read = PagedRead(
        location.rows_path,
        plan.requests,
        page_size=plan.page_size,
        head=None if plan.client_order else plan.head,
        every_row_kept=plan.every_row_kept,
        counted=not ranged,
    )
    ahead = 0 if ranged else PREFETCH_PAGES
    pages = read_batches(
        requester, read, plan.decode, bar=bar, concurrency=concurrency, ahead=ahead,
        on_fetched=on_fetched,
    )  # fmt: skip
    async with aclosing(pages):
        batches: AsyncIterator[pa.RecordBatch] = pages
        if plan.inferred is not None:
            hold = math.inf if collect or plan.client_order else HOLD_BACK_ROWS

            async def learn() -> None:
                await learn_columns(requester, location, plan)

            batches = _settled(batches, plan.inferred, hold, learn)
        if plan.client_order:
            batches = _sorted(batches, plan)
        async for batch in batches:
            yield project(plan, batch)


async def learn_columns(requester: Requester, location: TableLocation, plan: Plan) -> None:
    """For types inferred from the rows and a result without any: learn the columns from
    the table's rows read without the filter (one row; then, while a column has shown no
    value, pages of up to `HOLD_BACK_ROWS` rows), so that an empty result has the columns
    and dtypes of a read that has rows. A table without rows teaches nothing."""
    inferred = plan.inferred
    assert inferred is not None
    if len(inferred.schema) > len(SYSTEM_SCHEMA) and not _has_untyped(inferred.schema):
        return
    decode = page_decoder(location.items_key, None, inferred, None, plan.kind_check)
    await _read_unfiltered(requester, location, plan, decode, page_size=1, rows=1)
    if _has_untyped(inferred.schema):
        await _read_unfiltered(
            requester, location, plan, decode, page_size=plan.page_size, rows=HOLD_BACK_ROWS
        )


async def _read_unfiltered(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    decode: Decode,
    *,
    page_size: int,
    rows: int,
) -> None:
    """Read up to `rows` rows without the filter (their types go into ``plan.inferred``),
    stopping once every column has a type."""
    assert plan.inferred is not None
    read = PagedRead(
        location.rows_path,
        (plan.select_queries,),
        page_size=page_size,
        head=rows,
        every_row_kept=True,
    )
    async with aclosing(read_batches(requester, read, decode)) as pages:
        async for _ in pages:
            if not _has_untyped(plan.inferred.schema):
                return


async def _settled(
    batches: AsyncIterator[pa.RecordBatch],
    inferred: InferredSchema,
    hold: float,
    learn: Callable[[], Awaitable[None]],
) -> AsyncIterator[pa.RecordBatch]:
    """Batches of inferred types, all conformed to one schema: held back until every column
    has a type (or `hold` rows are held), then passed on; a later change of a type raises.
    When no row comes at all, `learn` finds the columns elsewhere."""
    held: list[pa.RecordBatch] = []
    held_rows = 0
    released: pa.Schema | None = None
    async for batch in batches:
        if released is not None:
            if inferred.schema != released:
                changed = [f.name for f in inferred.schema if f not in released]
                raise RowDecodeError(
                    f"column types changed after rows were handed out ({', '.join(changed)}); "
                    "read with to_pandas()/to_arrow(), or with an API key that can read the "
                    "table's columns",
                    column=changed[0] if changed else None,
                )
            yield batch
            continue
        held.append(batch)
        held_rows += batch.num_rows
        if held_rows >= hold or not _has_untyped(inferred.schema):
            released = inferred.schema
            for waiting in held:
                yield inferred.conform(waiting)
            held = []
    if released is None and not held_rows:
        await learn()
    for waiting in held:
        yield inferred.conform(waiting)


def _has_untyped(schema: pa.Schema) -> bool:
    def untyped(kind: pa.DataType) -> bool:
        return pa.types.is_null(kind) or (pa.types.is_list(kind) and untyped(kind.value_type))

    return any(untyped(item.type) for item in schema)


async def _sorted(
    batches: AsyncIterator[pa.RecordBatch], plan: Plan
) -> AsyncIterator[pa.RecordBatch]:
    collected = [batch async for batch in batches]
    if not collected:
        return
    table = sort_table(pa.Table.from_batches(collected), plan.client_order)
    if plan.head is not None:
        table = table.slice(0, plan.head)
    for batch in table.to_batches(max_chunksize=plan.page_size):
        yield batch
