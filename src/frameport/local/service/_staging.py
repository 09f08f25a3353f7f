"""Staging operations into a transaction (service interface, "Transactions"): the shape of the
operations endpoint's entries, and the checks every staged operation passes first.

Operations are kept in one form whichever route staged them: `action`, `databaseId`,
`tableId`, `rowId` (single-row actions) and `data`, with the legacy keys (`collectionId`,
`documentId`) read as these.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from ..store._db_terms import Terms
from ..store._rowstore import load_row
from ..store._schema_store import TableMeta
from ..wire._errors import ServiceError, invalid_param
from ..wire._params import UNIQUE, is_uid, unique_id
from ._caller import Caller
from ._row_access import (
    requested_permissions,
    row_allows,
    row_not_found,
    table_or_404,
    unauthorized,
)
from ._transaction_view import StagedTable
from ._transactions import ACTIONS, BULK_ACTIONS, SINGLE_ACTIONS

#: The table permission each action needs from a caller without an API key.
NEEDED = {
    "create": "create", "bulkCreate": "create", "update": "update", "upsert": "update",
    "increment": "update", "decrement": "update", "bulkUpdate": "update",
    "bulkUpsert": "update", "delete": "delete", "bulkDelete": "delete",
}  # fmt: skip
#: Actions of a row that must exist, committed or staged.
ON_EXISTING = frozenset({"update", "delete", "increment", "decrement"})


def _invalid(position: int, detail: str) -> ServiceError:
    return invalid_param("operations", f"Operation {position}: {detail}")


def _id(entry: Mapping[str, Any], names: tuple[str, str], position: int) -> str:
    value = next((entry[name] for name in names if entry.get(name) is not None), None)
    if value is None:
        raise _invalid(position, f"`{names[0]}` is required")
    if not is_uid(value):
        raise _invalid(position, f"`{names[0]}` is not a valid ID")
    return str(value)


def _query_list(data: Mapping[str, Any], position: int) -> list[str]:
    queries = data.get("queries")
    if not isinstance(queries, list) or not all(isinstance(item, str) for item in queries):
        raise _invalid(position, "`data.queries` must be a list of query strings")
    return queries


def with_row_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bulk rows with their `$id`, generated now where missing or `unique()`."""
    return [
        {**item, "$id": unique_id()} if item.get("$id") in (None, UNIQUE) else item
        for item in items
    ]


def parse_operation(entry: Any, position: int) -> dict[str, Any]:
    """One entry of the operations endpoint's body, checked and in the one stored form."""
    if not isinstance(entry, dict):
        raise _invalid(position, "must be a JSON object")
    action = entry.get("action")
    if action not in ACTIONS:
        raise _invalid(position, f"`action` must be one of {', '.join(ACTIONS)}")
    operation: dict[str, Any] = {
        "action": action,
        "databaseId": _id(entry, ("databaseId", "databaseId"), position),
        "tableId": _id(entry, ("tableId", "collectionId"), position),
    }
    if action in SINGLE_ACTIONS:
        operation["rowId"] = _id(entry, ("rowId", "documentId"), position)
    data = entry.get("data")
    if action == "delete":
        return operation
    if action in ("bulkCreate", "bulkUpsert"):
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise _invalid(position, "`data` must be a list of row objects")
        operation["data"] = with_row_ids(data)
        return operation
    if not isinstance(data, dict):
        raise _invalid(position, "`data` must be a JSON object")
    if action == "bulkUpdate":
        if not isinstance(data.get("data"), dict):
            raise _invalid(position, "`data.data` must be a JSON object")
        operation["data"] = {"queries": _query_list(data, position), "data": data["data"]}
    elif action == "bulkDelete":
        operation["data"] = {"queries": _query_list(data, position)}
    elif action in ("increment", "decrement"):
        operation["data"] = counter_data(data, action, position)
    else:
        operation["data"] = data
    return operation


def counter_data(data: Mapping[str, Any], action: str, position: int) -> dict[str, Any]:
    column = data.get("column", data.get("attribute"))
    if not isinstance(column, str):
        raise _invalid(position, "`data.column` must name the column to change")
    bound_name = "max" if action == "increment" else "min"
    result: dict[str, Any] = {"column": column}
    for name in ("value", bound_name):
        value = data.get(name)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            raise _invalid(position, f"`data.{name}` must be a number")
        if value is not None:
            result[name] = value
    return result


def staging_table(
    conn: sqlite3.Connection, caller: Caller, terms: Terms, operation: Mapping[str, Any]
) -> TableMeta:
    """The operation's table as the caller may see it: else 404."""
    return table_or_404(conn, caller, terms, operation["databaseId"], operation["tableId"])


def check_operation(
    conn: sqlite3.Connection,
    caller: Caller,
    terms: Terms,
    table: TableMeta,
    operation: Mapping[str, Any],
    state: StagedTable,
    *,
    row_must_exist: bool = True,
) -> None:
    """What an operation must pass to be staged: bulk actions need an API key and a table
    without relationships; the row of an update, delete or counter must exist (committed or
    staged) when `row_must_exist`; a caller without a key needs the permission the action
    needs and may grant only roles it holds."""
    action = operation["action"]
    if action in BULK_ACTIONS:
        if not caller.is_key:
            raise unauthorized()
        if any(column.kind == "relationship" for column in table.available_columns):
            raise ServiceError(
                "general_bad_request",
                f"Bulk operations are not available on {terms.tables} with relationship "
                f"{terms.columns}.",
            )
    row_id = operation.get("rowId")
    stored = None if row_id is None else load_row(conn, table, row_id)
    exists = row_id is not None and state.exists(row_id, lambda _: stored is not None)
    if row_must_exist and action in ON_EXISTING and row_id is not None and not exists:
        raise row_not_found(terms, row_id)
    if caller.is_key:
        return
    row_permissions: Any = []
    if row_id is not None and row_id in state.created:
        row_permissions = state.created[row_id].get("$permissions", [])
    elif stored is not None and row_id not in state.deleted:
        row_permissions = stored.permissions
    if not row_allows(caller, table, row_permissions, NEEDED[action]):
        raise unauthorized()
    data = operation.get("data")
    if isinstance(data, dict):
        requested_permissions(caller, data.get("$permissions"), "$permissions")
