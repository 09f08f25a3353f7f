"""Staging operations into a transaction (service interface, "Transactions"): the shape of the
operations endpoint's entries, and the checks every staged operation passes first.

Operations are kept in one form whichever route staged them: `action`, `databaseId`,
`tableId`, `rowId` (single-row actions) and `data`, with the legacy keys (`collectionId`,
`documentId`) read as these. As on the row routes, `$createdAt` and `$updatedAt` are kept
only from API keys, and values are checked against their columns when staged (`check_data`);
update operators are left for the commit to apply.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...store._db_terms import Terms
from ...store._rowstore import load_row, row_values, split_row_data
from ...store._schema_store import TableMeta
from ...store._transactions import TransactionRecord, encoded
from ...wire._errors import ServiceError, invalid_param
from ...wire._params import UNIQUE, is_uid, unique_id
from .._clock import ServiceClock
from ..accounts._caller import Caller
from ..rows._access import (
    requested_permissions,
    row_allows,
    row_not_found,
    table_or_404,
    unauthorized,
)
from ..rows._update_operators import parse_operator
from ._lifecycle import ACTIONS, BULK_ACTIONS, SINGLE_ACTIONS, stage
from ._staged_log import StagedLog, TableKey
from ._view import StagedTable, committed_rows

#: The table permission each action needs from a caller without an API key.
NEEDED = {
    "create": "create",
    "bulkCreate": "create",
    "update": "update",
    "upsert": "update",
    "increment": "update",
    "decrement": "update",
    "bulkUpdate": "update",
    "bulkUpsert": "update",
    "delete": "delete",
    "bulkDelete": "delete",
}
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


#: Row data members only API keys may set.
STAMPS = ("$createdAt", "$updatedAt")


def without_user_stamps(caller: Caller, operation: dict[str, Any]) -> dict[str, Any]:
    """The operation as staged for `caller`: a caller without a key cannot set a row's
    `$createdAt` or `$updatedAt` (the row routes drop them too)."""
    data = operation.get("data")
    if caller.is_key or not isinstance(data, dict) or not any(key in data for key in STAMPS):
        return operation
    kept = {key: value for key, value in data.items() if key not in STAMPS}
    return {**operation, "data": kept}


def check_data(
    caller: Caller, terms: Terms, table: TableMeta, operation: Mapping[str, Any]
) -> None:
    """400 `row_invalid_structure` (as the row routes answer) for staged data a commit would
    refuse by its columns: a created row is checked whole, other data value by value."""
    action = operation["action"]
    data: Any = operation.get("data")
    rows: list[Mapping[str, Any]] = data if action in ("bulkCreate", "bulkUpsert") else [data]
    if action in ("create", "bulkCreate"):
        for row in rows:
            values, _ = split_row_data(row, terms, honour_times=caller.is_key)
            row_values(table, terms, values)
    elif action in ("update", "upsert", "bulkUpsert"):
        for row in rows:
            _check_given(caller, terms, table, row)
    elif action == "bulkUpdate":
        _check_given(caller, terms, table, data["data"])


def _check_given(caller: Caller, terms: Terms, table: TableMeta, data: Mapping[str, Any]) -> None:
    """The values `data` gives, checked as written over a row with every column set;
    operators are left for the commit."""
    values, _ = split_row_data(data, terms, honour_times=caller.is_key)
    given = {key: value for key, value in values.items() if parse_operator(value) is None}
    every_column_set = {column.key: True for column in table.available_columns}
    row_values(table, terms, given, every_column_set)


@dataclass
class Staging:
    """One request's staging into `record`, from the kept `log`: each operation is checked
    against the state the transaction sees (earlier operations of the request included),
    then all are written at once (`write`)."""

    conn: sqlite3.Connection
    caller: Caller
    terms: Terms
    record: TransactionRecord
    log: StagedLog
    states: dict[TableKey, StagedTable] = field(default_factory=dict)
    operations: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self, table: TableMeta, operation: dict[str, Any], *, row_must_exist: bool = True
    ) -> StagedTable:
        """Check one operation and lay it over its table's state; that state."""
        operation = without_user_stamps(self.caller, operation)
        key = (table.database_id, table.id)
        state = self.states.get(key) or self.log.table(key).copy()
        check_operation(
            self.conn,
            self.caller,
            self.terms,
            table,
            operation,
            state,
            row_must_exist=row_must_exist,
        )
        check_data(self.caller, self.terms, table, operation)
        state.replay(operation, committed_rows(self.conn, table))
        self.states[key] = state
        self.operations.append(operation)
        return state

    def write(self, clock: ServiceClock, max_bytes: int) -> StagedLog:
        """Stage the operations (limits checked); the log as it is once this SQLite
        transaction is committed."""
        texts = [encoded(operation) for operation in self.operations]
        stage(self.conn, self.record, texts, clock, staged_bytes=self.log.size, max_bytes=max_bytes)
        return StagedLog(
            self.log.operations + len(texts),
            self.log.size + sum(len(text) for text in texts),
            {**self.log.tables, **self.states},
        )
