"""A Parquet export that survives being killed: the rows in ``$sequence`` segments, fixed when
it starts, read as any ranged read reads its ranges (`TableRead.pages_by_range`: several at
once), each written to its own file beside the target as its turn comes and recorded in a
checkpoint (`_checkpoint`), then joined into the target; the checkpoint folder then goes.
Segments are Arrow IPC files: the join reads them without decoding, so the rows are encoded
to Parquet once, as an export without resume encodes them.

* Started again after a crash (kill -9 included), it continues with the first segment not
  recorded: no row is written twice, and the file equals an uninterrupted export's. Rows
  created after it started are left for the next export (the report counts them).
* A query sorted otherwise than up ``$sequence``, with ``head``, with a filter sent as
  several requests or with types inferred from the rows is refused (`ResumeError`), as is a
  checkpoint written for another table, filter or columns.

>>> report = await export_resumable(read, "out.parquet", compression="zstd", progress=None)
... # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from ..._exceptions import ResumeError
from ..read import READ_POOL, Obstacle, SequenceRange, TableRead, plan_partitions
from ._checkpoint import (
    Checkpoint,
    Fingerprint,
    folder_for,
    load,
    refuse_mismatch,
    save,
    segment_path,
    written_segment_path,
)
from ._parquet import write_arrow, write_parquet
from ._report import ExportReport
from ._watch import PageWatch, file_checks, watched_read, written

if TYPE_CHECKING:
    from tqdm import tqdm

SEGMENT_PAGES = 4
"""A segment spans this many pages' worth of ``$sequence`` values."""


async def export_resumable(
    read: TableRead,
    path: str | os.PathLike[str],
    *,
    compression: str = "zstd",
    progress: bool | None = None,
    count_rows_left: bool = True,
    within: SequenceRange | None = None,
    reading: asyncio.Semaphore | None = None,
) -> ExportReport:
    """Export the rows of `read` to `path`, resuming from the checkpoint beside it; with
    `count_rows_left`, count the rows past the last segment (created since it was fixed) for
    the report, while the segments are joined. `within`: the ``$sequence`` range the read's
    rows all lie in, when the caller has fixed it (see `_segments`). `reading`: held while the
    rows are read, and let go before they are joined (exports taking turns to read)."""
    started = time.perf_counter()
    schema = _refuse_unsegmentable(read)
    target = Path(path)
    folder = folder_for(target)
    location = read.plan.location
    fingerprint = Fingerprint(
        table=f"{location}{' (legacy)' if location.legacy else ''}",
        requests=[list(request) for request in read.plan.requests],
        columns=[f"{item.name}: {item.type}" for item in schema],
    )
    # Only the read holds `reading`: the segments are joined without it.
    async with reading if reading is not None else contextlib.nullcontext():
        checkpoint = load(folder)
        resumed = checkpoint is not None
        distance = None
        if checkpoint is None:
            asked = time.perf_counter()
            segments = await _segments(read, within)
            distance = time.perf_counter() - asked
            checkpoint = Checkpoint(fingerprint, [(part.after, part.upto) for part in segments])
            folder.mkdir(exist_ok=True)
            save(folder, checkpoint)
        else:
            refuse_mismatch(folder, checkpoint.fingerprint, fingerprint)
            for leftover in target.parent.glob(f".{glob.escape(target.name)}.*.part"):
                leftover.unlink(missing_ok=True)  # a join killed part-way
        resumed_after = checkpoint.resumed_after() if resumed else None
        with read.bar(progress) as bar:
            pages = await _write_segments(read, checkpoint, folder, schema, bar, distance)
    upper = checkpoint.segments[-1][1] if checkpoint.segments else None
    rows_left = None
    if upper is not None and count_rows_left:
        rows_left = asyncio.create_task(read.after(upper).service_count())
    try:
        files = [written_segment_path(folder, index) for index in range(len(checkpoint.segments))]
        rows = await write_parquet(_segment_batches(files), schema, target, compression=compression)
        checks = await asyncio.to_thread(
            file_checks, target, sum(checkpoint.rows), checkpoint.in_order
        )
        left = None if rows_left is None else await rows_left
    finally:
        if rows_left is not None:
            rows_left.cancel()
    shutil.rmtree(folder)
    return ExportReport(
        path=str(target),
        rows=rows,
        pages=pages,
        bytes=target.stat().st_size,
        seconds=time.perf_counter() - started,
        checks=checks,
        resumed=resumed,
        resumed_after=resumed_after,
        upper_sequence=upper,
        rows_left=left,
    )


async def _write_segments(
    read: TableRead,
    checkpoint: Checkpoint,
    folder: Path,
    schema: pa.Schema,
    bar: tqdm[object],
    distance: float | None,
) -> int:
    """Read the segments the checkpoint does not have yet, several at once, and write each to
    its file as its turn comes, recording it in the checkpoint; the pages read."""
    first = checkpoint.done
    pending = [SequenceRange(after, upto) for after, upto in checkpoint.segments[first:]]
    tagged = watched_read(read).pages_by_range(pending, collect=False, distance=distance)
    pages = 0
    async with aclosing(tagged):
        following = await anext(tagged, None)
        for number, part in enumerate(pending):

            async def segment(number: int = number) -> AsyncGenerator[pa.RecordBatch]:
                nonlocal following
                while following is not None and following[0] == number:
                    bar.update(following[1].num_rows)
                    yield following[1]
                    following = await anext(tagged, None)

            watch = PageWatch(last_sequence=part.after)
            file = segment_path(folder, first + number)
            shown = written(read, watch.watch(segment()))
            await write_arrow(shown, schema, file)
            checkpoint.done = first + number + 1
            checkpoint.rows.append(watch.rows)
            checkpoint.pages.append(watch.pages)
            pages += watch.pages
            checkpoint.in_order &= (
                watch.in_order and (watch.last_sequence or part.after) <= part.upto
            )
            save(folder, checkpoint)
    return pages


async def _segments(read: TableRead, within: SequenceRange | None) -> list[SequenceRange]:
    """The read's rows cut by the partition planner into segments of about `SEGMENT_PAGES`
    pages' worth of estimated rows; one segment when the rows would fill no more than that
    (a filter keeping few rows spread over a large table, as an incremental read's, would
    otherwise make a request and a file per `SEGMENT_PAGES` pages of the table). Given the
    range the rows lie `within`, one probe tells whether they fill more, and when they do
    not, that range is the segment: an incremental backup's few changed rows cost the
    service one request before they are read."""
    rows = SEGMENT_PAGES * read.plan.page_size
    if within is not None and await read.sequence_at(rows) is None:
        return [within]
    after = None if within is None else within.after
    return (await plan_partitions(read, rows=rows, after=after)).ranges


def _refuse_unsegmentable(read: TableRead) -> pa.Schema:
    """The output schema of `read`, or `ResumeError` when it cannot be read in segments."""
    plan = read.plan
    spec = plan.spec
    obstacle = read.obstacle
    if obstacle is Obstacle.SORTED or spec.sequence_order is False:
        keys = ", ".join(f"{key} {'asc' if up else 'desc'}" for key, up in spec.order)
        reason = f"it is sorted by {keys}; a resumable export reads in $sequence order"
        advice = "Drop the sort (sort the file afterwards), or export without resume."
    elif spec.head is not None:
        reason = "it has head(), which a segment cannot tell apart from the rows before it"
        advice = "Drop head(), or export without resume."
    elif obstacle is Obstacle.SEVERAL_REQUESTS:
        reason = "its filter is sent as several requests, whose rows come in request order"
        advice = (
            "Simplify the filter (e.g. isin() instead of several ==), or export without resume."
        )
    elif obstacle is Obstacle.INFERRED or plan.output is None:
        reason = "this client may not read the table's columns, so their types come from the rows"
        advice = "Use an API key with tables.read, or export without resume."
    else:
        return plan.output
    raise ResumeError(f"this query cannot be exported with resume: {reason}. {advice}")


async def _segment_batches(files: Sequence[Path]) -> AsyncIterator[pa.RecordBatch]:
    """The batches of the segment files, in order (read, not mapped: a mapped file's pages
    would count in the process's memory; into the pool that gives memory back at once)."""
    for file in files:
        if file.suffix == ".parquet":
            reader = pq.ParquetFile(file)
            for group in range(reader.num_row_groups):
                for batch in (await asyncio.to_thread(reader.read_row_group, group)).to_batches():
                    yield batch
            continue
        with pa.OSFile(str(file), "rb") as source:
            segment = ipc.open_file(source, memory_pool=READ_POOL)
            for index in range(segment.num_record_batches):
                yield await asyncio.to_thread(segment.get_batch, index)
