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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..store._db_terms import TABLES, Terms
from ..store._schema_store import TableMeta, load_database
from ..wire._timefmt import now_text
from ._realtime_events import (
    ACTIONS,
    RealtimeEvent,
    compact_json,
    event_roles,
    file_channels,
    file_event_names,
    row_channels,
    row_event_names,
)
from ._realtime_queries import SELECT_ALL_TEXT, SubscriptionQueries

if TYPE_CHECKING:
    from ._state import ServiceState

#: Bulk update, upsert and delete send events for their first 100 rows only
#: (service interface, "Realtime events").
BULK_EVENT_ROWS = 100


class Subscriber:
    """One open realtime connection: the roles it was given, its user, its subscriptions,
    and `deliver`, which queues a frame for it (called on the event loop only)."""

    def __init__(self, roles: frozenset[str], user_id: str, deliver: Callable[[str], None]) -> None:
        self.roles = roles
        self.user_id = user_id
        self.deliver = deliver
        self.subscriptions: dict[str, dict[str, SubscriptionQueries]] = {}

    def subscribe(
        self, subscription_id: str, channels: Iterable[str], queries: SubscriptionQueries
    ) -> None:
        """Add `channels` to a subscription (a known ID keeps its other channels)."""
        registered = self.subscriptions.setdefault(subscription_id, {})
        for channel in channels:
            registered[channel] = queries

    def unsubscribe(self, subscription_id: str) -> bool:
        """Forget one subscription; whether there was one."""
        return self.subscriptions.pop(subscription_id, None) is not None

    def reauthenticate(self, roles: frozenset[str], user_id: str) -> None:
        """New roles and user after in-band authentication: every subscription stays, its
        account channels following the new user."""
        self.subscriptions = {
            subscription_id: {
                _rebind_account(channel, self.user_id, user_id): queries
                for channel, queries in channels.items()
            }
            for subscription_id, channels in self.subscriptions.items()
        }
        self.roles, self.user_id = roles, user_id

    def matching(self, event: RealtimeEvent) -> list[str]:
        """The IDs of this connection's subscriptions that receive `event`."""
        if not self.subscriptions or not event.reaches(self.roles):
            return []
        matched = []
        for subscription_id, channels in self.subscriptions.items():
            for channel in event.channel_set.intersection(channels):
                if channels[channel].matches(event.payload):
                    matched.append(subscription_id)
                    break
        return matched


class RealtimeHub:
    """The open realtime connections of one service, and the delivery of events to them."""

    def __init__(self) -> None:
        self._subscribers: set[Subscriber] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def listening(self) -> bool:
        """Whether any realtime connection is open (else publishing does nothing)."""
        return bool(self._subscribers)

    def add(self, subscriber: Subscriber) -> None:
        """Register a connection; called on the service's event loop."""
        self._loop = asyncio.get_running_loop()
        self._subscribers.add(subscriber)

    def remove(self, subscriber: Subscriber) -> None:
        self._subscribers.discard(subscriber)

    def publish(self, event: RealtimeEvent) -> None:
        """Hand `event` to the event loop, from any thread (a write never fails for it: once
        the service is stopping, the event is dropped)."""
        loop = self._loop
        if loop is None or not self._subscribers:
            return
        try:
            loop.call_soon_threadsafe(self._deliver, event)
        except RuntimeError:  # the loop has closed
            return

    def _deliver(self, event: RealtimeEvent) -> None:
        for subscriber in list(self._subscribers):
            matched = subscriber.matching(event)
            if matched:
                subscriber.deliver(event.frame(matched))


# --- publishing ------------------------------------------------------------------------------


def publish_row_event(
    state: ServiceState,
    action: str,
    table: TableMeta,
    row: bytes | str | Mapping[str, Any],
    terms: Terms = TABLES,
) -> None:
    """Publish the event of one committed row write.

    `action` is `create`, `update`, `upsert` or `delete`; `row` is the payload (the row as
    the route answers it, or as it was for a delete), as JSON or as a mapping; `terms` is
    the interface of the route that wrote. Relationship columns are left out
    (service interface, "Realtime events").
    """
    hub = state.realtime
    if not hub.listening:
        return
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, not {action!r}")
    with state.store.read() as conn:
        database = load_database(conn, table.database_id)
    database_type = "tablesdb" if database is None else database.type
    hidden = [column.key for column in table.columns if column.kind == "relationship"]
    payload, payload_json = _payload(row, hidden)
    row_id = str(payload.get("$id", ""))
    names = row_event_names(database_type, terms, table.database_id, table.id, row_id, action)
    roles = event_roles(table.permissions, payload.get("$permissions") or [], table.row_security)
    channels = row_channels(table.database_id, table.id, row_id, action)
    hub.publish(RealtimeEvent(names, channels, roles, payload, payload_json, now_text()))


def publish_bulk_row_events(
    state: ServiceState,
    action: str,
    table: TableMeta,
    rows: Sequence[bytes | str | Mapping[str, Any]],
    terms: Terms = TABLES,
) -> None:
    """One event per row of a bulk write; update, upsert and delete stop after 100 rows."""
    if not state.realtime.listening:
        return
    published = rows if action == "create" else rows[:BULK_EVENT_ROWS]
    for row in published:
        publish_row_event(state, action, table, row, terms)


class FileContainer(Protocol):
    """What decides who may see a file's events: its bucket's permissions and file security."""

    @property
    def permissions(self) -> Sequence[str]: ...

    @property
    def file_security(self) -> bool: ...


def publish_file_event(
    state: ServiceState, action: str, bucket: FileContainer, file: Mapping[str, Any]
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
