"""`live()`: a view's current rows, kept current by its feed of changes (`_feed`), started
from a snapshot (``since="snapshot"``: subscribed first, the snapshot read, the events that
came meanwhile replayed; where an event and the snapshot disagree the later ``$updatedAt``
wins, as the feed hands each row on once by it).

The rows are one immutable Arrow table. Each change batch makes a new table (the old one
without the batch's ``$id``s, then the batch's present rows) and the reference is swapped:
a reader in another thread holds either the table before the batch or the one after, never
half a batch, and takes no lock (a lock would make a slow reader hold up the feed).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..._core._sync import (
    AsyncClosing,
    Closing,
    SyncFacade,
    delegate,
    forward_property,
    iterate_sync,
)
from ..._schema import to_pandas
from ._feed import ChangeFeed, ChangesStatus
from ._view import OP, _values

if TYPE_CHECKING:
    import polars as pl

log = logging.getLogger("frameport.changes")

MAX_CHUNKS = 64
"""Chunks the rows may have (one more per batch) before they are joined into one."""

_END = None
"""What a change-batch queue gets when the live table ends."""


async def started_live_table(feed: ChangeFeed) -> AsyncLiveTable:
    """A live table of `feed`: subscribe, read the snapshot, replay what came meanwhile, and
    keep following (in a task of the running loop); returns once the snapshot is in."""
    return await AsyncLiveTable(feed)._start()


class AsyncLiveTable(AsyncClosing):
    """A view's current rows, kept current as it changes: `frame` (pandas), `to_arrow`,
    `to_polars` and ``len()``, with ``$id`` and the view's columns, as `to_pandas` reads
    them. Made by `AsyncTableQuery.live`; see it for the options.

    `on_change` registers a callback, and ``async for batch in live`` iterates, the change
    batches as they are applied (see `AsyncTableQuery.changes` for their columns). `status`
    says whether it is connected or polls, when the last event came, its lag and catch-ups;
    a table dropped under it ends it with `NotFoundError` (in `status.error` and on the
    iterator). Reading from another thread is safe: each batch swaps in a new table.

    >>> async with await people.where(col("age") > 30).live() as adults:  # doctest: +SKIP
    ...     print(len(adults), adults.frame.head())
    """

    def __init__(self, feed: ChangeFeed) -> None:
        self._feed = feed
        self._rows: pa.Table | None = None
        self._ids: set[str] = set()  # the $ids of the rows, to skip the filter for inserts
        self._frame: tuple[pa.Table, pd.DataFrame] | None = None
        self._callbacks: list[Callable[[pa.RecordBatch], object]] = []
        # One queue per iterator, from the moment it is made; dropped with it.
        self._queues: weakref.WeakSet[asyncio.Queue[pa.RecordBatch | None]] = weakref.WeakSet()
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._feed.location}, {len(self)} rows, {self.status})"

    async def _start(self) -> AsyncLiveTable:
        started = asyncio.get_running_loop().create_future()
        self._task = asyncio.ensure_future(self._follow(started))
        await started
        return self

    async def _follow(self, started: asyncio.Future[None]) -> None:
        try:
            async with aclosing(self._feed.run()) as batches:
                async for batch in batches:
                    self._apply(batch)
                    if started.done():
                        self._hand_on(batch)
                    elif self._feed.status.watermark is not None:
                        started.set_result(None)
        except Exception as error:
            if not started.done():
                started.set_exception(error)
            else:
                log.warning("live table of %s ended: %s", self._feed.location, error)
        finally:
            for queue in list(self._queues):
                queue.put_nowait(_END)

    def _apply(self, batch: pa.RecordBatch) -> None:
        """Swap in the rows with `batch` applied (its rows replace those of its ``$id``s)."""
        rows = self._rows
        if rows is not None and not batch.num_rows:
            return
        deleted = pc.equal(batch.column(OP), pa.scalar("delete"))
        present = pa.Table.from_batches([batch.filter(pc.invert(deleted)).drop_columns([OP])])
        ids = _values(batch.column("$id"))
        if rows is None:
            rows = present.slice(0, 0)
        elif not self._ids.isdisjoint(ids):  # an update or a delete: the old rows go
            rows = rows.filter(
                pc.invert(pc.is_in(rows.column("$id"), value_set=batch.column("$id")))
            )
        self._ids.difference_update(ids)
        self._ids.update(_values(present.column("$id").combine_chunks()))
        rows = pa.concat_tables([rows, present], promote_options="permissive")
        if rows.column(0).num_chunks > MAX_CHUNKS:
            rows = rows.combine_chunks()
        self._rows = rows

    def _hand_on(self, batch: pa.RecordBatch) -> None:
        """Give an applied change batch to the callbacks and the iterators."""
        if not batch.num_rows:
            return
        for callback in self._callbacks:
            try:
                callback(batch)
            except Exception:
                log.exception("on_change callback %r failed", callback)
        for queue in list(self._queues):
            queue.put_nowait(batch)

    # -- faces ---------------------------------------------------------------------------------

    def to_arrow(self) -> pa.Table:
        """The rows now, as an Arrow table: ``$id`` and the view's columns."""
        rows = self._rows if self._rows is not None else pa.table({"$id": pa.array([], "string")})
        return rows.drop_columns([name for name in ("$updatedAt",) if name in rows.schema.names])

    @property
    def frame(self) -> pd.DataFrame:
        """The rows now, as a DataFrame with the dtypes `to_pandas` gives (made once per
        change)."""
        rows, cached = self._rows, self._frame
        if cached is not None and cached[0] is rows:
            return cached[1]
        frame = to_pandas(self.to_arrow())
        if rows is not None:
            self._frame = (rows, frame)
        return frame

    def to_polars(self) -> pl.DataFrame:
        """The rows now, as a polars DataFrame (needs the ``polars`` extra)."""
        import polars as pl

        frame = pl.from_arrow(self.to_arrow())
        assert isinstance(frame, pl.DataFrame)
        return frame

    def __len__(self) -> int:
        return 0 if self._rows is None else self._rows.num_rows

    @property
    def status(self) -> ChangesStatus:
        """Whether it polls or is connected, its catch-ups and watermark, when the last event
        came and its lag, and the error that ended it, if any."""
        return self._feed.status

    # -- reacting ------------------------------------------------------------------------------

    def on_change(self, callback: Callable[[pa.RecordBatch], Any]) -> None:
        """Call `callback` with each change batch once it is applied (on frameport's event
        loop: keep it short; an error it raises is logged)."""
        self._callbacks.append(callback)

    def __aiter__(self) -> AsyncGenerator[pa.RecordBatch]:
        """The change batches applied from now on (from this call), until the live table
        ends (with its error, if one ended it)."""
        queue: asyncio.Queue[pa.RecordBatch | None] = asyncio.Queue()
        self._queues.add(queue)
        return self._batches(queue)

    async def _batches(
        self, queue: asyncio.Queue[pa.RecordBatch | None]
    ) -> AsyncGenerator[pa.RecordBatch]:
        try:
            while self._task is not None and not self._task.done():
                batch = await queue.get()
                if batch is _END:
                    break
                yield batch
            if self.status.error is not None:
                raise self.status.error
        finally:
            self._queues.discard(queue)

    async def close(self) -> None:
        """Stop following (the socket closes); the rows stay as they were."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class LiveTable(Closing, SyncFacade[AsyncLiveTable], wraps=AsyncLiveTable):
    """A view's current rows, kept current as it changes; the synchronous face of
    `AsyncLiveTable` (made by `TableQuery.live`). It follows on frameport's loop thread, so
    `frame` is current whenever it is read.

    >>> with people.live() as rows:                                    # doctest: +SKIP
    ...     rows.on_change(lambda batch: print(batch.num_rows, "changed"))
    ...     print(rows.frame)
    """

    frame = forward_property("frame")
    status = forward_property("status")
    to_arrow = delegate(AsyncLiveTable.to_arrow)
    to_polars = delegate(AsyncLiveTable.to_polars)
    on_change = delegate(AsyncLiveTable.on_change)
    close = delegate(AsyncLiveTable.close)

    def __len__(self) -> int:
        return len(self._async)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """The change batches applied from now on (see `AsyncLiveTable`)."""
        return iterate_sync(self._async.__aiter__())
