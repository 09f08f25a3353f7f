"""Parallel keyset paging: one read split into ranges of ``$sequence``, fetched concurrently,
handed on in ``$sequence`` order.

``$sequence`` numbers the rows of a table in insertion order, is the service's default order
and can be filtered. A read with ``parallel=N``:

1. asks for the first and the last row under the filter (two one-row requests: ascending and
   descending by ``$sequence``, selecting ``$id``) — the bounds;
2. splits ``(first - 1, last]`` into ranges (`SequenceRange`); each range adds
   ``greaterThan``/``lessThanEqual`` on ``$sequence`` to the filter and is paged by cursor
   with the usual engine (`_read.plan_batches`), so client-side filters, decoding and
   projection are the serial read's;
3. runs `N` ranges at a time and hands their batches on range by range (`in_order`): the
   result is the serial read's, row for row and dtype for dtype.

How the rows are split (decided here; the issue left it open):

* Collecting reads (``to_pandas``, ``to_arrow``) use `N` ranges of equal width: all rows are
  held anyway, and few ranges mean few requests also when the filter keeps few rows.
* Streaming reads (``to_parquet``, ``iter_batches``) and reads with ``head`` use ranges of at
  most `PAGES_PER_RANGE` pages' worth of ``$sequence`` values (at least `N` of them), `N` in
  flight: ranges ahead of the one being written are buffered, so memory holds at most about
  ``N × PAGES_PER_RANGE × page_size`` rows besides what the serial read holds, however large
  the table.
* A range never asks for more rows than it has ``$sequence`` values, so a range without gaps
  ends without asking for an empty page; deleted rows only make ranges shorter.

When the read stays serial (`serial_reason` says why): ``parallel`` is None or 1; a sort on
anything but ``$sequence`` (the service sorts; merging sorted ranges would need the service's
collation on the client, so the read is serial instead); a filter the DSL splits into several
requests (their rows come in request order, not ``$sequence`` order); types inferred from the
rows (they settle in row order). Sorting by ``$sequence`` descending reads the ranges from the
last one. Rows added while a parallel read runs and beyond the last bound are not read.

>>> split_ranges(1, 10, 3)
[SequenceRange(after=0, upto=3), SequenceRange(after=3, upto=6), SequenceRange(after=6, upto=10)]
>>> SequenceRange(0, 3).queries("column")
('{"method":"greaterThan","column":"$sequence","values":[0]}', \
'{"method":"lessThanEqual","column":"$sequence","values":[3]}')
"""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from .._core._queries import (
    ServiceQuery,
    check_member,
    order_query,
    render_query,
    select_query,
)
from .._schema import SYSTEM_SCHEMA
from ._location import TableLocation
from ._pager import fetch_page
from ._pages import decode_page
from ._plan import Plan

if TYPE_CHECKING:
    from .._core import Requester

T = TypeVar("T")

SEQUENCE = "$sequence"

PAGES_PER_RANGE = 4
"""A range of a streaming read spans at most this many pages' worth of ``$sequence`` values."""


@dataclass(frozen=True)
class SequenceRange:
    """The rows with ``after < $sequence <= upto``."""

    after: int
    upto: int

    @property
    def span(self) -> int:
        """How many ``$sequence`` values the range covers: an upper bound of its rows."""
        return self.upto - self.after

    def queries(self, member: str) -> tuple[str, str]:
        """The two filter query strings that keep the range's rows."""
        return (
            render_query(
                ServiceQuery("greaterThan", SEQUENCE, (self.after,)), check_member(member)
            ),
            render_query(
                ServiceQuery("lessThanEqual", SEQUENCE, (self.upto,)), check_member(member)
            ),
        )


@dataclass(frozen=True)
class SequenceBounds:
    """The ``$sequence`` of the first and the last row under a filter, and the service's count
    of its rows (capped at `TOTAL_CAP`)."""

    first: int
    last: int
    total: int


def check_parallel(parallel: int | None) -> int:
    """`parallel` as a number of concurrent ranges (None means 1)."""
    if parallel is None:
        return 1
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ValueError(f"parallel must be a whole number >= 1 or None (got {parallel!r}).")
    return parallel


def split_ranges(first: int, last: int, parts: int) -> list[SequenceRange]:
    """``(first - 1, last]`` cut into at most `parts` ranges of nearly equal width, in order."""
    after, span = first - 1, last - first + 1
    parts = max(1, min(parts, span))
    edges = [after + span * index // parts for index in range(parts + 1)]
    return [SequenceRange(low, high) for low, high in itertools.pairwise(edges)]


def range_count(bounds: SequenceBounds, parallel: int, page_size: int, *, streaming: bool) -> int:
    """How many ranges a read of `bounds` uses (see the module docstring)."""
    if not streaming:
        return parallel
    widest = PAGES_PER_RANGE * page_size
    return max(parallel, -(-(bounds.last - bounds.first + 1) // widest))


def serial_reason(plan: Plan, order: Sequence[tuple[str, bool]], parallel: int) -> str | None:
    """Why a read of `plan` stays serial, or None when it can run in ranges."""
    if parallel == 1:
        return "parallel is 1"
    if order and order[0][0] != SEQUENCE:
        return "the rows are sorted by a column (the service sorts them in one read)"
    if len(plan.requests) > 1:
        return "the filter is sent as several requests, whose rows come in request order"
    if plan.inferred is not None:
        return "the column types are inferred from the rows, in row order"
    return None


async def sequence_bounds(
    requester: Requester, location: TableLocation, requests: Sequence[Sequence[str]]
) -> SequenceBounds | None:
    """The bounds of the rows the service returns for `requests` (the filter query strings of
    each request), or None when it returns none: two one-row requests per request, sent
    together. `total` is the first request's count."""
    member = requester.query_member_for(location.rows_path)

    async def edge(filters: Sequence[str], ascending: bool) -> tuple[int, pa.RecordBatch]:
        queries = [*filters, select_query(["$id"]), order_query(SEQUENCE, ascending, member)]
        body = await fetch_page(requester, location.rows_path, queries, 1, with_total=ascending)
        return decode_page(body, SYSTEM_SCHEMA, items_key=location.items_key)

    edges = await asyncio.gather(
        *(edge(filters, ascending) for filters in requests for ascending in (True, False))
    )
    found = [batch.column(SEQUENCE)[0].as_py() for _, batch in edges if batch.num_rows]
    if not found:
        return None
    return SequenceBounds(min(found), max(found), edges[0][0])


def ranged_plan(plan: Plan, sequence_range: SequenceRange, member: str) -> Plan:
    """`plan` restricted to the rows of `sequence_range` (and never more rows than it spans)."""
    extra = sequence_range.queries(member)
    head = sequence_range.span if plan.head is None else min(plan.head, sequence_range.span)
    return replace(plan, requests=tuple((*queries, *extra) for queries in plan.requests), head=head)


# ---------------------------------------------------------------------------------------------
# Running sources concurrently, handing on their items in order


@dataclass(frozen=True)
class _Item:
    source: int
    value: Any


@dataclass(frozen=True)
class _Done:
    source: int


@dataclass(frozen=True)
class _Failed:
    error: BaseException


async def in_order(
    sources: Sequence[Callable[[], AsyncGenerator[T, None]]], window: int
) -> AsyncGenerator[T, None]:
    """Every item of every source, source after source; up to `window` sources run at once
    (each started as the one `window` places before it finishes), and the items of sources
    ahead of the current one wait in memory. A failure in any running source is raised at
    once; leaving early cancels the sources still running.

    >>> async for batch in in_order([lambda: read(r) for r in ranges], window=4): ...
    ... # doctest: +SKIP
    """
    events: asyncio.Queue[_Item | _Done | _Failed] = asyncio.Queue()
    waiting: dict[int, collections.deque[T]] = {}
    finished: set[int] = set()
    running: dict[int, asyncio.Task[None]] = {}

    def start(index: int) -> None:
        if index < len(sources):
            waiting[index] = collections.deque()
            running[index] = asyncio.create_task(_run_source(index, sources[index](), events))

    try:
        for index in range(min(window, len(sources))):
            start(index)
        current = 0
        while current < len(sources):
            queued = waiting[current]
            if queued:
                yield queued.popleft()
                continue
            if current in finished:
                del waiting[current]
                running.pop(current, None)
                start(current + window)
                current += 1
                continue
            event = await events.get()
            if isinstance(event, _Failed):
                raise event.error
            if isinstance(event, _Done):
                finished.add(event.source)
            else:
                waiting[event.source].append(event.value)
    finally:
        for task in running.values():
            task.cancel()
        await asyncio.gather(*running.values(), return_exceptions=True)


async def _run_source(
    index: int, items: AsyncGenerator[Any, None], events: asyncio.Queue[_Item | _Done | _Failed]
) -> None:
    try:
        async with aclosing(items):
            async for item in items:
                events.put_nowait(_Item(index, item))
    except Exception as exc:  # raised by the reader, in the caller's task
        events.put_nowait(_Failed(exc))
        return
    events.put_nowait(_Done(index))
