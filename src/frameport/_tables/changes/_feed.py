"""`changes()`: a view's changes as they happen, in Arrow batches (see `_view` for their
columns), from the realtime socket for speed and the incremental reads for truth.

* Start: subscribe first (nothing published from then on is missed), then read the service's
  clock and the view's ``$id``s; ``since="snapshot"`` reads the whole view as ``insert``s, a
  watermark the rows updated since it (``insert`` for a row created since, else ``update``).
  Then the events, in the order they came.
* Every `heartbeat` seconds the service's clock is read (a dropped table ends the feed with
  `NotFoundError` there) and a ping sent; its pong makes that time the watermark: every
  event published before it has arrived.
* When the socket drops or misses a heartbeat: reconnect (at once, then with the web SDK's
  backoff), subscribe, and catch up from the watermark less `lag` seconds: the rows updated
  since then (`updated_since`) and the rows gone (`gone_sequences`, by counts). Never a full
  read; a row met again with no later ``$updatedAt`` is dropped.
* An API key alone would connect as a guest and see only the rows guests may read: with a
  key the feed polls instead, one catch-up every `poll` seconds (`status.polling`).
* With `reconcile` seconds, a connected feed also catches up on that schedule: a bulk change
  beyond 100 rows sends no events.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Literal

import pyarrow as pa

from ..._core._json import JsonObject
from ..._core._realtime import RealtimeSocket, SocketDropped, reconnect_delay
from ..._core._sync import (
    AsyncClosing,
    Closing,
    SyncFacade,
    delegate,
    forward_property,
    iterate_sync,
)
from ..._exceptions import TransportError
from ..._schema import ArrowArray
from .._location import TableLocation
from .._system import ALL_SYSTEM
from ..read import QuerySpec, TableRead
from ._clock import minus_seconds, service_now, service_text, updated_since
from ._gone_rows import Tally, gone_sequences
from ._view import ViewRows, milliseconds

if TYPE_CHECKING:
    from ..._core import Requester

log = logging.getLogger("frameport.changes")

Since = Literal["snapshot"] | str | datetime | None
"""Where a feed starts: None (now), ``"snapshot"`` (every row first) or a watermark."""

DEFAULT_LAG = 5.0
"""Seconds before the watermark a catch-up starts reading (writes in flight then)."""

DEFAULT_HEARTBEAT = 20.0
"""Seconds between heartbeats (the web SDK pings every 20 s)."""

DEFAULT_POLL = 5.0
"""Seconds between the catch-ups of a feed that polls."""


@dataclass(frozen=True)
class ChangesStatus:
    """Where a feed of changes stands: whether it `polls` (an API key alone: realtime would
    see only what guests may read) or follows the realtime socket, whether that socket is
    `connected`, how many `catch_ups` it made after a drop (or polls), and its `watermark`
    (the service's time by which every change has been handed on, less nothing: catch-ups
    start `lag` seconds before it); when the `last_event` came and its `lag`; the `error` that
    ended it."""

    polling: bool
    connected: bool
    catch_ups: int
    watermark: str | None
    last_event: datetime | None = None
    """When the last realtime event came (the client's clock, UTC); None before one."""
    lag: float | None = None
    """Seconds from the ``$updatedAt`` of the last event's change to its arrival, by this
    machine's clock (a service clock ahead of it makes the lag smaller, even negative)."""
    error: Exception | None = None
    """What ended the feed (a dropped table: `NotFoundError`), if anything did."""


class AsyncChanges(AsyncClosing):
    """A view's changes as they happen: an async iterator of ``pyarrow.RecordBatch``es with
    an ``op`` column (``insert``, ``update``, ``delete``), ``$id``, ``$updatedAt`` and the
    view's columns. Made by `AsyncTableQuery.changes`; see it for the options.

    It ends on ``break`` (``async with`` or `close` closes it at once), on cancellation and
    on `close`; a table dropped under it ends it with `NotFoundError`. `status` says where
    it stands.

    >>> async with people.where(col("age") > 30).changes() as changes:  # doctest: +SKIP
    ...     async for batch in changes:
    ...         print(batch.to_pylist())
    """

    def __init__(self, feed: ChangeFeed) -> None:
        self._feed = feed
        # The generator holds the feed, not this object: dropped after a `break`, this object
        # goes at once and the event loop closes the generator (and the socket).
        self._batches = self._feed.run()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._feed.location}, {self.status})"

    @property
    def status(self) -> ChangesStatus:
        """Whether it polls, whether its socket is connected, its catch-ups and watermark."""
        return self._feed.status

    def __aiter__(self) -> AsyncChanges:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        while not (batch := await anext(self._batches)).num_rows:
            pass  # a catch-up that found nothing new
        return batch

    async def close(self) -> None:
        """Stop: close the socket; the iterator ends."""
        await self._batches.aclose()

    async def aclose(self) -> None:
        """`close`, by the name ``contextlib.aclosing`` calls."""
        await self.close()


@dataclass(eq=False)
class ChangeFeed:
    """What an `AsyncChanges` runs (see the module docstring), and where it stands."""

    requester: Requester
    location: TableLocation
    spec: QuerySpec
    _: KW_ONLY
    since: Since
    lag: float
    heartbeat: float
    poll: float
    reconcile: float | None = None
    copied: ArrowArray | None = None
    """The ``$id``s a copy of the view holds (a Delta table a sync follows): those the view
    no longer has when the feed starts come first, as deletes."""
    status: ChangesStatus = field(init=False)
    beat: float | None = field(init=False, default=None)  # the loop's time of the next ping
    due: float | None = field(init=False, default=None)  # the loop's time of the next catch-up

    def __post_init__(self) -> None:
        timings = {"lag": self.lag, "heartbeat": self.heartbeat, "poll": self.poll}
        _check(self.spec, self.since, reconcile=self.reconcile, **timings)
        self.spec = replace(self.spec, order=(), system=ALL_SYSTEM)
        polling = self.requester.credentials.key is not None
        self.status = ChangesStatus(polling, connected=False, catch_ups=0, watermark=None)

    def _note(self, **changes: object) -> None:
        self.status = replace(self.status, **changes)  # type: ignore[arg-type]

    async def run(self) -> AsyncGenerator[pa.RecordBatch]:
        """The change batches, until closed (empty ones included)."""
        location = self.location
        view = ViewRows(*await self._reads())
        if self.status.polling:
            log.info(
                "changes of %s: polling every %s s (an API key connects to realtime as a "
                "guest; sign in or use a JWT for realtime)",
                location,
                self.poll,
            )
        socket = None if self.status.polling else await self._open()
        try:
            async with aclosing(self._start(view)) as started:
                async for batch in started:
                    yield batch
            attempt = 0
            while True:
                try:
                    if self.status.polling:
                        await asyncio.sleep(self.poll)
                        batches = await self._catch_up(view)
                    elif socket is None:
                        socket = await self._open()
                        batches = await self._catch_up(view)
                        attempt = 0
                    else:
                        batches = await self._follow(socket, view)
                except (SocketDropped, TransportError) as dropped:
                    log.info("changes of %s: %s", location, dropped)
                    if socket is not None:
                        await socket.close()
                        socket = None
                        self._note(connected=False)
                    await asyncio.sleep(0 if self.status.polling else reconnect_delay(attempt))
                    attempt += 1
                    continue
                for batch in batches:
                    yield batch
        except Exception as error:
            self._note(error=error)
            raise
        finally:
            self._note(connected=False)
            if socket is not None:
                await socket.close()

    async def _open(self) -> RealtimeSocket:
        socket = await RealtimeSocket.open(self.requester, [_channel(self.location)])
        self._note(connected=True)
        self.beat = None
        return socket

    async def _start(self, view: ViewRows) -> AsyncGenerator[pa.RecordBatch]:
        """The view's keys, then what `since` asks for."""
        now = await _now(view.read)
        since = self.since
        recent = milliseconds(minus_seconds(now, self.lag))
        if since == "snapshot":
            async with aclosing(view.read.pages(collect=False)) as pages:
                async for rows in pages:
                    yield view.from_rows(rows)
                    view.forget_before(recent)
        else:
            async with aclosing(view.read.ids_only().pages(collect=False)) as pages:
                async for ids in pages:
                    view.learn(ids)
        if since is not None and since != "snapshot":
            text = since if isinstance(since, str) else service_text(_utc(since))
            batches, _ = await updated_since(view.read, text).collect(progress=False)
            for rows in batches:
                yield view.from_rows(rows, created_since=milliseconds(text))
        self._note(watermark=now)
        if self.copied is not None:  # deleted since the copy was read, or never held
            yield view.gone_from_copy(self.copied, milliseconds(now))
        yield view.gone(pa.array([], pa.string()), 0)  # an empty batch: started

    async def _reads(self) -> tuple[TableRead, TableRead]:
        """The reads of the view, and of its whole rows (as events carry them)."""
        read = await TableRead.make(self.requester, self.location, self.spec)
        events = replace(self.spec, columns=None)
        return read, await TableRead.make(self.requester, self.location, events)

    async def _catch_up(self, view: ViewRows) -> list[pa.RecordBatch]:
        """The rows changed and gone since the watermark (less the lag), read with the
        table's columns as they are now where they can be read (a column added appears)."""
        if view.read.plan.fetched is not None:
            read = await TableRead.make(self.requester, self.location, self.spec)
            if read.plan.fetched != view.read.plan.fetched:
                view.use(*await self._reads())
        begun = time.perf_counter()
        now = await _now(view.read)
        since = minus_seconds(self.status.watermark or now, self.lag)
        batches, _ = await updated_since(view.read, since).collect(progress=False)
        listed = time.perf_counter()
        # Both reads before the rows are handed on: a catch-up cut short hands on nothing.
        tally = Tally()
        gone_at, _ = await gone_sequences(_ids_read(view.read), view.held(batches), tally)
        gone = view.ids_at(gone_at)
        changed = [view.from_rows(rows) for rows in batches]
        changed.append(view.gone(gone, milliseconds(now)))
        view.forget_before(milliseconds(since))
        self._note(watermark=now, catch_ups=self.status.catch_ups + 1)
        log.debug(
            "catch-up of %s: %d changed rows read in %.1f ms; %d gone rows found with %d "
            "requests listing %d rows in %.1f ms",
            self.location,
            sum(rows.num_rows for rows in batches),
            (listed - begun) * 1e3,
            len(gone),
            tally.requests,
            tally.rows,
            (time.perf_counter() - listed) * 1e3,
        )
        return changed

    async def _follow(self, socket: RealtimeSocket, view: ViewRows) -> list[pa.RecordBatch]:
        """The changes of the next events to come (none: a heartbeat was due, and made);
        `SocketDropped` when the socket drops or misses the heartbeat."""
        loop = asyncio.get_running_loop()
        if self.beat is None:
            self.beat = loop.time() + self.heartbeat
        if self.due is None and self.reconcile is not None:
            self.due = loop.time() + self.reconcile
        event = await socket.next_event(min(self.beat, self.due or self.beat) - loop.time())
        if event is not None:
            events = [event, *socket.pending()]
            arrived = datetime.now(UTC)
            self._note(last_event=arrived, lag=_delay(events[-1], arrived))
            return view.from_events(events)
        if self.due is not None and loop.time() >= self.due:
            self.due = None
            return await self._catch_up(view)
        now = await _now(view.read)
        await socket.heartbeat(self.heartbeat)
        self._note(watermark=now)
        view.forget_before(milliseconds(minus_seconds(now, self.lag)))
        self.beat = loop.time() + self.heartbeat
        return []


def _delay(event: JsonObject, arrived: datetime) -> float | None:
    """The seconds from the ``$updatedAt`` of the row of `event` to `arrived`."""
    payload = event.get("payload")
    stamp = payload.get("$updatedAt") if isinstance(payload, dict) else None
    try:
        return (arrived - datetime.fromisoformat(str(stamp))).total_seconds()
    except ValueError:
        return None


def _ids_read(read: TableRead) -> TableRead:
    """The read of the view's rows' ``$`` fields that `gone_sequences` counts. Its ranges decode
    pages to known types: where the table's cannot be read, those inferred from the view's
    rows so far."""
    ids = read.ids_only()
    if ids.plan.fetched is not None or read.inferred is None:
        return ids
    return replace(ids, plan=replace(ids.plan, fetched=read.inferred.schema), inferred=None)


async def _now(read: TableRead) -> str:
    """The service's time now, as text (a dropped table: `NotFoundError`)."""
    moment = await service_now(read.requester, read.plan.location.rows_path)
    return service_text(moment or datetime.now().astimezone())


def _utc(moment: datetime) -> datetime:
    """`moment`, naive read as UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _channel(location: TableLocation) -> str:
    """The realtime channel of the table's rows."""
    database, table = location.database_id, location.table_id
    if location.legacy:
        return f"databases.{database}.collections.{table}.documents"
    return f"tablesdb.{database}.tables.{table}.rows"


def _check(
    spec: QuerySpec,
    since: object,
    *,
    lag: float,
    heartbeat: float,
    poll: float,
    reconcile: float | None = None,
) -> None:
    if spec.head is not None:
        raise ValueError("changes() follows a whole view; drop head() from the query.")
    if since is not None and not isinstance(since, str | datetime):
        raise TypeError(
            'since= takes None (from now), "snapshot" (every row first) or a watermark: the '
            f"service's datetime text or a datetime (got {type(since).__name__})."
        )
    if isinstance(since, str) and since != "snapshot":
        try:
            datetime.fromisoformat(since)
        except ValueError:
            raise ValueError(
                'since= takes "snapshot" or a watermark such as "2026-01-02T03:04:05.000+00:00" '
                f"(got {since!r})."
            ) from None
    timings = {"lag": lag, "heartbeat": heartbeat, "poll": poll}
    if reconcile is not None:
        timings["reconcile"] = reconcile
    for name, value in timings.items():
        minimum = 0 if name == "lag" else 0.05
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= minimum:
            raise ValueError(f"{name}= takes a number of seconds >= {minimum} (got {value!r}).")


class Changes(Closing, SyncFacade[AsyncChanges], wraps=AsyncChanges):
    """A view's changes as they happen: an iterator of ``pyarrow.RecordBatch``es; the
    synchronous face of `AsyncChanges` (made by `TableQuery.changes`). It ends on
    ``break`` (a ``with`` block or `close` closes it at once) and on `close`.

    >>> with people.changes(since="snapshot") as changes:        # doctest: +SKIP
    ...     for batch in changes:
    ...         print(batch.to_pylist())
    """

    status = forward_property("status")

    def __iter__(self) -> Changes:
        return self

    def __next__(self) -> pa.RecordBatch:
        return next(self._batches)

    @cached_property
    def _batches(self) -> Iterator[pa.RecordBatch]:
        """The batches, each taken on the loop thread (closed with this face)."""
        return iterate_sync(self._async)

    close = delegate(AsyncChanges.close)
