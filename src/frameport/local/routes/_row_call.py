"""What every row route shares (rows, increments and decrements): one setup step before the
handler (`row_route`), and the `RowCall` handlers receive.

The setup makes columns and indexes whose processing time has passed available and reads the
`transactionId` parameter. With one, a write route stages an operation into the transaction
instead of writing (`RowCall.stage`), and a read shows what the transaction staged
(`RowCall.staged`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..service._ratelimit import RateLimit
from ..service.accounts._permissions import default_item_permissions
from ..service.rows._access import requested_permissions
from ..service.transactions._lifecycle import (
    Stager,
    expired,
    find_transaction,
    open_for_staging,
    purge,
)
from ..service.transactions._staging import Staging
from ..service.transactions._view import StagedTable
from ..store._db_terms import Terms
from ..store._rowstore import load_row, render_rows, row_projection
from ..store._schema_store import TableMeta, promote_ready
from ._routing import Context, Reply, RouteSpec
from ._tablesdb import sequence_as_text, table_or_404


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
    def now(self) -> str:
        """The service's time now, as rows are stamped."""
        return self.ctx.state.clock.text()

    def staged(self, conn: sqlite3.Connection, table: TableMeta) -> StagedTable | None:
        """What the request's transaction staged for the table; None without a pending,
        unexpired transaction the caller may see (a read then goes as without
        `transactionId`)."""
        if self.transaction_id is None:
            return None
        record = find_transaction(conn, self.ctx.caller, self.transaction_id)
        if record is None or record.status != "pending":
            return None
        if expired(record, self.ctx.state.clock) is not None:
            return None
        log = self.ctx.state.staged_logs.of(conn, record)
        return log.table((table.database_id, table.id))

    def stage(
        self,
        stager: Stager,
        action: str,
        data: Any = None,
        *,
        row_id: str | None = None,
        answer: Callable[[sqlite3.Connection, TableMeta, StagedTable], Reply] | None = None,
    ) -> Reply:
        """Stage one operation into the request's transaction; `answer` (given the state the
        transaction then sees) makes the reply, else 204."""
        assert self.transaction_id is not None  # staging is only for requests with one
        ctx, clock, logs = self.ctx, self.ctx.state.clock, self.ctx.state.staged_logs
        purge(ctx.store, clock, logs)
        with self.writing() as (conn, table):
            record = open_for_staging(conn, ctx.caller, self.transaction_id, stager, clock)
            staging = Staging(conn, ctx.caller, self.terms, record, logs.of(conn, record))
            operation: dict[str, Any] = {
                "action": action,
                "databaseId": table.database_id,
                "tableId": table.id,
            }
            if row_id is not None:
                operation["rowId"] = row_id
            if data is not None:
                operation["data"] = data
            state = staging.add(table, operation, row_must_exist=stager is not Stager.COUNTER_ROUTE)
            staged = staging.write(clock, ctx.state.config.max_transaction_bytes)
            reply = Reply(status=204) if answer is None else answer(conn, table, state)
        logs.replace(record.seq, staging.log, staged)
        return reply

    def mock_row(
        self,
        table: TableMeta,
        row_id: str,
        data: Mapping[str, Any],
        select: list[str] | None = None,
    ) -> dict[str, Any]:
        """A staged row as the service shows it: no sequence or times yet."""
        values = {key: value for key, value in data.items() if not key.startswith("$")}
        if select is not None and "*" not in select:
            values = {key: value for key, value in values.items() if key in select}
        return {
            "$id": row_id,
            "$sequence": "",
            self.terms.table_key: table.id,
            "$databaseId": table.database_id,
            "$createdAt": "",
            "$updatedAt": "",
            "$permissions": data.get("$permissions", []),
            **values,
        }

    def row_as_staged(
        self,
        conn: sqlite3.Connection,
        table: TableMeta,
        state: StagedTable,
        row_id: str,
        select: list[str] | None = None,
    ) -> dict[str, Any] | None:
        """The row as the transaction sees it; None when it has none (or deleted it)."""
        if row_id in state.created:
            return self.mock_row(table, row_id, state.created[row_id], select)
        row = load_row(conn, table, row_id)
        if row is None or row_id in state.deleted:
            return None
        shown: dict[str, Any] = json.loads(self.render(conn, table, [row.seq], select)[0])
        return laid_over(shown, state.changed.get(row_id, {}), select)

    @property
    def row_id(self) -> str:
        return self.ctx.path[self.terms.row_id]


def laid_over(
    shown: dict[str, Any], changes: Mapping[str, Any], select: list[str] | None
) -> dict[str, Any]:
    """A committed row's JSON with a transaction's staged values laid over it."""
    for key, value in changes.items():
        if key == "$permissions" or select is None or "*" in select or key in select:
            shown[key] = value
    return shown


def _setup(ctx: Context, terms: Terms) -> RowCall:
    """What every row route does first; a malformed `transactionId` breaks the ID rule
    (service interface, "IDs")."""
    promote_ready(ctx.store)
    transaction_id = None
    if ctx.params.has("transactionId"):
        transaction_id = ctx.params.uid("transactionId", allow_unique=False)
    return RowCall(ctx, terms, transaction_id)


def staged_permissions(call: RowCall, requested: Any) -> list[str]:
    """The permissions a staged create writes: as sent, else the caller's defaults."""
    permissions = requested_permissions(call.ctx.caller, requested)
    return default_item_permissions(call.ctx.caller) if permissions is None else permissions


RowHandler = Callable[[RowCall], Reply]


def row_route(
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
