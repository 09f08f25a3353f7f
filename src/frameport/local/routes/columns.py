"""Columns (legacy: attributes) of a table: create by type, get, list, delete
(service interface, "Columns").

A new column answers 202 with `status: "processing"` and becomes `available` a moment
later; rows can use it from then on. Its SQL column exists from the start.
"""

from __future__ import annotations

import sqlite3

from ..store._columns import ROUTE_TYPES, ColumnDef, column_model, parse_column
from ..store._db_terms import BOTH, Terms
from ..store._rowstore import add_column, drop_column, drop_index
from ..store._schema_store import (
    COLUMN_SCHEMA,
    TableMeta,
    delete_column,
    delete_index,
    insert_column,
    reload_table,
)
from ..wire._errors import ServiceError
from ._routing import Context, Reply, RouteSpec
from ._tablesdb import item_routes, keyed_page, ready_table, scopes, table_or_404, table_route

COLUMN_LIMIT = 500


COLUMN_SCOPES = (("tables", "collections", "columns", "attributes"), ("collections", "attributes"))


def add_table_column(
    conn: sqlite3.Connection, table: TableMeta, column: ColumnDef, terms: Terms, *, processing: bool
) -> ColumnDef:
    """Record and create one column; 409 for a duplicate key, 400 past the column limit."""
    if table.column(column.key) is not None:
        raise ServiceError(
            terms.error("column", "already_exists"),
            f"{terms.title('column')} with the requested key already exists. "
            f"{terms.title('column')} keys must be unique, try again with a different key.",
        )
    if len(table.columns) >= COLUMN_LIMIT:
        raise ServiceError(
            terms.error("column", "limit_exceeded"),
            f"The maximum number of {terms.columns} has been reached.",
        )
    created = insert_column(conn, table, column, processing=processing)
    add_column(conn, table, created)
    return created


def column_or_404(table: TableMeta, key: str, terms: Terms) -> ColumnDef:
    column = table.column(key)
    if column is None:
        raise ServiceError(
            terms.error("column", "not_found"),
            f"{terms.title('column')} with the requested key '{key}' could not be found.",
        )
    return column


def create_column(ctx: Context, terms: Terms) -> Reply:
    route_type = ctx.route.path.rsplit("/", 1)[1]
    column = parse_column(route_type, ctx.params, terms)
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        created = add_table_column(conn, table, column, terms, processing=True)
    return Reply(column_model(created), 202)


def list_columns(ctx: Context, terms: Terms) -> Reply:
    title = terms.title("column")
    table, total, keys = keyed_page(ctx, terms, COLUMN_SCHEMA, "tdb_columns", title)
    columns = [column_model(column_or_404(table, key, terms)) for key in keys]
    return Reply({"total": total, terms.columns: columns})


def get_column(ctx: Context, terms: Terms) -> Reply:
    table = ready_table(ctx, terms)
    return Reply(column_model(column_or_404(table, ctx.path["key"], terms)))


def delete_column_route(ctx: Context, terms: Terms) -> Reply:
    """Drop the column and every index that uses it."""
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        column = column_or_404(table, ctx.path["key"], terms)
        for index in table.indexes:
            if column.key in index.columns:
                drop_index(conn, table, index)
                delete_index(conn, index)
        drop_column(conn, reload_table(conn, table.database_id, table.id), column)
        delete_column(conn, table, column.key)
    return Reply(status=204)


def _column_routes(terms: Terms) -> list[RouteSpec]:
    base = f"{terms.table_path}/{terms.columns}"
    write = scopes(terms, "write", *COLUMN_SCOPES)
    handlers = (list_columns, get_column, delete_column_route)
    return [
        *(
            table_route(terms, "POST", f"{base}/{route_type}", create_column, write)
            for route_type in ROUTE_TYPES
        ),
        *item_routes(terms, COLUMN_SCOPES, base, f"{base}/{{key}}", handlers),
    ]


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _column_routes(terms)]
