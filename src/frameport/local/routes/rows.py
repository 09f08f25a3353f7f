"""Rows (legacy: documents): create, get, list, update, upsert, delete, single and bulk
(service interface, "Rows").

Every handler takes the `RowCall` of the shared row setup (`_row_call`). The access rules are
the service's (`service.rows._access`); lists filter by permission in SQL, so limits, cursors
and `total` stay right. With a `transactionId`, a write route stages one operation into the
transaction and answers as the service does then; the two reads show the transaction's
staged rows.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..service._ratelimit import RateLimit
from ..service.realtime._hub import publish_bulk_row_events, publish_row_event
from ..service.rows._access import (
    permission_filter,
    requested_permissions,
    require_key,
    row_allows,
    row_not_found,
    table_allows,
    unauthorized,
)
from ..service.rows._writes import (
    RowInput,
    apply_update,
    bulk_item,
    check_unchanged_since,
    first,
    new_row,
    timestamp_moment,
)
from ..service.transactions._lifecycle import Stager
from ..service.transactions._staging import with_row_ids
from ..service.transactions._view import StagedTable
from ..store._db_terms import BOTH, Terms
from ..store._query import ListQuery
from ..store._rowstore import (
    delete_rows,
    insert_row,
    list_body,
    load_row,
    row_projection,
    row_schema,
    row_source,
    split_row_data,
)
from ..store._schema_store import TableMeta
from ..store._sql import Clause, count, fetch_page
from ..wire._errors import ServiceError, missing_param
from ._routing import Reply, RouteSpec
from ._row_call import RowCall, laid_over, row_route, staged_permissions
from ._tablesdb import cursor_missing, item_queries, object_list, scopes, sequence_as_text

WRITE_LIMIT = RateLimit(120, 60, by_method=True, by_user=True)
DELETE_LIMIT = RateLimit(60, 60, by_method=True, by_user=True)
#: Rows in one bulk create or upsert, and rows a bulk update or delete lists in its answer
#: and sends events for (its `total` counts every row changed).
MAX_BULK_ROWS = 100
#: The longest response-cache time a row list accepts, in seconds.
MAX_LIST_TTL = 86400
ROW_SCOPES = (("rows", "documents"), ("documents",))


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
        if call.transaction_id is not None:
            return _stage_many(call, "bulkCreate")
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
    requested = ctx.params.permission_strings()
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    if call.transaction_id is not None:
        staged = {
            **values,
            "$permissions": staged_permissions(call, first(requested, meta.permissions)),
        }
        return call.stage(
            Stager.SINGLE_ROUTE,
            "create",
            staged,
            row_id=row_id,
            answer=lambda conn, table, state: Reply(call.mock_row(table, row_id, staged), 201),
        )
    with call.writing() as (conn, table):
        if not table_allows(ctx.caller, table, "create"):
            raise unauthorized()
        permissions = requested_permissions(ctx.caller, first(requested, meta.permissions))
        given = RowInput(values, meta, permissions, call.now)
        row = new_row(ctx.caller, table, terms, row_id, given)
        body = call.render(conn, table, [insert_row(conn, table, terms, row)])[0]
    publish_row_event(ctx.state, "create", table, body, terms)
    return Reply(body, 201)


def _write_many(call: RowCall, *, upsert: bool) -> bytes:
    """Bulk create (or upsert) of the `rows` parameter, for API keys; the `{total, rows}`."""
    caller, terms = call.ctx.caller, call.terms
    require_key(caller, terms, "upsert" if upsert else "creation")
    items = _bulk_items(call)
    since = timestamp_moment(call.ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        seqs = []
        for item in items:
            row_id, values, meta, permissions = bulk_item(caller, terms, item)
            given = RowInput(values, meta, permissions, call.now)
            row = load_row(conn, table, row_id) if upsert else None
            if row is None:
                new = new_row(caller, table, terms, row_id, given)
                seqs.append(insert_row(conn, table, terms, new))
            else:
                apply_update(caller, conn, table, terms, row, given, unchanged_since=since)
                seqs.append(row.seq)
        texts = call.render(conn, table, seqs)
    publish_bulk_row_events(call.ctx.state, "upsert" if upsert else "create", table, texts, terms)
    return list_body(len(texts), terms.rows, texts)


def _stage_many(call: RowCall, action: str) -> Reply:
    """Stage a bulk create or upsert: IDs are given now; 200 `{total: n, rows: []}`."""
    require_key(call.ctx.caller, call.terms, "upsert" if action == "bulkUpsert" else "creation")
    items = with_row_ids(_bulk_items(call))
    for item in items:
        bulk_item(call.ctx.caller, call.terms, item)
    body = {"total": len(items), call.terms.rows: []}
    return call.stage(
        Stager.BULK_ROUTE, action, items, answer=lambda conn, table, state: Reply(body)
    )


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
        texts = [row[0] for row in rows]
        state = call.staged(conn, table)
        if state is not None:
            total, texts = _with_staged(call, conn, table, state, query, total, texts, extra)
    ctx.state.rows_served += len(rows)
    ctx.state.rows_served_by_table[table.database_id, table.id] += len(rows)
    return Reply(list_body(total, terms.rows, texts))


def _with_staged(
    call: RowCall,
    conn: sqlite3.Connection,
    table: TableMeta,
    state: StagedTable,
    query: ListQuery,
    total: int,
    texts: list[bytes],
    extra: list[Clause],
) -> tuple[int, list[bytes]]:
    """A page as a transaction sees it: its deleted rows removed, its changes laid over, its
    created rows appended whatever the filters; `total` adjusted to match."""
    shown = [json.loads(text) for text in texts]
    kept = [
        laid_over(row, state.changed.get(row["$id"], {}), query.select)
        for row in shown
        if row["$id"] not in state.deleted
    ]
    created = [
        call.mock_row(table, row_id, data, query.select) for row_id, data in state.created.items()
    ]
    if state.deleted:
        marks = ", ".join("?" for _ in state.deleted)
        gone: Clause = (f"_id IN ({marks})", sorted(state.deleted))
        total -= count(conn, query, row_source(table), [*extra, gone])
    rows = [*kept, *created]
    return max(total, 0) + len(created), [json.dumps(row).encode() for row in rows]


def get_row(call: RowCall) -> Reply:
    ctx, terms = call.ctx, call.terms
    with call.reading() as (conn, table):
        query = item_queries(ctx, row_schema(table), allowed=frozenset({"select"}))
        row = load_row(conn, table, call.row_id)
        readable = row is not None and row_allows(ctx.caller, table, row.permissions, "read")
        state = call.staged(conn, table)
        if state is not None and (readable or call.row_id in state.created):
            staged = call.row_as_staged(conn, table, state, call.row_id, query.select)
            if staged is None:
                raise row_not_found(terms, call.row_id)
            return Reply(staged)
        if row is None or not readable:
            raise row_not_found(terms, call.row_id)
        body = call.render(conn, table, [row.seq], query.select)[0]
    return Reply(body)


# --- update and upsert --------------------------------------------------------------------


def update_one(call: RowCall) -> Reply:
    ctx, terms = call.ctx, call.terms
    data = call.data
    requested = ctx.params.permission_strings()
    if not data and requested is None:
        raise ServiceError(
            terms.error("row", "missing_payload"),
            f"The {terms.row} data and permissions are missing. You must provide either "
            f"{terms.row} data or permissions to be updated.",
        )
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    if call.transaction_id is not None:
        permissions = requested_permissions(ctx.caller, first(requested, meta.permissions))
        staged = values if permissions is None else {**values, "$permissions": permissions}

        def as_staged(conn: sqlite3.Connection, table: TableMeta, state: StagedTable) -> Reply:
            return Reply(call.row_as_staged(conn, table, state, call.row_id))

        return call.stage(
            Stager.SINGLE_ROUTE, "update", staged, row_id=call.row_id, answer=as_staged
        )
    since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        row = load_row(conn, table, call.row_id)
        if row is None:
            raise row_not_found(terms, call.row_id)
        permissions = requested_permissions(ctx.caller, first(requested, meta.permissions))
        given = RowInput(values, meta, permissions, call.now)
        apply_update(ctx.caller, conn, table, terms, row, given, unchanged_since=since)
        body = call.render(conn, table, [row.seq])[0]
    publish_row_event(ctx.state, "update", table, body, terms)
    return Reply(body)


def upsert_one(call: RowCall) -> Reply:
    """Create the row, or update it when it exists; 200 either way
    (service interface, "Upserts")."""
    ctx, terms = call.ctx, call.terms
    requested = ctx.params.permission_strings()
    values, meta = split_row_data(call.data, terms, honour_times=ctx.caller.is_key)
    if call.transaction_id is not None:
        permissions = requested_permissions(ctx.caller, first(requested, meta.permissions))
        staged = values if permissions is None else {**values, "$permissions": permissions}
        return call.stage(
            Stager.SINGLE_ROUTE,
            "upsert",
            staged,
            row_id=call.row_id,
            answer=lambda conn, table, state: Reply(
                {
                    "$id": call.row_id,
                    terms.table_key: table.id,
                    "$databaseId": table.database_id,
                    **staged,
                },
                201,
            ),
        )
    since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        row = load_row(conn, table, call.row_id)
        if row is None and not table_allows(ctx.caller, table, "create"):
            raise unauthorized()
        permissions = requested_permissions(ctx.caller, first(requested, meta.permissions))
        given = RowInput(values, meta, permissions, call.now)
        if row is None:
            new = new_row(ctx.caller, table, terms, call.row_id, given)
            seq = insert_row(conn, table, terms, new)
        else:
            apply_update(ctx.caller, conn, table, terms, row, given, unchanged_since=since)
            seq = row.seq
        body = call.render(conn, table, [seq])[0]
    publish_row_event(ctx.state, "upsert", table, body, terms)
    return Reply(body)


def upsert_many(call: RowCall) -> Reply:
    """Bulk upsert: `rows` (legacy `documents`) is a required parameter here."""
    if not call.ctx.params.has(call.terms.rows):
        raise missing_param(call.terms.rows)
    if call.transaction_id is not None:
        return _stage_many(call, "bulkUpsert")
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
    """Apply `data` to every row the queries select; the answer's `total` counts them and
    its rows are the first `MAX_BULK_ROWS` (as are its events)."""
    ctx, terms = call.ctx, call.terms
    data = call.data
    if not data:
        raise ServiceError(
            terms.error("row", "missing_payload"), f"The {terms.row} data is missing."
        )
    values, meta = split_row_data(data, terms, honour_times=ctx.caller.is_key)
    if call.transaction_id is not None:
        return _stage_by_queries(call, "bulkUpdate", {"data": data})
    since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        permissions = requested_permissions(ctx.caller, meta.permissions)
        given = RowInput(values, meta, permissions, call.now)
        seqs = []
        for row_id in _matching_ids(call, conn, table, "update"):
            row = load_row(conn, table, row_id)
            if row is not None:
                apply_update(ctx.caller, conn, table, terms, row, given, unchanged_since=since)
                seqs.append(row.seq)
        texts = call.render(conn, table, seqs[:MAX_BULK_ROWS])
    publish_bulk_row_events(ctx.state, "update", table, texts, terms)
    return Reply(list_body(len(seqs), terms.rows, texts))


# --- delete -------------------------------------------------------------------------------


def delete_one(call: RowCall) -> Reply:
    ctx, terms = call.ctx, call.terms
    if call.transaction_id is not None:
        return call.stage(Stager.SINGLE_ROUTE, "delete", row_id=call.row_id)
    since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        row = load_row(conn, table, call.row_id)
        if row is None:
            raise row_not_found(terms, call.row_id)
        if not row_allows(ctx.caller, table, row.permissions, "delete"):
            raise unauthorized()
        check_unchanged_since(row, since, terms)
        body = call.render(conn, table, [row.seq])[0]
        delete_rows(conn, table, [row.seq])
    publish_row_event(ctx.state, "delete", table, body, terms)
    return Reply(status=204)


def delete_many(call: RowCall) -> Reply:
    """Delete every row the queries select; the answer's `total` counts them and its rows
    are the first `MAX_BULK_ROWS` deleted (as are its events)."""
    if call.transaction_id is not None:
        return _stage_by_queries(call, "bulkDelete", {})
    with call.writing() as (conn, table):
        matching = _matching_ids(call, conn, table, "delete")
        rows = [load_row(conn, table, row_id) for row_id in matching]
        seqs = [row.seq for row in rows if row is not None]
        texts = call.render(conn, table, seqs[:MAX_BULK_ROWS])
        delete_rows(conn, table, seqs)
    publish_bulk_row_events(call.ctx.state, "delete", table, texts, call.terms)
    return Reply(list_body(len(seqs), call.terms.rows, texts))


def _stage_by_queries(call: RowCall, action: str, data: dict[str, Any]) -> Reply:
    """Stage a bulk update or delete with the request's queries (checked now);
    200 `{total: 0, rows: []}`."""
    queries = call.ctx.params.queries()
    body = {"total": 0, call.terms.rows: []}

    def checked(conn: sqlite3.Connection, table: TableMeta, state: StagedTable) -> Reply:
        item_queries(call.ctx, row_schema(table))
        return Reply(body)

    return call.stage(Stager.BULK_ROUTE, action, {**data, "queries": queries}, answer=checked)


def _row_routes(terms: Terms) -> list[RouteSpec]:
    many, one = terms.rows_path, f"{terms.rows_path}/{{{terms.row_id}}}"
    read, write = scopes(terms, "read", *ROW_SCOPES), scopes(terms, "write", *ROW_SCOPES)
    return [
        row_route(terms, "POST", many, create_rows, write, WRITE_LIMIT),
        row_route(terms, "GET", many, list_rows, read),
        row_route(terms, "PUT", many, upsert_many, write, WRITE_LIMIT),
        row_route(terms, "PATCH", many, update_many, write, WRITE_LIMIT),
        row_route(terms, "DELETE", many, delete_many, write, DELETE_LIMIT),
        row_route(terms, "GET", one, get_row, read),
        row_route(terms, "PATCH", one, update_one, write, WRITE_LIMIT),
        row_route(terms, "PUT", one, upsert_one, write, WRITE_LIMIT),
        row_route(terms, "DELETE", one, delete_one, write, DELETE_LIMIT),
    ]


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _row_routes(terms)]
