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

``parallel="auto"`` (the default) sends the first page's request, as the serial read does,
together with one one-row request for each end of the rows (`sequence_edge`; the near one
counted): a result that fits in one page costs two rows more and no round trip. Without a
filter they depend on no column, and go out beside the request for the table's columns
(`early_opening`). A larger result is read in ranges that start once the ends are known,
beside the first page: they cover the ``$sequence`` values past the first page's share,
`PAGES_PER_RANGE` pages each; in collecting reads `tapering_ranges` cuts them to the pages
left divided by the ranges running (at least one page), so that the read ends on single
pages. An `AdaptiveConcurrency` chooses how many run at once: first a guess from the ends'
round trip (`GUESSED_WORK_PER_ROW`), then what each page reports, how long it waited on the
network and took to decode: as many ranges as keep the decoder busy (up to `AUTO_CAP`, and no
more page bodies held than `AUTO_BUDGET` bytes). A service on this machine answers about
as fast as a page decodes, so the read stays close to one range at a time; a service 50 ms
away gets several. A ``head`` that fits in one page is read serially.
Concurrent ranges fetch no page ahead of the decoder: they overlap fetching among
themselves, and each asks for its next page once the decoder has taken its last one, so it
holds at most two page bodies (one arriving, one waiting for or in the decoder). Collecting
reads start a range whenever a slot is free (`in_order` with ``keep_all``), and a range
gives up its slot once its last page is in, while that page still decodes; streaming reads
only within the window of the range being handed on.

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
import functools
import itertools
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..._core._adaptive import AUTO, AdaptiveConcurrency, Auto, check_concurrency
from ..._core._queries import (
    ServiceQuery,
    check_member,
    order_query,
    render_query,
    select_query,
)
from ..._schema import SYSTEM_SCHEMA
from .._location import TableLocation
from ._cursor import fetch_page
from ._decode import decode_page
from ._plan import Plan, QuerySpec, plan_page_size, unfiltered_request

if TYPE_CHECKING:
    from ..._core import Requester

T = TypeVar("T")

SEQUENCE = "$sequence"

PAGES_PER_RANGE = 4
"""A range of a streaming or ``auto`` read spans at most this many pages' worth of
``$sequence`` values."""

AUTO_CAP = 16
"""The most ranges ``parallel="auto"`` runs at once."""

AUTO_BUDGET = 64 * 2**20
"""Bytes of page bodies ``parallel="auto"`` lets its ranges hold at once, two per range (one
arriving, one waiting for or in the decoder)."""

GUESSED_WORK_PER_ROW = 1e-6
"""Seconds of decoding a row is guessed to take before a page was decoded. It is on the low
side (a row of a dozen columns takes 1.4 to 3 µs here) because the ends' round trip the
guess divides leaves out what a page adds to it, its building and its transfer: the read
starts wide, and the first measurements narrow it."""

Parallel = int | Auto | None
"""How a read runs: ``"auto"``, a fixed number of concurrent ranges, or None (serial)."""


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


def sequence_ascending(order: Sequence[tuple[str, bool]]) -> bool:
    """Whether a read sorted by `order` (nothing, or ``$sequence`` first) goes up
    ``$sequence``."""
    return not order or order[0][1]


def check_parallel(parallel: Parallel) -> int | Auto:
    """`parallel` as a number of concurrent ranges (None means 1) or ``"auto"``."""
    return 1 if parallel is None else check_concurrency(parallel, "parallel", also=", None")


def split_ranges(first: int, last: int, parts: int) -> list[SequenceRange]:
    """``(first - 1, last]`` cut into at most `parts` ranges of nearly equal width, in order."""
    after, span = first - 1, last - first + 1
    parts = max(1, min(parts, span))
    edges = [after + span * index // parts for index in range(parts + 1)]
    return [SequenceRange(low, high) for low, high in itertools.pairwise(edges)]


def tapering_ranges(
    after: int, upto: int, page_size: int, width: Callable[[], int], *, descending: bool = False
) -> Iterator[SequenceRange]:
    """``(after, upto]`` cut into ranges as they are asked for, in reading order (from the top
    when `descending`): each spans the pages left divided by the ranges that run at once
    (`width`), at least one page and at most `PAGES_PER_RANGE`. The last ranges are single
    pages, so that the read ends with every slot busy rather than one long range alone.

    >>> [(r.after, r.upto) for r in tapering_ranges(0, 10, 1, lambda: 2)]
    [(0, 4), (4, 7), (7, 8), (8, 9), (9, 10)]
    """
    while after < upto:
        pages_left = -(-(upto - after) // page_size)
        pages = max(1, min(PAGES_PER_RANGE, pages_left // max(1, width())))
        span = pages * page_size
        if descending:
            yield SequenceRange(max(after, upto - span), upto)
            upto -= span
        else:
            yield SequenceRange(after, min(upto, after + span))
            after += span


def range_count(bounds: SequenceBounds, parallel: int, page_size: int, *, streaming: bool) -> int:
    """How many ranges a read of `bounds` uses (see the module docstring)."""
    if not streaming:
        return parallel
    widest = PAGES_PER_RANGE * page_size
    return max(parallel, -(-(bounds.last - bounds.first + 1) // widest))


def serial_reason(
    plan: Plan, order: Sequence[tuple[str, bool]], parallel: int | Auto
) -> str | None:
    """Why a read of `plan` stays serial, or None when it can run in ranges."""
    if parallel == 1:
        return "parallel is 1"
    if parallel == AUTO and plan.head is not None and plan.head <= plan.page_size:
        return "the head fits in one page"
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
    edges = await asyncio.gather(
        *(
            sequence_edge(requester, location, filters, ascending=ascending, counted=ascending)
            for filters in requests
            for ascending in (True, False)
        )
    )
    found = [sequence for _, sequence in edges if sequence is not None]
    if not found:
        return None
    return SequenceBounds(min(found), max(found), edges[0][0])


async def sequence_edge(
    requester: Requester,
    location: TableLocation,
    filters: Sequence[str],
    *,
    ascending: bool,
    counted: bool,
) -> tuple[int, int | None]:
    """The service's count of the rows `filters` keep (when `counted`; else 0) and the
    ``$sequence`` of the first of them (`ascending`) or the last (None: no row): one
    one-row request."""
    member = requester.query_member_for(location.rows_path)
    queries = [*filters, select_query(["$id"]), order_query(SEQUENCE, ascending, member)]
    body = await fetch_page(requester, location.rows_path, queries, 1, with_total=counted)
    total, batch = decode_page(body, SYSTEM_SCHEMA, items_key=location.items_key)
    return total, batch.column(SEQUENCE)[0].as_py() if batch.num_rows else None


Ends = tuple[tuple[int, int | None], tuple[int, int | None], float]
"""The near end (its count, its ``$sequence``), the far end, and their round trip in seconds."""


@dataclass
class ReadOpening:
    """The first requests of a ``parallel="auto"`` read, in flight: the first page of the
    request `filters` + `queries` (not counted) and the rows at either end under `filters`
    (the near one counted)."""

    filters: tuple[str, ...]
    queries: tuple[str, ...]
    page_size: int
    ascending: bool
    ends: asyncio.Task[Ends]
    first_page: asyncio.Task[tuple[bytes, float]] | None  # the body and its wait in seconds;
    # None once taken

    def serves(self, plan: Plan, *, ascending: bool) -> bool:
        """Whether these are the requests a read of `plan` opens with."""
        return (
            plan.compiled.requests == (self.filters,)
            and plan.requests == ((*self.filters, *self.queries),)
            and plan.page_size == self.page_size
            and ascending == self.ascending
        )

    async def take_first_page(self) -> tuple[bytes, float]:
        """The first page's body and its wait. The opening lets go of them: a body is a
        megabyte or more, and the read goes on for many."""
        assert self.first_page is not None, "the first page is taken once"
        result = await self.first_page
        self.first_page = None
        return result

    async def close(self) -> None:
        """Cancel what has not arrived (nothing is raised)."""
        tasks = [task for task in (self.first_page, self.ends) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def open_read(
    requester: Requester,
    location: TableLocation,
    filters: tuple[str, ...],
    queries: tuple[str, ...],
    page_size: int,
    *,
    ascending: bool,
) -> ReadOpening:
    """Send the requests a ``parallel="auto"`` read opens with (see `ReadOpening`)."""

    async def first_page() -> tuple[bytes, float]:
        asked = time.perf_counter()
        request = (*filters, *queries)
        body = await fetch_page(requester, location.rows_path, request, page_size, with_total=False)
        return body, time.perf_counter() - asked

    async def ends() -> Ends:
        asked = time.perf_counter()
        near, far = await asyncio.gather(
            sequence_edge(requester, location, filters, ascending=ascending, counted=True),
            sequence_edge(requester, location, filters, ascending=not ascending, counted=False),
        )
        return near, far, time.perf_counter() - asked

    return ReadOpening(
        filters, queries, page_size, ascending,
        ends=asyncio.create_task(ends()), first_page=asyncio.create_task(first_page()),
    )  # fmt: skip


def early_opening(
    requester: Requester,
    location: TableLocation,
    spec: QuerySpec,
    page_size: int | None,
    parallel: Parallel,
) -> ReadOpening | None:
    """The opening of a ``parallel="auto"`` read of `spec`, sent before its plan is made
    (while the table's columns are fetched) when it depends on no column: a query without
    a filter, read in ranges. None when the read cannot open early."""
    if check_parallel(parallel) != AUTO:
        return None
    member = requester.query_member_for(location.rows_path)
    queries = unfiltered_request(spec, member)
    size = plan_page_size(spec, page_size)
    if queries is None or (spec.head is not None and spec.head <= size):
        return None
    if spec.order and spec.order[0][0] != SEQUENCE:
        return None
    ascending = sequence_ascending(spec.order)
    return open_read(requester, location, (), queries, size, ascending=ascending)


def ranged_plan(plan: Plan, sequence_range: SequenceRange, member: str) -> Plan:
    """`plan` restricted to the rows of `sequence_range` (and never more rows than it spans)."""
    extra = sequence_range.queries(member)
    head = sequence_range.span if plan.head is None else min(plan.head, sequence_range.span)
    return replace(plan, requests=tuple((*queries, *extra) for queries in plan.requests), head=head)


def read_concurrency() -> AdaptiveConcurrency:
    """The controller of one ``parallel="auto"`` read: two ranges to start with (or its guess
    from the round trip of the ends), then as many as `AdaptiveConcurrency` says. A range
    asks for its next page once the decoder has taken its last one: it holds at most two
    page bodies, one arriving and one waiting for or in the decoder."""
    return AdaptiveConcurrency(cap=AUTO_CAP, budget=AUTO_BUDGET, start=2, units_per_slot=2)


def read_mode(plan: Plan, order: Sequence[tuple[str, bool]], parallel: Parallel) -> str:
    """How a read of `plan` runs, in a sentence (for `explain`)."""
    concurrency = check_parallel(parallel)
    reason = serial_reason(plan, order, concurrency)
    if reason is not None:
        return f"Read serially: {reason}."
    if concurrency == AUTO:
        return (
            "Read the first page and, beside it, the rest in ranges of $sequence, as many at "
            f"once as keep the decoder busy (at most {AUTO_CAP}), handed on in order; "
            "parallel=1 reads serially."
        )
    return f"Read in ranges of $sequence, {concurrency} at once, handed on in order."


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
class _Released:
    source: int


@dataclass(frozen=True)
class _Failed:
    error: BaseException


Source = Callable[[Callable[[], None]], AsyncGenerator[T, None]]
"""A source of `in_order`: started with the callable that gives up its slot early."""


async def in_order(
    sources: Iterable[Source[T]],
    window: int | Callable[[], int],
    *,
    keep_all: bool = False,
) -> AsyncGenerator[T, None]:
    """Every item of every source, source after source; up to `window` sources run at once (a
    number, or asked again whenever a source could start), and the items of sources ahead of
    the current one wait in memory. Sources start within `window` of the current one, which
    bounds what waits; with `keep_all` (the caller keeps every item anyway) a source starts
    whenever fewer than `window` run, so that one slow source holds none of the others back,
    and a source that calls the `release` it is started with (its requests are done, its
    items still coming) no longer counts as running. `sources` is drawn from as sources
    start. A failure in any running source is raised at once; leaving early cancels the
    sources still running.

    >>> async for batch in in_order([lambda release: read(r) for r in ranges], window=4): ...
    ... # doctest: +SKIP
    """
    events: asyncio.Queue[_Item | _Done | _Failed | _Released] = asyncio.Queue()
    waiting: dict[int, collections.deque[T]] = {}
    finished: set[int] = set()
    released: set[int] = set()
    running: dict[int, asyncio.Task[None]] = {}
    pending = iter(sources)
    exhausted = False

    width = window if callable(window) else lambda: window
    started = 0

    def may_start(current: int) -> bool:
        if keep_all:  # finished ones wait in `running`
            return len(running) - len(finished | released) < max(1, width())
        return started < current + max(1, width())

    def start_up_to(current: int) -> None:
        nonlocal started, exhausted
        while not exhausted and may_start(current):
            source = next(pending, None)
            if source is None:
                exhausted = True
                return
            waiting[started] = collections.deque()
            release = functools.partial(events.put_nowait, _Released(started))
            running[started] = asyncio.create_task(_run_source(started, source(release), events))
            started += 1

    try:
        current = 0
        while True:
            start_up_to(current)
            if current >= started:
                return
            queued = waiting[current]
            if queued:
                yield queued.popleft()
                continue
            if current in finished:
                del waiting[current]
                running.pop(current, None)
                finished.discard(current)
                released.discard(current)
                current += 1
                continue
            event = await events.get()
            if isinstance(event, _Failed):
                raise event.error
            if isinstance(event, _Done):
                finished.add(event.source)
            elif isinstance(event, _Released):
                if event.source in running:
                    released.add(event.source)
            else:
                waiting[event.source].append(event.value)
    finally:
        for task in running.values():
            task.cancel()
        await asyncio.gather(*running.values(), return_exceptions=True)


async def _run_source(
    index: int,
    items: AsyncGenerator[Any, None],
    events: asyncio.Queue[_Item | _Done | _Failed | _Released],
) -> None:
    try:
        async with aclosing(items):
            async for item in items:
                events.put_nowait(_Item(index, item))
    except Exception as exc:  # raised by the reader, in the caller's task
        events.put_nowait(_Failed(exc))
        return
    events.put_nowait(_Done(index))
