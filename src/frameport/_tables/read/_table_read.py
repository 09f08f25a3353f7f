"""One read of a table query, built once per call: the plan, the requester that sends it,
how it runs (`ReadStrategy`, which `explain` prints) and what it learns of inferred types.

`pages` is the result, serially or in ranges of ``$sequence`` (`stream`: with a progress
bar); `count` the number of its rows; `pages_by_range` reads ranges the partition planner
cut (`_planner`: export segments) the way a ranged read reads its own; `within`,
`narrowed` and `ids_only` are the same read restricted to a range, to more filters, or to the
rows' IDs.

>>> read = await TableRead.make(requester, location, QuerySpec(head=5))   # doctest: +SKIP
>>> [batch async for batch in read.pages(collect=True)]                   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..._core._adaptive import AUTO, Parallel
from ..._core._fan_in import in_order
from ..._core._pages import TOTAL_CAP, fetch_page
from ..._core._progress import finish, progress_bar
from ..._core._queries import offset_query
from ..._schema import SYSTEM_SCHEMA, InferredSchema
from .._decode import decoded
from .._location import TableLocation
from .._system import System
from ._plan import Plan, QuerySpec, make_plan, plan_before_columns
from ._probes import Opening, one_row, sequence_bounds
from ._ranged import GUESSED_WORK_PER_ROW, range_reads, ranged_batches
from ._ranges import SequenceRange, sequence_above
from ._serial import learn_columns, serial_batches
from ._strategy import Obstacle, ReadStrategy, range_obstacle

if TYPE_CHECKING:
    from tqdm import tqdm

    from ..._core import Requester


@dataclass(frozen=True, eq=False)
class TableRead:
    """One read of a table query (see the module docstring). `inferred` collects the column
    types seen when the table's own cannot be read (None: they can); `opening` holds the
    requests sent before the plan was made, which `pages` takes when they serve it (else it
    sends its own) and closes."""

    requester: Requester
    plan: Plan
    strategy: ReadStrategy
    inferred: InferredSchema | None
    opening: Opening | None = field(default=None, repr=False)

    @classmethod
    async def make(
        cls,
        requester: Requester,
        location: TableLocation,
        spec: QuerySpec,
        *,
        page_size: int | None = None,
        parallel: Parallel = AUTO,
        reading: bool = False,
        columns: list[dict[str, Any]] | None = None,
    ) -> TableRead:
        """The read of `spec` on the table at `location` (`columns`: the models of its
        columns, when the caller has them already; else they are asked for). A read
        `reading` its pages next, without a filter, sends its `Opening` before the table's
        columns arrive (its requests do not depend on them)."""
        member = requester.query_member_for(location.rows_path)
        early = plan_before_columns(location, member, spec, page_size) if reading else None
        opening = None
        if early is not None:
            ranged = ReadStrategy.of(early, parallel, inferred=False).ranged
            opening = Opening.send(requester, early, ranged=ranged)
        try:
            plan = await make_plan(requester, location, member, spec, page_size, columns=columns)
        except BaseException:
            await Opening.close_all(opening)
            raise
        strategy = ReadStrategy.of(plan, parallel)
        inferred = InferredSchema() if plan.fetched is None else None
        return cls(requester, plan, strategy, inferred, opening)

    # -- reading -------------------------------------------------------------------------------

    async def pages(
        self, bar: tqdm[object] | None = None, *, collect: bool
    ) -> AsyncGenerator[pa.RecordBatch]:
        """The result batches, in the result's order. `collect` says the caller keeps every
        batch (memory need not be bounded); `bar` counts the rows. The read's `opening` is
        taken when it serves (the columns may have made another read of the query, or it
        was taken), and closed here with the one sent instead."""
        ranged, early = self.strategy.ranged, self.opening
        serves = early is not None and early.serves(self.plan, ranged=ranged)
        opening = early if serves else Opening.send(self.requester, self.plan, ranged=ranged)
        try:
            if ranged:
                controller = self.strategy.controller()
                streaming = not collect
                batches = ranged_batches(
                    self.requester, self.plan, controller, bar, streaming=streaming, opening=opening
                )
            else:
                batches = serial_batches(
                    self.requester, self.plan, self.inferred, bar, collect=collect, opening=opening
                )
            async with aclosing(batches):
                async for batch in batches:
                    yield batch
        finally:
            await Opening.close_all(early, opening)

    async def stream(self, progress: bool | None) -> AsyncGenerator[pa.RecordBatch]:
        """The result batches as they come, in bounded memory, on a progress bar (shown
        when `progress`)."""
        with self.bar(progress) as bar:
            async with aclosing(self.pages(bar, collect=False)) as batches:
                async for batch in batches:
                    yield batch

    async def collect(self, progress: bool | None) -> tuple[list[pa.RecordBatch], pa.Schema]:
        """Every result batch (a progress bar shown when `progress`), and the result's
        schema."""
        with self.bar(progress) as bar:
            async with aclosing(self.pages(bar, collect=True)) as pages:
                batches = [batch async for batch in pages]
        return batches, self.result_schema(batches)

    async def first_page(self, rows: int) -> tuple[int | None, pa.RecordBatch]:
        """The service's count of the rows of the first request (None: none is sent) and up
        to `rows` result rows of its first page, one request (a preview: the client's part
        of a filter may keep fewer). Inferred types are learned as for an empty result."""
        plan, inferred = self.plan, self.inferred
        limit = rows if plan.head is None else min(rows, plan.head)
        total, batch = None, pa.RecordBatch.from_pylist([], schema=plan.output or SYSTEM_SCHEMA)
        if plan.reads_rows and limit > 0:
            path, queries = plan.location.rows_path, plan.requests[0]
            body = await fetch_page(self.requester, path, queries, limit)
            total, batch = await decoded(plan.decoder(inferred), body)
        if inferred is not None:
            if not batch.num_rows:
                await learn_columns(self.requester, plan, inferred)
            batch = inferred.conform(batch)
        return total, plan.project(batch)

    async def schema(self) -> pa.Schema:
        """The result's schema: the table's types, or (inferred from the rows) those of the
        first row, read now."""
        if self.plan.output is not None:
            return self.plan.output
        plan = replace(self.plan, spec=self.plan.spec.first(1))
        first = TableRead(self.requester, plan, ReadStrategy.of(plan, 1), InferredSchema())
        return (await first.collect(progress=False))[1]

    async def pages_by_range(
        self, ranges: Sequence[SequenceRange], *, collect: bool, distance: float | None = None
    ) -> AsyncGenerator[tuple[int, pa.RecordBatch]]:
        """The batches of the rows in each of `ranges`, each with the index of its range,
        range after range; the ranges are read as a ranged read reads its own, as many at
        once as this read's controller says (with ``"auto"``, as many as `distance`, the round
        trip of a request made just before, calls for to start with)."""
        concurrency = self.strategy.controller()
        if distance is not None:
            concurrency.guess(distance, GUESSED_WORK_PER_ROW * self.plan.page_size)
        reads = range_reads(self.requester, self.plan, ranges, concurrency, collect=collect)
        tagged = ((slot, _tagged(index, batches)) for index, (slot, batches) in enumerate(reads))
        async with aclosing(in_order(tagged, concurrency, keep_all=collect)) as batches:
            async for item in batches:
                yield item

    async def count(self) -> int:
        """The number of result rows: the service's count when it is exact, else counted
        page by page over the rows' IDs."""
        plan = self.plan
        if not plan.filters or plan.head == 0:
            return 0
        if plan.every_row_kept:
            total = await self.service_count()
            if total < TOTAL_CAP:
                return total if plan.head is None else min(total, plan.head)
        async with aclosing(self.ids_only().pages(collect=False)) as batches:
            return sum([batch.num_rows async for batch in batches])

    async def service_count(self) -> int:
        """The service's count of the rows its first request keeps (up to `TOTAL_CAP`)."""
        if not self.plan.filters:
            return 0
        return (await one_row(self.requester, self.plan, self.plan.filters[0]))[0]

    async def sequence_at(self, position: int) -> int | None:
        """The ``$sequence`` of the row at `position` (from 0, in ``$sequence`` order) among
        those its first request keeps, or None when there are no more; one one-row request,
        at any position (the service's counts stop at `TOTAL_CAP`, its offsets do not)."""
        if not self.plan.filters:
            return None
        filters = [*self.plan.filters[0], offset_query(position)]
        _, found = await one_row(self.requester, self.plan, filters, ascending=True, counted=False)
        return found

    # -- the same read, restricted ---------------------------------------------------------------

    def at_most(self, parallel: int) -> TableRead:
        """This read with at most `parallel` ranges at once (a serial read stays serial)."""
        if not self.strategy.ranged:
            return self
        return replace(self, strategy=ReadStrategy(parallel, None))

    def within(self, part: SequenceRange) -> TableRead:
        """This read restricted to the rows of `part`."""
        return replace(self, plan=self.plan.within(part), opening=None)

    def narrowed(self, *queries: str) -> TableRead:
        """This read with the filter query strings `queries` added to every request."""
        return replace(self, plan=self.plan.narrowed(*queries), opening=None)

    def after(self, sequence: int) -> TableRead:
        """This read of the rows after ``$sequence`` `sequence` only."""
        return self.narrowed(sequence_above(sequence, self.plan.member))

    def showing(self, system: System) -> TableRead:
        """This read showing the ``$`` fields `system` names (it sends the same requests)."""
        return replace(self, plan=replace(self.plan, spec=self.plan.spec.showing(system)))

    def ids_only(self) -> TableRead:
        """This read of the rows' ``$`` fields only, in ``$sequence`` order."""
        plan = self.plan.ids_only()
        strategy = ReadStrategy.of(plan, self.strategy.parallel)
        inferred = None if self.inferred is None else InferredSchema()
        return TableRead(self.requester, plan, strategy, inferred)

    # -- what it is ------------------------------------------------------------------------------

    @property
    def obstacle(self) -> Obstacle | None:
        """What keeps the rows from being read in ranges of ``$sequence`` (None: nothing)."""
        return range_obstacle(self.plan)

    def result_schema(self, batches: Sequence[pa.RecordBatch]) -> pa.Schema:
        """The schema of a result made of `batches` (for inferred types: of what was seen)."""
        return self.plan.result_schema(batches, self.inferred)

    @contextmanager
    def bar(self, progress: bool | None) -> Iterator[tqdm[object]]:
        """A progress bar of this read's rows (`progress`: None decides by the terminal),
        given its total once the read learns it and left at 100% when the read ends."""
        desc = str(self.plan.location)
        with progress_bar(total=None, unit="rows", desc=desc, enabled=progress) as bar:
            yield bar
            finish(bar)

    def explain(self) -> str:
        """What the read sends and what the client does with the answers, and whether it
        runs in concurrent ranges (and if not, why), in plain words."""
        plan = self.plan
        lines = [
            f"{' · '.join(plan.spec.describe(plan.location))}: the rows come from "
            f"GET {plan.location.rows_path}, {plan.page_size:,} at a time, each page "
            "starting after the last row of the one before."
        ]
        requests = plan.requests
        if not requests:
            lines.append("No request: the filter matches no row.")
        for number, queries in enumerate(requests, start=1):
            lines.append(f"Request {number} of {len(requests)}, as the service receives it:")
            lines.extend(f"  {query}" for query in queries or ["(no condition: every row)"])
        if len(requests) > 1:
            lines.append(
                "The filter does not fit in one request, so it is sent as several; their rows "
                "are joined, each row once."
            )
        if plan.residual is not None:
            condition = f"Then the client keeps the rows where {plan.residual!r}. Why:"
            lines.append(f"{condition} {WHY_THE_CLIENT_CHECKS}")
        if plan.client_order:
            lines.append("The client sorts the joined rows the way the service would.")
        if plan.head is not None:
            lines.append(f"The read stops after {plan.head:,} rows.")
        if plan.fetched is None:
            lines.append(
                "This client may not read the table's column types, so they are inferred from "
                "the rows."
            )
        if requests:
            lines.append(self.strategy.describe())
            lines.append(self.requester.wire_encoding().describe())
        return "\n".join(lines)


WHY_THE_CLIENT_CHECKS = (
    "the service may send more rows than that (it compares text without regard to case or "
    "accents, and takes a filter too long for one request in a looser form), so the client "
    "checks every row as pandas would; a condition the service cannot take is checked by the "
    "client only."
)
"""Why a read applies part of its filter itself, after what it sent (`explain`)."""


async def _tagged(
    index: int, batches: AsyncGenerator[pa.RecordBatch]
) -> AsyncGenerator[tuple[int, pa.RecordBatch]]:
    async with aclosing(batches):
        async for batch in batches:
            yield index, batch


async def table_last_sequence(requester: Requester, location: TableLocation) -> int | None:
    """The ``$sequence`` of the last row of the table at `location` now (None: it has none):
    one one-row request, which needs none of the table's columns."""
    member = requester.query_member_for(location.rows_path)
    plan = plan_before_columns(location, member, QuerySpec(), None)
    assert plan is not None, "a query without a filter is planned before the columns"
    bounds = await sequence_bounds(requester, plan, first=False)
    return None if bounds is None else bounds.upto
