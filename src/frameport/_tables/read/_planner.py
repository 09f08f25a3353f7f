"""The partition planner: the rows of a read cut into ranges of ``$sequence`` sized by an
estimate of their rows and bytes, for the engines (dask, Ray) and the resumable export.

How it estimates (`estimate`): the first and last ``$sequence`` under the filter, then that
span cut into `STRATA` equal strata and, of each, one request for its first `SAMPLE_ROWS`
rows in ``$sequence`` order, counted by the service (all sent at once). A stratum's rows are
the service's count when it is exact (below `TOTAL_CAP`), else its span times the density
of its sample (rows per ``$sequence`` value); its bytes are its rows times its sample's size
per row in Arrow memory, as the read decodes and projects it. The rows a client-side filter
drops are taken out in the sample's proportion. Sampling each stratum, not the first page
only, keeps the estimate honest on tables whose rows grow wider (or sparser) as they go.

`plan_partitions` cuts where the estimated running total (bytes, or rows) reaches equal
shares, interpolating linearly inside a stratum, so a deleted block or a run of wide rows
does not leave one partition empty and another heavy.

>>> plan = await plan_partitions(read, parts=8)      # doctest: +SKIP
>>> [(p.range, p.rows, p.bytes) for p in plan.partitions]  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from ..._core._pages import TOTAL_CAP, fetch_page
from ..._schema import InferredSchema
from .._decode import decoded
from ._probes import sequence_bounds
from ._ranges import SEQUENCE, SequenceRange, split_ranges

if TYPE_CHECKING:
    from ._plan import Plan
    from ._table_read import TableRead

STRATA = 4
"""The equal parts of the ``$sequence`` span the planner samples, each with one request."""

SAMPLE_ROWS = 200
"""The rows sampled from the start of each stratum."""


@dataclass(frozen=True)
class Stratum:
    """A part of the span with its estimated rows and bytes."""

    range: SequenceRange
    rows: float
    bytes: float


@dataclass(frozen=True)
class Partition:
    """A range of ``$sequence`` and the rows and bytes (Arrow memory) estimated in it."""

    range: SequenceRange
    rows: int
    bytes: int


@dataclass(frozen=True)
class PartitionPlan:
    """A read's partitions, in ``$sequence`` order (none: no row matches)."""

    partitions: tuple[Partition, ...]

    @property
    def rows(self) -> int:
        """The estimated rows of every partition."""
        return sum(partition.rows for partition in self.partitions)

    @property
    def bytes(self) -> int:
        """The estimated bytes (Arrow memory) of every partition."""
        return sum(partition.bytes for partition in self.partitions)

    @property
    def ranges(self) -> list[SequenceRange]:
        return [partition.range for partition in self.partitions]


async def estimate(read: TableRead, *, after: int | None = None) -> list[Stratum]:
    """The read's rows as `STRATA` strata with their estimated rows and bytes (none: no row
    matches). `after`: a ``$sequence`` below every row's, where the first stratum starts."""
    plan = read.plan
    if not plan.reads_rows:
        return []
    bounds = await sequence_bounds(read.requester, plan, first=after is None)
    if bounds is None:
        return []
    start = bounds.after if after is None else min(after, bounds.after)
    strata = split_ranges(start + 1, bounds.upto, STRATA)
    inferred = None if read.inferred is None else InferredSchema()
    samples = await asyncio.gather(*(_sample(read, plan, part, inferred) for part in strata))
    return list(samples)


async def plan_partitions(
    read: TableRead,
    *,
    parts: int | None = None,
    rows: int | None = None,
    bytes: int | None = None,
    at_least: int = 1,
    after: int | None = None,
) -> PartitionPlan:
    """The read's rows cut into `parts` partitions of equal estimated bytes, or into
    partitions of at most `rows` estimated rows or `bytes` estimated bytes (exactly one of
    the three), and then into `at_least` (as many as the workers, so that none idles).
    `after`: as for `estimate`."""
    if sum(option is not None for option in (parts, rows, bytes)) != 1:
        raise ValueError("plan_partitions() takes one of parts=, rows= or bytes=")
    strata = await estimate(read, after=after)
    if not strata:
        return PartitionPlan(())
    total_rows = sum(stratum.rows for stratum in strata)
    total_bytes = sum(stratum.bytes for stratum in strata)
    if parts is None:
        size, total = (rows, total_rows) if rows is not None else (bytes, total_bytes)
        assert size is not None
        parts = max(at_least, -(-round(total) // max(1, size)))
    by_rows = rows is not None
    return PartitionPlan(tuple(_cut(strata, parts, by_rows=by_rows)))


async def _sample(
    read: TableRead, plan: Plan, part: SequenceRange, inferred: InferredSchema | None
) -> Stratum:
    """`part` with its rows and bytes estimated from its first `SAMPLE_ROWS` rows."""
    within = replace(plan.within(part), spec=replace(plan.spec, order=((SEQUENCE, True),)))
    body = await fetch_page(
        read.requester, within.location.rows_path, within.requests[0], SAMPLE_ROWS
    )
    total, sent = await decoded(within.decoder(inferred, filtered=False), body)
    if not sent.num_rows:
        return Stratum(part, 0.0, 0.0)
    kept = (await decoded(within.decoder(inferred), body))[1]
    if total < TOTAL_CAP:
        service_rows = float(total)
    else:  # the sample's density over the stratum's span
        last = sent.column(SEQUENCE)[sent.num_rows - 1].as_py()
        service_rows = part.span * sent.num_rows / max(1, last - part.after)
    rows = service_rows * kept.num_rows / sent.num_rows
    per_row = _nbytes(within.project(kept)) / kept.num_rows if kept.num_rows else 0.0
    return Stratum(part, rows, rows * per_row)


def _nbytes(batch: pa.RecordBatch) -> int:
    """The Arrow memory `batch` holds (its buffers, as a reader of the partition holds them)."""
    return int(batch.get_total_buffer_size())


def _cut(strata: list[Stratum], parts: int, *, by_rows: bool) -> list[Partition]:
    """The strata's span cut into `parts` ranges (fewer when it spans fewer values) where
    their running weight reaches equal shares; each with its estimated rows and bytes."""
    first, last = strata[0].range.after, strata[-1].range.upto
    parts = max(1, min(parts, last - first))
    weights = [stratum.rows if by_rows else stratum.bytes for stratum in strata]
    total = sum(weights)
    edges = [first]
    for index in range(1, parts):
        if total > 0:
            edge = _position(strata, weights, total * index / parts)
        else:  # nothing estimated: equal spans
            edge = first + (last - first) * index // parts
        # strictly increasing, leaving one value for each range still to come
        edges.append(min(max(edge, edges[-1] + 1), last - (parts - index)))
    edges.append(last)
    partitions = []
    for low, high in itertools.pairwise(edges):
        part = SequenceRange(low, high)
        rows = sum(_share(stratum, part) * stratum.rows for stratum in strata)
        size = sum(_share(stratum, part) * stratum.bytes for stratum in strata)
        partitions.append(Partition(part, round(rows), round(size)))
    return partitions


def _position(strata: list[Stratum], weights: list[float], target: float) -> int:
    """The ``$sequence`` where the running weight reaches `target`, linear inside a stratum."""
    passed = 0.0
    for stratum, weight in zip(strata, weights, strict=True):
        if weight > 0 and passed + weight >= target:
            part = stratum.range
            return part.after + round(part.span * (target - passed) / weight)
        passed += weight
    return strata[-1].range.upto


def _share(stratum: Stratum, part: SequenceRange) -> float:
    """The share of `stratum`'s span that `part` covers."""
    low, high = max(stratum.range.after, part.after), min(stratum.range.upto, part.upto)
    return max(0, high - low) / stratum.range.span if stratum.range.span else 0.0
