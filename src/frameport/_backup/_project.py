"""What a project holds, as the service describes it: its databases with their tables (every
column, index, permission and flag), its buckets with their files, and its functions with
their active deployment; the records are kept as the service sent them.

Users and sessions are left out: the service never shows their secrets (password hashes,
session secrets), so they cannot be carried to another project.

>>> project = await describe_project(requester, Selection())      # doctest: +SKIP
>>> [database.record["$id"] for database in project.databases]   # doctest: +SKIP
['crm']
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .._core._ids import ID
from .._core._pages import iter_pages
from .._core._together import together
from ._entries import (
    BucketEntry,
    DatabaseEntry,
    FunctionEntry,
    ProjectRecords,
    Record,
    Selected,
)

if TYPE_CHECKING:
    from .._core import Requester

LIST_PAGE = 100


@dataclass(frozen=True)
class Selection:
    """Which databases, buckets and functions (by ID; None: all of them). `tables` (each as
    ``"database/table"``) adds those tables alone to the `databases` named: with either
    given, only the databases and tables they name are chosen."""

    databases: Sequence[str] | None = None
    buckets: Sequence[str] | None = None
    functions: Sequence[str] | None = None
    tables: Sequence[str] | None = None

    @classmethod
    def of_part(cls, databases: Sequence[str] | None, tables: Sequence[str] | None) -> Selection:
        """The part of a snapshot a restore names: the whole of it when neither `databases`
        nor `tables` is given, else those alone (no bucket, no function)."""
        if databases is None and tables is None:
            return cls()
        return cls(databases or [], [], [], tables)

    def database_ids(self) -> list[str] | None:
        """The databases chosen, wholly or for some of their tables (None: all)."""
        if self.tables is None:
            return None if self.databases is None else list(self.databases)
        named = [_split_table(name)[0] for name in self.tables]
        return list(dict.fromkeys([*(self.databases or []), *named]))

    def chosen_tables(self, database_id: str, tables: Sequence[Record]) -> list[Record]:
        """Those of `tables` (the records of database `database_id`'s) chosen."""
        if self.tables is None or database_id in (self.databases or ()):
            return list(tables)
        prefix = f"{database_id}/"
        named = [_split_table(name)[1] for name in self.tables if name.startswith(prefix)]
        found = {record["$id"]: record for record in tables}
        _check_named(named, found, "table", lambda item: f"{database_id}/{item}")
        return [found[table_id] for table_id in named]

    def pick(self, project: ProjectRecords, holder: str) -> ProjectRecords:
        """The chosen part of `project`, the records `holder` (such as "the snapshot")
        holds."""

        def chosen(records: Sequence[_Held], ids: Sequence[str] | None, what: str) -> list[_Held]:
            found = {entry.record["$id"]: entry for entry in records}
            if ids is None:
                return list(records)
            _check_named(ids, found, what, holder=holder)
            return [found[item] for item in ids]

        database_ids = self.database_ids()  # each table's name checked
        if self.tables is not None:
            held = {f"{d.record['$id']}/{t['$id']}" for d in project.databases for t in d.tables}
            _check_named(self.tables, held, "table", holder=holder)

        databases = [
            DatabaseEntry(
                entry.record, tuple(self.chosen_tables(entry.record["$id"], entry.tables))
            )
            for entry in chosen(project.databases, database_ids, "database")
        ]
        return ProjectRecords(
            tuple(databases),
            tuple(chosen(project.buckets, self.buckets, "bucket")),
            tuple(chosen(project.functions, self.functions, "function")),
        )

    def to_json(self) -> Selected:
        def listed(ids: Sequence[str] | None) -> list[str] | None:
            return None if ids is None else sorted(ID.custom(item) for item in ids)

        return {
            "databases": listed(self.databases),
            "buckets": listed(self.buckets),
            "functions": listed(self.functions),
        }


_Held = TypeVar("_Held", DatabaseEntry[Record], BucketEntry[Record], FunctionEntry)


def _split_table(name: str) -> tuple[str, str]:
    database_id, slash, table_id = name.partition("/")
    if not slash or not database_id or not table_id or "/" in table_id:
        raise ValueError(
            f'name each table as "database/table", e.g. "crm/orders" (got {name!r}): table IDs '
            "are unique within their database only."
        )
    return database_id, table_id


def _check_named(
    ids: Sequence[str],
    found: Mapping[str, object] | set[str],
    what: str,
    shown: Callable[[str], str] = str,
    holder: str = "the project",
) -> None:
    """ValueError naming each of `ids` not in `found` (what `holder` holds), and the
    choices."""
    missing = [shown(item) for item in ids if item not in found]
    if missing:
        raise ValueError(
            f"{holder} has no {what} {', '.join(map(repr, missing))}; "
            f"choose among {', '.join(repr(shown(item)) for item in sorted(found)) or 'none'}."
        )


async def list_records(requester: Requester, path: str, key: str) -> list[Record]:
    """Every record of the list at `path` (named `key` in the answers), as the service sent
    them."""
    records: list[Record] = []
    async for body in iter_pages(requester, path, (), LIST_PAGE):
        records.extend(json.loads(body).get(key, []))
    return records


async def _chosen(
    requester: Requester, path: str, key: str, ids: Sequence[str] | None, what: str
) -> list[Any]:
    """The records of the list at `path` whose IDs are `ids` (None: all); none at all, and
    no request, for an empty `ids`."""
    if ids is not None and not ids:
        return []
    records = await list_records(requester, path, key)
    if ids is None:
        return records
    found = {str(record["$id"]): record for record in records}
    _check_named(ids, found, what)
    return [found[item] for item in ids]


async def describe_project(requester: Requester, selection: Selection) -> ProjectRecords:
    """The records of the chosen part of the project (see the module docstring)."""
    databases, buckets, functions = await together(
        [
            _chosen(requester, "/tablesdb", "databases", selection.database_ids(), "database"),
            _chosen(requester, "/storage/buckets", "buckets", selection.buckets, "bucket"),
            _chosen(requester, "/functions", "functions", selection.functions, "function"),
        ]
    )
    described: list[Any] = await together(
        [
            together(_database(requester, record, selection) for record in databases),
            together(_bucket(requester, record) for record in buckets),
            together(_function(requester, record) for record in functions),
        ]
    )
    return ProjectRecords(*(tuple(kind) for kind in described))


async def _database(
    requester: Requester, database: Record, selection: Selection
) -> DatabaseEntry[Record]:
    path = f"/tablesdb/{ID.custom(database['$id'])}/tables"
    tables = await list_records(requester, path, "tables")
    return DatabaseEntry(database, tuple(selection.chosen_tables(database["$id"], tables)))


async def _bucket(requester: Requester, bucket: Record) -> BucketEntry[Record]:
    path = f"/storage/buckets/{ID.custom(bucket['$id'])}/files"
    files = [
        record
        for record in await list_records(requester, path, "files")
        if record.get("chunksUploaded") == record.get("chunksTotal")  # not half-uploaded
    ]
    return BucketEntry(bucket, tuple(files))


async def _function(requester: Requester, function: Record) -> FunctionEntry:
    deployment = None
    if function.get("deploymentId"):
        path = f"/functions/{ID.custom(function['$id'])}/deployments/{function['deploymentId']}"
        deployment = await requester.request_json("GET", path)
    return FunctionEntry(function, deployment)
