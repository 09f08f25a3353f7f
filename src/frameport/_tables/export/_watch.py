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
    two of the IDs' 32-bit hashes are alike, or the IDs whose hashes are alike differ. Four
    bytes a row, and a few colliding IDs compared (a hundred pairs in a million): a set of
    the IDs as Python strings grew a 500,000-row export's memory by 57 MB, and Arrow's and
    pandas' hash tables kept 100 MB."""
    hashes = np.empty(file.metadata.num_rows, np.uint32)
    filled = nulls = 0
    for chunk in _id_chunks(file):
        hashes[filled : filled + len(chunk)] = _string_hashes(chunk)
        filled += len(chunk)
        nulls += chunk.null_count
    if nulls > 1:
        return False
    hashes = hashes[:filled]
    hashes.sort()
    repeated = hashes[1:] == hashes[:-1]
    # Each hash seen more than once, once: where a run of equal neighbours starts.
    alike = hashes[1:][repeated & ~np.concatenate([[False], repeated[:-1]])]
    if not len(alike):
        return True
    # The IDs of a few thousand of those hashes at a time, up to the first ID repeated: few
    # strings held, where IDs repeat throughout or a hash or two collide.
    for first in range(0, len(alike), ALIKE_AT_ONCE):
        hashed_alike = alike[first : first + ALIKE_AT_ONCE]
        seen: set[str | None] = set()
        for chunk in _id_chunks(file):
            kept = np.isin(_string_hashes(chunk), hashed_alike)
            candidates = chunk.filter(pa.array(kept)).to_pylist()
            before = len(seen)
            seen.update(candidates)
            if len(seen) - before != len(candidates):
                return False
    return True


def _id_chunks(file: pq.ParquetFile) -> Iterator[pa.Array[Any]]:
    for group in range(file.num_row_groups):
        yield from file.read_row_group(group, columns=["$id"]).column(0).chunks


ALIKE_AT_ONCE = 4096
"""Hashes whose IDs `_ids_unique` compares in one pass over the file."""

_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)


def _string_hashes(values: pa.Array[Any]) -> np.ndarray[Any, Any]:
    """The FNV-1a hash of each string of `values` (a null's: of the bytes its slot spans),
    computed over the strings of each length at once, a byte position at a time, in 64 bits
    folded to 32."""
    wide = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    _, offsets_buffer, data_buffer = values.buffers()
    assert offsets_buffer is not None, "a string array has offsets"
    offsets = np.frombuffer(memoryview(offsets_buffer), np.int64 if wide else np.int32)
    offsets = offsets[values.offset : values.offset + len(values) + 1]
    data = np.frombuffer(memoryview(data_buffer or pa.py_buffer(b"")), np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    hashes = np.empty(len(values), np.uint64)
    for length in np.unique(lengths):
        rows = np.flatnonzero(lengths == length)
        hashed = np.full(len(rows), _FNV_OFFSET ^ np.uint64(length), np.uint64)
        at = starts[rows]
        for position in range(int(length)):
            hashed ^= data[at + position]
            hashed *= _FNV_PRIME
        hashes[rows] = hashed
    return ((hashes >> np.uint64(32)) ^ hashes).astype(np.uint32)
