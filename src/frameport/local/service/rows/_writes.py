"""The rules of writing one row (service interface, "Rows"): new rows with their default
permissions, updates that need update access only when they change something, the optimistic check
of `X-Service-Timestamp`, and the members of one row of a bulk write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...store._columns import ColumnDef, normalize_datetime
from ...store._db_terms import Terms
from ...store._rowstore import (
    InvalidStructure,
    RowMeta,
    StoredRow,
    row_values,
    split_row_data,
    update_row,
)
from ...store._schema_store import TableMeta
from ...wire._errors import ServiceError
from ...wire._params import UID_DESCRIPTION, UNIQUE, is_uid, unique_id
from ..accounts._caller import Caller
from ..accounts._permissions import default_item_permissions
from ._access import requested_permissions, row_allows, unauthorized
from ._update_operators import input_value, resolve_operators


def first(*candidates: Any) -> Any:
    """The first of `candidates` that is not None (a parameter before `$permissions`)."""
    return next((candidate for candidate in candidates if candidate is not None), None)


def timestamp_moment(header: str | None) -> str | None:
    """`X-Service-Timestamp` in the service's time format; None when not sent."""
    if not header:
        return None
    moment = normalize_datetime(header)
    if moment is None:
        raise ServiceError(
            "general_argument_invalid",
            "Invalid X-Service-Timestamp header: send an ISO-8601 date-time.",
        )
    return moment


def check_unchanged_since(row: StoredRow, moment: str | None, terms: Terms) -> None:
    """409 `row_update_conflict` when the row changed after `moment` (`X-Service-Timestamp`)."""
    if moment is not None and row.updated_at > moment:
        raise ServiceError(
            terms.error("row", "update_conflict"), f"Remote {terms.row} is newer than local."
        )


@dataclass(frozen=True)
class RowInput:
    """What one write gives a row: values, `$`-members, permissions (None: the caller's
    defaults for a new row, unchanged for an update) and the write's time."""

    data: Mapping[str, Any]
    meta: RowMeta
    permissions: list[str] | None
    now: str


def new_row(
    caller: Caller, table: TableMeta, terms: Terms, row_id: str, given: RowInput
) -> StoredRow:
    """A row to insert; without permissions, the caller's defaults."""
    meta, permissions = given.meta, given.permissions
    return StoredRow(
        0,
        row_id,
        meta.created_at or given.now,
        meta.updated_at or given.now,
        default_item_permissions(caller) if permissions is None else permissions,
        row_values(table, terms, given.data),
    )


def apply_update(
    caller: Caller,
    conn: sqlite3.Connection,
    table: TableMeta,
    terms: Terms,
    row: StoredRow,
    given: RowInput,
    *,
    unchanged_since: str | None = None,
) -> StoredRow:
    """Write `given` over `row`: a no-op needs read access only, a change needs update; a row
    changed after `unchanged_since` is a conflict. Returns the row as stored now."""
    check_unchanged_since(row, unchanged_since, terms)
    data = resolve_operators(table, given.data, row.values, given.now)
    values = row_values(table, terms, data, row.values)
    new_permissions = row.permissions if given.permissions is None else given.permissions
    created = given.meta.created_at or row.created_at
    if values == row.values and new_permissions == row.permissions and created == row.created_at:
        if not row_allows(caller, table, row.permissions, "read"):
            raise unauthorized()
        return row
    if not row_allows(caller, table, row.permissions, "update"):
        raise unauthorized()
    updated_at = given.meta.updated_at or given.now
    updated = StoredRow(row.seq, row.id, created, updated_at, new_permissions, values)
    update_row(conn, table, terms, updated)
    return updated


def bulk_item(
    caller: Caller, terms: Terms, item: Mapping[str, Any]
) -> tuple[str, dict[str, Any], RowMeta, list[str] | None]:
    """One row of a bulk write: its ID (generated when absent), values, `$`-members and
    permissions (None when absent)."""
    values, meta = split_row_data(item, terms, honour_times=True)
    permissions = requested_permissions(caller, meta.permissions, terms.rows)
    row_id = meta.row_id
    if row_id is None or row_id == UNIQUE:
        return unique_id(), values, meta, permissions
    if not is_uid(row_id):
        raise InvalidStructure(terms, f'Attribute "$id" has invalid type. {UID_DESCRIPTION}')
    return str(row_id), values, meta, permissions


def counter_column(table: TableMeta, terms: Terms, key: str) -> ColumnDef:
    """The numeric column an increment or decrement changes: 404 when missing, 400 when not
    a number."""
    column = next((found for found in table.available_columns if found.key == key), None)
    if column is None:
        raise ServiceError(
            terms.error("column", "not_found"),
            f"{terms.title('column')} with the requested key '{key}' could not be found.",
        )
    if column.kind not in ("integer", "float") or column.array:
        raise ServiceError(
            terms.error("column", "type_invalid"),
            f"{terms.title('column')} '{key}' must be an integer or a float to be changed by "
            "a number.",
        )
    return column


def count_by(
    conn: sqlite3.Connection,
    table: TableMeta,
    terms: Terms,
    row: StoredRow,
    column: ColumnDef,
    delta: float,
    bound: float | None,
    now: str,
) -> StoredRow:
    """Add `delta` (negative for a decrement) to the column; 400 `column_limit_exceeded` when
    the result would pass `bound` (a maximum when adding, a minimum when taking away)."""
    current = input_value(column, row.values.get(column.key)) or 0
    result = current + delta
    if column.kind == "integer" and float(result).is_integer():
        result = int(result)
    if bound is not None and (result > bound if delta >= 0 else result < bound):
        side = "maximum" if delta >= 0 else "minimum"
        raise ServiceError(
            terms.error("column", "limit_exceeded"),
            f"{terms.title('column')} '{column.key}' has reached the {side} value of {bound:g}",
        )
    values = row_values(table, terms, {column.key: result}, row.values)
    updated = StoredRow(row.seq, row.id, row.created_at, now, row.permissions, values)
    update_row(conn, table, terms, updated)
    return updated
