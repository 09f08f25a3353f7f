"""/v1/tablesdb and the legacy /v1/databases: databases (contract §3.3).

A database made through either form is usable through both; `type` records the form that
made it (`tablesdb` or `legacy`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import Any

from .._db_terms import BOTH, Terms
from .._errors import ServiceError, invalid_param
from .._params import UID_DESCRIPTION, is_uid
from .._routing import Context, Reply, route
from .._rowstore import drop_rows_table
from .._schema_store import (
    DATABASE_SCHEMA,
    DATABASE_SOURCE,
    database_model,
    delete_database,
    delete_table,
    insert_database,
    load_database,
    load_tables,
    update_database,
)
from .._tablesdb import database_or_404, list_queries, metadata_page, search_clause

READ, WRITE = ("databases.read",), ("databases.write",)
#: Path parameters that name a database, table or column/index key: all follow the ID rule.
PATH_IDS = frozenset({"databaseId", "tableId", "collectionId", "key"})


def check_path_ids(ctx: Context) -> None:
    """400 `general_argument_invalid` for a path ID or key that breaks the ID rule (§1.2)."""
    for name, value in ctx.path.items():
        if name in PATH_IDS and not is_uid(value):
            raise invalid_param(name, UID_DESCRIPTION)


def checking_path_ids(handler: Callable[..., Reply]) -> Callable[..., Reply]:
    """`handler`, run only once the IDs in the request's path are valid."""

    @wraps(handler)
    def checked(ctx: Context, **kwargs: Any) -> Reply:
        check_path_ids(ctx)
        return handler(ctx, **kwargs)

    return checked


def create_database(ctx: Context, terms: Terms) -> Reply:
    database_id = ctx.params.uid("databaseId")
    name = ctx.params.required_string("name", max_length=128)
    enabled = ctx.params.boolean("enabled", True)
    with ctx.store.write() as conn:
        if load_database(conn, database_id) is not None:
            raise ServiceError("database_already_exists", "Database already exists")
        database = insert_database(conn, database_id, name, enabled, terms.database_type)
    return Reply(database_model(database), 201)


def list_databases(ctx: Context) -> Reply:
    query = list_queries(ctx, DATABASE_SCHEMA)
    extra = search_clause(ctx, "id", "name")
    with ctx.store.read() as conn:
        total, ids = metadata_page(conn, ctx, query, DATABASE_SOURCE, title="Database", extra=extra)
        found = [load_database(conn, database_id) for database_id in ids]
    databases = [database_model(database) for database in found if database is not None]
    return Reply({"total": total, "databases": databases})


def get_database(ctx: Context) -> Reply:
    with ctx.store.read() as conn:
        return Reply(database_model(database_or_404(conn, ctx)))


def update_database_route(ctx: Context) -> Reply:
    name = ctx.params.required_string("name", max_length=128)
    enabled = ctx.params.boolean("enabled", True)
    with ctx.store.write() as conn:
        database = database_or_404(conn, ctx)
        update_database(conn, database.id, name, enabled)
        updated = load_database(conn, database.id)
    return Reply(database_model(updated or database))


def delete_database_route(ctx: Context) -> Reply:
    with ctx.store.write() as conn:
        database = database_or_404(conn, ctx)
        for table in load_tables(conn, database.id):
            drop_rows_table(conn, table)
            delete_table(conn, table)
        delete_database(conn, database.id)
    return Reply(status=204)


for _terms in BOTH:
    _one = f"{_terms.base}/{{databaseId}}"
    route("POST", _terms.base, scopes=WRITE)(partial(create_database, terms=_terms))
    route("GET", _terms.base, scopes=READ)(list_databases)
    route("GET", _one, scopes=READ)(checking_path_ids(get_database))
    route("PUT", _one, scopes=WRITE)(checking_path_ids(update_database_route))
    route("DELETE", _one, scopes=WRITE)(checking_path_ids(delete_database_route))
