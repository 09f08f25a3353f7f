"""Indexes of a table: key, unique and fulltext; create, get, list, delete
(service interface, "The catalog", "Models").

A unique index is a real SQLite UNIQUE index on the compared form of its columns (the folded
text for strings), so rows that clash get 409 `row_unique_constraint_violation`. A fulltext
index on one string column is an FTS5 table that `search` queries use.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..store._db_terms import BOTH, Terms
from ..store._rowstore import SYSTEM_SQL, build_index, drop_index
from ..store._schema_store import (
    INDEX_SCHEMA,
    IndexDef,
    TableMeta,
    delete_index,
    fail_index,
    index_model,
    insert_index,
)
from ..wire._errors import ServiceError, invalid_param
from ..wire._params import Params
from ._routing import Context, Reply, RouteSpec
from ._tablesdb import item_routes, keyed_page, ready_table, table_or_404

INDEX_TYPES = ("key", "unique", "fulltext")


INDEX_SCOPES = (("tables", "collections", "indexes"), ("collections", "indexes"))


def parse_index(params: Params, terms: Terms) -> IndexDef:
    """An index definition from parameters (or one JSON definition of a table's `indexes`)."""
    key = params.uid("key", allow_unique=False)
    index_type = params.required_string("type")
    if index_type not in INDEX_TYPES:
        raise invalid_param("type", f"Value must be one of ({', '.join(INDEX_TYPES)})")
    columns = params.string_list(terms.columns, max_items=100, required=True) or []
    if not columns or len(set(columns)) != len(columns):
        raise invalid_param(terms.columns, "Value must be a non-empty array of distinct keys")
    orders = params.string_list("orders", max_items=100) or []
    if any(order.upper() not in ("ASC", "DESC") for order in orders):
        raise invalid_param("orders", "Value must be an array of ASC or DESC")
    lengths: list[Any] = params.raw("lengths") or []
    if not isinstance(lengths, list) or any(
        length is not None and (not isinstance(length, int) or isinstance(length, bool))
        for length in lengths
    ):
        raise invalid_param("lengths", "Value must be an array of integers")
    return IndexDef(
        key, index_type, tuple(columns), tuple(lengths), tuple(order.upper() for order in orders)
    )


def _check_columns(table: TableMeta, index: IndexDef, terms: Terms) -> None:
    for key in index.columns:
        if key in SYSTEM_SQL and index.type != "fulltext":
            continue
        column = table.column(key)
        if column is None:
            raise ServiceError(
                terms.error("column", "not_found"),
                f"{terms.title('column')} with the requested key '{key}' could not be found.",
            )
        if not column.available:
            raise ServiceError(
                terms.error("column", "not_available"),
                f"{terms.title('column')} '{key}' is not available yet. Try again once its "
                "status is available.",
            )
        if index.type == "fulltext" and (column.kind != "string" or column.array):
            raise invalid_param(
                terms.columns,
                f'{terms.title("column")} "{key}" cannot be part of a fulltext index, it must '
                "be a string that is not an array",
            )


def add_table_index(
    conn: sqlite3.Connection, table: TableMeta, index: IndexDef, terms: Terms, *, processing: bool
) -> IndexDef:
    """Record and build one index; it ends `failed` when existing rows break uniqueness."""
    if table.index(index.key) is not None:
        raise ServiceError("index_already_exists", "Index with the requested key already exists.")
    _check_columns(table, index, terms)
    created = insert_index(conn, table, index, processing=processing)
    error = build_index(conn, table, created)
    if error is not None:
        fail_index(conn, created, error)
    return created


def _index_or_404(table: TableMeta, key: str) -> IndexDef:
    index = table.index(key)
    if index is None:
        raise ServiceError(
            "index_not_found", f"Index with the requested key '{key}' could not be found."
        )
    return index


def create_index(ctx: Context, terms: Terms) -> Reply:
    index = parse_index(ctx.params, terms)
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        created = add_table_index(conn, table, index, terms, processing=True)
    return Reply(index_model(created, terms), 202)


def list_indexes(ctx: Context, terms: Terms) -> Reply:
    table, total, keys = keyed_page(ctx, terms, INDEX_SCHEMA, "tdb_indexes", "Index")
    indexes = [index_model(_index_or_404(table, key), terms) for key in keys]
    return Reply({"total": total, "indexes": indexes})


def get_index(ctx: Context, terms: Terms) -> Reply:
    table = ready_table(ctx, terms)
    return Reply(index_model(_index_or_404(table, ctx.path["key"]), terms))


def delete_index_route(ctx: Context, terms: Terms) -> Reply:
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        index = _index_or_404(table, ctx.path["key"])
        drop_index(conn, table, index)
        delete_index(conn, index)
    return Reply(status=204)


def _index_routes(terms: Terms) -> list[RouteSpec]:
    base = f"{terms.table_path}/indexes"
    handlers = (create_index, list_indexes, get_index, delete_index_route)
    return item_routes(terms, INDEX_SCOPES, base, f"{base}/{{key}}", handlers)


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _index_routes(terms)]
