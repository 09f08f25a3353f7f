"""Which rows of a copy (a Delta table, a backup, a live table) are gone from the view, named
by ``$id`` (`gone_ids`) or by ``$sequence`` (`gone_sequences`), reading as few rows as the
counts allow.

A row's ``$sequence`` never changes and new rows take higher ones, so the view's rows in a
``$sequence`` range of the copy are at most the rows the copy will hold there after this run
(its rows plus the changed rows read in the run); rows inserted after the copy's last
``$sequence`` lie beyond every range. So the service's count of the view's rows in a range
(a one-row request with the view's filter) against the copy's rows there says how many it
lost. The service's counts stop at `TOTAL_CAP`: a range holding more rows is probed instead
by the position of its last held row (an ``offset``: none lost if that row is there).

The copy's whole range is probed first: a table with no deletes costs one request. A range
that lost rows is cut into up to `SPLIT` ranges of equal numbers of held rows and those are
counted (all but the last: its loss is the rest), down to ranges where listing the
``$id``s costs less than counting further (`_listing_pays`, by `ROWS_PER_REQUEST`); a range
that lost every held row needs no listing. Deletes clustered in a few ranges (old rows
purged) cost a few counts and a short list; deletes spread evenly list most ranges, as a
scan of the ``$id``s does.

A row updated into the view and a row deleted from it in the same range, between the read
of the changed rows and the counts, cancel out; the next run sees the difference.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..._core._pages import TOTAL_CAP
from ..._schema import ArrowArray
from ..read import SequenceRange, TableRead

SPLIT = 8
"""Ranges a range that lost rows is cut into."""

ROWS_PER_REQUEST = 600
"""About as many ``$id``s as one request costs to list (a count against a page of rows, on
the local service: figures in benchmarks/README.md)."""

CONCURRENT_PROBES = 4
"""Counts in flight at once (the ranges to list are read as a ranged read reads its ranges)."""


@dataclass
class Tally:
    """What a search for gone rows cost: its requests (counts, probes, pages) and the rows
    it listed."""

    requests: int = 0
    rows: int = 0


def sorted_sequences(sequences: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """`sequences` sorted. They come in ``$sequence`` order or in runs of it (a full read, a
    copy's layers), which a stable sort (timsort) takes in about one pass, where NumPy's
    default quicksort sorts them again (figures: benchmarks/README.md)."""
    return np.sort(sequences, kind="stable")


async def gone_ids(
    ids: TableRead, synced: pa.Table, tally: Tally | None = None
) -> tuple[ArrowArray, int]:
    """The ``$id``s of `synced` (``$id`` and ``$sequence`` of the rows the copy will hold,
    without deletes) that the view `ids` (a read of its rows' ``$id``s) no longer has, and
    how many ``$id``s were read to find them (`tally`, if given, adds up the requests)."""
    if synced.num_rows == 0 or not ids.plan.filters:
        return pa.array([], pa.string()), 0
    held = sorted_sequences(synced.column("$sequence").to_numpy())
    differing, arrays = await _listed(ids, held, "$id", pa.string(), tally or Tally())
    return _missing(synced, differing, arrays), sum(len(part) for part in arrays)


async def gone_sequences(
    ids: TableRead, held: npt.NDArray[np.int64], tally: Tally | None = None
) -> tuple[npt.NDArray[np.int64], int]:
    """The ``$sequence``s among `held` (sorted, each once) that the view `ids` (a read of
    its rows' ``$`` fields) no longer has, and how many rows were read to find them. A row
    deleted and made again under its ``$id`` is gone at its old ``$sequence``."""
    if len(held) == 0 or not ids.plan.filters:
        return np.array([], np.int64), 0
    differing, arrays = await _listed(ids, held, "$sequence", pa.int64(), tally or Tally())
    inside = held[_in_any(held, differing)]
    listed = np.concatenate([part.to_numpy() for part in arrays]) if arrays else held[:0]
    return inside[np.isin(inside, listed, invert=True)], sum(len(part) for part in arrays)


async def _listed(
    ids: TableRead, held: npt.NDArray[np.int64], column: str, kind: pa.DataType, tally: Tally
) -> tuple[list[SequenceRange], list[ArrowArray]]:
    """The ranges of the sorted `held` sequences that may have lost rows, and the `column`
    (of type `kind`) of the rows the view lists in each (none where every held row is gone)."""
    whole = SequenceRange(int(held[0]) - 1, int(held[-1]))
    if ids.plan.every_row_kept:  # one request, no client-side filter: the counts are exact
        found = await _Search(ids, held, tally).losses(whole, None)
    else:
        found = [(part, False) for part in _cut(held, whole, math.ceil(len(held) / TOTAL_CAP))]
    listing = [part for part, emptied in found if not emptied]
    present: dict[SequenceRange, list[ArrowArray]] = {part: [] for part in listing}
    async with aclosing(ids.pages_by_range(listing, collect=True)) as pages:
        async for index, batch in pages:
            present[listing[index]].append(batch.column(column))
    arrays = [pa.concat_arrays(present.get(part) or [pa.array([], kind)]) for part, _ in found]
    tally.requests += len(listing)
    tally.rows += sum(len(array) for array in arrays)
    return [part for part, _ in found], arrays


@dataclass
class _Search:
    """The ranges of the sorted `held` sequences that lost rows, found by counts (see the
    module docstring)."""

    ids: TableRead
    held: npt.NDArray[np.int64]
    tally: Tally
    limit: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(CONCURRENT_PROBES))

    async def losses(
        self, part: SequenceRange, lost: int | None
    ) -> list[tuple[SequenceRange, bool]]:
        """The ranges within `part` to list, each with whether it lost every held row;
        `lost`: how many held rows `part` lost, if known (else it is counted here)."""
        held = self._within(part)
        rows = len(held)
        if lost is None:
            lost = await self._lost(part, held)
        if lost == 0:
            return []
        if lost == rows:
            return [(part, True)]
        if rows <= TOTAL_CAP and (lost < 0 or _listing_pays(rows, lost)):
            return [(part, False)]
        wanted = math.ceil(rows / TOTAL_CAP) if rows > TOTAL_CAP else rows  # countable pieces
        pieces = _cut(held, part, min(SPLIT, wanted))
        losses: list[int | None] = [None] * len(pieces)
        if lost > 0:  # counted exactly: the last piece lost what the others did not
            counted = await asyncio.gather(*(self._lost(piece) for piece in pieces[:-1]))
            losses = [*counted, lost - sum(counted) if min(counted, default=0) >= 0 else None]
        found = await asyncio.gather(
            *(self.losses(piece, lost) for piece, lost in zip(pieces, losses, strict=True))
        )
        return [item for items in found for item in items]

    def _within(self, part: SequenceRange) -> npt.NDArray[np.int64]:
        start, end = np.searchsorted(self.held, [part.after, part.upto], side="right")
        return self.held[start:end]

    async def _lost(self, part: SequenceRange, held: npt.NDArray[np.int64] | None = None) -> int:
        """How many held rows `part` lost: counted (-1: some, as the view has rows there
        that are not held), or above the service's count cap probed (0, or -1: some)."""
        held = self._within(part) if held is None else held
        rows, within = len(held), self.ids.within(part)
        if rows == 0:  # nothing held here, so nothing to lose
            return 0
        self.tally.requests += 1
        async with self.limit:
            if rows > TOTAL_CAP:
                found = await within.sequence_at(rows - 1)
                return 0 if found == int(held[-1]) else -1
            count = await within.service_count()
        return rows - count if count <= rows else -1


def _listing_pays(rows: int, lost: int) -> bool:
    """Whether listing the ``$id``s of a range of `rows` held rows that lost `lost` of them
    costs less than counting its pieces and listing those that lost rows, were the losses
    spread evenly (a request costing as much as listing `ROWS_PER_REQUEST` rows)."""
    pieces = min(SPLIT, rows)
    losing = pieces * (1 - (1 - 1 / pieces) ** lost)
    split = (pieces - 1) * ROWS_PER_REQUEST + losing * (ROWS_PER_REQUEST + rows / pieces)
    return ROWS_PER_REQUEST + rows <= split


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
