"""Which rows of a copy (a Delta table, a backup) are gone from the view, reading as few
``$id``s as the counts allow.

The service counts exactly below 5,000 rows, so the copy's ``$sequence`` range is cut into
ranges of `COUNT_SPAN` values, and the service's count of the view in each range (a one-row
request) is compared with the rows the copy will hold there after this run (its rows plus
the changed rows read in the run). Only the ranges whose counts differ
have their ``$id``s read; the rows of those ranges the service no longer lists are gone.
Deletes clustered in a few ranges (old rows purged) cost a few pages; deletes spread evenly
read the ``$id``s of most ranges, as a full scan does.

A row updated into the view and a row deleted from it in the same range, between the read
of the changed rows and the counts, cancel out; the next run sees the difference.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import aclosing
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..read import SequenceRange, TableRead

COUNT_SPAN = 4_999
"""``$sequence`` values per counted range: fewer than the service's count cap (5,000)."""

CONCURRENT_COUNTS = 4
"""Counts in flight at once (the ranges whose counts differ are read as a ranged read reads
its ranges)."""


async def gone_ids(ids: TableRead, synced: pa.Table) -> tuple[pa.Array[Any], int]:
    """The ``$id``s of `synced` (``$id`` and ``$sequence`` of the rows the Delta table will
    hold, without deletes) that the view `ids` (a read of its rows' ``$id``s) no longer has,
    and how many ``$id``s were read to find them."""
    if synced.num_rows == 0 or not ids.plan.filters:
        return pa.array([], pa.string()), 0
    sequences = synced.column("$sequence").to_numpy()
    ranges = _ranges(int(sequences.min()), int(sequences.max()))
    edges = np.array([ranges[0].after, *(r.upto for r in ranges)])
    expected = np.histogram(sequences, bins=edges + 0.5)[0]
    limit = asyncio.Semaphore(CONCURRENT_COUNTS)

    async def count(part: SequenceRange) -> int:
        async with limit:
            return await ids.within(part).service_count()

    if ids.plan.every_row_kept:  # one request, no client-side filter: the counts are exact
        counts = await asyncio.gather(*(count(part) for part in ranges))
        differing = [part for part, n, m in zip(ranges, counts, expected, strict=True) if n != m]
    else:
        differing = ranges
    present: list[list[pa.Array[Any]]] = [[] for _ in differing]
    async with aclosing(ids.pages_by_range(differing, collect=True)) as listed:
        async for index, batch in listed:
            present[index].append(batch.column("$id"))
    arrays = [pa.concat_arrays(part) if part else pa.array([], pa.string()) for part in present]
    return _missing(synced, differing, arrays), sum(len(part) for part in arrays)


def _ranges(first: int, last: int) -> list[SequenceRange]:
    return [
        SequenceRange(after, min(after + COUNT_SPAN, last))
        for after in range(first - 1, last, COUNT_SPAN)
    ]


def _missing(
    synced: pa.Table, ranges: Sequence[SequenceRange], present: Sequence[pa.Array[Any]]
) -> pa.Array[Any]:
    """The ``$id``s of `synced` inside `ranges` that are not in `present`."""
    if not ranges:
        return pa.array([], pa.string())
    inside = _in_any(synced.column("$sequence"), ranges)
    candidates = synced.filter(inside).column("$id").combine_chunks()
    listed = pa.concat_arrays(present) if present else pa.array([], pa.string())
    return candidates.filter(pc.invert(pc.is_in(candidates, value_set=listed)))


def _in_any(sequence: pa.ChunkedArray[Any], ranges: Sequence[SequenceRange]) -> pa.Array[Any]:
    values = sequence.to_numpy()
    starts = np.array([part.after for part in ranges])
    ends = np.array([part.upto for part in ranges])
    position = np.searchsorted(ends, values, side="left")
    found = position < len(ranges)
    clipped = np.minimum(position, len(ranges) - 1)
    return pa.array(found & (values > starts[clipped]) & (values <= ends[clipped]))
