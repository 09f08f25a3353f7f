"""The rows of one service table, kept in a real SQL table of their own.

Table `r_<n>` has `_seq INTEGER PRIMARY KEY AUTOINCREMENT` (`$sequence`), `_id` (unique),
`_created`, `_updated`, `_perms` (JSON text) and one typed column `c_<p>` per service column:
INTEGER for integers and booleans (0/1), REAL for floats, TEXT for strings and datetimes
(UTC, `YYYY-MM-DDTHH:MM:SS.mmm+00:00`, so text order is time order) and JSON text for
arrays. String columns also have `f_<p>`, the folded text (`_collation.fold`) that
comparisons, ordering and indexes use; float columns have `j_<p>`, their exact JSON text.
`p_<n>` holds `(seq, action, role)` for each row permission, kept by triggers, so lists can
filter by permission in SQL.

Rows are rendered to JSON by SQLite itself (`row_projection`): a page is the JSON of its
rows joined as bytes, with no Python object per row.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..wire._errors import ServiceError
from ._collation import fold
from ._columns import ColumnDef, InvalidValue, check_scalar, normalize_datetime
from ._db_terms import Terms
from ._query import Field, Schema
from ._schema_store import (
    IndexDef,
    TableMeta,
    fulltext_table_name,
    index_sql_name,
    rows_table_name,
)
from ._sql import Clause, Source

#: What `$`-keys in row data become: dropped, or kept as row metadata.
STRIPPED_KEYS = frozenset(
    {"$sequence", "$databaseId", "$tableId", "$collectionId", "$collection", "$tenant"}
)
SYSTEM_SQL = {"$id": "_id", "$sequence": "_seq", "$createdAt": "_created", "$updatedAt": "_updated"}
_SQL_TYPES = {"integer": "INTEGER", "bigint": "INTEGER", "double": "REAL", "boolean": "INTEGER"}
_PRINTF_ARGUMENTS = 100


# --- tables, columns and indexes in SQL ----------------------------------------------------


def create_rows_table(conn: sqlite3.Connection, table: TableMeta) -> None:
    """The row table, its permission table and the triggers keeping the latter."""
    rows, perms = table.rows_table, table.permissions_table
    conn.execute(
        f"CREATE TABLE {rows} (_seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "_id TEXT NOT NULL UNIQUE, _created TEXT NOT NULL, _updated TEXT NOT NULL, "
        "_perms TEXT NOT NULL)"
    )
    conn.execute(f"CREATE INDEX {rows}_created ON {rows} (_created)")
    conn.execute(f"CREATE INDEX {sequence_index(rows)} ON {rows} (_seq)")
    conn.execute(f"CREATE INDEX {rows}_updated ON {rows} (_updated)")
    conn.execute(
        f"CREATE TABLE {perms} (seq INTEGER NOT NULL, action TEXT NOT NULL, "
        "role TEXT NOT NULL, PRIMARY KEY (action, role, seq)) WITHOUT ROWID"
    )
    conn.execute(f"CREATE INDEX {perms}_seq ON {perms} (seq)")
    # `action("role")` → action, role; the strings were validated on the way in.
    split = (
        f"INSERT OR IGNORE INTO {perms} (seq, action, role) SELECT new._seq, "
        "substr(value, 1, instr(value, '(') - 1), "
        "substr(value, instr(value, '(') + 2, length(value) - instr(value, '(') - 3) "
        "FROM json_each(new._perms);"
    )
    conn.execute(f"CREATE TRIGGER {rows}_perms_ai AFTER INSERT ON {rows} BEGIN {split} END")
    conn.execute(
        f"CREATE TRIGGER {rows}_perms_au AFTER UPDATE OF _perms ON {rows} BEGIN "
        f"DELETE FROM {perms} WHERE seq = old._seq; {split} END"
    )
    conn.execute(
        f"CREATE TRIGGER {rows}_perms_ad AFTER DELETE ON {rows} BEGIN "
        f"DELETE FROM {perms} WHERE seq = old._seq; END"
    )


def drop_rows_table(conn: sqlite3.Connection, table: TableMeta) -> None:
    for index in table.indexes:
        drop_index(conn, table, index)
    conn.execute(f"DROP TABLE IF EXISTS {table.rows_table}")
    conn.execute(f"DROP TABLE IF EXISTS {table.permissions_table}")


def add_column(conn: sqlite3.Connection, table: TableMeta, column: ColumnDef) -> None:
    sql_type = "TEXT" if column.stored_as_json else _SQL_TYPES.get(column.type, "TEXT")
    conn.execute(f"ALTER TABLE {table.rows_table} ADD COLUMN {column.sql_name} {sql_type}")
    for shadow in (column.fold_name, column.json_name):
        if shadow:
            conn.execute(f"ALTER TABLE {table.rows_table} ADD COLUMN {shadow} TEXT")


def drop_column(conn: sqlite3.Connection, table: TableMeta, column: ColumnDef) -> None:
    """Drop a column's SQL columns (its indexes must be dropped first)."""
    conn.execute(f"ALTER TABLE {table.rows_table} DROP COLUMN {column.sql_name}")
    for shadow in (column.fold_name, column.json_name):
        if shadow:
            conn.execute(f"ALTER TABLE {table.rows_table} DROP COLUMN {shadow}")


def _index_expression(table: TableMeta, key: str) -> str:
    if key in SYSTEM_SQL:
        return SYSTEM_SQL[key]
    column = table.column(key)
    if column is None:
        raise KeyError(key)
    return column.compare_name


def build_index(conn: sqlite3.Connection, table: TableMeta, index: IndexDef) -> str | None:
    """Create the SQL behind `index`; the error text when existing rows prevent it."""
    if index.type == "fulltext":
        if len(index.columns) == 1:
            _build_fulltext(conn, table, index)
        return None
    parts = []
    for position, key in enumerate(index.columns):
        order = index.orders[position] if position < len(index.orders) else None
        parts.append(f"{_index_expression(table, key)} {'DESC' if order == 'DESC' else 'ASC'}")
    unique = "UNIQUE " if index.type == "unique" else ""
    try:
        conn.execute(
            f"CREATE {unique}INDEX {index_sql_name(table, index)} "
            f"ON {table.rows_table} ({', '.join(parts)})"
        )
    except sqlite3.IntegrityError:
        return "Existing rows have duplicate values for the columns of this unique index."
    return None


def _build_fulltext(conn: sqlite3.Connection, table: TableMeta, index: IndexDef) -> None:
    """An external-content FTS5 table over the folded text, kept by triggers."""
    fts, rows = fulltext_table_name(table, index), table.rows_table
    text = _index_expression(table, index.columns[0])
    conn.execute(
        f"CREATE VIRTUAL TABLE {fts} USING fts5({text}, content='{rows}', "
        "content_rowid='_seq', tokenize=\"unicode61 remove_diacritics 0 tokenchars '_'\")"
    )
    add = f"INSERT INTO {fts} (rowid, {text}) VALUES (new._seq, new.{text});"
    remove = f"INSERT INTO {fts} ({fts}, rowid, {text}) VALUES ('delete', old._seq, old.{text});"
    conn.execute(f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {rows} BEGIN {add} END")
    conn.execute(f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {rows} BEGIN {remove} END")
    conn.execute(
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF {text} ON {rows} BEGIN {remove} {add} END"
    )
    conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')")


def drop_index(conn: sqlite3.Connection, table: TableMeta, index: IndexDef) -> None:
    if index.type == "fulltext":
        fts = fulltext_table_name(table, index)
        for suffix in ("ai", "ad", "au"):
            conn.execute(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
        conn.execute(f"DROP TABLE IF EXISTS {fts}")
    else:
        conn.execute(f"DROP INDEX IF EXISTS {index_sql_name(table, index)}")


# --- the query view of a table --------------------------------------------------------------


def row_source(table: TableMeta) -> Source:
    rows = table.rows_table
    indexes = (("_created", f"{rows}_created"), ("_updated", f"{rows}_updated"))
    return Source(rows, "_seq", "_id", range_indexes=indexes, sequence_index=sequence_index(rows))


def sequence_index(rows: str) -> str:
    """The index of the row table `rows`'s `_seq` alone: a narrow copy of the rowid's order
    that offsets walk instead of the table."""
    return f"{rows}_seq"


def add_sequence_indexes(conn: sqlite3.Connection) -> None:
    """Give the row tables of a data folder an earlier version made their `_seq` index."""
    for (table_seq,) in conn.execute("SELECT seq FROM tdb_tables").fetchall():
        rows = rows_table_name(table_seq)
        conn.execute(f"CREATE INDEX IF NOT EXISTS {sequence_index(rows)} ON {rows} (_seq)")


def row_schema(table: TableMeta) -> Schema:
    """The fields queries may name: the system ones and every available column."""
    fields = {
        "$id": Field("$id", "id", "_id", "_id"),
        "$sequence": Field("$sequence", "sequence", "_seq", "_seq"),
        "$createdAt": Field("$createdAt", "datetime", "_created", "_created"),
        "$updatedAt": Field("$updatedAt", "datetime", "_updated", "_updated"),
    }
    for column in table.available_columns:
        fields[column.key] = Field(
            column.key,
            column.kind,
            column.sql_name,
            column.compare_name,
            fold=column.fold_name is not None,
            array=column.array,
            encrypted=column.encrypt,
            search_table=table.fulltext_table(column.key),
        )
    selectable = {"$permissions", "$databaseId", "$tableId", "$collectionId"}
    return Schema(fields, frozenset(selectable))


def permission_clause(table: TableMeta, roles: frozenset[str], action: str) -> Clause:
    """Rows whose permissions give `action` to one of `roles`."""
    ordered = sorted(roles)
    marks = ", ".join("?" for _ in ordered)
    return (
        f"_seq IN (SELECT seq FROM {table.permissions_table} "
        f"WHERE action = ? AND role IN ({marks}))",
        [action, *ordered],
    )


def _value_json(column: ColumnDef) -> str:
    """SQL giving the JSON text of a column's value."""
    name = column.sql_name
    if column.stored_as_json:
        return f"coalesce({name}, 'null')"
    if column.type == "boolean":
        return f"CASE {name} WHEN 1 THEN 'true' WHEN 0 THEN 'false' ELSE 'null' END"
    if column.json_name:
        return f"coalesce({column.json_name}, 'null')"
    return f"json_quote({name})"


def row_projection(
    table: TableMeta,
    terms: Terms,
    *,
    select: Sequence[str] | None = None,
    sequence_as_text: bool = True,
) -> Clause:
    """SQL (with its parameters) giving each row's JSON as bytes, in the Row model's order.

    Constant text (keys, the table and database IDs) is bound as parameters.
    """
    pieces: list[tuple[bool, str]] = []

    def text(value: str) -> None:
        if pieces and not pieces[-1][0]:
            pieces[-1] = (False, pieces[-1][1] + value)
        else:
            pieces.append((False, value))

    def sql(expression: str) -> None:
        pieces.append((True, expression))

    quote = '"' if sequence_as_text else ""
    text('{"$id":"')
    sql("_id")
    text(f'","$sequence":{quote}')
    sql("_seq")
    text(
        f"{quote},{json.dumps(terms.table_key)}:{json.dumps(table.id)},"
        f'"$databaseId":{json.dumps(table.database_id)},"$createdAt":"'
    )
    sql("_created")
    text('","$updatedAt":"')
    sql("_updated")
    text('","$permissions":')
    sql("_perms")
    everything = select is None or "*" in select
    for column in table.available_columns:
        if everything or column.key in (select or ()):
            text(f",{json.dumps(column.key)}:")
            sql(_value_json(column))
    text("}")
    return _printf_clause(pieces)


def _printf_clause(pieces: Sequence[tuple[bool, str]]) -> Clause:
    """One `printf(?, ...)` per group of SQL pieces, the constant text in its bound format
    string; the whole cast to BLOB so pages join as bytes without decoding."""
    calls: list[str] = []
    formats: list[str] = []
    arguments: list[str] = []
    text = ""
    for is_sql, piece in pieces:
        if is_sql:
            text += "%s"
            arguments.append(piece)
        else:
            text += piece.replace("%", "%%")
        if len(arguments) == _PRINTF_ARGUMENTS:
            calls.append(f"printf(?, {', '.join(arguments)})")
            formats.append(text)
            text, arguments = "", []
    if text or not calls:
        calls.append(f"printf(?{''.join(', ' + argument for argument in arguments)})")
        formats.append(text)
    return f"CAST({' || '.join(calls)} AS BLOB)", formats


def render_rows(
    conn: sqlite3.Connection, table: TableMeta, projection: Clause, seqs: Sequence[int]
) -> list[bytes]:
    """The JSON of the rows with these sequence numbers, in that order."""
    found: dict[int, bytes] = {}
    for start in range(0, len(seqs), 500):
        batch = list(seqs[start : start + 500])
        marks = ", ".join("?" for _ in batch)
        for seq, text in conn.execute(
            f"SELECT _seq, {projection[0]} FROM {table.rows_table} WHERE _seq IN ({marks})",
            [*projection[1], *batch],
        ):
            found[seq] = text
    return [found[seq] for seq in seqs if seq in found]


def list_body(total: int, plural: str, items: Sequence[bytes]) -> bytes:
    """`{"total": n, "<plural>": [...]}` from the items' JSON (one copy of the items)."""
    head, tail = f'{{"total":{total},"{plural}":['.encode(), b"]}"
    if not items:
        return head + tail
    parts = list(items)
    parts[0] = head + parts[0]
    parts[-1] += tail
    return b",".join(parts)


# --- reading and writing rows ----------------------------------------------------------------


@dataclass
class StoredRow:
    """A row as stored: system values and the stored value of each available column."""

    seq: int
    id: str
    created_at: str
    updated_at: str
    permissions: list[str]
    values: dict[str, Any] = field(default_factory=dict)


def load_row(conn: sqlite3.Connection, table: TableMeta, row_id: str) -> StoredRow | None:
    columns = table.available_columns
    names = "".join(f", {column.sql_name}" for column in columns)
    found = conn.execute(
        f"SELECT _seq, _id, _created, _updated, _perms{names} FROM {table.rows_table} "
        "WHERE _id = ?",
        (row_id,),
    ).fetchone()
    if found is None:
        return None
    seq, id_, created, updated, perms, *values = found
    stored = {column.key: value for column, value in zip(columns, values, strict=True)}
    return StoredRow(seq, id_, created, updated, json.loads(perms), stored)


class InvalidStructure(ServiceError):
    """400 `row_invalid_structure` (legacy `document_invalid_structure`)."""

    def __init__(self, terms: Terms, detail: str) -> None:
        super().__init__(
            terms.error("row", "invalid_structure"), f"Invalid document structure: {detail}"
        )


def _stored(column: ColumnDef, value: Any, terms: Terms) -> Any:
    try:
        if not column.array:
            return check_scalar(column, value)
        if not isinstance(value, list):
            raise InvalidStructure(terms, f'Attribute "{column.key}" must be an array')
        elements = []
        for position, element in enumerate(value):
            try:
                elements.append(check_scalar(column, element))
            except InvalidValue as exc:
                raise InvalidStructure(
                    terms, f'Attribute "{column.key}[{position}]" has invalid type. {exc}'
                ) from None
        return json.dumps(elements, ensure_ascii=False, separators=(",", ":"))
    except InvalidValue as exc:
        raise InvalidStructure(terms, f'Attribute "{column.key}" has invalid type. {exc}') from None


def row_values(
    table: TableMeta,
    terms: Terms,
    data: Mapping[str, Any],
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The stored values of a row after writing `data` over `previous`: checked, converted,
    defaults filled in, required columns present."""
    columns = {column.key: column for column in table.available_columns}
    values = dict(previous or {})
    for key, value in data.items():
        column = columns.get(key)
        if column is None:
            raise InvalidStructure(terms, f'Unknown attribute: "{key}"')
        values[key] = None if value is None else _stored(column, value, terms)
    for column in columns.values():
        if values.get(column.key) is None:
            if column.default is not None:
                values[column.key] = _stored(column, column.default, terms)
            elif column.required:
                raise InvalidStructure(terms, f'Missing required attribute "{column.key}"')
    return values


@dataclass
class RowMeta:
    """The `$`-members of row data that survive: ID, permissions and (for keys) timestamps."""

    row_id: Any = None
    permissions: Any = None
    created_at: str | None = None
    updated_at: str | None = None


def split_row_data(
    data: Mapping[str, Any], terms: Terms, *, honour_times: bool
) -> tuple[dict[str, Any], RowMeta]:
    """Column values and the `$`-members of row data. Internal keys are dropped, and
    `$createdAt`/`$updatedAt` are only honoured for API keys."""
    values: dict[str, Any] = {}
    meta = RowMeta()
    for key, value in data.items():
        if key in STRIPPED_KEYS:
            continue
        if key == "$id":
            meta.row_id = value
        elif key == "$permissions":
            meta.permissions = value
        elif key in ("$createdAt", "$updatedAt"):
            if honour_times and value is not None:
                moment = normalize_datetime(value)
                if moment is None:
                    raise InvalidStructure(terms, f'Attribute "{key}" has invalid type.')
                setattr(meta, "created_at" if key == "$createdAt" else "updated_at", moment)
        else:
            values[key] = value
    return values, meta


def _column_params(table: TableMeta, values: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    names: list[str] = []
    params: list[Any] = []
    for column in table.available_columns:
        value = values.get(column.key)
        names.append(column.sql_name)
        params.append(value)
        if column.fold_name:
            names.append(column.fold_name)
            params.append(fold(value) if isinstance(value, str) else None)
        if column.json_name:
            names.append(column.json_name)
            params.append(None if value is None else repr(float(value)))
    return names, params


def _unique_error(exc: sqlite3.IntegrityError, terms: Terms) -> ServiceError:
    title = terms.title("row")
    if str(exc).endswith("._id"):
        return ServiceError(
            terms.error("row", "already_exists"),
            f"{title} with the requested ID already exists. Try again with a different ID or "
            "use ID.unique() to generate a unique ID.",
        )
    return ServiceError(
        terms.error("row", "unique_constraint_violation"),
        f"{title} with the requested unique {terms.columns} already exists.",
    )


def insert_row(
    conn: sqlite3.Connection,
    table: TableMeta,
    terms: Terms,
    row: StoredRow,
) -> int:
    """Insert one row; 409 when its ID or a unique index clashes. Returns its sequence."""
    names, params = _column_params(table, row.values)
    columns = ", ".join(["_id", "_created", "_updated", "_perms", *names])
    marks = ", ".join("?" for _ in range(4 + len(names)))
    try:
        cursor = conn.execute(
            f"INSERT INTO {table.rows_table} ({columns}) VALUES ({marks})",
            [row.id, row.created_at, row.updated_at, json.dumps(row.permissions), *params],
        )
    except sqlite3.IntegrityError as exc:
        raise _unique_error(exc, terms) from None
    return int(cursor.lastrowid or 0)


def update_row(conn: sqlite3.Connection, table: TableMeta, terms: Terms, row: StoredRow) -> None:
    """Write a row's values, permissions and timestamps; 409 on a unique index clash."""
    names, params = _column_params(table, row.values)
    assignments = ", ".join(f"{name} = ?" for name in ["_created", "_updated", "_perms", *names])
    try:
        conn.execute(
            f"UPDATE {table.rows_table} SET {assignments} WHERE _seq = ?",
            [row.created_at, row.updated_at, json.dumps(row.permissions), *params, row.seq],
        )
    except sqlite3.IntegrityError as exc:
        raise _unique_error(exc, terms) from None


def delete_rows(conn: sqlite3.Connection, table: TableMeta, seqs: Sequence[int]) -> None:
    for start in range(0, len(seqs), 500):
        batch = list(seqs[start : start + 500])
        marks = ", ".join("?" for _ in batch)
        conn.execute(f"DELETE FROM {table.rows_table} WHERE _seq IN ({marks})", batch)
