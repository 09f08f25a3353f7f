"""/v1/tablesdb and the legacy /v1/databases: databases (service interface, "The catalog").

A database made through either form is usable through both; `type` records the form that
made it (`tablesdb` or `legacy`).
"""

from __future__ import annotations

from functools import partial

from ..store._db_terms import BOTH, Terms
from ..store._rowstore import drop_rows_table
from ..store._schema_store import (
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
from ..wire._errors import ServiceError
from ._routing import Context, Reply, RouteSpec, route
from ._tablesdb import database_or_404, list_queries, metadata_page, search_clause

READ, WRITE = ("databases.read",), ("databases.write",)


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


def _database_routes(terms: Terms) -> list[RouteSpec]:
    one = f"{terms.base}/{{databaseId}}"
    return [
        *route(partial(create_database, terms=terms), "POST", terms.base, scopes=WRITE),
        *route(list_databases, "GET", terms.base, scopes=READ),
        *route(get_database, "GET", one, scopes=READ),
        *route(update_database_route, "PUT", one, scopes=WRITE),
        *route(delete_database_route, "DELETE", one, scopes=WRITE),
    ]


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _database_routes(terms)]
