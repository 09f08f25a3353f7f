"""Tables as lazy, immutable queries, read as DataFrames, Arrow tables, batches or Parquet.

`client.table(db, table)` (or `client.collection(db, collection)`, the legacy interface) is a
`Table`. `where`, `query`, `select`, `sort` and `head` return new `TableQuery` objects and send
nothing; the terminals (`to_pandas`, `to_arrow`, `iter_batches`, `to_parquet`, `count`,
`explain`) make one read of the query (`read.TableRead`): they read the table's columns,
compile the filter and page through the rows. Every terminal reads the columns afresh, so a
query never works from a stale schema.

>>> people = client.table("crm", "people")                           # doctest: +SKIP
>>> adults = people.query("age >= 18").select("name", "age").sort("age", ascending=False)
>>> print(adults.explain())                                          # doctest: +SKIP
>>> df = adults.to_pandas()                                          # doctest: +SKIP

Decisions:

* Chained filters combine with ``&``; a later `select` or `sort` replaces the earlier one;
  `head` is applied last, so filtering or sorting after `head` raises ValueError (write the
  filter first) — the lazy query does what it reads as.
* Results start with the ``$`` fields ``system=`` shows (``$id`` by default; see `_system`),
  then the table's columns, or exactly those `select` names. A Delta sync keeps every ``$``
  field (it merges by ``$id`` and ``$updatedAt``); an export writes what `system=` shows.
* A filter the DSL splits into several requests is merged by ``$id`` (first request wins);
  with a sort, those rows are collected and sorted on the client in the service's order, so
  that read holds its result in memory.
* Without access to the table's columns (a signed-in user gets 401 there), the types are
  inferred from the rows and the filter's column kinds guessed from its values (see
  `read._serial` and `read._kinds`): a result has the dtypes a read with an API key has, and
  a filter value that does not fit a column raises the same `FilterError`.
* The reading terminals read ranges of ``$sequence`` concurrently and hand them on in order,
  with the serial read's result (`read._ranged`); `to_dask` builds a dask DataFrame of such
  ranges, read on dask's workers (`engines/dask/`).
"""

from __future__ import annotations

import html
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
import pyarrow as pa

from .._core._adaptive import AUTO, Auto, Parallel
from .._core._call_stack import user_frame_depth
from .._core._pages import check_page_size
from .._core._sync import SyncFacade, delegate, forward_property
from .._expr import Expr, parse
from .._expr._pandas_expr import from_pandas_expression, is_pandas_expression
from .._schema import DtypeBackend, batches_to_pandas, to_pandas
from ._admin import add_column, column_frame, column_of_type, drop_table
from ._location import TableLocation
from ._preview import rows_text
from ._rechunk import rechunk
from ._system import DEFAULT_SYSTEM, System
from .changes import (
    DEFAULT_HEARTBEAT,
    DEFAULT_LAG,
    DEFAULT_POLL,
    AsyncChanges,
    AsyncLiveTable,
    ChangeFeed,
    Changes,
    LiveTable,
    Since,
    started_live_table,
)
from .export import ExportReport, export_resumable, export_streamed
from .read import READ_POOL, QuerySpec, TableRead
from .writes import (
    DEFAULT_ON_CONFLICT,
    MAX_ROWS_PER_REQUEST,
    ChangeReport,
    LoadOptions,
    OnConflict,
    WriteReport,
    change_rows,
    load_rows,
    rows_rejected,
)

if TYPE_CHECKING:
    import dask.dataframe as dd
    import polars as pl
    from pandas.api.typing import Expression as PandasExpression

    from .._core import Requester
    from .._core._auth import CredentialChoice
    from .delta import SyncReport

PREVIEW_ROWS = 10
"""Rows shown by a query's HTML preview."""


class AsyncTableQuery:
    """A lazy, immutable query on one table; see the module docstring.

    >>> q = table.where(col("age") > 30).select("name").sort("age").head(100)  # doctest: +SKIP
    >>> df = await q.to_pandas()                                              # doctest: +SKIP
    """

    def __init__(
        self, requester: Requester, location: TableLocation, spec: QuerySpec | None = None
    ) -> None:
        self._requester = requester
        self._location = location
        self._spec = spec or QuerySpec()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._spec.describe(self._location))})"

    @property
    def location(self) -> TableLocation:
        """The table this query reads."""
        return self._location

    # -- building ------------------------------------------------------------------------------

    def _derive(self, spec: QuerySpec) -> AsyncTableQuery:
        return AsyncTableQuery(self._requester, self._location, spec)

    def where(self, condition: Expr | PandasExpression) -> AsyncTableQuery:
        """Keep the rows where `condition` holds (combined with earlier filters by ``&``);
        pandas 3 ``pd.col(...)`` expressions are read as the same filters (see the filters
        guide).

        >>> table.where((col("age") > 30) & col("city").isin(["Oslo"]))   # doctest: +SKIP
        """
        if is_pandas_expression(condition):
            condition = from_pandas_expression(condition)
        if not isinstance(condition, Expr):
            raise TypeError(
                "where() takes a condition built with col() or pandas' pd.col(), e.g. "
                "col('age') > 30; for a query string use query()."
            )
        return self._derive(self._spec.where(condition))

    def query(
        self, expr: str, *, local_dict: Mapping[str, object] | None = None, level: int = 0
    ) -> AsyncTableQuery:
        """Keep the rows matching `expr`, written as for `pandas.DataFrame.query`.

        ``@name`` takes the caller's variable `name` (or `local_dict`'s); a wrapper
        around this method passes ``level=1`` for each frame it adds (frames of frameport's
        own, such as the synchronous `TableQuery.query`, are skipped).

        >>> table.query("age > @minimum and city in ['Oslo', 'Bergen']")  # doctest: +SKIP
        """
        return self.where(parse(expr, local_dict=local_dict, level=level + user_frame_depth()))

    def select(self, *columns: str) -> AsyncTableQuery:
        """Read exactly these columns, in this order, after the ``$`` fields the read's
        ``system=`` shows (``$id`` by default); a ``$`` field named here is shown too."""
        if len(columns) == 1 and not isinstance(columns[0], str):
            columns = tuple(columns[0])
        return self._derive(self._spec.select(columns))

    def sort(
        self, by: str | Sequence[str], ascending: bool | Sequence[bool] = True
    ) -> AsyncTableQuery:
        """Order the rows by `by` (a column or several), as the service orders them: nulls
        first when ascending, last when descending, ties by insertion order ($sequence)."""
        keys = [by] if isinstance(by, str) else list(by)
        directions = [ascending] * len(keys) if isinstance(ascending, bool) else list(ascending)
        return self._derive(self._spec.sorted_by(keys, directions))

    def head(self, n: int = 5) -> AsyncTableQuery:
        """At most the first `n` rows (the read stops as soon as it has them)."""
        return self._derive(self._spec.first(n))

    # -- reading -------------------------------------------------------------------------------

    async def schema(self, *, system: System = DEFAULT_SYSTEM) -> pa.Schema:
        """The Arrow schema of this query's results with the ``$`` fields `system` shows
        (inferred from the first page when the table's columns cannot be read)."""
        return await (await self._read(None, system=system)).schema()

    async def to_arrow(
        self,
        progress: bool | None = None,
        *,
        page_size: int | None = None,
        parallel: Parallel = AUTO,
        system: System = DEFAULT_SYSTEM,
    ) -> pa.Table:
        """Every matching row as one Arrow table (the same schema for an empty result), with
        ``$id`` and the table's columns (`system`: which ``$`` fields to show; True for all,
        False for none). ``parallel="auto"`` reads as many ranges of ``$sequence`` at once as
        the machine keeps up with, ``parallel=N`` reads N, ``parallel=1`` one after the other
        (see the scale-out guide)."""
        read = await self._read(page_size, parallel, reading=True, system=system)
        batches, schema = await read.collect(progress)
        return pa.Table.from_batches(batches, schema=schema)

    async def to_pandas(
        self,
        dtype_backend: DtypeBackend = None,
        progress: bool | None = None,
        *,
        page_size: int | None = None,
        parallel: Parallel = AUTO,
        system: System = DEFAULT_SYSTEM,
    ) -> pd.DataFrame:
        """Every matching row as a DataFrame with frameport's read dtypes: ``Int64``,
        ``boolean``, ``float64``, ``str``, ``datetime64[ms, UTC]``, lists as ``object``; or
        ``ArrowDtype`` columns with ``dtype_backend="pyarrow"``. The frame has ``$id`` and
        the table's columns; ``system=True`` adds every ``$`` field, ``system=False`` leaves
        out ``$id``, a list names the ones to show (``["id", "updatedAt"]``). Ranges of
        ``$sequence`` are read concurrently, as many as the machine keeps up with
        (``parallel="auto"``), or N with ``parallel=N``, with the serial read's result (see
        the scale-out guide).

        >>> df = table.query("age > 30").to_pandas(parallel=4)
        >>> df.columns.tolist()[:2]
        ['$id', 'name']
        """
        read = await self._read(page_size, parallel, reading=True, system=system)
        batches, schema = await read.collect(progress)
        return batches_to_pandas(
            batches, schema, dtype_backend=dtype_backend, memory_pool=READ_POOL
        )

    async def iter_batches(
        self,
        *,
        rows: int | None = None,
        bytes: int | None = None,
        arrow: bool = False,
        dtype_backend: DtypeBackend = None,
        progress: bool | None = None,
        page_size: int | None = None,
        parallel: Parallel = AUTO,
        system: System = DEFAULT_SYSTEM,
    ) -> AsyncIterator[pd.DataFrame | pa.RecordBatch]:
        """The matching rows batch by batch: DataFrames, or RecordBatches with ``arrow=True``;
        as the pages come, or re-chunked to `rows` rows or about `bytes` bytes per batch.
        Every batch has the same columns and dtypes (`system` as for `to_pandas`); there is
        no empty batch, so an empty result yields nothing (its columns: `schema`). Reads
        ahead in ranges of ``$sequence`` (``parallel="auto"`` or N at once), in order, with
        bounded memory (see the scale-out guide).

        >>> for frame in table.iter_batches(rows=50_000):
        ...     print(len(frame))
        5
        """
        read = await self._read(page_size, parallel, reading=True, system=system)
        async with aclosing(read.stream(progress)) as stream:
            async for batch in rechunk(stream, rows=rows, nbytes=bytes):
                if arrow:
                    yield batch
                else:
                    yield to_pandas(batch, dtype_backend=dtype_backend, memory_pool=READ_POOL)

    async def to_parquet(
        self,
        path: str | os.PathLike[str],
        compression: str = "zstd",
        *,
        progress: bool | None = None,
        page_size: int | None = None,
        parallel: Parallel = AUTO,
        resume: bool = False,
        system: System = DEFAULT_SYSTEM,
    ) -> ExportReport:
        """Write the matching rows to the Parquet file `path`, row group by row group, and
        return a report of it (rows, pages, bytes, seconds, checks; `summary()` says it in
        words). The file has the columns `to_pandas` would have for the same `system`
        (``$id`` and the table's columns by default). Memory stays flat however large the
        table; the file appears only when complete (a failed export leaves no partial file
        at `path`).
        Ranges of ``$sequence`` are fetched concurrently (``parallel="auto"`` or N at once)
        and written in order, holding a few pages per range. ``resume=True``
        keeps a checkpoint beside `path` after each segment of ``$sequence``, so that an export
        killed part-way continues where it stopped when run again (see the pipelines guide).

        >>> table.query("age > 30").to_parquet("adults.parquet").rows  # rows written
        3
        """
        read = await self._read(page_size, parallel, reading=not resume, system=system)
        if resume:
            return await export_resumable(read, path, compression=compression, progress=progress)
        return await export_streamed(read, path, compression=compression, progress=progress)

    async def sync(
        self,
        target: str | os.PathLike[str],
        *,
        deletes: Literal["scan", "ignore"] = "scan",
        lag: float = 5.0,
        page_size: int | None = None,
        progress: bool | None = None,
        follow: bool = False,
        interval: float = 10.0,
        reconcile: float = 60.0,
    ) -> SyncReport:
        """Keep the Delta Lake table at `target` equal to this query's rows and return a
        report of it (inserted, updated, deleted, Delta version, seconds). The first run
        writes everything; later runs read the rows updated since the last run (less `lag`
        seconds, by the service's clock) and merge them by ``$id``; ``deletes="scan"`` also
        removes the rows that are gone. One Delta commit per run. The Delta table has every
        ``$`` field: the sync merges by ``$id``, finds changes by ``$updatedAt`` and new rows
        by ``$sequence``. A progress bar shows the rows read (`progress`, as for
        `to_pandas`). Needs the ``delta`` extra; see the pipelines guide.

        With ``follow=True`` it never returns: after a run it follows the query's changes
        (`changes`, from the run's watermark) and merges them in one commit every `interval`
        seconds (none when nothing changed), deletes included, until interrupted (Ctrl-C,
        ``KeyboardInterrupt``, a cancelled task), which ends it after the commit under way;
        the next run reads again what came after the last commit. A sync reads the table's
        column types, which only an API key may read, so the changes are polled once per
        interval (`reconcile` applies to a feed over realtime, which a key does not open).

        >>> people.query("age >= 18").sync("adults_delta")               # doctest: +SKIP
        >>> people.sync("people_delta", follow=True, interval=30)        # doctest: +SKIP
        """
        from .delta import follow_delta, sync_delta

        run = partial(follow_delta, interval=interval, reconcile=reconcile)
        return await (run if follow else sync_delta)(
            self._requester,
            self._location,
            self._spec,
            os.fspath(target),
            deletes=deletes,
            lag=lag,
            page_size=page_size,
            progress=progress,
        )

    def changes(
        self,
        since: Since = None,
        *,
        lag: float = DEFAULT_LAG,
        heartbeat: float = DEFAULT_HEARTBEAT,
        poll: float = DEFAULT_POLL,
    ) -> AsyncChanges:
        """This query's changes as they happen: Arrow ``RecordBatch``es with an ``op`` column
        (``insert``, ``update``, ``delete``), ``$id``, ``$updatedAt`` and the query's
        columns. A row changed so that it leaves the filter comes as a ``delete``.

        `since`: None (from now), ``"snapshot"`` (every current row first, as ``insert``) or
        a watermark (the service's ``$updatedAt`` text or a datetime: the rows updated since
        it first). With a session or a JWT the changes come over the realtime socket, a
        heartbeat every `heartbeat` seconds; after a drop it reconnects and catches up from
        its watermark less `lag` seconds, reading only the rows changed since and finding
        the rows gone. With an API key it polls every `poll` seconds (``status.polling``).
        It ends on ``break``, on cancellation and on ``close()``; a dropped table ends it
        with `NotFoundError`. See the live tables guide.

        >>> async for batch in people.where(col("age") > 30).changes():  # doctest: +SKIP
        ...     print(batch.to_pylist())
        """
        feed = ChangeFeed(
            self._requester,
            self._location,
            self._spec,
            since=since,
            lag=lag,
            heartbeat=heartbeat,
            poll=poll,
        )
        return AsyncChanges(feed)

    async def live(
        self,
        *,
        reconcile: float | None = 60.0,
        lag: float = DEFAULT_LAG,
        heartbeat: float = DEFAULT_HEARTBEAT,
        poll: float = DEFAULT_POLL,
    ) -> AsyncLiveTable:
        """This query's rows, kept current as they change: a live table whose `frame`,
        `to_arrow`, `to_polars` and ``len()`` give the rows now (``$id`` and the query's
        columns, as `to_pandas` gives them). It subscribes, reads a snapshot and then applies
        the changes of `changes` (the same `lag`, `heartbeat` and `poll`), catching up after
        a drop; every `reconcile` seconds (None: never) it also catches up, since a bulk
        change beyond 100 rows sends no events. Close it (``close()`` or ``async with``) to
        stop. See the live tables guide.

        >>> adults = await people.where(col("age") >= 18).live()         # doctest: +SKIP
        >>> adults.frame                                                  # doctest: +SKIP
        """
        feed = ChangeFeed(
            self._requester,
            self._location,
            self._spec,
            since="snapshot",
            lag=lag,
            heartbeat=heartbeat,
            poll=poll,
            reconcile=reconcile,
        )
        return await started_live_table(feed)

    async def to_polars(
        self, lazy: bool = False, *, system: System = DEFAULT_SYSTEM
    ) -> pl.DataFrame | pl.LazyFrame:
        """The rows as a polars DataFrame, or with ``lazy=True`` a LazyFrame whose columns,
        filters and row limits reach the service (see `frameport.explain_scans`); the lazy
        scan reads through frameport's loop thread, so it comes from the synchronous face
        (`TableQuery.to_polars`). `system` as for `to_pandas`. Needs the ``polars`` extra.

        >>> people.to_polars(lazy=True).filter(pl.col("age") > 30).collect()  # doctest: +SKIP
        """
        from .polars import to_polars

        spec = self._spec.showing(system)
        return await to_polars(self._requester, self._location, spec, lazy=lazy)

    async def to_dask(
        self,
        partitions: int | None = None,
        *,
        credentials: CredentialChoice = "auto",
        dtype_backend: DtypeBackend = None,
        page_size: int | None = None,
        system: System = DEFAULT_SYSTEM,
    ) -> dd.DataFrame:
        """A dask DataFrame of the matching rows: `partitions` ranges of ``$sequence``, each
        read by a dask worker with its own client, with the columns and dtypes of `to_pandas`
        (`system` as there). Workers
        get a reference to the credentials where one exists (`credentials`: "auto", "env",
        "saved" or "embedded"; see the scale-out guide). Needs the ``dask`` extra.

        >>> ddf = table.query("age > 30").to_dask(partitions=8)         # doctest: +SKIP
        >>> ddf.groupby("city").age.mean().compute()                     # doctest: +SKIP
        """
        from .engines.dask import to_dask

        return await to_dask(
            self._requester,
            self._location,
            self._spec.showing(system),
            partitions,
            credentials=credentials,
            dtype_backend=dtype_backend,
            page_size=page_size,
        )

    async def count(self) -> int:
        """The number of matching rows: the service's count when it is exact, else counted
        page by page over the rows' IDs."""
        return await (await self._read(None)).count()

    async def explain(self, page_size: int | None = None, parallel: Parallel = AUTO) -> str:
        """What a read sends and what the client does with the answers, and whether it runs
        in concurrent ranges (and if not, why).

        >>> print(table.query("age > 30").explain())                   # doctest: +SKIP
        """
        return (await self._read(page_size, parallel)).explain()

    async def preview_html(self, rows: int = PREVIEW_ROWS) -> str:
        """HTML of the schema and the first `rows` rows, from one small request (what a
        notebook shows for a `Table` or `TableQuery`)."""
        read = await self._read(None)
        total, batch = await read.first_page(rows)
        total_text = await rows_text(read, total)
        frame = to_pandas(batch)
        description = " · ".join(self._spec.describe(self._location))
        return _html(description, total_text, batch.schema, frame)

    # -- changes -------------------------------------------------------------------------------

    async def update(
        self, set: dict[str, Any], *, dry_run: bool = False, progress: bool | None = None
    ) -> ChangeReport:
        """Change the rows this query selects: each column of `set` to its value, or by its
        operator (``fp.increment(1)``, ``fp.append("x")``, ``fp.now()``, ...; the service
        applies it to each row's own value). One bulk request when the service can apply
        the filter whole, else the rows' IDs are read first and changed 100 at a time. A
        column the table does not have raises `FilterError`, listing its columns. The
        report's `changed` counts only the rows whose values changed. `dry_run` counts the
        rows and changes nothing; `progress` shows a bar of the rows, as `load` does. The
        service sends realtime events for the first 100 rows of a bulk change only.

        >>> people.where(col("city") == "Oslo").update(set={"visits": fp.increment(1)})
        ... # doctest: +SKIP
        """
        read = await self._read(None)
        return await change_rows(read, "update", set, dry_run=dry_run, progress=progress)

    async def delete(self, *, dry_run: bool = False, progress: bool | None = None) -> ChangeReport:
        """Delete the rows this query selects (as `update` finds them); `dry_run` counts them
        and deletes nothing; `progress` as for `update`.

        >>> people.where(col("age") < 0).delete().changed              # doctest: +SKIP
        3
        """
        read = await self._read(None)
        return await change_rows(read, "delete", None, dry_run=dry_run, progress=progress)

    # -- internals -----------------------------------------------------------------------------

    async def _read(
        self,
        page_size: int | None,
        parallel: Parallel = AUTO,
        *,
        reading: bool = False,
        system: System = DEFAULT_SYSTEM,
    ) -> TableRead:
        """The read of this query showing the ``$`` fields `system` names (`reading`: its
        pages are read next)."""
        return await TableRead.make(
            self._requester,
            self._location,
            self._spec.showing(system),
            page_size=page_size,
            parallel=parallel,
            reading=reading,
        )


class AsyncTable(AsyncTableQuery):
    """One table (or legacy collection) of a database: a query for all its rows, plus writes.

    >>> people = client.table("crm", "people")                      # doctest: +SKIP
    >>> await people.insert(df)                                       # doctest: +SKIP
    """

    def __init__(
        self,
        requester: Requester,
        database_id: str,
        table_id: str,
        *,
        legacy: bool = False,
        page_size: int | None = None,
    ) -> None:
        if page_size is not None:
            check_page_size(page_size)
        super().__init__(
            requester, TableLocation(database_id, table_id, legacy), QuerySpec(page_size=page_size)
        )

    def __repr__(self) -> str:
        kind = ", legacy=True" if self._location.legacy else ""
        return (
            f"{type(self).__name__}({self._location.database_id!r}, "
            f"{self._location.table_id!r}{kind})"
        )

    @property
    def id(self) -> str:
        """The table's ID."""
        return self._location.table_id

    @property
    def database_id(self) -> str:
        """The ID of the table's database."""
        return self._location.database_id

    async def columns(self, *, details: bool = False) -> pd.DataFrame:
        """The table's columns, one row each: ``key``, ``type`` (as `add_column` names it),
        ``dtype`` (the pandas dtype it reads as), ``required``, ``array``, ``size``; with
        `details` also ``elements``, ``status``, ``error``, ``$createdAt``, ``$updatedAt``.

        >>> people.columns()[["key", "type", "dtype"]].to_dict("records")[0]
        {'key': 'name', 'type': 'string', 'dtype': 'str'}
        """
        return await column_frame(self._requester, self._location, details=details)

    async def add_column(
        self,
        key: str,
        type: str,
        *,
        elements: Sequence[str] | None = None,
        required: bool = False,
        default: object = None,
        minimum: float | None = None,
        maximum: float | None = None,
        progress: bool | None = None,
    ) -> None:
        """Add the column `key` of the service's type `type` and return once rows can use
        it: ``"string"`` (255 characters) or ``"string(1000)"``, ``"varchar(100)"``,
        ``"text"``, ``"mediumtext"``, ``"longtext"``, ``"integer"``, ``"bigint"``,
        ``"float"``, ``"boolean"``, ``"datetime"``, ``"email"``, ``"ip"``, ``"url"``,
        ``"enum"`` (with its `elements`), ``"point"``, ``"line"``, ``"polygon"``; ``[]``
        after a type makes an array (``"string[]"``). `minimum` and `maximum` bound an
        ``"integer"`` or ``"float"`` column (the service refuses values outside them). A bar
        shows the wait when it is long.

        >>> people.add_column("email", "email")                        # doctest: +SKIP
        >>> people.add_column("level", "enum", elements=["low", "high"], default="low")
        ... # doctest: +SKIP
        >>> people.add_column("age", "integer", minimum=0, maximum=150)  # doctest: +SKIP
        """
        column = column_of_type(key, type, elements=elements)
        await add_column(
            self._requester,
            self._location,
            column,
            required=required,
            default=default,
            minimum=minimum,
            maximum=maximum,
            progress=progress,
        )

    async def drop(self) -> None:
        """Delete the table and its rows."""
        await drop_table(self._requester, self._location)

    async def load(
        self,
        source: object,
        *,
        on_conflict: OnConflict = DEFAULT_ON_CONFLICT,
        id_from: str | Sequence[str] | None = None,
        id_hash: str | Sequence[str] | None = None,
        atomic: bool = False,
        resume: bool = False,
        dry_run: bool = False,
        ordered: bool = False,
        batch_size: int = MAX_ROWS_PER_REQUEST,
        concurrency: int | Auto = AUTO,
        progress: bool | None = None,
        null_values: Sequence[str] | None = None,
    ) -> WriteReport:
        """Write the rows of `source` into the table and report what happened.

        `source`: a pandas or polars frame (eager or lazy), a pyarrow Table or
        RecordBatchReader, anything with ``__arrow_c_stream__`` (a DuckDB relation), a frame
        narwhals knows, or the path or URL (any fsspec URL) of a Parquet, CSV or NDJSON file;
        read as a stream, in bounded memory.

        * Every row is checked against the table's columns first; rows breaking a rule are
          not sent and come back in ``report.rejected`` (column, rule, message). A row the
          service still refuses is split off its batch, and the others are written.
        * `id_from`: the column whose values are the IDs; `id_hash`: the key columns (a
          list, or one name) whose values are hashed into the IDs. Either makes a rerun meet
          its rows instead of duplicating them. Without them, the source's ``$id`` column,
          else new IDs: then ``report.rerun_safe`` is False, the summary says a rerun writes
          the rows again, and the load warns (`FrameportWarning`). A list given to
          `id_from` is the spelling of 0.1.0 of `id_hash`: it still hashes, with a
          `FutureWarning`.
        * `on_conflict`: for an ID that exists, ``"skip"`` (the default: a rerun adds only
          what is missing and changes nothing else), ``"replace"`` (upsert: the row becomes
          the source's) or ``"fail"`` (`ConflictError`).
        * `atomic`: all rows in one transaction, or none; a load that cannot fit one is
          refused before anything is written (`LoadError`, with the numbers), and rejected
          rows raise `RowsRejectedError`.
        * `resume`: keep a checkpoint, and continue from it when the same load runs again
          after a crash; no row is written twice and none is missed.
        * `dry_run`: check and report, write nothing. `ordered`: one batch at a time, so
          ``$sequence`` follows the source's order (batches in parallel interleave).
        * `batch_size`: rows per bulk request (the service's limit, 100, unless a plan
          raises it); `concurrency`: requests at once, ``"auto"`` (adaptive) or a number.
        * `null_values`: the fields of a CSV file read as null, e.g. ``["", "NA", "n/a"]``
          (``""`` is the empty field); by default only the empty field, so text such as
          ``NA`` stays text. ``report.null_values`` says which were used.

        >>> report = people.load("people.parquet", id_hash=["email"])  # doctest: +SKIP
        >>> report.written, report.rejected[["row", "column", "rule"]]
        ... # doctest: +SKIP
        """
        options = LoadOptions(
            on_conflict=on_conflict,
            id_from=id_from,
            id_hash=id_hash,
            atomic=atomic,
            resume=resume,
            dry_run=dry_run,
            ordered=ordered,
            batch_size=batch_size,
            concurrency=concurrency,
            progress=progress,
            null_values=null_values,
        )
        return (await load_rows(self._requester, self._location, source, options)).report

    async def insert(
        self, frame: object, *, concurrency: int | Auto = AUTO, progress: bool | None = None
    ) -> list[str]:
        """Create a row for each row of `frame` (any source `load` takes); return their IDs
        in the source's order.

        IDs come from the frame's ``$id`` column or are made on the client, so a retried
        request never duplicates rows; an ID that already exists raises `ConflictError`.
        A row that breaks a column's rule raises `RowsRejectedError` before its chunk of
        10,000 rows is sent (a smaller frame: before anything is written). Needs an API
        key (the service refuses bulk creates from signed-in users).

        >>> ids = await people.insert(df)                               # doctest: +SKIP
        """
        return await self._write_all(frame, "fail", concurrency, progress)

    async def upsert(
        self, frame: object, *, concurrency: int | Auto = AUTO, progress: bool | None = None
    ) -> list[str]:
        """Create or replace a row for each row of `frame` (matched by its ``$id`` column;
        rows without one get a new ID); return the IDs in the frame's order. `concurrency`:
        requests at once, as `load` takes it."""
        return await self._write_all(frame, "replace", concurrency, progress)

    async def _write_all(
        self, frame: object, on_conflict: OnConflict, concurrency: int | Auto, progress: bool | None
    ) -> list[str]:
        options = LoadOptions(
            on_conflict=on_conflict, concurrency=concurrency, progress=progress, keep_ids=True
        )
        result = await load_rows(self._requester, self._location, frame, options)
        if not result.report.ok:
            raise rows_rejected(result.report)
        return [str(row_id) for row_id in result.ids or ()]


def _html(title: str, total_text: str, schema: pa.Schema, frame: pd.DataFrame) -> str:
    dtypes = to_pandas(schema.empty_table()).dtypes
    rows = "".join(
        f"<tr><td><code>{html.escape(item.name)}</code></td><td>{html.escape(str(item.type))}"
        f"</td><td>{html.escape(str(dtypes[item.name]))}</td></tr>"
        for item in schema
    )
    return (
        f"<div><p><b>{html.escape(title)}</b> · {html.escape(total_text)}</p>"
        f"<details><summary>{len(schema)} columns</summary><table>"
        f"<tr><th>column</th><th>Arrow</th><th>pandas</th></tr>{rows}</table></details>"
        f"{frame.to_html(index=False, max_rows=PREVIEW_ROWS * 2)}</div>"
    )


# ---------------------------------------------------------------------------------------------
# Synchronous faces


class TableQuery(SyncFacade[AsyncTableQuery], wraps=AsyncTableQuery):
    """A lazy, immutable query on one table; the synchronous face of `AsyncTableQuery`.

    >>> adults = people.query("age >= 18").sort("age")
    >>> adults.to_pandas()["name"].tolist()
    ['Chiara', 'Ada', 'Bjørn', 'Eli']
    """

    location = forward_property("location")

    where = delegate(AsyncTableQuery.where, lambda: TableQuery)
    query = delegate(AsyncTableQuery.query, lambda: TableQuery)
    select = delegate(AsyncTableQuery.select, lambda: TableQuery)
    sort = delegate(AsyncTableQuery.sort, lambda: TableQuery)
    head = delegate(AsyncTableQuery.head, lambda: TableQuery)
    schema = delegate(AsyncTableQuery.schema)
    to_arrow = delegate(AsyncTableQuery.to_arrow)
    to_pandas = delegate(AsyncTableQuery.to_pandas)
    iter_batches = delegate(AsyncTableQuery.iter_batches)
    to_parquet = delegate(AsyncTableQuery.to_parquet)
    sync = delegate(AsyncTableQuery.sync)
    to_dask = delegate(AsyncTableQuery.to_dask)
    count = delegate(AsyncTableQuery.count)
    explain = delegate(AsyncTableQuery.explain)
    preview_html = delegate(AsyncTableQuery.preview_html)
    _repr_html_ = delegate(AsyncTableQuery.preview_html)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The rows as an Arrow C stream (PyCapsule), fetched page by page as the consumer
        reads: ``pa.table(q)``, ``pl.DataFrame(q)``, ``duckdb.sql("... from q")``."""
        from ._stream import record_batch_reader

        query = self._async
        reader = record_batch_reader(query._requester, query.location, query._spec)
        return reader.__arrow_c_stream__(requested_schema)

    to_polars = delegate(AsyncTableQuery.to_polars)
    changes = delegate(AsyncTableQuery.changes, Changes)
    live = delegate(AsyncTableQuery.live, LiveTable)
    update = delegate(AsyncTableQuery.update)
    delete = delegate(AsyncTableQuery.delete)


class Table(TableQuery, wraps=AsyncTable):
    """One table (or legacy collection): a query for all its rows, plus writes; the
    synchronous face of `AsyncTable`.

    >>> people = client.table("crm", "people")                        # doctest: +SKIP
    >>> people.insert(df); people.to_pandas()                           # doctest: +SKIP
    """

    _async: AsyncTable

    id = forward_property("id")
    database_id = forward_property("database_id")
    columns = delegate(AsyncTable.columns)
    add_column = delegate(AsyncTable.add_column)
    drop = delegate(AsyncTable.drop)
    load = delegate(AsyncTable.load)
    insert = delegate(AsyncTable.insert)
    upsert = delegate(AsyncTable.upsert)


__all__ = ["AsyncTable", "AsyncTableQuery", "Table", "TableLocation", "TableQuery"]
