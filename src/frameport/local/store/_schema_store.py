"""Metadata of databases, tables, columns and indexes, and their models
(service interface, "Models").

The metadata lives in the `tdb_*` tables. A table's rows live in a real SQL table of their
own (see `_rowstore`), named after the table's internal sequence number, never its ID.

New columns and indexes answer `processing` and become `available` (or `failed`) once
`ready_at` has passed: `promote_ready` applies that on the next request that reads them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..wire._timefmt import now_text, stamps
from ._columns import ColumnDef, column_model
from ._db_terms import Terms
from ._query import Field, Schema
from ._sql import Source
from ._store import Store

#: How long a new column or index stays `processing`.
PROCESSING_SECONDS = 0.05
BYTES_MAX = 65_535


@dataclass(frozen=True)
class DatabaseMeta:
    seq: int
    id: str
    name: str
    enabled: bool
    type: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class IndexDef:
    """One index of a table. `seq` names its SQL index (`i_<table>_<seq>`)."""

    key: str
    type: str
    columns: tuple[str, ...]
    lengths: tuple[int | None, ...] = ()
    orders: tuple[str | None, ...] = ()
    status: str = "available"
    error: str = ""
    created_at: str = ""
    updated_at: str = ""
    seq: int = 0


@dataclass(frozen=True)
class TableMeta:
    """One table with its columns and indexes. `seq` names its SQL tables."""

    seq: int
    database_id: str
    id: str
    name: str
    enabled: bool
    row_security: bool
    permissions: tuple[str, ...]
    created_at: str
    updated_at: str
    columns: tuple[ColumnDef, ...] = ()
    indexes: tuple[IndexDef, ...] = ()

    @property
    def rows_table(self) -> str:
        return rows_table_name(self.seq)

    @property
    def permissions_table(self) -> str:
        return f"p_{self.seq}"

    def column(self, key: str) -> ColumnDef | None:
        return next((column for column in self.columns if column.key == key), None)

    def index(self, key: str) -> IndexDef | None:
        return next((index for index in self.indexes if index.key == key), None)

    @property
    def available_columns(self) -> tuple[ColumnDef, ...]:
        """The columns rows can use: created and available."""
        return tuple(column for column in self.columns if column.available)

    def fulltext_table(self, key: str) -> str | None:
        """The FTS table of a fulltext index on exactly the column `key`, if there is one."""
        for index in self.indexes:
            if index.type == "fulltext" and index.columns == (key,) and index.status != "failed":
                return fulltext_table_name(self, index)
        return None


def rows_table_name(table_seq: int) -> str:
    """The SQL table holding the rows of the table numbered `table_seq`."""
    return f"r_{table_seq}"


def fulltext_table_name(table: TableMeta, index: IndexDef) -> str:
    return f"x_{table.seq}_{index.seq}"


def index_sql_name(table: TableMeta, index: IndexDef) -> str:
    return f"i_{table.seq}_{index.seq}"


# --- processing -> available -------------------------------------------------------------


def promote_ready(store: Store) -> None:
    """Columns and indexes whose processing time has passed take their final status."""
    now = time.time()
    check = (
        "SELECT 1 FROM tdb_columns WHERE status = 'processing' AND ready_at <= ? "
        "UNION ALL SELECT 1 FROM tdb_indexes WHERE status = 'processing' AND ready_at <= ? "
        "LIMIT 1"
    )
    with store.read() as conn:
        due = conn.execute(check, (now, now)).fetchone()
    if due is None:
        return
    with store.write() as conn:
        for table in ("tdb_columns", "tdb_indexes"):
            conn.execute(
                f"UPDATE {table} SET status = final_status, updated_at = ? "
                "WHERE status = 'processing' AND ready_at <= ?",
                (now_text(), now),
            )


# --- databases ---------------------------------------------------------------------------

_DATABASE_COLUMNS = "seq, id, name, enabled, type, created_at, updated_at"


def _database(row: Iterable[Any]) -> DatabaseMeta:
    seq, id_, name, enabled, type_, created, updated = row
    return DatabaseMeta(seq, id_, name, bool(enabled), type_, created, updated)


def load_database(conn: sqlite3.Connection, database_id: str) -> DatabaseMeta | None:
    row = conn.execute(
        f"SELECT {_DATABASE_COLUMNS} FROM tdb_databases WHERE id = ?", (database_id,)
    ).fetchone()
    return None if row is None else _database(row)


def insert_database(
    conn: sqlite3.Connection, database_id: str, name: str, enabled: bool, type_: str
) -> DatabaseMeta:
    now = now_text()
    conn.execute(
        "INSERT INTO tdb_databases (id, name, enabled, type, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (database_id, name, int(enabled), type_, now, now),
    )
    found = load_database(conn, database_id)
    if found is None:
        raise RuntimeError("the database just inserted is missing")
    return found


def update_database(conn: sqlite3.Connection, database_id: str, name: str, enabled: bool) -> None:
    conn.execute(
        "UPDATE tdb_databases SET name = ?, enabled = ?, updated_at = ? WHERE id = ?",
        (name, int(enabled), now_text(), database_id),
    )


def delete_database(conn: sqlite3.Connection, database_id: str) -> None:
    conn.execute("DELETE FROM tdb_databases WHERE id = ?", (database_id,))


def database_model(database: DatabaseMeta) -> dict[str, Any]:
    return {
        "$id": database.id,
        "name": database.name,
        "$createdAt": database.created_at,
        "$updatedAt": database.updated_at,
        "enabled": database.enabled,
        "type": database.type,
        "status": None,
    }


def _name_field(key: str, column: str) -> Field:
    return Field(key, "string", column, f"fold({column})", fold=True)


def _plain_fields(**kinds: str) -> dict[str, Field]:
    """Fields stored under their own names in a metadata table, by kind."""
    return {name: Field(name, kind, name, name) for name, kind in kinds.items()}


def _system_fields(id_column: str, seq_column: str) -> dict[str, Field]:
    return {
        "$id": Field("$id", "id", id_column, id_column),
        "$sequence": Field("$sequence", "sequence", seq_column, seq_column),
        "$createdAt": Field("$createdAt", "datetime", "created_at", "created_at"),
        "$updatedAt": Field("$updatedAt", "datetime", "updated_at", "updated_at"),
    }


DATABASE_SOURCE = Source("tdb_databases", "seq", "id")
DATABASE_SCHEMA = Schema({**_system_fields("id", "seq"), "name": _name_field("name", "name")})


# --- tables ------------------------------------------------------------------------------

_TABLE_COLUMNS = (
    "seq, database_id, id, name, enabled, row_security, permissions, created_at, updated_at"
)
_COLUMN_COLUMNS = (
    "key, type, required, format, size, array, default_json, min_json, max_json, elements, "
    "encrypt, status, error, created_at, updated_at, position"
)
_INDEX_COLUMNS = "key, type, columns, lengths, orders, status, error, created_at, updated_at, seq"


def _column(row: tuple[Any, ...]) -> ColumnDef:
    (
        key,
        type_,
        required,
        fmt,
        size,
        array,
        default,
        low,
        high,
        elements,
        encrypt,
        status,
        error,
        created,
        updated,
        position,
    ) = row
    return ColumnDef(
        key=key,
        type=type_,
        required=bool(required),
        format=fmt,
        size=size,
        array=bool(array),
        default=json.loads(default),
        min=json.loads(low),
        max=json.loads(high),
        elements=tuple(json.loads(elements)),
        encrypt=bool(encrypt),
        status=status,
        error=error,
        created_at=created,
        updated_at=updated,
        position=position,
    )


def _index(row: tuple[Any, ...]) -> IndexDef:
    key, type_, columns, lengths, orders, status, error, created, updated, seq = row
    return IndexDef(
        key,
        type_,
        tuple(json.loads(columns)),
        tuple(json.loads(lengths)),
        tuple(json.loads(orders)),
        status,
        error,
        created,
        updated,
        seq,
    )


def _table(conn: sqlite3.Connection, row: tuple[Any, ...]) -> TableMeta:
    seq, database_id, id_, name, enabled, row_security, permissions, created, updated = row
    columns = conn.execute(
        f"SELECT {_COLUMN_COLUMNS} FROM tdb_columns WHERE table_seq = ? ORDER BY seq", (seq,)
    ).fetchall()
    indexes = conn.execute(
        f"SELECT {_INDEX_COLUMNS} FROM tdb_indexes WHERE table_seq = ? ORDER BY seq", (seq,)
    ).fetchall()
    return TableMeta(
        seq,
        database_id,
        id_,
        name,
        bool(enabled),
        bool(row_security),
        tuple(json.loads(permissions)),
        created,
        updated,
        tuple(_column(column) for column in columns),
        tuple(_index(index) for index in indexes),
    )


def load_table(conn: sqlite3.Connection, database_id: str, table_id: str) -> TableMeta | None:
    row = conn.execute(
        f"SELECT {_TABLE_COLUMNS} FROM tdb_tables WHERE database_id = ? AND id = ?",
        (database_id, table_id),
    ).fetchone()
    return None if row is None else _table(conn, row)


def load_tables(conn: sqlite3.Connection, database_id: str) -> list[TableMeta]:
    rows = conn.execute(
        f"SELECT {_TABLE_COLUMNS} FROM tdb_tables WHERE database_id = ? ORDER BY seq",
        (database_id,),
    ).fetchall()
    return [_table(conn, row) for row in rows]


def insert_table(
    conn: sqlite3.Connection,
    database_id: str,
    table_id: str,
    name: str,
    *,
    permissions: list[str],
    row_security: bool,
    enabled: bool,
) -> TableMeta:
    now = now_text()
    conn.execute(
        "INSERT INTO tdb_tables (database_id, id, name, enabled, row_security, permissions, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            database_id,
            table_id,
            name,
            int(enabled),
            int(row_security),
            json.dumps(permissions),
            now,
            now,
        ),
    )
    return reload_table(conn, database_id, table_id)


def reload_table(conn: sqlite3.Connection, database_id: str, table_id: str) -> TableMeta:
    """A table known to exist, read again after a change."""
    table = load_table(conn, database_id, table_id)
    if table is None:
        raise RuntimeError(f"table {table_id!r} vanished inside a write transaction")
    return table


def update_table(
    conn: sqlite3.Connection,
    table: TableMeta,
    *,
    name: str,
    permissions: list[str],
    row_security: bool,
    enabled: bool,
) -> None:
    conn.execute(
        "UPDATE tdb_tables SET name = ?, permissions = ?, row_security = ?, enabled = ?, "
        "updated_at = ? WHERE seq = ?",
        (name, json.dumps(permissions), int(row_security), int(enabled), now_text(), table.seq),
    )


def delete_table(conn: sqlite3.Connection, table: TableMeta) -> None:
    for meta_table in ("tdb_columns", "tdb_indexes"):
        conn.execute(f"DELETE FROM {meta_table} WHERE table_seq = ?", (table.seq,))
    conn.execute("DELETE FROM tdb_tables WHERE seq = ?", (table.seq,))


def _column_bytes(column: ColumnDef) -> int:
    """A rough row width of a column, as a MariaDB row would count it."""
    if column.array or column.type in ("text", "mediumtext", "longtext"):
        return 20
    if column.type in ("string", "varchar"):
        return min(column.size, 16_381) * 4 + 2 if column.size <= 16_381 else 20
    return {"integer": 8, "double": 8, "boolean": 1, "datetime": 8}.get(column.type, 8)


def table_model(table: TableMeta, terms: Terms) -> dict[str, Any]:
    """The Table (or legacy Collection) model, with its columns and indexes."""
    return {
        **stamps(table.id, table.created_at, table.updated_at),
        "$permissions": list(table.permissions),
        "databaseId": table.database_id,
        "name": table.name,
        "enabled": table.enabled,
        terms.security: table.row_security,
        terms.columns: [column_model(column) for column in table.columns],
        "indexes": [index_model(index, terms) for index in table.indexes],
        "bytesMax": BYTES_MAX,
        "bytesUsed": sum(_column_bytes(column) for column in table.columns),
    }


def table_source(database_id: str) -> Source:
    return Source("tdb_tables", "seq", "id", "database_id = ?", (database_id,))


def table_schema(terms: Terms) -> Schema:
    return Schema(
        {
            **_system_fields("id", "seq"),
            "name": _name_field("name", "name"),
            **_plain_fields(enabled="boolean"),
            terms.security: Field(terms.security, "boolean", "row_security", "row_security"),
        }
    )


# --- columns -----------------------------------------------------------------------------


def insert_column(
    conn: sqlite3.Connection, table: TableMeta, column: ColumnDef, *, processing: bool
) -> ColumnDef:
    """Record a new column; it takes the table's next internal position (`c_<position>`)."""
    position = conn.execute(
        "UPDATE tdb_tables SET next_position = next_position + 1 WHERE seq = ? "
        "RETURNING next_position - 1",
        (table.seq,),
    ).fetchone()[0]
    now = now_text()
    status = "processing" if processing else "available"
    conn.execute(
        "INSERT INTO tdb_columns (table_seq, key, position, type, format, size, required, "
        "array, default_json, min_json, max_json, elements, encrypt, status, final_status, "
        "error, ready_at, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'available', '', ?, ?, ?)",
        (
            table.seq,
            column.key,
            position,
            column.type,
            column.format,
            column.size,
            int(column.required),
            int(column.array),
            json.dumps(column.default),
            json.dumps(column.min),
            json.dumps(column.max),
            json.dumps(list(column.elements)),
            int(column.encrypt),
            status,
            time.time() + PROCESSING_SECONDS,
            now,
            now,
        ),
    )
    return replace(column, position=position, status=status, created_at=now, updated_at=now)


def delete_column(conn: sqlite3.Connection, table: TableMeta, key: str) -> None:
    conn.execute("DELETE FROM tdb_columns WHERE table_seq = ? AND key = ?", (table.seq, key))


def keyed_source(meta_table: str, table: TableMeta) -> Source:
    """The columns (`tdb_columns`) or indexes (`tdb_indexes`) of a table, by key."""
    return Source(meta_table, "seq", "key", "table_seq = ?", (table.seq,))


COLUMN_SCHEMA = Schema(
    {
        **_system_fields("key", "seq"),
        **_plain_fields(key="id", type="id", size="integer", required="boolean", array="boolean"),
        **_plain_fields(status="id", error="id"),
    }
)


# --- indexes -----------------------------------------------------------------------------


def insert_index(
    conn: sqlite3.Connection, table: TableMeta, index: IndexDef, *, processing: bool
) -> IndexDef:
    now = now_text()
    status = "processing" if processing else "available"
    cursor = conn.execute(
        "INSERT INTO tdb_indexes (table_seq, key, type, columns, lengths, orders, status, "
        "final_status, error, ready_at, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 'available', '', ?, ?, ?)",
        (
            table.seq,
            index.key,
            index.type,
            json.dumps(list(index.columns)),
            json.dumps(list(index.lengths)),
            json.dumps(list(index.orders)),
            status,
            time.time() + PROCESSING_SECONDS,
            now,
            now,
        ),
    )
    seq = cursor.lastrowid or 0
    return IndexDef(
        index.key,
        index.type,
        index.columns,
        index.lengths,
        index.orders,
        status,
        "",
        now,
        now,
        seq,
    )


def fail_index(conn: sqlite3.Connection, index: IndexDef, error: str) -> None:
    """The index could not be built: it ends `failed` with `error`."""
    conn.execute(
        "UPDATE tdb_indexes SET final_status = 'failed', error = ? WHERE seq = ?",
        (error, index.seq),
    )
    if index.status != "processing":
        conn.execute("UPDATE tdb_indexes SET status = 'failed' WHERE seq = ?", (index.seq,))


def delete_index(conn: sqlite3.Connection, index: IndexDef) -> None:
    conn.execute("DELETE FROM tdb_indexes WHERE seq = ?", (index.seq,))


def index_model(index: IndexDef, terms: Terms) -> dict[str, Any]:
    """The Index model; the legacy interface names the indexed keys `attributes`."""
    return {
        "$id": index.key,
        "$createdAt": index.created_at,
        "$updatedAt": index.updated_at,
        "key": index.key,
        "type": index.type,
        "status": index.status,
        "error": index.error,
        terms.columns: list(index.columns),
        "lengths": list(index.lengths),
        "orders": list(index.orders),
    }


INDEX_SCHEMA = Schema(
    {**_system_fields("key", "seq"), **_plain_fields(key="id", type="id", status="id", error="id")}
)
