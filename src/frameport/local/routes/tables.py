"""Tables (legacy: collections): create, get, list, update, delete
(service interface, "The catalog").

A table may be created with its `columns` and `indexes`; those are available at once.
"""

from __future__ import annotations

from ..service.accounts._permissions import RESOURCE_ACTIONS, normalize_permissions
from ..store._columns import parse_column, route_type_of
from ..store._db_terms import BOTH, Terms
from ..store._rowstore import create_rows_table, drop_rows_table
from ..store._schema_store import (
    delete_table,
    insert_table,
    load_table,
    promote_ready,
    reload_table,
    table_model,
    table_schema,
    table_source,
    update_table,
)
from ..wire._errors import ServiceError, invalid_param
from ..wire._params import Params
from ._routing import Context, Reply, RouteSpec
from ._tablesdb import (
    database_or_404,
    item_routes,
    list_queries,
    metadata_page,
    object_list,
    ready_table,
    search_clause,
    table_or_404,
)
from .columns import add_table_column
from .indexes import add_table_index, parse_index

MAX_DEFINITIONS = 100


TABLE_SCOPES = (("tables", "collections"), ("collections",))


def _definitions(ctx: Context, name: str) -> list[Params]:
    """The JSON definitions in the `columns` or `indexes` parameter, as Params each."""
    return [Params(item) for item in object_list(ctx, name, MAX_DEFINITIONS) or []]


def _permissions(ctx: Context) -> list[str] | None:
    values = ctx.params.permission_strings()
    return None if values is None else normalize_permissions(values, RESOURCE_ACTIONS)


def create_table(ctx: Context, terms: Terms) -> Reply:
    table_id = ctx.params.uid(terms.table_id)
    name = ctx.params.required_string("name", max_length=128)
    permissions = _permissions(ctx) or []
    row_security = ctx.params.boolean(terms.security, False)
    enabled = ctx.params.boolean("enabled", True)
    columns = []
    for definition in _definitions(ctx, terms.columns):
        route_type = route_type_of(definition.data)
        if route_type is None:
            raise invalid_param(
                terms.columns, f"Unknown {terms.column} type: {definition.raw('type')}"
            )
        columns.append(parse_column(route_type, definition, terms))
    indexes = [parse_index(definition, terms) for definition in _definitions(ctx, "indexes")]
    with ctx.store.write() as conn:
        database = database_or_404(conn, ctx)
        if load_table(conn, database.id, table_id) is not None:
            raise ServiceError(
                terms.error("table", "already_exists"),
                f"{terms.title('table')} with the requested ID already exists. Try again with a "
                "different ID or use ID.unique() to generate a unique ID.",
            )
        table = insert_table(
            conn,
            database.id,
            table_id,
            name,
            permissions=permissions,
            row_security=row_security,
            enabled=enabled,
        )
        create_rows_table(conn, table)
        for column in columns:
            add_table_column(conn, table, column, terms, processing=False)
            table = reload_table(conn, database.id, table_id)
        for index in indexes:
            add_table_index(conn, table, index, terms, processing=False)
            table = reload_table(conn, database.id, table_id)
    return Reply(table_model(table, terms), 201)


def list_tables(ctx: Context, terms: Terms) -> Reply:
    promote_ready(ctx.store)
    query = list_queries(ctx, table_schema(terms))
    extra = search_clause(ctx, "id", "name")
    with ctx.store.read() as conn:
        database = database_or_404(conn, ctx)
        total, ids = metadata_page(
            conn, ctx, query, table_source(database.id), title=terms.title("table"), extra=extra
        )
        tables = [load_table(conn, database.id, table_id) for table_id in ids]
    models = [table_model(table, terms) for table in tables if table is not None]
    return Reply({"total": total, terms.tables: models})


def get_table(ctx: Context, terms: Terms) -> Reply:
    return Reply(table_model(ready_table(ctx, terms), terms))


def update_table_route(ctx: Context, terms: Terms) -> Reply:
    name = ctx.params.required_string("name", max_length=128)
    permissions = _permissions(ctx)
    row_security = ctx.params.boolean(terms.security, False)
    enabled = ctx.params.boolean("enabled", True)
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        update_table(
            conn,
            table,
            name=name,
            permissions=list(table.permissions) if permissions is None else permissions,
            row_security=row_security,
            enabled=enabled,
        )
        table = reload_table(conn, table.database_id, table.id)
    return Reply(table_model(table, terms))


def delete_table_route(ctx: Context, terms: Terms) -> Reply:
    with ctx.store.write() as conn:
        table = table_or_404(conn, ctx, terms)
        drop_rows_table(conn, table)
        delete_table(conn, table)
    return Reply(status=204)


def _table_routes(terms: Terms) -> list[RouteSpec]:
    many = f"{terms.base}/{{databaseId}}/{terms.tables}"
    handlers = (create_table, list_tables, get_table, update_table_route, delete_table_route)
    return item_routes(terms, TABLE_SCOPES, many, terms.table_path, handlers)


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _table_routes(terms)]
