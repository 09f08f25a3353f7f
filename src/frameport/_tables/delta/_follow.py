"""`sync(follow=True)`: a Delta table kept current in micro-batches, one commit per interval.

* First a sync run (`sync_delta`: a snapshot, or the rows changed since the table's watermark
  and the rows gone), which commits and records its watermark.
* Then the view's changes (`changes()`, from that watermark less `lag`; the rows of the
  Delta table that the view no longer has when the feed starts come first, as deletes: rows
  deleted after the run read the view and before the feed did), gathered for
  `interval` seconds and merged in one commit by the sync's own merge (`merge_rows`):
  the last change of each ``$id`` wins, deletes go in the same commit. An interval without
  changes commits nothing.
* With an API key, which a sync needs (it reads the column types), the feed polls once per
  interval: each poll is a catch-up (the rows updated, the rows gone), so each commit
  records the feed's watermark. Over realtime (a session or a JWT, which no sync has yet:
  this branch waits for a sync that reads as a user) a bulk change beyond 100 rows, or a
  staged bulk operation committed in a transaction, sends no events: every `reconcile`
  seconds a sync run catches them up (it commits, changes or not) and the feed starts again
  from its watermark; the commits between keep the last run's watermark.
* A connection that fails (no HTTP answer, after the client's retries) once the first run
  committed, in a sync run or as the feed starts, does not end it: an `interval` later a
  sync run starts again from the last commit (a feed that polls carries on by itself).
* Cancelled (Ctrl-C, ``KeyboardInterrupt`` in a notebook) while it commits, it ends after
  that commit; the changes it had gathered since are read again by the next run, which
  starts from the watermark of the last commit less `lag`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ..._exceptions import FrameportError, TransportError
from ..._schema import ArrowArray
from .._location import TableLocation
from ..changes import DEFAULT_HEARTBEAT, AsyncChanges, ChangeFeed, minus_seconds
from ..read import QuerySpec
from ._refresh import DeleteMode, SyncReport, merge_rows, merged, sync_delta
from ._state import LastSync, last_sync

if TYPE_CHECKING:
    from ..._core import Requester

log = logging.getLogger("frameport.sync")

DEFAULT_INTERVAL = 10.0
"""Seconds between the commits of a sync that follows."""

DEFAULT_RECONCILE = 60.0
"""Seconds between the sync runs of a sync that follows over realtime."""

T = TypeVar("T")


async def follow_delta(
    requester: Requester,
    location: TableLocation,
    spec: QuerySpec,
    target: str | Path,
    *,
    deletes: DeleteMode,
    lag: float,
    interval: float,
    reconcile: float,
    page_size: int | None,
    progress: bool | None,
) -> NoReturn:
    """Keep the Delta table at `target` current with the view `spec` until cancelled; see
    the module docstring."""
    for name, seconds in (("interval", interval), ("reconcile", reconcile)):
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise ValueError(f"{name} must be a number of seconds > 0 (got {seconds!r})")
    loop = asyncio.get_running_loop()
    started = False
    while True:
        try:
            report = await sync_delta(
                requester,
                location,
                spec,
                target,
                deletes=deletes,
                lag=lag,
                page_size=page_size,
                progress=progress,
            )
        except TransportError as cut:
            if not started:  # the first run's errors are the caller's (a wrong endpoint)
                raise
            await _pause(target, cut, interval)
            continue
        started = True
        log.info("%s: %s", target, report.summary())
        state = await asyncio.to_thread(last_sync, target)
        if state is None or report.watermark is None:
            raise FrameportError(
                f"the sync of {target} recorded no watermark (the service's answers had no "
                "Date header), so it cannot follow; run it without follow."
            )
        # The feed's batches carry every column of the Delta table ($ fields included); a
        # row deleted after the run and before the feed read the view comes as a delete.
        copied = await asyncio.to_thread(_copied_ids, state)
        feed = ChangeFeed(
            requester,
            location,
            replace(spec, columns=tuple(state.schema.names)),
            since=minus_seconds(report.watermark, lag),
            lag=lag,
            heartbeat=DEFAULT_HEARTBEAT,
            poll=interval,
            copied=copied,
        )
        until = None if feed.status.polling else loop.time() + reconcile
        try:
            await _follow(feed, state, report.watermark, interval, until, target)
        except TransportError as cut:  # as the feed started: it polls through later ones
            await _pause(target, cut, interval)


async def _pause(target: str | Path, cut: TransportError, interval: float) -> None:
    """Wait an `interval` after `cut`, before a sync run starts again from the last commit."""
    log.info("%s: %s; starting again from the last commit in %s s", target, cut, interval)
    await asyncio.sleep(interval)


async def _follow(
    feed: ChangeFeed,
    state: LastSync,
    watermark: str,
    interval: float,
    until: float | None,
    target: str | Path,
) -> None:
    """Commit the changes of `feed` to the Delta table at `target` once per `interval` (none:
    no commit), until the loop's time `until` (None: for ever). A commit records the feed's
    watermark where it polls, else `watermark`."""
    loop = asyncio.get_running_loop()
    gathered: list[pa.RecordBatch] = []

    async def gather(changes: AsyncChanges) -> None:
        async for batch in changes:
            gathered.append(batch)

    async with AsyncChanges(feed) as changes:
        gathering = asyncio.create_task(gather(changes))
        try:
            tick = loop.time()
            while until is None or tick < until:
                tick += interval
                await asyncio.wait({gathering}, timeout=max(tick - loop.time(), 0))
                if gathering.done():
                    gathering.result()  # the feed's error (a dropped table: NotFoundError)
                batches, gathered[:] = list(gathered), []
                if batches:
                    mark = feed.status.watermark if feed.status.polling else watermark
                    report = await _finished(asyncio.to_thread(_commit, state, batches, mark))
                    log.info("%s: %s", target, report.summary())
        finally:
            gathering.cancel()
            with suppress(asyncio.CancelledError):
                await gathering


def _copied_ids(state: LastSync) -> ArrowArray:
    """The ``$id``s of the rows of the Delta table."""
    return state.table.to_pyarrow_table(columns=["$id"]).column("$id").combine_chunks()


def _commit(state: LastSync, batches: list[pa.RecordBatch], watermark: str | None) -> SyncReport:
    """Merge the change `batches` (the last change of each ``$id``) in one commit."""
    started = time.perf_counter()
    changes = pa.Table.from_batches(batches).combine_chunks()
    last = {row_id: index for index, row_id in enumerate(changes.column("$id").to_pylist())}
    changes = changes.take(pa.array(sorted(last.values()), pa.int64()))
    deleted = pc.equal(changes.column("op"), pa.scalar("delete"))
    present = changes.filter(pc.invert(deleted)).drop_columns(["op"])
    gone = changes.filter(deleted).column("$id").combine_chunks()
    state.table.update_incremental()
    figures = merge_rows(state, present, gone, state.view, watermark)
    return merged(figures, started, changes.num_rows, 0, watermark)


async def _finished(job: Awaitable[T]) -> T:
    """The result of `job`; cancelled meanwhile, `job` still finishes first (a commit is
    never given up half-way), then the cancellation goes on."""
    task = asyncio.ensure_future(job)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise
