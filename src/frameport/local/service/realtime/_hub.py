"""Realtime subscriptions and publishing: who listens to what, and the events writes send.

The `RealtimeHub` of a running service knows every open realtime connection (a
`Subscriber`) and its subscriptions: client-chosen IDs, each with channels and, per channel,
the queries of realtime (service interface, "Realtime events"). Writes publish through
`publish_row_event`,
`publish_bulk_row_events` and `publish_file_event` once they are committed, from the worker
thread that made them; the hub matches and queues the frames on the service's event loop,
so subscriptions are only ever touched there. Nothing is kept for a client that is not
connected (service interface, "Realtime events"): with no connection open, publishing is
one attribute check.

>>> publish_row_event(state, "create", table, row_json)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...store._db_terms import TABLES, Terms
from ...store._schema_store import TableMeta, load_database
from ...store._store import Store
from ...wire._timefmt import now_text
from ..accounts._accounts import permission_roles, user_row
from ..accounts._caller import Caller
from ._events import (
    ACTIONS,
    RealtimeEvent,
    compact_json,
    event_roles,
    file_channels,
    file_event_names,
    row_channels,
    row_event_names,
)
from ._queries import SELECT_ALL_TEXT, SubscriptionQueries

#: Bulk update, upsert and delete send events for their first 100 rows only
#: (service interface, "Realtime events").
BULK_EVENT_ROWS = 100


@dataclass(frozen=True)
class RealtimeLimits:
    """What realtime sockets may hold (`LocalService` options of the same names).

    `max_sockets` open at once (None: half the HTTP connection cap, set when the service
    starts, so that HTTP keeps connections sockets cannot take), `max_sockets_per_ip` of
    them from one address; `max_subscriptions` per socket and `max_channels` per
    subscription; `max_outbox_bytes` of frames waiting for a socket that reads too slowly
    (counted in characters of their JSON), beyond which it is closed.
    """

    max_sockets: int | None = None
    max_sockets_per_ip: int = 128
    max_subscriptions: int = 100
    max_channels: int = 100
    max_outbox_bytes: int = 1024 * 1024

    def __post_init__(self) -> None:
        for name in (
            "max_sockets",
            "max_sockets_per_ip",
            "max_subscriptions",
            "max_channels",
            "max_outbox_bytes",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")


#: Which subscriptions of which connection listen to a channel: channel → subscriber → IDs.
ChannelIndex = dict[str, dict["Subscriber", set[str]]]
#: An error that ends a connection: (code, message), as an error frame carries them.
Ending = tuple[int, str]

USER_BLOCKED: Ending = (401, "The current user has been blocked.")
SESSION_ENDED: Ending = (
    401,
    "The session of this connection has ended. Sign in again and reconnect.",
)


#: How many sets of matched subscription IDs a connection keeps rendered as JSON.
_IDS_JSON_KEPT = 64


class Subscriber:
    """One open realtime connection: who it acts for and with which roles, its subscriptions
    (ID → channel → queries), `deliver`, which queues a frame for it, and `end`, which closes
    it with an error (both called on the event loop only). Once in the hub, its channels are
    in the hub's index."""

    def __init__(
        self, caller: Caller, deliver: Callable[[str], None], end: Callable[[Ending], None]
    ) -> None:
        self.deliver = deliver
        self.end = end
        self.subscriptions: dict[str, dict[str, SubscriptionQueries]] = {}
        self._index: ChannelIndex | None = None
        self._ids_json: dict[frozenset[str], str] = {}
        self.become(caller)

    def become(self, caller: Caller) -> None:
        """Act for `caller`: its roles, its user, and the session and user it signed in with
        (the impersonator's, when impersonating)."""
        self.roles = caller.roles
        self.user_id = caller.user_id or ""
        self.session_id = caller.session_id
        self.signed_in_as = caller.impersonator_id or self.user_id

    def subscribe(
        self, subscription_id: str, channels: Iterable[str], queries: SubscriptionQueries
    ) -> None:
        """Add `channels` to a subscription (a known ID keeps its other channels)."""
        self._ids_json.clear()
        registered = self.subscriptions.setdefault(subscription_id, {})
        for channel in channels:
            registered[channel] = queries
            if self._index is not None:
                self._index.setdefault(channel, {}).setdefault(self, set()).add(subscription_id)

    def unsubscribe(self, subscription_id: str) -> bool:
        """Forget one subscription; whether there was one."""
        channels = self.subscriptions.pop(subscription_id, None)
        if channels is None:
            return False
        self._ids_json.clear()
        if self._index is not None:
            for channel in channels:
                _unindex(self._index, channel, self, subscription_id)
        return True

    def attach(self, index: ChannelIndex) -> None:
        """Put every channel of this connection in `index` (it joins the hub)."""
        subscriptions, self.subscriptions = self.subscriptions, {}
        self._index = index
        for subscription_id, channels in subscriptions.items():
            for channel, queries in channels.items():
                self.subscribe(subscription_id, [channel], queries)

    def detach(self) -> None:
        """Take every channel of this connection out of the hub's index."""
        if self._index is not None:
            for subscription_id in list(self.subscriptions):
                self.unsubscribe(subscription_id)
        self._index = None

    def reauthenticate(self, caller: Caller) -> None:
        """Act for `caller` after in-band authentication: every subscription stays, its
        account channels following the new user."""
        old_user, index = self.user_id, self._index
        self.become(caller)
        rebound = {
            subscription_id: {
                _rebind_account(channel, old_user, self.user_id): queries
                for channel, queries in channels.items()
            }
            for subscription_id, channels in self.subscriptions.items()
        }
        self.detach()
        self.subscriptions = rebound
        if index is not None:
            self.attach(index)

    def review(self, standing: Standing) -> Ending | None:
        """Follow a change of a user (service interface, "Realtime events": roles are
        recomputed when memberships change; here also labels, verification, blocking and
        sessions): new roles, or the error that ends this connection."""
        if standing.user_id == self.signed_in_as:
            if standing.roles is None or standing.blocked:
                return USER_BLOCKED if standing.blocked else SESSION_ENDED
            if self.session_id is not None and self.session_id not in standing.sessions:
                return SESSION_ENDED
        if standing.user_id == self.user_id:
            if standing.roles is None:
                return SESSION_ENDED
            self.roles = standing.roles
        return None

    def ids_json(self, subscription_ids: set[str]) -> str:
        """`subscription_ids` as JSON, in the order the connection subscribed them (kept
        until its subscriptions change: an event costs a lookup, not an encoding)."""
        key = frozenset(subscription_ids)
        text = self._ids_json.get(key)
        if text is None:
            if len(self._ids_json) >= _IDS_JSON_KEPT:
                self._ids_json.clear()
            ordered = [each for each in self.subscriptions if each in subscription_ids]
            text = self._ids_json[key] = compact_json(ordered)
        return text


def _unindex(index: ChannelIndex, channel: str, subscriber: Subscriber, sid: str) -> None:
    listeners = index.get(channel)
    ids = None if listeners is None else listeners.get(subscriber)
    if listeners is None or ids is None:
        return
    ids.discard(sid)
    if not ids:
        del listeners[subscriber]
        if not listeners:
            del index[channel]


@dataclass(frozen=True)
class Standing:
    """A user as their open connections see them after a change: their roles (None once the
    user is gone), whether they are blocked, and the IDs of their live sessions."""

    user_id: str
    roles: frozenset[str] | None
    blocked: bool
    sessions: frozenset[str]


class RealtimeHub:
    """The open realtime connections of one service, their channels indexed (so an event
    costs its matching subscriptions only), and the delivery of events to them."""

    def __init__(self) -> None:
        self._subscribers: set[Subscriber] = set()
        self._index: ChannelIndex = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.reviewing = threading.Lock()
        """Held while a change of a user is read and handed to the loop, so that changes
        reach the loop in the order they were read."""

    @property
    def listening(self) -> bool:
        """Whether any realtime connection is open (else publishing does nothing)."""
        return bool(self._subscribers)

    def add(self, subscriber: Subscriber) -> None:
        """Register a connection; called on the service's event loop."""
        self._loop = asyncio.get_running_loop()
        self._subscribers.add(subscriber)
        subscriber.attach(self._index)

    def remove(self, subscriber: Subscriber) -> None:
        if subscriber in self._subscribers:
            self._subscribers.discard(subscriber)
            subscriber.detach()

    def publish(self, event: RealtimeEvent) -> None:
        """Hand `event` to the event loop, from any thread (a write never fails for it: once
        the service is stopping, the event is dropped)."""
        self._post(self._deliver, event)

    def review(self, standing: Standing) -> None:
        """Hand a user's change to the event loop, from any thread."""
        self._post(self._review, standing)

    def _post(self, callback: Callable[[Any], None], argument: Any) -> None:
        loop = self._loop
        if loop is None or not self._subscribers:
            return
        try:
            loop.call_soon_threadsafe(callback, argument)
        except RuntimeError:  # the loop has closed
            return

    def _deliver(self, event: RealtimeEvent) -> None:
        matched: dict[Subscriber, set[str]] = {}
        refused: set[Subscriber] = set()
        for channel in event.channels:
            for subscriber, subscription_ids in self._index.get(channel, {}).items():
                found = matched.get(subscriber)
                if found is None:
                    if subscriber in refused or not event.reaches(subscriber.roles):
                        refused.add(subscriber)
                        continue
                    found = matched[subscriber] = set()
                for subscription_id in subscription_ids:
                    if subscription_id not in found and subscriber.subscriptions[subscription_id][
                        channel
                    ].matches(event.payload):
                        found.add(subscription_id)
        frames: dict[str, str] = {}  # connections matched by the same IDs share a frame
        for subscriber, found in matched.items():
            if found:
                ids_json = subscriber.ids_json(found)
                frame = frames.get(ids_json)
                if frame is None:
                    frame = frames[ids_json] = event.frame(ids_json)
                subscriber.deliver(frame)

    def _review(self, standing: Standing) -> None:
        for subscriber in list(self._subscribers):
            ending = subscriber.review(standing)
            if ending is not None:
                self.remove(subscriber)
                subscriber.end(ending)


class RealtimeHost(Protocol):
    """What publishing and reviewing need of the service's state: its hub and its store."""

    @property
    def realtime(self) -> RealtimeHub: ...

    @property
    def store(self) -> Store: ...


def review_user_connections(state: RealtimeHost, user_id: str) -> None:
    """After a committed change of `user_id` (memberships, labels, verification, status,
    sessions): their open connections take their new roles, or are closed when the user is
    blocked or the connection's session is gone."""
    hub = state.realtime
    if not hub.listening or not user_id:
        return
    with hub.reviewing, state.store.read() as conn:
        user = user_row(conn, "id", user_id)
        sessions = conn.execute(
            "SELECT id FROM sessions WHERE user_id = ? AND expire > ?", (user_id, time.time())
        )
        standing = Standing(
            user_id,
            None if user is None else permission_roles(conn, user),
            user is not None and not user["status"],
            frozenset(str(row[0]) for row in sessions),
        )
        hub.review(standing)


# --- publishing ------------------------------------------------------------------------------


def publish_row_event(
    state: RealtimeHost,
    action: str,
    table: TableMeta,
    row: bytes | str | Mapping[str, Any],
    terms: Terms = TABLES,
) -> None:
    """Publish the event of one committed row write.

    `action` is `create`, `update`, `upsert` or `delete`; `row` is the payload (the row as
    the route answers it, or as it was for a delete), as JSON or as a mapping; `terms` is
    the interface of the route that wrote. Relationship columns are left out
    (service interface, "Realtime events"). A disabled table or database sends nothing.
    """
    publish_bulk_row_events(state, action, table, [row], terms)


def publish_bulk_row_events(
    state: RealtimeHost,
    action: str,
    table: TableMeta,
    rows: Sequence[bytes | str | Mapping[str, Any]],
    terms: Terms = TABLES,
) -> None:
    """One event per row of a bulk write; update, upsert and delete stop after 100 rows."""
    hub = state.realtime
    if not hub.listening or not table.enabled:
        return
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, not {action!r}")
    with state.store.read() as conn:
        database = load_database(conn, table.database_id)
    if database is not None and not database.enabled:
        return
    database_type = "tablesdb" if database is None else database.type
    hidden = [column.key for column in table.columns if column.kind == "relationship"]
    published = rows if action == "create" else rows[:BULK_EVENT_ROWS]
    for row in published:
        payload, payload_json = _payload(row, hidden)
        row_id = str(payload.get("$id", ""))
        names = row_event_names(database_type, terms, table.database_id, table.id, row_id, action)
        row_permissions = payload.get("$permissions") or []
        roles = event_roles(table.permissions, row_permissions, table.row_security)
        channels = row_channels(table.database_id, table.id, row_id, action)
        hub.publish(RealtimeEvent(names, channels, roles, payload, payload_json, now_text()))


class FileContainer(Protocol):
    """What decides who may see a file's events: its bucket's permissions and file security."""

    @property
    def permissions(self) -> Sequence[str]: ...

    @property
    def file_security(self) -> bool: ...


def publish_file_event(
    state: RealtimeHost, action: str, bucket: FileContainer, file: Mapping[str, Any]
) -> None:
    """Publish the event of one file write; `file` is the File model (as it was, for a
    delete)."""
    hub = state.realtime
    if not hub.listening:
        return
    bucket_id, file_id = str(file["bucketId"]), str(file["$id"])
    names = file_event_names(bucket_id, file_id, action)
    channels = file_channels(bucket_id, file_id, action)
    roles = event_roles(bucket.permissions, file.get("$permissions") or [], bucket.file_security)
    payload, payload_json = _payload(file, ())
    hub.publish(RealtimeEvent(names, channels, roles, payload, payload_json, now_text()))


def _payload(
    row: bytes | str | Mapping[str, Any], hidden: Sequence[str]
) -> tuple[dict[str, Any], str]:
    """The payload as a mapping and as JSON; JSON given without hidden keys is kept as is."""
    if isinstance(row, (bytes, str)):
        decoded = json.loads(row)
        if not any(key in decoded for key in hidden):
            return decoded, row.decode() if isinstance(row, bytes) else row
    else:
        decoded = dict(row)
    for key in hidden:
        decoded.pop(key, None)
    return decoded, compact_json(decoded)


# --- channels as clients name them ----------------------------------------------------------


def convert_channels(channels: Iterable[str], user_id: str) -> list[str]:
    """The channels a connection listens to for the ones it asked for
    (service interface, "Realtime connections"): `account`
    also as `account.<userId>`; `account.<action>` as `account.<userId>.<action>` for a
    signed-in user; any other `account.…` dropped."""
    converted: dict[str, None] = {}
    for channel in channels:
        if channel == "account":
            converted[channel] = None
            if user_id:
                converted[f"account.{user_id}"] = None
        elif channel.startswith("account."):
            action = channel.removeprefix("account.")
            if action in ACTIONS:
                converted[f"account.{user_id}.{action}" if user_id else channel] = None
        else:
            converted[channel] = None
    return list(converted)


def _rebind_account(channel: str, old_user: str, new_user: str) -> str:
    """An account channel of `old_user` (or a guest's `account.<action>`) for `new_user`."""
    if not new_user or old_user == new_user or not channel.startswith("account."):
        return channel
    rest = channel.removeprefix("account.")
    if not old_user:
        return f"account.{new_user}.{rest}" if rest in ACTIONS else channel
    if rest == old_user:
        return f"account.{new_user}"
    owner, _, action = rest.rpartition(".")
    return f"account.{new_user}.{action}" if owner == old_user and action in ACTIONS else channel


def url_subscriptions(
    channels: Sequence[str], slot_queries: Mapping[str, Any]
) -> dict[Any, tuple[list[str], list[Any]]]:
    """The subscriptions of a handshake URL (service interface, "Realtime connections"):
    slot → (channels, query strings).

    `slot_queries` maps a parameter name (with `.` read as `_`, as the service reads it) to
    its value: a query string, or a mapping slot → query string(s). A
    channel without one goes into slot 0, whose queries are then `select(["*"])` unless a
    slot-0 query came first; a slot's queries are those of the first channel naming it.
    """
    slots: dict[Any, tuple[list[str], list[Any]]] = {}
    for channel in channels:
        value = slot_queries.get(channel.replace(".", "_"))
        if channel == "project" and isinstance(value, str):
            value = None
        if value is None:
            names, queries = slots.setdefault(0, ([], []))
            names.append(channel)
            if not queries:
                queries.append(SELECT_ALL_TEXT)
            continue
        items = value.items() if isinstance(value, Mapping) else enumerate(as_list(value))
        for slot, slot_value in items:
            names, queries = slots.setdefault(slot, ([], []))
            if channel not in names:
                names.append(channel)
            if not queries:
                queries.extend(as_list(slot_value))
    return slots


def as_list(value: Any) -> list[Any]:
    """A parameter's values: a list or a mapping's values as they are, anything else alone."""
    if isinstance(value, Mapping):
        return list(value.values())
    return list(value) if isinstance(value, list) else [value]
