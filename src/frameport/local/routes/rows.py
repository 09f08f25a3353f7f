"""Rows (legacy: documents): create, get, list, update, upsert, delete, single and bulk (§3.6).

Every row route runs the same setup first (`_row_route`): columns and indexes whose processing
time has passed become available, and the `transactionId` parameter is read. The handlers then
take a `RowCall`. The access rules are the service's (`service._row_access`); lists filter by
permission in SQL, so limits, cursors and `total` stay right. Transactions are not
implemented: any `transactionId` is not found.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..service._ratelimit import RateLimit
from ..service._row_access import (
    permission_filter,
    requested_permissions,
    require_key,
    row_allows,
    row_not_found,
    table_allows,
    unauthorized,
)
from ..service._row_writes import (
    apply_update,
    bulk_item,
    check_unchanged_since,
    first,
    new_row,
    timestamp_moment,
)
from ..store._db_terms import BOTH, Terms
from ..store._rowstore import (
    delete_rows,
    insert_row,
    list_body,
    load_row,
    render_rows,
    row_projection,
    row_schema,
    row_source,
    split_row_data,
)
from ..store._schema_store import TableMeta, promote_ready
from ..store._sql import count, fetch_page
from ..wire._errors import ServiceError, missing_param
from ..wire._timefmt import now_text
from ._routing import Context, Reply, RouteSpec
from ._tablesdb import (
    cursor_missing,
    item_queries,
    object_list,
    scopes,
    sequence_as_text,
    table_or_404,
)

WRITE_LIMIT = RateLimit(120, 60, by_method=True, by_user=True)
DELETE_LIMIT = RateLimit(60, 60, by_method=True, by_user=True)
MAX_BULK_ROWS = 100
#: The longest response-cache time a row list accepts, in seconds.
MAX_LIST_TTL = 86400
ROW_SCOPES = (("rows", "documents"), ("documents",))


@dataclass(frozen=True)
class RowCall:
    """One row request after the shared setup: the request, its interface's names and the
    transaction named by `transactionId` (None without one)."""

    ctx: Context
    terms: Terms
    transaction_id: str | None

    @contextmanager
    def writing(self) -> Iterator[tuple[sqlite3.Connection, TableMeta]]:
        """The path's table inside one write transaction."""
        with self.ctx.store.write() as conn:
            yield conn, table_or_404(conn, self.ctx, self.terms)

    @contextmanager
    def reading(self) -> Iterator[tuple[sqlite3.Connection, TableMeta]]:
        """The path's table inside one read transaction."""
        with self.ctx.store.read() as conn:
            yield conn, table_or_404(conn, self.ctx, self.terms)

    def render(
        self,
        conn: sqlite3.Connection,
        table: TableMeta,
        seqs: list[int],
        select: list[str] | None = None,
    ) -> list[bytes]:
        """The Row model JSON of these rows, in the request's response format."""
        projection = row_projection(
            table, self.terms, select=select, sequence_as_text=sequence_as_text(self.ctx)
        )
        return render_rows(conn, table, projection, seqs)

    @property
    def data(self) -> dict[str, Any]:
        return self.ctx.params.json_object("data") or {}

    @property
    def row_id(self) -> str:
        return self.ctx.path[self.terms.row_id]


def _setup(ctx: Context, terms: Terms) -> RowCall:
    """What every row route does first. Any `transactionId` is not found; a malformed one
    breaks the ID rule first (§1.2)."""
    promote_ready(ctx.store)
    transaction_id = None
    if ctx.params.has("transactionId"):
        transaction_id = ctx.params.uid("transactionId", allow_unique=False)
        raise ServiceError(
            "transaction_not_found", "Transaction with the requested ID could not be found."
        )
    return RowCall(ctx, terms, transaction_id)


def _bulk_items(call: RowCall) -> list[dict[str, Any]]:
    """The `rows` (legacy `documents`) parameter: 1 to 100 JSON objects."""
    terms = call.terms
    items = object_list(call.ctx, terms.rows, MAX_BULK_ROWS)
    if not items:
        raise ServiceError(terms.error("row", "missing_data"), f"The {terms.row} data is missing.")
    return items


# --- create -------------------------------------------------------------------------------


def create_rows(call: RowCall) -> Reply:
    """Single (`rowId` + `data`) or bulk (`rows`) create."""
    ctx, terms = call.ctx, call.terms
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
        return Reply(_write_many(call, upsert=False), 201)
    data = call.data
    if not data:
        raise ServiceError(terms.error("row", "missing_data"), f"The {terms.row} data is missing.")
    if not ctx.params.has(terms.row_id):
        raise ServiceError(
            terms.error("row", "missing_data"),
            f"{terms.title('row')} ID is required when creating a single {terms.row}.",
        )
    row_id = ctx.params.uid(terms.row_id)
    requested = ctx.params.string_list("permissions", max_items=100)
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    with call.writing() as (conn, table):
        if not table_allows(ctx.caller, table, "create"):
            raise unauthorized()
        permissions = requested_permissions(ctx.caller, first(requested, meta.permissions))
        row = new_row(ctx.caller, table, terms, row_id, values, meta, permissions, now_text())
        body = call.render(conn, table, [insert_row(conn, table, terms, row)])[0]
    return Reply(body, 201)


def _write_many(call: RowCall, *, upsert: bool) -> bytes:
    """Bulk create (or upsert) of the `rows` parameter, for API keys; the `{total, rows}`."""
    caller, terms = call.ctx.caller, call.terms
    require_key(caller, terms, "upsert" if upsert else "creation")
    items = _bulk_items(call)
    unchanged_since = timestamp_moment(call.ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        seqs = []
        for item in items:
            row_id, values, meta, permissions = bulk_item(caller, terms, item)
            row = load_row(conn, table, row_id) if upsert else None
            if row is None:
                new = new_row(caller, table, terms, row_id, values, meta, permissions, now_text())
                seqs.append(insert_row(conn, table, terms, new))
            else:
                apply_update(
                    caller, conn, table, terms, row, values, meta, permissions, now_text(),
                    unchanged_since=unchanged_since,
                )  # fmt: skip
                seqs.append(row.seq)
        texts = call.render(conn, table, seqs)
    return list_body(len(texts), terms.rows, texts)


# --- read ---------------------------------------------------------------------------------


def list_rows(call: RowCall) -> Reply:
    ctx, terms = call.ctx, call.terms
    # `ttl` asks the service to cache the answer; it is validated, and nothing is cached.
    ctx.params.integer("ttl", 0, minimum=0, maximum=MAX_LIST_TTL)
    with ctx.state.page_builders, call.reading() as (conn, table):
        query = item_queries(ctx, row_schema(table))
        extra = permission_filter(ctx.caller, table, "read")
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


def get_row(call: RowCall) -> Reply:
    ctx, terms = call.ctx, call.terms
    with call.reading() as (conn, table):
        query = item_queries(ctx, row_schema(table), allowed=frozenset({"select"}))
        row = load_row(conn, table, call.row_id)
        if row is None or not row_allows(ctx.caller, table, row.permissions, "read"):
            raise row_not_found(terms, call.row_id)
        body = call.render(conn, table, [row.seq], query.select)[0]
    return Reply(body)


# --- update and upsert --------------------------------------------------------------------


def update_one(call: RowCall) -> Reply:
    ctx, terms = call.ctx, call.terms
    data = call.data
    requested = ctx.params.string_list("permissions", max_items=100)
    if not data and requested is None:
        raise ServiceError(
            terms.error("row", "missing_payload"),
            f"The {terms.row} data and permissions are missing. You must provide either "
            f"{terms.row} data or permissions to be updated.",
        )
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    unchanged_since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        row = load_row(conn, table, call.row_id)
        if row is None:
            raise row_not_found(terms, call.row_id)
        permissions = requested_permissions(ctx.caller, first(requested, meta.permissions))
        apply_update(
            ctx.caller, conn, table, terms, row, values, meta, permissions, now_text(),
            unchanged_since=unchanged_since,
        )  # fmt: skip
        body = call.render(conn, table, [row.seq])[0]
    return Reply(body)


def upsert_one(call: RowCall) -> Reply:
    """Create the row, or update it when it exists; 200 either way (decision 6)."""
    ctx, terms = call.ctx, call.terms
    requested = ctx.params.string_list("permissions", max_items=100)
    values, meta = split_row_data(call.data, terms, honour_times=ctx.caller.is_key)
    unchanged_since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        row = load_row(conn, table, call.row_id)
        if row is None and not table_allows(ctx.caller, table, "create"):
            raise unauthorized()
        permissions = requested_permissions(ctx.caller, first(requested, meta.permissions))
        if row is None:
            new = new_row(
                ctx.caller, table, terms, call.row_id, values, meta, permissions, now_text()
            )
            seq = insert_row(conn, table, terms, new)
        else:
            apply_update(
                ctx.caller, conn, table, terms, row, values, meta, permissions, now_text(),
                unchanged_since=unchanged_since,
            )  # fmt: skip
            seq = row.seq
        body = call.render(conn, table, [seq])[0]
    return Reply(body)


def upsert_many(call: RowCall) -> Reply:
    """Bulk upsert: `rows` (legacy `documents`) is a required parameter here."""
    if not call.ctx.params.has(call.terms.rows):
        raise missing_param(call.terms.rows)
    return Reply(_write_many(call, upsert=True))


def _matching_ids(
    call: RowCall, conn: sqlite3.Connection, table: TableMeta, action: str
) -> list[str]:
    """IDs of the rows the queries select that the caller may `action` (no default limit)."""
    query = item_queries(call.ctx, row_schema(table))
    rows = fetch_page(
        conn,
        query,
        row_source(table),
        ("_id", []),
        missing_cursor=cursor_missing(call.terms.title("row")),
        extra=permission_filter(call.ctx.caller, table, action),
        default_limit=None,
    )
    return [row[0] for row in rows]


def update_many(call: RowCall) -> Reply:
    """Apply `data` to every row the queries select."""
    ctx, terms = call.ctx, call.terms
    data = call.data
    if not data:
        raise ServiceError(
            terms.error("row", "missing_payload"), f"The {terms.row} data is missing."
        )
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    unchanged_since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        permissions = requested_permissions(ctx.caller, meta.permissions)
        seqs = []
        for row_id in _matching_ids(call, conn, table, "update"):
            row = load_row(conn, table, row_id)
            if row is not None:
                apply_update(
                    ctx.caller, conn, table, terms, row, values, meta, permissions, now_text(),
                    unchanged_since=unchanged_since,
                )  # fmt: skip
                seqs.append(row.seq)
        texts = call.render(conn, table, seqs)
    return Reply(list_body(len(texts), terms.rows, texts))


# --- delete -------------------------------------------------------------------------------


def delete_one(call: RowCall) -> Reply:
    ctx, terms = call.ctx, call.terms
    unchanged_since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        row = load_row(conn, table, call.row_id)
        if row is None:
            raise row_not_found(terms, call.row_id)
        if not row_allows(ctx.caller, table, row.permissions, "delete"):
            raise unauthorized()
        check_unchanged_since(row, unchanged_since, terms)
        delete_rows(conn, table, [row.seq])
    return Reply(status=204)


def delete_many(call: RowCall) -> Reply:
    """Delete every row the queries select; the answer lists the deleted rows."""
    with call.writing() as (conn, table):
        matching = _matching_ids(call, conn, table, "delete")
        rows = [load_row(conn, table, row_id) for row_id in matching]
        seqs = [row.seq for row in rows if row is not None]
        texts = call.render(conn, table, seqs)
        delete_rows(conn, table, seqs)
    return Reply(list_body(len(texts), call.terms.rows, texts))


RowHandler = Callable[[RowCall], Reply]


def _row_route(
    terms: Terms,
    method: str,
    path: str,
    handler: RowHandler,
    accepted: tuple[str, ...],
    limit: RateLimit | None = None,
) -> RouteSpec:
    """`handler` for one interface, after the setup every row route shares."""

    def run(ctx: Context) -> Reply:
        return handler(_setup(ctx, terms))

    return RouteSpec(method, path, run, accepted, limit)


def _row_routes(terms: Terms) -> list[RouteSpec]:
    many, one = terms.rows_path, f"{terms.rows_path}/{{{terms.row_id}}}"
    read, write = scopes(terms, "read", *ROW_SCOPES), scopes(terms, "write", *ROW_SCOPES)
    return [
        _row_route(terms, "POST", many, create_rows, write, WRITE_LIMIT),
        _row_route(terms, "GET", many, list_rows, read),
        _row_route(terms, "PUT", many, upsert_many, write, WRITE_LIMIT),
        _row_route(terms, "PATCH", many, update_many, write, WRITE_LIMIT),
        _row_route(terms, "DELETE", many, delete_many, write, DELETE_LIMIT),
        _row_route(terms, "GET", one, get_row, read),
        _row_route(terms, "PATCH", one, update_one, write, WRITE_LIMIT),
        _row_route(terms, "PUT", one, upsert_one, write, WRITE_LIMIT),
        _row_route(terms, "DELETE", one, delete_one, write, DELETE_LIMIT),
    ]


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _row_routes(terms)]
