"""What the database routes share: finding databases and tables as the caller may see them,
query errors per endpoint kind (service interface, "Query errors"), and metadata lists.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ..service._ratelimit import RateLimit
from ..service.rows import _access as row_access
from ..store._collation import fold
from ..store._db_terms import TABLES, Terms
from ..store._listing import queries_param_error
from ..store._query import ALL_METHODS, FILTERS, ORDERS, PAGING, ListQuery, QueryError, Schema
from ..store._query import parse_queries as _parse_queries
from ..store._schema_store import DatabaseMeta, TableMeta, keyed_source, promote_ready
from ..store._sql import Clause, Source, count, fetch_page
from ..wire import _json as request_json
from ..wire._errors import ServiceError, invalid_param
from ._routing import Context, Handler, RouteSpec

#: Methods the metadata lists (databases, tables, columns, indexes) accept.
METADATA_METHODS = FILTERS | ORDERS | PAGING


def scopes(
    terms: Terms, access: str, tablesdb: Sequence[str], legacy: Sequence[str]
) -> tuple[str, ...]:
    """The accepted scopes of a route, e.g. `("rows.read", "documents.read")`."""
    kinds = tablesdb if terms is TABLES else legacy
    return tuple(f"{kind}.{access}" for kind in kinds)


def table_route(
    terms: Terms,
    method: str,
    path: str,
    handler: Callable[..., Any],
    accepted: tuple[str, ...],
    limit: RateLimit | None = None,
) -> RouteSpec:
    """`handler(ctx, terms=terms)` for one interface."""
    bound: Handler = partial(handler, terms=terms)
    return RouteSpec(method, path, bound, accepted, limit)


#: Route methods by handler verb, and whether they act on one item (else on the list).
_ITEM_VERBS = {
    "create": ("POST", False),
    "list": ("GET", False),
    "get": ("GET", True),
    "update": ("PUT", True),
    "delete": ("DELETE", True),
}


def item_routes(
    terms: Terms,
    kinds: tuple[Sequence[str], Sequence[str]],
    many: str,
    one: str,
    handlers: Sequence[Callable[..., Any]],
) -> list[RouteSpec]:
    """The routes of one kind of item for one interface, under the scopes of `kinds`
    (TablesDB's, legacy): each handler's verb is the first word of its name (`list_tables`)."""
    specs = []
    for handler in handlers:
        method, on_item = _ITEM_VERBS[handler.__name__.split("_")[0]]
        accepted = scopes(terms, "read" if method == "GET" else "write", *kinds)
        specs.append(table_route(terms, method, one if on_item else many, handler, accepted))
    return specs


def database_or_404(conn: sqlite3.Connection, ctx: Context) -> DatabaseMeta:
    """The path's database; missing, or disabled for a non-key caller → 404."""
    return row_access.database_or_404(conn, ctx.caller, ctx.path["databaseId"])


def table_or_404(conn: sqlite3.Connection, ctx: Context, terms: Terms) -> TableMeta:
    """The path's table (in the path's database); missing or disabled (non-key) → 404."""
    return row_access.table_or_404(
        conn, ctx.caller, terms, ctx.path["databaseId"], ctx.path[terms.table_id]
    )


def ready_table(ctx: Context, terms: Terms) -> TableMeta:
    """The path's table once its due columns and indexes took their final status."""
    promote_ready(ctx.store)
    with ctx.store.read() as conn:
        return table_or_404(conn, ctx, terms)


def keyed_page(
    ctx: Context, terms: Terms, schema: Schema, meta_table: str, title: str
) -> tuple[TableMeta, int, list[str]]:
    """A list of the path's table's columns (`tdb_columns`) or indexes (`tdb_indexes`): the
    table, the total and the keys of one page."""
    promote_ready(ctx.store)
    query = list_queries(ctx, schema)
    with ctx.store.read() as conn:
        table = table_or_404(conn, ctx, terms)
        source = keyed_source(meta_table, table)
        total, keys = metadata_page(conn, ctx, query, source, title=title)
    return table, total, keys


#: The first response format in which `$sequence` is a string
#: (service interface, "Response formats").
SEQUENCE_TEXT_FROM = (1, 9, 0)


def sequence_as_text(ctx: Context) -> bool:
    """`$sequence` is a string from response format 1.9.0 on, an integer before."""
    return not ctx.caller.format_before(SEQUENCE_TEXT_FROM)


def item_queries(
    ctx: Context, schema: Schema, *, allowed: frozenset[str] = ALL_METHODS
) -> ListQuery:
    """Queries of the row endpoints: problems are 400 `general_query_invalid`."""
    try:
        return _parse_queries(ctx.params.queries(), schema, allowed=allowed)
    except QueryError as exc:
        raise ServiceError("general_query_invalid", exc.message) from None


def list_queries(ctx: Context, schema: Schema) -> ListQuery:
    """Queries of the metadata lists: the param validator's 400 `general_argument_invalid`."""
    try:
        return _parse_queries(ctx.params.queries(), schema, allowed=METADATA_METHODS)
    except QueryError as exc:
        raise queries_param_error(exc) from None


def object_list(ctx: Context, name: str, max_items: int) -> list[dict[str, Any]] | None:
    """A parameter holding an array of JSON objects (each may be sent as a JSON string)."""
    if not ctx.params.has(name):
        return None
    items = request_json.loads_text(ctx.params.raw(name))
    description = f"Value must be a valid array no longer than {max_items} items"
    if not isinstance(items, list) or len(items) > max_items:
        raise invalid_param(name, description)
    decoded = [request_json.loads_text(item) for item in items]
    if not all(isinstance(item, dict) for item in decoded):
        raise invalid_param(name, f"{description}, each a JSON object")
    return decoded


def search_clause(ctx: Context, *columns: str) -> list[Clause]:
    """The `search` parameter of metadata lists: folded text contained in ID or name."""
    search = ctx.params.string("search", max_length=256)
    if not search:
        return []
    text = " || ' ' || ".join(columns)
    return [(f"instr(fold({text}), ?) > 0", [fold(search)])]


def cursor_missing(title: str) -> Callable[[str], ServiceError]:
    """The error for a cursor naming no item: `<Title> '<id>' for the 'cursor' value not found.`"""

    def missing(item_id: str) -> ServiceError:
        return ServiceError(
            "general_cursor_not_found", f"{title} '{item_id}' for the 'cursor' value not found."
        )

    return missing


def metadata_page(
    conn: sqlite3.Connection,
    ctx: Context,
    query: ListQuery,
    source: Source,
    *,
    title: str,
    extra: Sequence[Clause] = (),
) -> tuple[int, list[str]]:
    """`total` and the IDs (keys) of one page of a metadata list."""
    total = count(conn, query, source, extra) if ctx.params.boolean("total", True) else 0
    rows = fetch_page(
        conn, query, source, (source.id, []), missing_cursor=cursor_missing(title), extra=extra
    )
    return total, [row[0] for row in rows]
