"""What a realtime event is called, where it goes and who may see it
(service interface, "Realtime events").

A row write publishes one event carrying 16 channels (`rows`, `documents`, the table's and
the row's channels under `databases`, `tablesdb` and the legacy collection names, each again
with the action appended) and a list of event names: every combination of the real IDs and
`*`, with and without the action, plus the table-level and database-level names, in three
families for a `tablesdb` database (`tablesdb.…`, `databases.…tables.…rows`,
`databases.…collections.…documents`; 64 names) and two for a `legacy` one (42 names). A file
write carries 6 channels and 10 names. The first name is always the most specific one.

The roles that may receive an event are the table's (or bucket's) `read` roles, plus the
row's (file's) own `read` roles under row (file) security; `any` reaches everyone.

>>> names = row_event_names("tablesdb", TABLES, "D", "T", "R", "create")
>>> len(names), names[0], names[1]
(64, 'tablesdb.D.tables.T.rows.R.create', 'databases.D.collections.T.documents.R.create')
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...store._db_terms import TABLES, Terms
from ..accounts._permissions import parse_permission

ACTIONS = ("create", "update", "upsert", "delete")

#: Channels whose last or second-to-last segment is one of these get an `.<action>` twin.
_RESOURCE_SEGMENTS = frozenset(
    {
        "documents",
        "rows",
        "files",
        "executions",
        "functions",
        "account",
        "teams",
        "memberships",
        "presences",
    }
)

#: Which IDs become `*` in each name of a pattern with 1, 2 or 3 IDs, in the service's order.
_STARRED: dict[int, tuple[tuple[int, ...], ...]] = {
    1: ((), (0,)),
    2: ((), (0, 1), (1,), (0,)),
    3: ((), (0, 1, 2), (1,), (0, 1), (0,), (2,), (0, 2), (1, 2)),
}

#: The words of one family of row event names: database, table and row segments.
_TABLESDB_WORDS = ("tablesdb", "tables", "rows")
_TABLE_WORDS = ("databases", "tables", "rows")
_COLLECTION_WORDS = ("databases", "collections", "documents")


@dataclass
class RealtimeEvent:
    """One published event: its names, channels, the roles it reaches and its payload (the
    row or file as a mapping, and as the JSON text sent).

    `frame` renders the `event` message for one connection, with the IDs of that
    connection's subscriptions that matched (as JSON); everything before them is rendered
    once.
    """

    events: list[str]
    channels: list[str]
    roles: frozenset[str]
    payload: Mapping[str, Any]
    payload_json: str
    timestamp: str
    channel_set: frozenset[str] = field(init=False)
    _frame_head: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.channel_set = frozenset(self.channels)
        self._frame_head = (
            f'{{"type":"event","data":{{"events":{compact_json(self.events)},'
            f'"channels":{compact_json(self.channels)},"timestamp":{compact_json(self.timestamp)},'
            f'"payload":{self.payload_json},"subscriptions":'
        )

    def reaches(self, roles: frozenset[str]) -> bool:
        """Whether a connection holding `roles` may receive this event."""
        return "any" in self.roles or not self.roles.isdisjoint(roles)

    def frame(self, subscription_ids_json: str) -> str:
        return f"{self._frame_head}{subscription_ids_json}}}}}"


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def compact_json(value: Any) -> str:
    """JSON without spaces, as the service writes its frames."""
    return _COMPACT.encode(value)


def with_actions(channels: Sequence[str], action: str) -> list[str]:
    """`channels`, then each resource channel again with `.<action>` appended."""
    suffixed = []
    for channel in channels:
        segments = channel.split(".")
        if segments[-1] in _RESOURCE_SEGMENTS or (
            len(segments) >= 2 and segments[-2] in _RESOURCE_SEGMENTS
        ):
            suffixed.append(f"{channel}.{action}")
    return _unique([*channels, *suffixed])


def row_channels(database_id: str, table_id: str, row_id: str, action: str) -> list[str]:
    """The 16 channels of a row event, whatever the database's type."""
    collection = f"databases.{database_id}.collections.{table_id}.documents"
    table = f"databases.{database_id}.tables.{table_id}.rows"
    tablesdb = f"tablesdb.{database_id}.tables.{table_id}.rows"
    base = [
        "documents", collection, f"{collection}.{row_id}",
        "rows", table, f"{table}.{row_id}",
        tablesdb, f"{tablesdb}.{row_id}",
    ]  # fmt: skip  # one family of channels a line
    return with_actions(base, action)


def file_channels(bucket_id: str, file_id: str, action: str) -> list[str]:
    """The 6 channels of a file event."""
    files = f"buckets.{bucket_id}.files"
    return with_actions(["files", files, f"{files}.{file_id}"], action)


def row_event_names(
    database_type: str, terms: Terms, database_id: str, table_id: str, row_id: str, action: str
) -> list[str]:
    """Every name of a row event. `terms` is the interface of the route that wrote: in a
    `legacy` database it decides which family comes first."""
    families: tuple[tuple[str, str, str], ...]
    if database_type == "tablesdb":
        families = (_TABLESDB_WORDS, _COLLECTION_WORDS, _TABLE_WORDS)
    elif terms is TABLES:
        families = (_TABLE_WORDS, _COLLECTION_WORDS)
    else:
        families = (_COLLECTION_WORDS, _TABLE_WORDS)
    names = _row_name_pattern(families, database_id, table_id, action)
    return _unique(name.replace(_ROW_MARK, row_id) for name in names)


#: Stands for the row's ID in a table's cached names (no ID contains it).
_ROW_MARK = "\0"


@functools.lru_cache(maxsize=256)
def _row_name_pattern(
    families: tuple[tuple[str, str, str], ...], database_id: str, table_id: str, action: str
) -> tuple[str, ...]:
    """The names of a row event of one table, with `_ROW_MARK` for the row's ID: worked out
    once per table and action, as each row of a write carries them."""
    ids = (database_id, table_id, _ROW_MARK)
    expanded = [_family(words, ids, action) for words in families]
    return tuple(name for names in zip(*expanded, strict=True) for name in names)


def file_event_names(bucket_id: str, file_id: str, action: str) -> list[str]:
    """The 10 names of a file event."""
    return _family(("buckets", "files"), (bucket_id, file_id), action)


def _family(words: Sequence[str], ids: Sequence[str], action: str) -> list[str]:
    """One family: the full path with and without the action, then each shorter path."""
    names = [f"{name}.{action}" for name in _starred(words, ids)]
    for depth in range(len(ids), 0, -1):
        names.extend(_starred(words[:depth], ids[:depth]))
    return names


def _starred(words: Sequence[str], ids: Sequence[str]) -> list[str]:
    names = []
    for starred in _STARRED[len(ids)]:
        parts = []
        for position, (word, item) in enumerate(zip(words, ids, strict=True)):
            parts += [word, "*" if position in starred else item]
        names.append(".".join(parts))
    return names


def read_roles(permissions: Iterable[str]) -> set[str]:
    """The roles a list of permission strings gives `read` to."""
    roles = set()
    for permission in permissions:
        parsed = parse_permission(permission)
        if parsed is not None and parsed[0] == "read":
            roles.add(parsed[1])
    return roles


def event_roles(
    container_permissions: Iterable[str], item_permissions: Iterable[str], item_security: bool
) -> frozenset[str]:
    """The table's (bucket's) read roles, and the row's (file's) under row (file) security."""
    roles = read_roles(container_permissions)
    if item_security:
        roles |= read_roles(item_permissions)
    return frozenset(roles)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
