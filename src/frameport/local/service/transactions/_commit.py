"""Applying a transaction's staged operations, in staging order, inside one SQLite transaction
(service interface, "Transactions").

Each operation runs as if requested when it was staged: an update, upsert or delete (single
or bulk) of a row changed after that instant conflicts, as does a create of an ID that
exists; both are 409 `transaction_conflict`. A row an earlier operation of the same commit
touched is not checked again. Increments and decrements are never checked. Errors carry the
legacy type names (`document_not_found`, ...), as the service's commit answers.

`apply_operations` returns the single-row writes it applied, in order (`CommittedWrite`):
one realtime event each. Bulk operations add none.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...store._db_terms import COLLECTIONS
from ...store._query import QueryError, parse_queries
from ...store._rowstore import (
    StoredRow,
    delete_rows,
    insert_row,
    load_row,
    row_schema,
    row_source,
    split_row_data,
)
from ...store._schema_store import TableMeta
from ...store._sql import fetch_page
from ...store._store import Store
from ...store._transactions import (
    StagedOperation,
    TransactionRecord,
    drop_operations,
    set_status,
    staged_operations,
)
from ...wire._errors import ServiceError
from .._clock import ServiceClock
from .._crash_points import crash_point
from ..accounts._caller import key_caller
from ..rows._access import requested_permissions, row_not_found, table_or_404
from ..rows._update_operators import input_value
from ..rows._writes import (
    RowInput,
    apply_update,
    bulk_item,
    count_by,
    counter_column,
    new_row,
)

#: Commit answers with the legacy names of the service's database layer.
TERMS = COLLECTIONS
#: Rules were checked when each operation was staged; the commit writes as the service does.
COMMITTER = key_caller()


@dataclass(frozen=True)
class CommittedWrite:
    """A single-row write a commit applied: its event (`create`, `update` or `delete`), the
    table, and the row as it is now (as it was, for a delete)."""

    action: str
    table: TableMeta
    row: StoredRow

    def payload(self) -> dict[str, Any]:
        """The row as a commit's event carries it: both table keys, no `$databaseId`."""
        columns = {
            column.key: input_value(column, self.row.values.get(column.key))
            for column in self.table.available_columns
        }
        return {
            "$id": self.row.id,
            "$sequence": str(self.row.seq),
            "$tableId": self.table.id,
            "$collectionId": self.table.id,
            "$createdAt": self.row.created_at,
            "$updatedAt": self.row.updated_at,
            "$permissions": self.row.permissions,
            **columns,
        }


def transaction_conflict(detail: str) -> ServiceError:
    return ServiceError(
        "transaction_conflict",
        f"Transaction conflict: {detail}. Nothing was applied; read the rows again and stage "
        "the changes in a new transaction.",
    )


@dataclass
class _Commit:
    conn: sqlite3.Connection
    now: str
    written: list[CommittedWrite] = field(default_factory=list)
    touched: set[tuple[int, str]] = field(default_factory=set)

    def table(self, operation: Mapping[str, Any]) -> TableMeta:
        return table_or_404(
            self.conn, COMMITTER, TERMS, operation["databaseId"], operation["tableId"]
        )

    def unchanged(self, table: TableMeta, row: StoredRow, staged_at: str) -> None:
        """409 when the row changed after the operation was staged, unless this commit did."""
        if (table.seq, row.id) not in self.touched and row.updated_at > staged_at:
            raise transaction_conflict(f"the {TERMS.row} '{row.id}' changed after it was staged")

    def existing(self, table: TableMeta, row_id: str) -> StoredRow:
        row = load_row(self.conn, table, row_id)
        if row is None:
            raise row_not_found(TERMS, row_id)
        return row

    def given(self, item: Mapping[str, Any]) -> RowInput:
        """A staged row's data, `$`-members and permissions, written at the commit's time."""
        values, meta = split_row_data(item, TERMS, honour_times=True)
        permissions = requested_permissions(COMMITTER, meta.permissions, "$permissions")
        return RowInput(values, meta, permissions, self.now)

    def insert(self, table: TableMeta, item: Mapping[str, Any], row_id: str) -> StoredRow:
        if load_row(self.conn, table, row_id) is not None:
            raise transaction_conflict(f"a {TERMS.row} with the ID '{row_id}' already exists")
        row = new_row(COMMITTER, table, TERMS, row_id, self.given(item))
        try:
            seq = insert_row(self.conn, table, TERMS, row)
        except ServiceError as exc:
            raise transaction_conflict(exc.message) from None
        self.touched.add((table.seq, row_id))
        return StoredRow(seq, row.id, row.created_at, row.updated_at, row.permissions, row.values)

    def update(
        self, table: TableMeta, row: StoredRow, item: Mapping[str, Any], staged_at: str
    ) -> StoredRow:
        self.unchanged(table, row, staged_at)
        try:
            updated = apply_update(COMMITTER, self.conn, table, TERMS, row, self.given(item))
        except ServiceError as exc:
            if exc.code == 409:
                raise transaction_conflict(exc.message) from None
            raise
        self.touched.add((table.seq, row.id))
        return updated

    def upsert(
        self, table: TableMeta, row_id: str, item: Mapping[str, Any], staged_at: str
    ) -> StoredRow:
        row = load_row(self.conn, table, row_id)
        if row is None:
            return self.insert(table, item, row_id)
        return self.update(table, row, item, staged_at)

    def matching(self, table: TableMeta, queries: Sequence[str]) -> list[StoredRow]:
        try:
            query = parse_queries(list(queries), row_schema(table))
        except QueryError as exc:
            raise ServiceError("general_query_invalid", exc.message) from None
        ids = fetch_page(
            self.conn,
            query,
            row_source(table),
            ("_id", []),
            missing_cursor=_cursor_missing,
            default_limit=None,
        )
        rows = [load_row(self.conn, table, row_id) for (row_id,) in ids]
        return [row for row in rows if row is not None]

    def apply(self, staged: StagedOperation) -> None:
        operation, at = staged.operation, staged.staged_at
        action: str = operation["action"]
        data: Any = operation.get("data")
        table = self.table(operation)
        row_id: str = operation.get("rowId") or ""
        if action == "create":
            self._wrote("create", table, self.insert(table, data, row_id))
        elif action == "update":
            self._wrote("update", table, self.update(table, self.existing(table, row_id), data, at))
        elif action == "upsert":
            self._wrote("update", table, self.upsert(table, row_id, data, at))
        elif action == "delete":
            row = self.existing(table, row_id)
            self.unchanged(table, row, at)
            delete_rows(self.conn, table, [row.seq])
            self.touched.add((table.seq, row.id))
            self._wrote("delete", table, row)
        elif action in ("increment", "decrement"):
            row = self.existing(table, row_id)
            self._wrote("update", table, self._count(table, row, data, action == "decrement"))
        elif action in ("bulkCreate", "bulkUpsert"):
            for item in data:
                item_id, _, _, _ = bulk_item(COMMITTER, TERMS, item)
                if action == "bulkCreate":
                    self.insert(table, item, item_id)
                else:
                    self.upsert(table, item_id, item, at)
        elif action == "bulkUpdate":
            for row in self.matching(table, data["queries"]):
                self.update(table, row, data["data"], at)
        else:  # bulkDelete
            rows = self.matching(table, data["queries"])
            for row in rows:
                self.unchanged(table, row, at)
                self.touched.add((table.seq, row.id))
            delete_rows(self.conn, table, [row.seq for row in rows])

    def _count(
        self, table: TableMeta, row: StoredRow, data: Mapping[str, Any], decrement: bool
    ) -> StoredRow:
        column = counter_column(table, TERMS, data.get("column") or data.get("attribute") or "")
        value = data.get("value")
        delta = -(1 if value is None else value) if decrement else (1 if value is None else value)
        bound = data.get("min") if decrement else data.get("max")
        updated = count_by(self.conn, table, TERMS, row, column, delta, bound, self.now)
        self.touched.add((table.seq, row.id))
        return updated

    def _wrote(self, action: str, table: TableMeta, row: StoredRow) -> None:
        self.written.append(CommittedWrite(action, table, row))


def _cursor_missing(row_id: str) -> ServiceError:
    return ServiceError(
        "general_cursor_not_found", f"Document '{row_id}' for the 'cursor' value not found."
    )


def apply_operations(
    conn: sqlite3.Connection, operations: Sequence[StagedOperation], now: str
) -> list[CommittedWrite]:
    """Apply `operations` in order on `conn` (inside the caller's SQLite transaction); the
    single-row writes applied. Raises the first failure: the caller rolls everything back."""
    commit = _Commit(conn, now)
    for position, staged in enumerate(operations):
        commit.apply(staged)
        if position == 0:
            crash_point("transaction.applying")
    return commit.written


def finish_commit(
    store: Store, record: TransactionRecord, clock: ServiceClock
) -> list[CommittedWrite]:
    """Apply a transaction whose status is already `committing`: every operation and the
    status `committed` in one SQLite transaction, or, on any failure, nothing and `failed`.
    A crash in between leaves it `committing`, which the next start turns into `failed`."""
    crash_point("transaction.committing")
    try:
        with store.write() as conn:
            written = apply_operations(conn, staged_operations(conn, record), clock.text())
            set_status(conn, record.id, "committed", clock.text())
            drop_operations(conn, record)
    except Exception:
        with store.write() as conn:
            set_status(conn, record.id, "failed", clock.text())
            drop_operations(conn, record)
        raise
    crash_point("transaction.committed")
    return written
