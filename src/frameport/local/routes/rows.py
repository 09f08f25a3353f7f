"""Rows (legacy: documents): create, get, list, update, upsert, delete, single and bulk (§3.6).

Access follows §7: API keys bypass permissions; other callers need the table's permission or,
with row security, the row's own. Lists filter by permission in SQL, so limits, cursors and
`total` stay right. Transactions are not implemented: any `transactionId` is not found.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from ..service._permissions import (
    ITEM_ACTIONS,
    check_grantable,
    default_item_permissions,
    normalize_permissions,
)
from ..service._ratelimit import RateLimit
from ..store._columns import normalize_datetime
from ..store._db_terms import BOTH, Terms
from ..store._rowstore import (
    InvalidStructure,
    RowMeta,
    StoredRow,
    delete_rows,
    insert_row,
    list_body,
    load_row,
    permission_clause,
    render_rows,
    row_projection,
    row_schema,
    row_source,
    row_values,
    split_row_data,
    update_row,
)
from ..store._schema_store import TableMeta, promote_ready
from ..store._sql import Clause, count, fetch_page
from ..wire._errors import ServiceError, invalid_param, missing_param
from ..wire._params import UID_DESCRIPTION, UNIQUE, is_uid, unique_id
from ..wire._timefmt import now_text
from ._routing import Context, Reply, RouteSpec
from ._tablesdb import (
    cursor_missing,
    item_queries,
    object_list,
    row_allows,
    scopes,
    sequence_as_text,
    table_allows,
    table_or_404,
    table_route,
    unauthorized,
)

WRITE_LIMIT = RateLimit(120, 60, by_method=True, by_user=True)
DELETE_LIMIT = RateLimit(60, 60, by_method=True, by_user=True)
MAX_BULK_ROWS = 100
#: The longest response-cache time a row list accepts, in seconds.
MAX_LIST_TTL = 86400
ROW_SCOPES = (("rows", "documents"), ("documents",))


def _not_found(terms: Terms, row_id: str) -> ServiceError:
    return ServiceError(
        terms.error("row", "not_found"),
        f"{terms.title('row')} with the requested ID '{row_id}' could not be found.",
    )


def _refuse_transactions(ctx: Context) -> None:
    """Any `transactionId` is not found; a malformed one breaks the ID rule first (§1.2)."""
    if ctx.params.has("transactionId"):
        ctx.params.uid("transactionId", allow_unique=False)
        raise ServiceError(
            "transaction_not_found", "Transaction with the requested ID could not be found."
        )


def _render(
    ctx: Context,
    conn: sqlite3.Connection,
    table: TableMeta,
    terms: Terms,
    seqs: list[int],
    select: list[str] | None = None,
) -> list[bytes]:
    projection = row_projection(table, terms, select=select, sequence_as_text=sequence_as_text(ctx))
    return render_rows(conn, table, projection, seqs)


def _permission_filter(ctx: Context, table: TableMeta, action: str) -> list[Clause]:
    """Nothing when the table allows `action`; the row-permission filter with row security."""
    if table_allows(ctx, table, action):
        return []
    if table.row_security:
        return [permission_clause(table, ctx.caller.roles, action)]
    raise unauthorized()


def _requested_permissions(
    ctx: Context, values: Any, param: str = "permissions"
) -> list[str] | None:
    """Row permissions as sent: validated, `write` expanded, only grantable roles."""
    if values is None:
        return None
    if not isinstance(values, list):
        raise invalid_param(param, "Value must be a valid array of permission strings")
    permissions = normalize_permissions(values, ITEM_ACTIONS, param=param)
    check_grantable(permissions, ctx.caller)
    return permissions


def _check_timestamp(ctx: Context, row: StoredRow, terms: Terms) -> None:
    """`X-Service-Timestamp`: 409 when the row changed after that instant."""
    header = ctx.header("X-Service-Timestamp")
    if not header:
        return
    moment = normalize_datetime(header)
    if moment is None:
        raise ServiceError(
            "general_argument_invalid", "Invalid X-Service-Timestamp header: not a date-time."
        )
    if row.updated_at > moment:
        raise ServiceError(
            terms.error("row", "update_conflict"), f"Remote {terms.row} is newer than local."
        )


def _new_row(
    ctx: Context,
    table: TableMeta,
    terms: Terms,
    row_id: str,
    data: Mapping[str, Any],
    meta: RowMeta,
    permissions: list[str] | None,
) -> StoredRow:
    now = now_text()
    return StoredRow(
        0,
        row_id,
        meta.created_at or now,
        meta.updated_at or now,
        default_item_permissions(ctx.caller) if permissions is None else permissions,
        row_values(table, terms, data),
    )


def _apply_update(
    ctx: Context,
    conn: sqlite3.Connection,
    table: TableMeta,
    terms: Terms,
    row: StoredRow,
    data: Mapping[str, Any],
    meta: RowMeta,
    permissions: list[str] | None,
) -> None:
    """Write `data` over `row`: a no-op needs read access only, a change needs update."""
    _check_timestamp(ctx, row, terms)
    values = row_values(table, terms, data, row.values)
    new_permissions = row.permissions if permissions is None else permissions
    created = meta.created_at or row.created_at
    if values == row.values and new_permissions == row.permissions and created == row.created_at:
        if not row_allows(ctx, table, row.permissions, "read"):
            raise unauthorized()
        return
    if not row_allows(ctx, table, row.permissions, "update"):
        raise unauthorized()
    updated = StoredRow(
        row.seq, row.id, created, meta.updated_at or now_text(), new_permissions, values
    )
    update_row(conn, table, terms, updated)


def _first(*candidates: Any) -> Any:
    """The first of `candidates` that is not None (the parameter before `$permissions`)."""
    return next((candidate for candidate in candidates if candidate is not None), None)


def _data(ctx: Context) -> dict[str, Any]:
    return ctx.params.json_object("data") or {}


def _bulk_items(ctx: Context, terms: Terms) -> list[dict[str, Any]]:
    """The `rows` (legacy `documents`) parameter: 1 to 100 JSON objects."""
    items = object_list(ctx, terms.rows, MAX_BULK_ROWS)
    if not items:
        raise ServiceError(terms.error("row", "missing_data"), f"The {terms.row} data is missing.")
    return items


def _bulk_item(
    ctx: Context, terms: Terms, item: Mapping[str, Any]
) -> tuple[str, dict[str, Any], RowMeta, list[str] | None]:
    """One row of a bulk write: its ID (generated when absent), values, `$`-members and
    permissions (None when absent)."""
    values, meta = split_row_data(item, terms, honour_times=True)
    permissions = _requested_permissions(ctx, meta.permissions, terms.rows)
    row_id = meta.row_id
    if row_id is None or row_id == UNIQUE:
        return unique_id(), values, meta, permissions
    if not is_uid(row_id):
        raise InvalidStructure(terms, f'Attribute "$id" has invalid type. {UID_DESCRIPTION}')
    return str(row_id), values, meta, permissions


def _keys_only(ctx: Context, terms: Terms, what: str) -> None:
    if not ctx.caller.is_key:
        raise ServiceError(
            "general_unauthorized_scope",
            f"Bulk {terms.row} {what} is only available to API keys.",
        )


# --- create -------------------------------------------------------------------------------


def create_rows(ctx: Context, terms: Terms) -> Reply:
    """Single (`rowId` + `data`) or bulk (`rows`) create."""
    _refuse_transactions(ctx)
    has_data, has_rows = ctx.params.has("data"), ctx.params.has(terms.rows)
    if has_data and has_rows:
        raise ServiceError(
            "general_bad_request",
            f"You can only send one of the following parameters: data, {terms.rows}",
        )
    if has_rows:
        for forbidden in (terms.row_id, "permissions"):
            if ctx.params.has(forbidden):
                raise ServiceError(
                    "general_bad_request",
                    f"The `{forbidden}` parameter cannot be used with `{terms.rows}`: put "
                    f"`$id` and `$permissions` inside each {terms.row}.",
                )
        return Reply(_write_many(ctx, terms, upsert=False), 201)
    data = _data(ctx)
    if not data:
        raise ServiceError(terms.error("row", "missing_data"), f"The {terms.row} data is missing.")
    if not ctx.params.has(terms.row_id):
        raise ServiceError(
            terms.error("row", "missing_data"),
            f"{terms.title('row')} ID is required when creating a single {terms.row}.",
        )
    row_id = ctx.params.uid(terms.row_id)
    requested = ctx.params.permission_strings()
    promote_ready(ctx.store)
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        if not table_allows(ctx, table, "create"):
            raise unauthorized()
        permissions = _requested_permissions(ctx, _first(requested, meta.permissions))
        seq = insert_row(
            conn, table, terms, _new_row(ctx, table, terms, row_id, values, meta, permissions)
        )
        body = _render(ctx, conn, table, terms, [seq])[0]
    return Reply(body, 201)


def _write_many(ctx: Context, terms: Terms, *, upsert: bool) -> bytes:
    """Bulk create (or upsert) of the `rows` parameter, for API keys; the `{total, rows}`."""
    _keys_only(ctx, terms, "upsert" if upsert else "creation")
    items = _bulk_items(ctx, terms)
    promote_ready(ctx.store)
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        seqs = []
        for item in items:
            row_id, values, meta, permissions = _bulk_item(ctx, terms, item)
            row = load_row(conn, table, row_id) if upsert else None
            if row is None:
                new = _new_row(ctx, table, terms, row_id, values, meta, permissions)
                seqs.append(insert_row(conn, table, terms, new))
            else:
                _apply_update(ctx, conn, table, terms, row, values, meta, permissions)
                seqs.append(row.seq)
        texts = _render(ctx, conn, table, terms, seqs)
    return list_body(len(texts), terms.rows, texts)


# --- read ---------------------------------------------------------------------------------


def list_rows(ctx: Context, terms: Terms) -> Reply:
    _refuse_transactions(ctx)
    # `ttl` asks the service to cache the answer; it is validated, and nothing is cached.
    ctx.params.integer("ttl", 0, minimum=0, maximum=MAX_LIST_TTL)
    promote_ready(ctx.store)
    with ctx.state.page_builders, ctx.store.read() as conn:
        table = table_or_404(conn, ctx, terms)
        query = item_queries(ctx, row_schema(table))
        extra = _permission_filter(ctx, table, "read")
        source = row_source(table)
        total = count(conn, query, source, extra) if ctx.params.boolean("total", True) else 0
        projection = row_projection(
            table, terms, select=query.select, sequence_as_text=sequence_as_text(ctx)
        )
        rows = fetch_page(
            conn,
            query,
            source,
            projection,
            missing_cursor=cursor_missing(terms.title("row")),
            extra=extra,
        )
    ctx.state.rows_served += len(rows)
    return Reply(list_body(total, terms.rows, [row[0] for row in rows]))


def get_row(ctx: Context, terms: Terms) -> Reply:
    _refuse_transactions(ctx)
    promote_ready(ctx.store)
    row_id = ctx.path[terms.row_id]
    with ctx.store.read() as conn:
        table = table_or_404(conn, ctx, terms)
        query = item_queries(ctx, row_schema(table), allowed=frozenset({"select"}))
        row = load_row(conn, table, row_id)
        if row is None or not row_allows(ctx, table, row.permissions, "read"):
            raise _not_found(terms, row_id)
        body = _render(ctx, conn, table, terms, [row.seq], query.select)[0]
    return Reply(body)


# --- update and upsert --------------------------------------------------------------------


def update_one(ctx: Context, terms: Terms) -> Reply:
    _refuse_transactions(ctx)
    data = _data(ctx)
    requested = ctx.params.permission_strings()
    if not data and requested is None:
        raise ServiceError(
            terms.error("row", "missing_payload"),
            f"The {terms.row} data and permissions are missing. You must provide either "
            f"{terms.row} data or permissions to be updated.",
        )
    promote_ready(ctx.store)
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    row_id = ctx.path[terms.row_id]
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        row = load_row(conn, table, row_id)
        if row is None:
            raise _not_found(terms, row_id)
        permissions = _requested_permissions(ctx, _first(requested, meta.permissions))
        _apply_update(ctx, conn, table, terms, row, values, meta, permissions)
        body = _render(ctx, conn, table, terms, [row.seq])[0]
    return Reply(body)


def upsert_one(ctx: Context, terms: Terms) -> Reply:
    """Create the row, or update it when it exists; 200 either way (decision 6)."""
    _refuse_transactions(ctx)
    row_id = ctx.path[terms.row_id]
    requested = ctx.params.permission_strings()
    promote_ready(ctx.store)
    values, meta = split_row_data(_data(ctx), terms, honour_times=ctx.caller.is_key)
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        row = load_row(conn, table, row_id)
        if row is None and not table_allows(ctx, table, "create"):
            raise unauthorized()
        permissions = _requested_permissions(ctx, _first(requested, meta.permissions))
        if row is None:
            seq = insert_row(
                conn, table, terms, _new_row(ctx, table, terms, row_id, values, meta, permissions)
            )
        else:
            _apply_update(ctx, conn, table, terms, row, values, meta, permissions)
            seq = row.seq
        body = _render(ctx, conn, table, terms, [seq])[0]
    return Reply(body)


def upsert_many(ctx: Context, terms: Terms) -> Reply:
    """Bulk upsert: `rows` (legacy `documents`) is a required parameter here."""
    _refuse_transactions(ctx)
    if not ctx.params.has(terms.rows):
        raise missing_param(terms.rows)
    return Reply(_write_many(ctx, terms, upsert=True))


def _matching_ids(
    ctx: Context, conn: sqlite3.Connection, table: TableMeta, terms: Terms, action: str
) -> list[str]:
    """IDs of the rows the queries select that the caller may `action` (no default limit)."""
    query = item_queries(ctx, row_schema(table))
    rows = fetch_page(
        conn,
        query,
        row_source(table),
        ("_id", []),
        missing_cursor=cursor_missing(terms.title("row")),
        extra=_permission_filter(ctx, table, action),
        default_limit=None,
    )
    return [row[0] for row in rows]


def update_many(ctx: Context, terms: Terms) -> Reply:
    """Apply `data` to every row the queries select."""
    _refuse_transactions(ctx)
    data = _data(ctx)
    if not data:
        raise ServiceError(
            terms.error("row", "missing_payload"), f"The {terms.row} data is missing."
        )
    promote_ready(ctx.store)
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        permissions = _requested_permissions(ctx, meta.permissions)
        seqs = []
        for row_id in _matching_ids(ctx, conn, table, terms, "update"):
            row = load_row(conn, table, row_id)
            if row is not None:
                _apply_update(ctx, conn, table, terms, row, values, meta, permissions)
                seqs.append(row.seq)
        texts = _render(ctx, conn, table, terms, seqs)
    return Reply(list_body(len(texts), terms.rows, texts))


# --- delete -------------------------------------------------------------------------------


def delete_one(ctx: Context, terms: Terms) -> Reply:
    _refuse_transactions(ctx)
    row_id = ctx.path[terms.row_id]
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        row = load_row(conn, table, row_id)
        if row is None:
            raise _not_found(terms, row_id)
        if not row_allows(ctx, table, row.permissions, "delete"):
            raise unauthorized()
        _check_timestamp(ctx, row, terms)
        delete_rows(conn, table, [row.seq])
    return Reply(status=204)


def delete_many(ctx: Context, terms: Terms) -> Reply:
    """Delete every row the queries select; the answer lists the deleted rows."""
    _refuse_transactions(ctx)
    promote_ready(ctx.store)
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        rows = [
            load_row(conn, table, row_id)
            for row_id in _matching_ids(ctx, conn, table, terms, "delete")
        ]
        seqs = [row.seq for row in rows if row is not None]
        texts = _render(ctx, conn, table, terms, seqs)
        delete_rows(conn, table, seqs)
    return Reply(list_body(len(texts), terms.rows, texts))


def _row_routes(terms: Terms) -> list[RouteSpec]:
    many, one = terms.rows_path, f"{terms.rows_path}/{{{terms.row_id}}}"
    read, write = scopes(terms, "read", *ROW_SCOPES), scopes(terms, "write", *ROW_SCOPES)
    return [
        table_route(terms, "POST", many, create_rows, write, WRITE_LIMIT),
        table_route(terms, "GET", many, list_rows, read),
        table_route(terms, "PUT", many, upsert_many, write, WRITE_LIMIT),
        table_route(terms, "PATCH", many, update_many, write, WRITE_LIMIT),
        table_route(terms, "DELETE", many, delete_many, write, DELETE_LIMIT),
        table_route(terms, "GET", one, get_row, read),
        table_route(terms, "PATCH", one, update_one, write, WRITE_LIMIT),
        table_route(terms, "PUT", one, upsert_one, write, WRITE_LIMIT),
        table_route(terms, "DELETE", one, delete_one, write, DELETE_LIMIT),
    ]


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _row_routes(terms)]
