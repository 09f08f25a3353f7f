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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
    """Which databases, buckets and functions (by ID; None: all of them)."""

    databases: Sequence[str] | None = None
    buckets: Sequence[str] | None = None
    functions: Sequence[str] | None = None

    def to_json(self) -> Selected:
        def listed(ids: Sequence[str] | None) -> list[str] | None:
            return None if ids is None else sorted(ID.custom(item) for item in ids)

        return {
            "databases": listed(self.databases),
            "buckets": listed(self.buckets),
            "functions": listed(self.functions),
        }


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
    missing = [item for item in ids if item not in found]
    if missing:
        raise ValueError(
            f"the project has no {what} {', '.join(map(repr, missing))}; "
            f"choose among {', '.join(map(repr, sorted(found))) or 'none'}."
        )
    return [found[item] for item in ids]


async def describe_project(requester: Requester, selection: Selection) -> ProjectRecords:
    """The records of the chosen part of the project (see the module docstring)."""
    databases, buckets, functions = await together(
        [
            _chosen(requester, "/tablesdb", "databases", selection.databases, "database"),
            _chosen(requester, "/storage/buckets", "buckets", selection.buckets, "bucket"),
            _chosen(requester, "/functions", "functions", selection.functions, "function"),
        ]
    )
    described: list[Any] = await together(
        [
            together(_database(requester, record) for record in databases),
            together(_bucket(requester, record) for record in buckets),
            together(_function(requester, record) for record in functions),
        ]
    )
    return ProjectRecords(*(tuple(kind) for kind in described))


async def _database(requester: Requester, database: Record) -> DatabaseEntry[Record]:
    path = f"/tablesdb/{ID.custom(database['$id'])}/tables"
    return DatabaseEntry(database, tuple(await list_records(requester, path, "tables")))


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
