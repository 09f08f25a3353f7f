"""Streaming, atomic Parquet export of record batches.

Batches are written row group by row group with `pyarrow.parquet.ParquetWriter` as they
arrive, so memory holds one row group, not the table. The file is written under a temporary
name in the target's directory and renamed onto the target only when complete: a failed or
interrupted export leaves the target as it was (absent, or the previous file).

>>> rows = await write_parquet(batches, schema, "people.parquet")      # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..._core._threads import in_thread_to_the_end

ROW_GROUP_ROWS = 65_536
"""Rows per Parquet row group (the last one may be smaller)."""

ROW_GROUP_BYTES = 32 * 1024 * 1024
"""A row group is closed earlier when its batches hold about this many bytes in memory."""


async def write_parquet(
    batches: AsyncIterator[pa.RecordBatch],
    schema: pa.Schema,
    path: str | os.PathLike[str],
    *,
    compression: str = "zstd",
) -> int:
    """Write `batches` (each with exactly `schema`) to the Parquet file `path`; return the row
    count. Compression and writing run in a worker thread, beside the fetching."""
    target = Path(path)
    # A fresh name beside the target (same file system, so the rename is atomic); the writer
    # creates it with the usual permissions.
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.part")
    rows = 0
    try:
        # The stubs list lower-case codec names only; Arrow takes any case.
        with pq.ParquetWriter(temporary, schema, compression=compression) as writer:  # type: ignore[arg-type]
            async for group in _row_groups(batches):
                await in_thread_to_the_end(writer.write_table, group, row_group_size=group.num_rows)
                rows += group.num_rows
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return rows


async def _row_groups(batches: AsyncIterator[pa.RecordBatch]) -> AsyncIterator[pa.Table]:
    buffered: list[pa.RecordBatch] = []
    rows = size = 0
    async for batch in batches:
        buffered.append(batch)
        rows += batch.num_rows
        size += batch.nbytes
        if rows >= ROW_GROUP_ROWS or size >= ROW_GROUP_BYTES:
            yield pa.Table.from_batches(buffered)
            buffered, rows, size = [], 0, 0
    if buffered:
        yield pa.Table.from_batches(buffered)
