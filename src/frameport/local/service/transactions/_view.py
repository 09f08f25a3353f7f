"""What a transaction has staged for one table, replayed as the service replays it for reads
with `transactionId` (service interface, "Transactions"): rows it creates, changes laid over
committed rows, and rows it deletes.

Staged bulk updates and deletes, increments and decrements are not replayed. A state is
shared by the reads of its transaction: staging lays its operations over a `copy`, and no
row's data is changed in place, so a read never sees a state change under it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...store._rowstore import load_row
from ...store._schema_store import TableMeta
from ...store._transactions import StagedOperation

#: Row data members that are not values laid over a row.
_HIDDEN = frozenset({"$id", "$sequence", "$createdAt", "$updatedAt", "$databaseId", "$tableId"})


def _values(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if key not in _HIDDEN}


@dataclass
class StagedTable:
    """The staged state of one table: `created` rows (their data), `changed` committed rows
    (the data laid over them) and `deleted` committed rows."""

    created: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)

    def copy(self) -> StagedTable:
        """A state to lay more operations over, this one left as it is."""
        return StagedTable(dict(self.created), dict(self.changed), set(self.deleted))

    def exists(self, row_id: str, committed: Callable[[str], bool]) -> bool:
        """Whether the row exists as the transaction sees it."""
        if row_id in self.created or row_id in self.changed:
            return True
        return row_id not in self.deleted and committed(row_id)

    def replay(self, operation: Mapping[str, Any], committed: Callable[[str], bool]) -> None:
        """Lay one staged operation over the state."""
        action, row_id = operation["action"], operation.get("rowId")
        data = operation.get("data")
        if action == "bulkCreate":
            for item in data or []:
                if isinstance(item, dict) and isinstance(item.get("$id"), str):
                    self.created[item["$id"]] = _values(item)
        elif action == "bulkUpsert":
            for item in data or []:
                if isinstance(item, dict) and isinstance(item.get("$id"), str):
                    self._merge(item["$id"], _values(item), committed)
        elif action == "create" and row_id is not None:
            self.created[row_id] = _values(data)
        elif action in ("update", "upsert") and row_id is not None:
            self._merge(row_id, _values(data), committed)
        elif action == "delete" and row_id is not None:
            self.created.pop(row_id, None)
            self.changed.pop(row_id, None)
            if committed(row_id):
                self.deleted.add(row_id)

    def _merge(self, row_id: str, values: dict[str, Any], committed: Callable[[str], bool]) -> None:
        if row_id in self.created:
            self.created[row_id] = {**self.created[row_id], **values}
        elif row_id in self.deleted or not committed(row_id):
            self.deleted.discard(row_id)
            self.created[row_id] = values
        else:
            self.changed[row_id] = {**self.changed.get(row_id, {}), **values}


def staged_table(
    operations: Sequence[StagedOperation],
    database_id: str,
    table_id: str,
    committed: Callable[[str], bool],
) -> StagedTable:
    """The staged state of table `table_id` of `database_id`."""
    state = StagedTable()
    for staged in operations:
        operation = staged.operation
        if operation.get("databaseId") == database_id and operation.get("tableId") == table_id:
            state.replay(operation, committed)
    return state


def committed_rows(conn: sqlite3.Connection, table: TableMeta) -> Callable[[str], bool]:
    """Whether a row ID names a committed row of `table`."""
    return lambda row_id: load_row(conn, table, row_id) is not None
