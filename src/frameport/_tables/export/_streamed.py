"""The Parquet export without resume: the read's batches streamed into the file as they come,
counted and checked on the way (`PageWatch`), the file checked once written."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

import pyarrow as pa

from ..read import TableRead
from ._parquet import write_parquet
from ._report import ExportReport
from ._watch import PageWatch, file_checks, watched_read, written


async def export_streamed(
    read: TableRead, path: str | os.PathLike[str], *, compression: str, progress: bool | None
) -> ExportReport:
    """Write the rows of `read` to the Parquet file `path` and report."""
    started = time.perf_counter()
    watch = PageWatch(ordered=read.plan.spec.sequence_order is True)
    with read.bar(progress) as bar:
        async with aclosing(watched_read(read).pages(bar, collect=False)) as stream:
            batches: AsyncIterator[pa.RecordBatch] = stream
            schema = read.plan.output
            if schema is None:  # inferred: the first batch settles it
                first = await anext(stream, None)
                schema = read.result_schema([] if first is None else [read.plan.project(first)])
                batches = _prepend(first, stream)
            shown = written(read, watch.watch(batches))
            rows = await write_parquet(shown, schema, path, compression=compression)
    pages_in_order = watch.in_order if watch.ordered else None
    checks = await asyncio.to_thread(file_checks, Path(path), watch.rows, pages_in_order)
    return ExportReport(
        path=str(path),
        rows=rows,
        pages=watch.pages,
        bytes=Path(path).stat().st_size,
        seconds=time.perf_counter() - started,
        checks=checks,
    )


async def _prepend(
    first: pa.RecordBatch | None, rest: AsyncIterator[pa.RecordBatch]
) -> AsyncIterator[pa.RecordBatch]:
    if first is not None:
        yield first
    async for batch in rest:
        yield batch
