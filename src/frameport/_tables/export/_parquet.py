"""Streaming, atomic export of record batches to a Parquet file, and to an Arrow IPC file
(a resumable export's segments, read once more when they are joined).

The file's schema carries the pandas metadata of the frame `to_pandas` makes of its rows
(`with_pandas_metadata`), so ``pandas.read_parquet`` gives that frame back; other readers
read the Arrow types alone.

Batches are written as they arrive (Parquet row group by row group, with
`pyarrow.parquet.ParquetWriter`), so memory holds one row group, not the table. The file is
written under a temporary name in the target's directory and renamed onto the target only
when complete: a failed or interrupted export leaves the target as it was (absent, or the
previous file).

>>> rows = await write_parquet(batches, schema, "people.parquet")      # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from ..._core._threads import in_thread_to_the_end
from ..._schema import to_pandas

ROW_GROUP_ROWS = 65_536
"""Rows per Parquet row group (the last one may be smaller)."""

ROW_GROUP_BYTES = 32 * 1024 * 1024
"""A row group is closed earlier when its batches hold about this many bytes in memory."""


DELTA_COLUMNS = frozenset({"$sequence", "$createdAt", "$updatedAt"})
"""System columns of 64-bit numbers that rise (nearly) row by row: written with
``DELTA_BINARY_PACKED``, a few bits a value, where a dictionary of values that hardly repeat
costs time and, past its size limit, is given up after it was built."""

UNIQUE_COLUMNS = frozenset({"$id"})
"""System columns whose values are all different: written plain, without a dictionary."""


def column_encodings(schema: pa.Schema) -> dict[str, Any]:
    """The `pyarrow.parquet.ParquetWriter` options that write the system columns of `schema`
    as `DELTA_COLUMNS` and `UNIQUE_COLUMNS` say, and every other column as Arrow does by
    default. Every Parquet reader reads both encodings."""
    delta = {
        field.name: "DELTA_BINARY_PACKED"
        for field in schema
        if field.name in DELTA_COLUMNS
        and (pa.types.is_int64(field.type) or pa.types.is_timestamp(field.type))
    }
    plain = delta.keys() | (UNIQUE_COLUMNS & set(schema.names))
    if not plain:
        return {}
    dictionary = [name for name in schema.names if name not in plain]
    return {"use_dictionary": dictionary, "column_encoding": delta}


def with_pandas_metadata(schema: pa.Schema) -> pa.Schema:
    """`schema` with the ``pandas`` metadata pyarrow writes for a frame of the dtypes
    `to_pandas` gives its columns (``Int64``, ``boolean``, ``str``, ``datetime64[ms, UTC]``,
    lists in ``object`` columns), and no index: ``pandas.read_parquet`` then reads those
    dtypes, as it reads back a frame written with ``DataFrame.to_parquet``.

    >>> import json
    >>> described = with_pandas_metadata(pa.schema([("age", pa.int64())]))
    >>> [column["numpy_type"] for column in json.loads(described.metadata[b"pandas"])["columns"]]
    ['Int64']
    """
    frame = to_pandas(schema.empty_table())
    described = pa.Table.from_pandas(frame, schema=schema, preserve_index=False).schema
    return schema.with_metadata({**(schema.metadata or {}), **(described.metadata or {})})


async def write_parquet(
    batches: AsyncIterator[pa.RecordBatch],
    schema: pa.Schema,
    path: str | os.PathLike[str],
    *,
    compression: str = "zstd",
) -> int:
    """Write `batches` (each with exactly `schema`) to the Parquet file `path`; return the row
    count. Compression and writing run in a worker thread, beside the fetching; the system
    columns are encoded as `column_encodings` says and the schema carries the pandas
    metadata (`with_pandas_metadata`)."""
    schema = with_pandas_metadata(schema)
    rows = 0
    with (
        _replacing(path) as temporary,
        pq.ParquetWriter(
            temporary,
            schema,
            # The stubs list lower-case codec names only; Arrow takes any case.
            compression=compression,  # type: ignore[arg-type]
            **column_encodings(schema),
        ) as writer,
    ):
        async for group in _row_groups(batches):
            await in_thread_to_the_end(writer.write_table, group, row_group_size=group.num_rows)
            rows += group.num_rows
    return rows


async def write_arrow(
    batches: AsyncIterator[pa.RecordBatch], schema: pa.Schema, path: str | os.PathLike[str]
) -> int:
    """Write `batches` uncompressed to the Arrow IPC file `path`; return the row count.
    Writing one costs a copy of the batches, and reading it back none of Parquet's decoding."""
    rows = 0
    with (
        _replacing(path) as temporary,
        pa.OSFile(str(temporary), "wb") as sink,
        ipc.new_file(sink, schema) as writer,
    ):
        async for batch in batches:
            # In the worker thread, as Parquet's: a write cancelled part-way ends first.
            await in_thread_to_the_end(writer.write_batch, batch)
            rows += batch.num_rows
    return rows


@contextlib.contextmanager
def _replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A fresh name beside `path` (same file system, so the rename is atomic) to write; it
    replaces `path` when the block ends without error and is removed otherwise."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.part")
    try:
        yield temporary
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


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
