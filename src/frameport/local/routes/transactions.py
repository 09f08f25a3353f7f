"""/v1/tablesdb/transactions (and the deprecated /v1/databases/transactions): make, list,
read, commit or roll back, delete a transaction, and stage operations into it.

The rules are the service's (`service.transactions`: `_lifecycle`, `_staging`, `_commit`).
"""

from __future__ import annotations

from functools import partial

from ..service._state import ServiceState
from ..service.realtime._hub import publish_row_event
from ..service.transactions._commit import CommittedWrite, finish_commit
from ..service.transactions._lifecycle import (
    DEFAULT_TTL,
    MAX_TTL,
    MIN_TTL,
    Stager,
    create_transaction,
    expired,
    not_ready,
    open_for_staging,
    owner_clause,
    purge,
    require_member,
    transaction_model,
    transaction_or_404,
)
from ..service.transactions._staging import Staging, parse_operation, staging_table
from ..store._db_terms import BOTH, Terms
from ..store._transactions import (
    TRANSACTION_SCHEMA,
    TRANSACTION_SOURCE,
    delete_transaction,
    drop_operations,
    load_transaction,
    set_status,
)
from ..wire._errors import ServiceError, invalid_param
from ._routing import Context, Reply, RouteSpec, route
from ._tablesdb import list_queries, metadata_page


def _purge(ctx: Context) -> None:
    purge(ctx.store, ctx.state.clock, ctx.state.staged_logs)


def create(ctx: Context) -> Reply:
    require_member(ctx.caller)
    ttl = ctx.params.integer("ttl", DEFAULT_TTL, minimum=MIN_TTL, maximum=MAX_TTL)
    _purge(ctx)
    with ctx.store.write() as conn:
        record = create_transaction(conn, ctx.caller, ttl or DEFAULT_TTL, ctx.state.clock)
    return Reply(transaction_model(record), 201)


def list_transactions(ctx: Context) -> Reply:
    require_member(ctx.caller)
    query = list_queries(ctx, TRANSACTION_SCHEMA)
    with ctx.store.read() as conn:
        total, ids = metadata_page(
            conn,
            ctx,
            query,
            TRANSACTION_SOURCE,
            title="Transaction",
            extra=owner_clause(ctx.caller),
        )
        found = [load_transaction(conn, transaction_id) for transaction_id in ids]
    models = [transaction_model(record) for record in found if record is not None]
    return Reply({"total": total, "transactions": models})


def get(ctx: Context) -> Reply:
    require_member(ctx.caller)
    with ctx.store.read() as conn:
        record = transaction_or_404(conn, ctx.caller, ctx.path["transactionId"])
    return Reply(transaction_model(record))


def update(ctx: Context) -> Reply:
    """Commit (`commit: true`) or roll back (`rollback: true`) a pending transaction."""
    require_member(ctx.caller)
    commit = ctx.params.boolean("commit", False)
    rollback = ctx.params.boolean("rollback", False)
    clock = ctx.state.clock
    _purge(ctx)
    with ctx.store.write() as conn:
        record = transaction_or_404(conn, ctx.caller, ctx.path["transactionId"])
        error = expired(record, clock)
        if error is not None:
            raise error
        if record.status != "pending":
            raise not_ready()
        if commit == rollback:
            raise ServiceError(
                "general_bad_request", "Send exactly one of `commit: true` or `rollback: true`."
            )
        if rollback or record.operations == 0:
            set_status(conn, record.id, "failed" if rollback else "committed", clock.text())
            drop_operations(conn, record)
        else:
            set_status(conn, record.id, "committing", clock.text())
    ctx.state.staged_logs.drop([record.seq])
    if commit and record.operations:
        publish_commit(ctx.state, finish_commit(ctx.store, record, clock))
    with ctx.store.read() as conn:
        return Reply(transaction_model(transaction_or_404(conn, ctx.caller, record.id)))


def publish_commit(state: ServiceState, written: list[CommittedWrite]) -> None:
    """A commit's events: one per applied single-row write, in order, each carrying the
    stored row with both table keys and no `$databaseId` (staged bulk writes send none)."""
    for write in written:
        publish_row_event(state, write.action, write.table, write.payload())


def delete(ctx: Context) -> Reply:
    require_member(ctx.caller)
    _purge(ctx)
    with ctx.store.write() as conn:
        record = transaction_or_404(conn, ctx.caller, ctx.path["transactionId"])
        delete_transaction(conn, record)
    ctx.state.staged_logs.drop([record.seq])
    return Reply(status=204)


def create_operations(ctx: Context, terms: Terms) -> Reply:
    """Stage the `operations` list, checked as a whole: all of it is staged, or none."""
    entries = ctx.params.raw("operations")
    if not isinstance(entries, list):
        raise invalid_param("operations", "Value must be a valid array of operation objects")
    if not entries:
        raise ServiceError("general_argument_invalid", "Operations array cannot be empty")
    operations = [parse_operation(entry, position) for position, entry in enumerate(entries)]
    clock, logs = ctx.state.clock, ctx.state.staged_logs
    _purge(ctx)
    with ctx.store.write() as conn:
        record = open_for_staging(
            conn, ctx.caller, ctx.path["transactionId"], Stager.ENDPOINT, clock
        )
        staging = Staging(conn, ctx.caller, terms, record, logs.of(conn, record))
        for operation in operations:
            staging.add(staging_table(conn, ctx.caller, terms, operation), operation)
        staged = staging.write(clock, ctx.state.config.max_transaction_bytes)
        updated = load_transaction(conn, record.id)
    logs.replace(record.seq, staging.log, staged)
    return Reply(transaction_model(updated or record), 201)


def _transaction_routes(terms: Terms) -> list[RouteSpec]:
    kinds = ("rows", "documents") if terms.row == "row" else ("documents",)
    read = tuple(f"{kind}.read" for kind in kinds)
    write = tuple(f"{kind}.write" for kind in kinds)
    many = f"{terms.base}/transactions"
    one = f"{many}/{{transactionId}}"
    return [
        *route(create, "POST", many, scopes=write),
        *route(list_transactions, "GET", many, scopes=read),
        *route(get, "GET", one, scopes=read),
        *route(update, "PATCH", one, scopes=write),
        *route(delete, "DELETE", one, scopes=write),
        *route(partial(create_operations, terms=terms), "POST", f"{one}/operations", scopes=write),
    ]


ROUTES: list[RouteSpec] = [spec for terms in BOTH for spec in _transaction_routes(terms)]
