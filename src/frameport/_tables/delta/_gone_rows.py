"""Which synced rows are gone from the view, reading as few ``$id``s as the counts allow.

The service counts exactly below 5,000 rows, so the Delta table's ``$sequence`` range is cut
into ranges of `COUNT_SPAN` values, and the service's count of the view in each range (a
one-row request) is compared with the rows the Delta table will hold there after this run's
merge (its rows plus the changed rows read in the run). Only the ranges whose counts differ
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
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._core._queries import select_query
from ..._schema import SYSTEM_SCHEMA
from .._location import TableLocation
from ..read._cursor import fetch_page
from ..read._decode import decode_page
from ..read._plan import Plan
from ..read._ranged import SequenceRange, ranged_plan
from ..read._serial import plan_batches

if TYPE_CHECKING:
    from ..._core import Requester

COUNT_SPAN = 4_999
"""``$sequence`` values per counted range: fewer than the service's count cap (5,000)."""

CONCURRENT_REQUESTS = 4
"""Counts (and reads of ``$id``s) in flight at once."""


async def gone_ids(
    requester: Requester, location: TableLocation, ids_plan: Plan, synced: pa.Table
) -> tuple[pa.Array[Any], int]:
    """The ``$id``s of `synced` (``$id`` and ``$sequence`` of the rows the Delta table will
    hold, without deletes) that the view of `ids_plan` (its ``$id``s only) no longer has, and
    how many ``$id``s were read to find them."""
    if synced.num_rows == 0 or not ids_plan.requests:
        return pa.array([], pa.string()), 0
    sequences = synced.column("$sequence").to_numpy()
    ranges = _ranges(int(sequences.min()), int(sequences.max()))
    edges = np.array([ranges[0].after, *(r.upto for r in ranges)])
    expected = np.histogram(sequences, bins=edges + 0.5)[0]
    member = requester.query_member_for(location.rows_path)
    limit = asyncio.Semaphore(CONCURRENT_REQUESTS)

    async def count(part: SequenceRange) -> int:
        queries = [*ids_plan.compiled.requests[0], *part.queries(member), select_query(["$id"])]
        async with limit:
            body = await fetch_page(requester, location.rows_path, queries, 1)
        total, _ = decode_page(body, SYSTEM_SCHEMA, items_key=location.items_key)
        return total

    if ids_plan.every_row_kept:  # one request, no client-side filter: the counts are exact
        counts = await asyncio.gather(*(count(part) for part in ranges))
        differing = [part for part, n, m in zip(ranges, counts, expected, strict=True) if n != m]
    else:
        differing = ranges

    async def listed(part: SequenceRange) -> pa.Array[Any]:
        async with limit:
            stream = plan_batches(
                requester, location, ranged_plan(ids_plan, part, member), None, collect=True
            )
            async with aclosing(stream):
                batches = [batch.column("$id") async for batch in stream]
        return pa.concat_arrays(batches) if batches else pa.array([], pa.string())

    present = await asyncio.gather(*(listed(part) for part in differing))
    return _missing(synced, differing, present), sum(len(ids) for ids in present)


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
