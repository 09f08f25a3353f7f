"""Transactions for people: writes to several tables, of one database or several, applied
all together or not at all.

>>> with client.transaction() as tx:                                 # doctest: +SKIP
...     [order] = tx.table("sales", "orders").insert(orders)
...     tx.table("sales", "lines").load(lines.assign(order=order))
...     tx.table("store", "stock").where(col("item") == "pen").update(
...         set={"left": fp.decrement(by=2)}
...     )

Each write of ``tx.table(...)`` is staged in one of the service's transactions
(`writes.StagedTransaction`, which `load(atomic=True)` stages through too); nothing is
written before the block is left, which commits them together. An exception, Ctrl-C (in
the synchronous face) or a cancelled task (in the async one) rolls back; a client that
dies or loses the service leaves the transaction uncommitted, and the service drops it when
its time to live (``ttl=``) ends.

Decisions:

* **Writes only.** A transaction table has no reads: the service's reads inside a
  transaction lay the staged writes over the committed rows only in part (staged creates
  come whatever the filter, bulk changes show only on rows of the transaction), so a read
  could not be trusted. Reads go through ``client.table(...)`` and show the committed rows.
* **Rows chosen when staged.** `update` and `delete` read the IDs of the committed rows
  their query selects (rows staged in the transaction are not among them), and stage the
  change of those rows by ID, 100 to an operation. A row that someone else changes or deletes
  before the commit makes the commit fail (the service's conflict check), so a commit
  never changes rows the filter no longer selects unnoticed.
* **A failed write ends it.** A write that raises (rejected rows, a limit, a lost service)
  rolls the whole transaction back, so that no half of a write is ever committed; leaving
  the block then raises.
* **Limits before sending.** Each write counts the operations it needs against the 100 a
  transaction holds (a bulk write counts once) and the time against `ttl`, and is refused
  before it is sent when it does not fit (`TransactionError`, naming the limit).
* **People signed in stage rows.** The service takes bulk operations in a transaction only
  from API keys, so a client signed in as a user (a session or a JWT) stages each row as an
  operation of its own (`StagedTransaction.row_by_row`): the same writes, fewer rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .._core._sync import SyncFacade, delegate, forward_property, run_sync
from ._location import TableLocation
from ._query import AsyncTableQuery
from .writes import (
    DEFAULT_ON_CONFLICT,
    LoadOptions,
    OnConflict,
    WriteReport,
    load_rows,
    rows_rejected,
    update_data,
)
from .writes._changes import check_set_columns, selected_ids
from .writes._load import LoadResult
from .writes._transaction import DEFAULT_TTL, RowAction, StagedTransaction

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from pandas.api.typing import Expression as PandasExpression

    from .._core import Requester
    from .._expr import Expr

T = TypeVar("T")

_READS = frozenset(
    {
        "to_pandas", "to_arrow", "to_polars", "to_parquet", "to_dask", "iter_batches",
        "count", "schema", "explain", "sync", "preview_html", "columns",
    }
)  # fmt: skip


class AsyncTransactionQuery:
    """The rows of a table that `update` or `delete` change in a transaction (see
    `AsyncTransaction`): `where` and `query` choose them as on a table."""

    def __init__(self, staged: StagedTransaction, query: AsyncTableQuery) -> None:
        self._staged = staged
        self._query = query

    def __repr__(self) -> str:
        return f"{type(self).__name__}({repr(self._query).partition('(')[2]}"

    def __getattr__(self, name: str) -> Any:
        if name in _READS:
            location = self._query.location
            raise AttributeError(
                f"{name}() is a read, and a transaction only stages writes (nothing staged "
                "is seen before the block is left): read the committed rows with "
                f"client.table({location.database_id!r}, {location.table_id!r}).{name}()"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def where(self, condition: Expr | PandasExpression) -> AsyncTransactionQuery:
        """The rows where `condition` holds (as `Table.where` takes it)."""
        return AsyncTransactionQuery(self._staged, self._query.where(condition))

    def query(
        self, expr: str, *, local_dict: Mapping[str, object] | None = None, level: int = 0
    ) -> AsyncTransactionQuery:
        """The rows matching `expr` (as `Table.query` takes it)."""
        chosen = self._query.query(expr, local_dict=local_dict, level=level)
        return AsyncTransactionQuery(self._staged, chosen)

    async def update(self, set: dict[str, Any]) -> None:
        """Stage a change of the chosen rows: each column of `set` to its value, or by its
        operator (``fp.increment(by=1)``, ...). The rows are the committed ones the query
        selects now; each 100 of them take one of the transaction's 100 operations (each
        row one, for a client signed in as a user)."""
        await self._change("update", update_data(set))

    async def delete(self) -> None:
        """Stage the deletion of the chosen rows (the committed ones the query selects now;
        each 100 of them take one of the transaction's 100 operations, each row one for a
        client signed in as a user)."""
        await self._change("delete", None)

    async def _change(self, action: RowAction, data: dict[str, Any] | None) -> None:
        async def staged() -> None:
            self._staged.check_open()
            read = await self._query._read(None)
            if data is not None:
                check_set_columns(read, data)
            plan = read.plan
            chosen = await selected_ids(read)
            operations = self._staged.changes(plan.location, action, chosen, plan.member, data)
            self._staged.check_room(len(operations), f"this {action} of {len(chosen):,} rows")
            for operation in operations:
                await self._staged.stage(operation)

        await _ending_on_failure(self._staged, staged())


class AsyncTransactionTable(AsyncTransactionQuery):
    """A table in a transaction (`AsyncTransaction.table`): its writes are staged, and
    written when the transaction commits. Only writes: read through ``client.table``."""

    def __init__(self, staged: StagedTransaction, query: AsyncTableQuery) -> None:
        super().__init__(staged, query)

    async def insert(self, frame: object, *, progress: bool | None = None) -> list[str]:
        """Stage a new row for each row of `frame` (any source `Table.load` takes); return
        their IDs in the frame's order, to refer to them in other rows of the transaction.
        An ID that exists already fails the commit (`ConflictError`). A row that breaks a
        column's rule raises `RowsRejectedError`."""
        return await self._write_all(frame, "fail", progress)

    async def upsert(self, frame: object, *, progress: bool | None = None) -> list[str]:
        """Stage a row for each row of `frame`, replacing the row of the same ``$id`` if
        there is one; return the IDs in the frame's order."""
        return await self._write_all(frame, "replace", progress)

    async def load(
        self,
        source: object,
        *,
        on_conflict: OnConflict = DEFAULT_ON_CONFLICT,
        id_from: str | Sequence[str] | None = None,
        id_hash: str | Sequence[str] | None = None,
        progress: bool | None = None,
    ) -> WriteReport:
        """Stage the rows of `source` as `Table.load` writes them with ``atomic=True``: a
        rejected row raises `RowsRejectedError` (and rolls the transaction back). The
        report counts the rows staged, written when the transaction commits. A load that
        needs more operations than the transaction has left is refused before any of it
        is sent (`TransactionError`)."""
        options = self._options(on_conflict, progress, id_from=id_from, id_hash=id_hash)
        return (await self._load(source, options)).report

    async def _write_all(
        self, frame: object, on_conflict: OnConflict, progress: bool | None
    ) -> list[str]:
        result = await self._load(frame, self._options(on_conflict, progress, keep_ids=True))
        return [str(row_id) for row_id in result.ids or ()]

    def _options(self, on_conflict: OnConflict, progress: bool | None, **more: Any) -> LoadOptions:
        return LoadOptions(
            on_conflict, atomic=True, transaction=self._staged, progress=progress, **more
        )

    async def _load(self, source: object, options: LoadOptions) -> LoadResult:
        async def staged() -> LoadResult:
            self._staged.check_open()
            query = self._query
            result = await load_rows(query._requester, query.location, source, options)
            if options.keep_ids and not result.report.ok:
                raise rows_rejected(result.report)
            return result

        return await _ending_on_failure(self._staged, staged())


async def _ending_on_failure(staged: StagedTransaction, write: Awaitable[T]) -> T:
    """`write`'s result; if it raises, the transaction is rolled back first."""
    try:
        return await write
    except BaseException:
        await staged.rollback()
        raise


class AsyncTransaction:
    """Writes to tables staged together and written all at once when the ``async with``
    block is left; an exception (a cancelled task too) rolls them back, and nothing is
    written. Made by `AsyncClient.transaction`.

    >>> async with client.transaction() as tx:                       # doctest: +SKIP
    ...     ids = await tx.table("sales", "orders").insert(orders)
    """

    def __init__(self, requester: Requester, ttl: int = DEFAULT_TTL) -> None:
        self._requester = requester
        self._staged = StagedTransaction(requester, ttl)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(id={self.id!r}, operations={self.operations}, ttl={self.ttl})"
        )

    @property
    def id(self) -> str | None:
        """The service's ID of the transaction, once a first write has made it (else None)."""
        return self._staged.id

    @property
    def operations(self) -> int:
        """The operations staged so far: a transaction holds 100. A bulk write counts once;
        a client signed in as a user (not an API key) stages each row as one."""
        return self._staged.operations

    @property
    def ttl(self) -> int:
        """Seconds the transaction lives, from its first write; the service drops it then,
        and nothing of it is written."""
        return self._staged.ttl

    def table(self, database_id: str, table_id: str) -> AsyncTransactionTable:
        """The table `table_id` of database `database_id`, whose writes (`insert`,
        `upsert`, `load`, and `update` and `delete` of the rows `where` chooses) are staged
        in this transaction."""
        query = AsyncTableQuery(self._requester, TableLocation(database_id, table_id))
        return AsyncTransactionTable(self._staged, query)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self._staged.commit()
        else:
            await self._staged.rollback()


# ---------------------------------------------------------------------------------------------
# Synchronous faces


class TransactionQuery(SyncFacade[AsyncTransactionQuery], wraps=AsyncTransactionQuery):
    """The rows of a table that `update` or `delete` change in a transaction; the
    synchronous face of `AsyncTransactionQuery`."""

    def __getattr__(self, name: str) -> Any:
        if name in _READS:
            getattr(self._async, name)  # the error naming the read to use instead
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    where = delegate(AsyncTransactionQuery.where, lambda: TransactionQuery)
    query = delegate(AsyncTransactionQuery.query, lambda: TransactionQuery)
    update = delegate(AsyncTransactionQuery.update)
    delete = delegate(AsyncTransactionQuery.delete)


class TransactionTable(TransactionQuery, wraps=AsyncTransactionTable):
    """A table in a transaction: its writes are staged, and written when the transaction
    commits; the synchronous face of `AsyncTransactionTable`."""

    _async: AsyncTransactionTable

    insert = delegate(AsyncTransactionTable.insert)
    upsert = delegate(AsyncTransactionTable.upsert)
    load = delegate(AsyncTransactionTable.load)


class Transaction(SyncFacade[AsyncTransaction], wraps=AsyncTransaction):
    """Writes to tables staged together and written all at once when the ``with`` block is
    left; an exception or Ctrl-C rolls them back, and nothing is written. Made by
    `Client.transaction`; the synchronous face of `AsyncTransaction`.

    >>> with client.transaction() as tx:                             # doctest: +SKIP
    ...     ids = tx.table("sales", "orders").insert(orders)
    """

    id = forward_property("id")
    operations = forward_property("operations")
    ttl = forward_property("ttl")
    table = delegate(AsyncTransaction.table, TransactionTable)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        run_sync(self._async.__aexit__(exc_type, exc, traceback))


__all__ = [
    "AsyncTransaction",
    "AsyncTransactionQuery",
    "AsyncTransactionTable",
    "Transaction",
    "TransactionQuery",
    "TransactionTable",
]
