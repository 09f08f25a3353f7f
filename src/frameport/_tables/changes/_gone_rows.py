"""Which rows of a copy (a Delta table, a backup) are gone from the view, named by ``$id``
(`gone_ids`) or by ``$sequence`` (`gone_sequences`), reading as few rows as the probes allow.

A row's ``$sequence`` never changes and new rows take higher ones, so the view's rows in a
``$sequence`` range of the copy are at most the rows the copy will hold there after this run
(its rows plus the changed rows read in the run). If the row at the position of the copy's
last row of the range (an ``offset`` into the range, one one-row request whatever its size)
is that row, none is gone. The copy's whole range is probed first: a table with no deletes
costs one request. A range that fails is cut into up to `SPLIT` ranges of equal numbers of
held rows, probed again, down to ranges of `RANGE_ROWS` held rows, whose ``$id``s are read;
the rows of those ranges the service no longer lists are gone. Deletes clustered in a few
ranges (old rows purged) cost a few probes and pages; deletes spread evenly read the ``$id``s
of most ranges, as a full scan does.

A row updated into the view and a row deleted from it in the same range, between the read
of the changed rows and the probes, cancel out; the next run sees the difference.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Sequence
from contextlib import aclosing

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..._schema import ArrowArray
from ..read import SequenceRange, TableRead

RANGE_ROWS = 5_000
"""Held rows of a range whose ``$id``s are read rather than probed further (a page)."""

SPLIT = 8
"""Ranges a range that lost rows is cut into."""

CONCURRENT_PROBES = 4
"""Probes in flight at once (the ranges to read are read as a ranged read reads its ranges)."""


def sorted_sequences(sequences: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """`sequences` sorted. They come in ``$sequence`` order or in runs of it (a full read, a
    copy's layers), which a stable sort (timsort) takes in about one pass, where NumPy's
    default quicksort sorts them again (figures: benchmarks/README.md)."""
    return np.sort(sequences, kind="stable")


async def gone_ids(ids: TableRead, synced: pa.Table) -> tuple[ArrowArray, int]:
    """The ``$id``s of `synced` (``$id`` and ``$sequence`` of the rows the Delta table will
    hold, without deletes) that the view `ids` (a read of its rows' ``$id``s) no longer has,
    and how many ``$id``s were read to find them."""
    if synced.num_rows == 0 or not ids.plan.filters:
        return pa.array([], pa.string()), 0
    held = sorted_sequences(synced.column("$sequence").to_numpy())
    differing, arrays = await _listed(ids, held, "$id", pa.string())
    return _missing(synced, differing, arrays), sum(len(part) for part in arrays)


async def gone_sequences(
    ids: TableRead, held: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], int]:
    """The ``$sequence``s among `held` (sorted, each once) that the view `ids` (a read of
    its rows' ``$`` fields) no longer has, and how many rows were read to find them. A row
    deleted and made again under its ``$id`` is gone at its old ``$sequence``."""
    if len(held) == 0 or not ids.plan.filters:
        return np.array([], np.int64), 0
    differing, arrays = await _listed(ids, held, "$sequence", pa.int64())
    inside = held[_in_any(held, differing)]
    listed = np.concatenate([part.to_numpy() for part in arrays]) if arrays else held[:0]
    return inside[np.isin(inside, listed, invert=True)], sum(len(part) for part in arrays)


async def _listed(
    ids: TableRead, held: npt.NDArray[np.int64], column: str, kind: pa.DataType
) -> tuple[list[SequenceRange], list[ArrowArray]]:
    """The ranges of the sorted `held` sequences that may have lost rows, and the `column`
    (of type `kind`) of the rows the view lists in each."""
    whole = SequenceRange(int(held[0]) - 1, int(held[-1]))
    if ids.plan.every_row_kept:  # one request, no client-side filter: the probes are exact
        limit = asyncio.Semaphore(CONCURRENT_PROBES)
        differing = await _differing(ids, held, whole, limit)
    else:
        differing = _cut(held, whole, math.ceil(len(held) / RANGE_ROWS))
    present: list[list[ArrowArray]] = [[] for _ in differing]
    async with aclosing(ids.pages_by_range(differing, collect=True)) as listed:
        async for index, batch in listed:
            present[index].append(batch.column(column))
    return differing, [pa.concat_arrays(part) if part else pa.array([], kind) for part in present]


async def _differing(
    ids: TableRead, held: npt.NDArray[np.int64], part: SequenceRange, limit: asyncio.Semaphore
) -> list[SequenceRange]:
    """The ranges, within `part`, of at most `RANGE_ROWS` held rows that may have lost rows."""
    start, end = np.searchsorted(held, [part.after, part.upto], side="right")
    if start == end:  # nothing held here, so nothing to lose
        return []
    async with limit:
        found = await ids.within(part).sequence_at(int(end - start) - 1)
    if found == int(held[end - 1]):
        return []
    if end - start <= RANGE_ROWS:
        return [part]
    parts = _cut(held[start:end], part, min(SPLIT, math.ceil((end - start) / RANGE_ROWS)))
    found_parts = await asyncio.gather(*(_differing(ids, held, piece, limit) for piece in parts))
    return [piece for pieces in found_parts for piece in pieces]


def _cut(held: npt.NDArray[np.int64], part: SequenceRange, pieces: int) -> list[SequenceRange]:
    """`part` cut into `pieces` ranges holding nearly equal numbers of the sorted `held`
    sequences (all inside `part`)."""
    cuts = [int(held[len(held) * number // pieces - 1]) for number in range(1, pieces)]
    edges = [part.after, *cuts, part.upto]
    return [SequenceRange(after, upto) for after, upto in itertools.pairwise(edges) if upto > after]


def _missing(
    synced: pa.Table, ranges: Sequence[SequenceRange], present: Sequence[ArrowArray]
) -> ArrowArray:
    """The ``$id``s of `synced` inside `ranges` that are not in `present`."""
    if not ranges:
        return pa.array([], pa.string())
    inside = _in_any(synced.column("$sequence").to_numpy(), ranges)
    candidates = synced.filter(pa.array(inside)).column("$id").combine_chunks()
    listed = pa.concat_arrays(present) if present else pa.array([], pa.string())
    return candidates.filter(pc.invert(pc.is_in(candidates, value_set=listed)))


def _in_any(
    values: npt.NDArray[np.int64], ranges: Sequence[SequenceRange]
) -> npt.NDArray[np.bool_]:
    """Whether each of `values` lies in one of `ranges` (sorted, apart)."""
    if not ranges:
        return np.zeros(len(values), bool)
    starts = np.array([part.after for part in ranges])
    ends = np.array([part.upto for part in ranges])
    position = np.searchsorted(ends, values, side="left")
    found = position < len(ranges)
    clipped = np.minimum(position, len(ranges) - 1)
    inside: npt.NDArray[np.bool_] = found & (values > starts[clipped]) & (values <= ends[clipped])
    return inside
