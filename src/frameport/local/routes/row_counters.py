"""Increment and decrement a row's numeric column (`…/rows/{rowId}/{column}/increment`,
`…/decrement`; legacy `…/documents/{documentId}/{attribute}/…`).

`value` (default 1) is added or taken away; past `max` (increment) or `min` (decrement) the
answer is 400 `column_limit_exceeded`. A missing column or row is 404 `column_not_found`.
With a `transactionId` the change is staged, and the answer carries the change, not the
new total.
"""

from __future__ import annotations

from ..service.realtime._hub import publish_row_event
from ..service.rows._access import row_allows, unauthorized
from ..service.rows._writes import check_unchanged_since, count_by, counter_column, timestamp_moment
from ..service.transactions._lifecycle import Stager
from ..service.transactions._staging import counter_data
from ..store._db_terms import BOTH, Terms
from ..store._rowstore import load_row
from ..wire._errors import ServiceError
from ._routing import Reply, RouteSpec
from ._row_call import RowCall, row_route
from ._tablesdb import scopes
from .rows import ROW_SCOPES, WRITE_LIMIT


def _change(call: RowCall, *, decrement: bool) -> Reply:
    ctx, terms = call.ctx, call.terms
    key = ctx.path[terms.column]
    value = ctx.params.number("value", 1.0)
    bound = ctx.params.number("min" if decrement else "max")
    delta: int | float = int(value) if value is not None and value.is_integer() else value or 0
    if call.transaction_id is not None:
        sent = {"column": key, "value": delta, ("min" if decrement else "max"): bound}
        data = counter_data(sent, "decrement" if decrement else "increment", 0)
        answer = {"$id": call.row_id, terms.table_key: "", "$databaseId": "", key: delta}
        return call.stage(
            Stager.COUNTER_ROUTE,
            "decrement" if decrement else "increment",
            data,
            row_id=call.row_id,
            answer=lambda conn, table, state: Reply(
                {**answer, terms.table_key: table.id, "$databaseId": table.database_id}
            ),
        )
    unchanged_since = timestamp_moment(ctx.header("X-Service-Timestamp"))
    with call.writing() as (conn, table):
        column = counter_column(table, terms, key)
        row = load_row(conn, table, call.row_id)
        if row is None:
            raise ServiceError(
                terms.error("column", "not_found"),
                f"{terms.title('row')} with the requested ID '{call.row_id}' could not be found.",
            )
        if not row_allows(ctx.caller, table, row.permissions, "update"):
            raise unauthorized()
        check_unchanged_since(row, unchanged_since, terms)
        change = -delta if decrement else delta
        updated = count_by(conn, table, terms, row, column, change, bound, call.now)
        body = call.render(conn, table, [updated.seq])[0]
    publish_row_event(ctx.state, "update", table, body, terms)
    return Reply(body)


def increment(call: RowCall) -> Reply:
    return _change(call, decrement=False)


def decrement(call: RowCall) -> Reply:
    return _change(call, decrement=True)


def _counter_routes(terms: Terms) -> list[RouteSpec]:
    one = f"{terms.rows_path}/{{{terms.row_id}}}/{{{terms.column}}}"
    write = scopes(terms, "write", *ROW_SCOPES)
    return [
        row_route(terms, "PATCH", f"{one}/increment", increment, write, WRITE_LIMIT),
        row_route(terms, "PATCH", f"{one}/decrement", decrement, write, WRITE_LIMIT),
    ]


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _counter_routes(terms)]
