"""A Parquet export that survives being killed: it reads the rows in ``$sequence`` segments,
writes each segment to its own file beside the target and records it in a checkpoint
(`_export_checkpoint`), then joins the segments into the target.

* The last ``$sequence`` is fixed when the export starts: rows created later are left for the
  next export (the report counts them).
* Started again after a crash (kill -9 included), the export continues with the first
  segment not recorded as complete: at most one segment is fetched twice, no row is written
  twice, and the file equals an uninterrupted export's (values, dtypes, row order).
* A query sorted on another column than ``$sequence``, with ``head``, with a filter sent as
  several requests or with types inferred from the rows cannot be read in segments and is
  refused (`ResumeError`), as is a checkpoint written for another table, filter or columns.
* The checkpoint folder goes away once the target is written.

>>> report = await export_resumable(requester, location, plan, (), None, "out.parquet")
... # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..._core._queries import ServiceQuery, check_member, render_query, select_query
from ..._exceptions import ResumeError
from ..._schema import SYSTEM_SCHEMA
from .._location import TableLocation
from ..read._cursor import fetch_page
from ..read._decode import decode_page
from ..read._plan import Plan
from ..read._ranged import SequenceRange, ranged_plan, sequence_bounds, split_ranges
from ..read._serial import plan_batches
from ._checkpoint import (
    Checkpoint,
    Fingerprint,
    folder_for,
    load,
    refuse_mismatch,
    save,
    segment_path,
)
from ._parquet import write_parquet
from ._report import ExportReport
from ._watch import PageWatch, file_checks

if TYPE_CHECKING:
    from ..._core import Requester

SEGMENT_PAGES = 4
"""A segment spans this many pages' worth of ``$sequence`` values."""


async def export_resumable(
    requester: Requester,
    location: TableLocation,
    plan: Plan,
    order: Sequence[tuple[str, bool]],
    head: int | None,
    path: str | os.PathLike[str],
    *,
    compression: str = "zstd",
    bar: Any = None,
) -> ExportReport:
    """Export the rows of `plan` to `path`, resuming from the checkpoint beside it."""
    started = time.perf_counter()
    schema = _refuse_unsegmentable(plan, order, head)
    target = Path(path)
    folder = folder_for(target)
    fingerprint = Fingerprint(
        table=f"{location}{' (legacy)' if location.legacy else ''}",
        requests=[list(request) for request in plan.requests],
        columns=[f"{item.name}: {item.type}" for item in schema],
    )
    checkpoint = load(folder)
    resumed = checkpoint is not None
    if checkpoint is None:
        checkpoint = Checkpoint(fingerprint, await _segments(requester, location, plan))
        folder.mkdir(exist_ok=True)
        save(folder, checkpoint)
    else:
        refuse_mismatch(folder, checkpoint.fingerprint, fingerprint)
        for leftover in target.parent.glob(f".{glob.escape(target.name)}.*.part"):
            leftover.unlink(missing_ok=True)  # a join killed part-way
    resumed_after = checkpoint.resumed_after() if resumed else None
    member = requester.query_member_for(location.rows_path)
    pages = 0
    for index in range(checkpoint.done, len(checkpoint.segments)):
        after, upto = checkpoint.segments[index]
        part = ranged_plan(plan, SequenceRange(after, upto), member)
        watch = PageWatch(last_sequence=after)
        batches = watch.watch(plan_batches(requester, location, part, bar, collect=False))
        file = segment_path(folder, index)
        await write_parquet(batches, schema, file, compression=compression)
        checkpoint.done = index + 1
        checkpoint.rows.append(watch.rows)
        checkpoint.pages.append(watch.pages)
        pages += watch.pages
        checkpoint.in_order &= watch.in_order and (watch.last_sequence or after) <= upto
        save(folder, checkpoint)
    files = [segment_path(folder, index) for index in range(len(checkpoint.segments))]
    rows = await write_parquet(_segment_batches(files), schema, target, compression=compression)
    upper = checkpoint.segments[-1][1] if checkpoint.segments else None
    rows_left = None if upper is None else await _rows_after(requester, location, plan, upper)
    checks = await asyncio.to_thread(file_checks, target, sum(checkpoint.rows), checkpoint.in_order)
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
        rows_left=rows_left,
    )


def _refuse_unsegmentable(
    plan: Plan, order: Sequence[tuple[str, bool]], head: int | None
) -> pa.Schema:
    """The output schema of `plan`, or `ResumeError` when it cannot be read in segments."""
    if order and list(order) != [("$sequence", True)]:
        keys = ", ".join(f"{key} {'asc' if up else 'desc'}" for key, up in order)
        reason = f"it is sorted by {keys}; a resumable export reads in $sequence order"
        advice = "Drop the sort (sort the file afterwards), or export without resume."
    elif head is not None:
        reason = "it has head(), which a segment cannot tell apart from the rows before it"
        advice = "Drop head(), or export without resume."
    elif len(plan.requests) > 1:
        reason = "its filter is sent as several requests, whose rows come in request order"
        advice = (
            "Simplify the filter (e.g. isin() instead of several ==), or export without resume."
        )
    elif plan.output is None:
        reason = "this client may not read the table's columns, so their types come from the rows"
        advice = "Use an API key with tables.read, or export without resume."
    else:
        return plan.output
    raise ResumeError(f"this query cannot be exported with resume: {reason}. {advice}")


async def _segments(
    requester: Requester, location: TableLocation, plan: Plan
) -> list[tuple[int, int]]:
    """The ``$sequence`` segments of the rows there are now (none when no row matches)."""
    if not plan.requests:
        return []
    bounds = await sequence_bounds(requester, location, plan.compiled.requests)
    if bounds is None:
        return []
    width = SEGMENT_PAGES * plan.page_size
    count = -(-(bounds.last - bounds.first + 1) // width)
    return [(part.after, part.upto) for part in split_ranges(bounds.first, bounds.last, count)]


async def _segment_batches(files: Sequence[Path]) -> AsyncIterator[pa.RecordBatch]:
    """The batches of the segment files, in order, one row group at a time."""
    for file in files:
        reader = pq.ParquetFile(file)
        for group in range(reader.num_row_groups):
            table = await asyncio.to_thread(reader.read_row_group, group)
            for batch in table.to_batches():
                yield batch


async def _rows_after(requester: Requester, location: TableLocation, plan: Plan, upper: int) -> int:
    """How many rows under the filter lie beyond `upper` (the service counts to 5,000)."""
    member = check_member(requester.query_member_for(location.rows_path))
    beyond = render_query(ServiceQuery("greaterThan", "$sequence", (upper,)), member)
    queries = [*plan.compiled.requests[0], beyond, select_query(["$id"])]
    body = await fetch_page(requester, location.rows_path, queries, 1)
    total, _ = decode_page(body, SYSTEM_SCHEMA, items_key=location.items_key)
    return total
