"""Counting and checking the batches an export writes, and checking the file it wrote.

`PageWatch` sits between the read and the writer: it counts pages, rows and Arrow bytes and
checks that ``$sequence`` only grows from batch to batch (the order of the read), on the
batches of `watched_read`, which shows ``$sequence`` whatever the export writes; `written`
then keeps the columns the export's own read shows. `file_checks` reads the written file
back: the hashes of its ``$id`` column (when it has one), row group by row group, and the
row count of its footer, compared with the rows the watch saw listed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..read import SEQUENCE, TableRead
from ._report import ExportChecks


def watched_read(read: TableRead) -> TableRead:
    """`read` also showing ``$sequence``, which `PageWatch` checks (it sends the same
    requests)."""
    return read.showing([*read.plan.shown_system, SEQUENCE])


async def written(
    read: TableRead, batches: AsyncIterator[pa.RecordBatch]
) -> AsyncIterator[pa.RecordBatch]:
    """`batches` of `watched_read(read)` with the columns `read` shows."""
    async for batch in batches:
        yield read.plan.project(batch)


@dataclass
class PageWatch:
    """Counts of what went by, and whether ``$sequence`` grew throughout (when `ordered`:
    the read is in ``$sequence`` order). Each batch of a read is one page of the service."""

    ordered: bool = True
    pages: int = 0
    rows: int = 0
    in_order: bool = True
    last_sequence: int | None = None

    async def watch(self, batches: AsyncIterator[pa.RecordBatch]) -> AsyncIterator[pa.RecordBatch]:
        """`batches`, unchanged, counted and checked on the way."""
        async for batch in batches:
            self.see(batch)
            yield batch

    def see(self, batch: pa.RecordBatch) -> None:
        self.pages += 1
        self.rows += batch.num_rows
        if not self.ordered or not batch.num_rows:
            return
        sequence = batch.column("$sequence")
        first, last = sequence[0].as_py(), sequence[-1].as_py()
        growing = batch.num_rows == 1 or bool(
            pc.all(pc.greater(sequence.slice(1), sequence.slice(0, batch.num_rows - 1))).as_py()
        )
        after = self.last_sequence
        if not growing or (after is not None and first <= after):
            self.in_order = False
        self.last_sequence = last


def file_checks(path: Path, rows_listed: int, pages_in_order: bool | None) -> ExportChecks:
    """The checks of the Parquet file `path`, written by an export whose read listed
    `rows_listed` rows: its ``$id`` column holds no value twice (None: it has none), and its
    footer counts the rows listed (the file's own count, not the writer's)."""
    with pq.ParquetFile(path) as file:
        unique = _ids_unique(file) if "$id" in file.schema_arrow.names else None
        listed = file.metadata.num_rows == rows_listed
    return ExportChecks(ids_unique=unique, pages_in_order=pages_in_order, rows_match=listed)


def _ids_unique(file: pq.ParquetFile) -> bool:
    """Whether the file's ``$id`` column holds no value twice (null counting as a value): no
    two of the IDs' 64-bit hashes are alike, or the IDs whose hashes are alike differ. Eight
    bytes a row, hashed a slice at a time: a set of the IDs as Python strings, or Arrow's
    count of distinct values (a hash table of every ID), raised an export's peak memory
    (figures: benchmarks/README.md)."""
    hashes = np.empty(file.metadata.num_rows, np.uint64)
    filled = 0
    for ids in _id_chunks(file):
        hashes[filled : filled + len(ids)] = _hashes(ids)
        filled += len(ids)
    hashes = hashes[:filled]
    hashes.sort()
    alike = np.unique(hashes[1:][hashes[1:] == hashes[:-1]])
    seen: set[str | None] = set()
    for ids in _id_chunks(file) if len(alike) else ():
        for row_id in ids.filter(pa.array(np.isin(_hashes(ids), alike))).to_pylist():
            if row_id in seen:
                return False
            seen.add(row_id)
    return True


def _id_chunks(file: pq.ParquetFile) -> Iterator[pa.Array[Any]]:
    """The file's IDs, `HASHED_AT_ONCE` at a time (hashing makes a Python string of each)."""
    for group in range(file.num_row_groups):
        for chunk in file.read_row_group(group, columns=["$id"]).column(0).chunks:
            for start in range(0, len(chunk), HASHED_AT_ONCE):
                yield chunk.slice(start, HASHED_AT_ONCE)


HASHED_AT_ONCE = 8192
"""IDs hashed at once: a whole row group's, as Python strings, raised an export's peak."""


def _hashes(ids: pa.Array[Any]) -> npt.NDArray[np.uint64]:
    """Each ID's 64-bit hash (pandas' SipHash of the string; a null's is a value too)."""
    return pd.util.hash_array(ids.to_numpy(zero_copy_only=False), categorize=False)
