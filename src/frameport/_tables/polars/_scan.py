"""Table queries as polars frames: eager (`to_polars`) or lazy (`scan`, a polars IO source).

A lazy scan receives from polars the columns, predicate and row limit the lazy query needs,
and pushes what it can to the service:

* the columns → the query's `select` (plus the columns the predicate reads);
* the predicate → the parts that translate (`split_predicate`) become a `where`; polars then
  applies the whole predicate to the rows that come back, so results are exact;
* a row limit → `head`, when there is no predicate (with one, the scan stops once it has
  that many matching rows).

`explain_scans(frame)` shows, for every frameport scan in a lazy query, what was pushed and
what was not: the lazy query runs once with its scans sending nothing, recording instead.

>>> lf = fp.scan_table(client, "crm", "people")                       # doctest: +SKIP
>>> lf.filter(pl.col("age") > 30).select("name").collect()            # doctest: +SKIP
>>> print(fp.explain_scans(lf.filter(pl.col("age") > 30)))            # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from ..._core._sync import iterate_sync, on_loop_thread, run_sync
from .._location import TableLocation
from ..read import QuerySpec, TableRead, rechunk

if TYPE_CHECKING:
    import polars as pl

    from ..._core import Requester
    from ._predicate import Pushdown


async def to_polars(
    requester: Requester, location: TableLocation, spec: QuerySpec, *, lazy: bool = False
) -> pl.DataFrame | pl.LazyFrame:
    """The rows of `spec` on the table at `location` as a polars DataFrame, or a LazyFrame
    that reads them on `collect`."""
    import polars as pl

    if lazy:
        if not on_loop_thread():
            raise RuntimeError(
                "A lazy polars scan reads through frameport's own loop thread: make it with "
                "the synchronous Client (client.table(...).to_polars(lazy=True) or "
                "fp.scan_table), or read eagerly with await query.to_polars()."
            )
        read = await TableRead.make(requester, location, spec)
        return scan(_Scanned(requester, location, spec), await read.schema())
    read = await TableRead.make(requester, location, spec, reading=True)
    batches, schema = await read.collect(progress=None)
    frame = pl.from_arrow(pa.Table.from_batches(batches, schema=schema))
    assert isinstance(frame, pl.DataFrame)
    return frame


@dataclass(frozen=True)
class _Scanned:
    """What a scan reads: a query on a table, and who asks."""

    requester: Requester
    location: TableLocation
    spec: QuerySpec

    async def read(self, *, reading: bool = False) -> TableRead:
        return await TableRead.make(self.requester, self.location, self.spec, reading=reading)


def scan(scanned: _Scanned, arrow_schema: pa.Schema) -> pl.LazyFrame:
    """A polars LazyFrame over `scanned` (whose result schema is `arrow_schema`), with
    columns, filters and row limits pushed down."""
    from polars.io.plugins import register_io_source

    source = _ScanSource(scanned, arrow_schema)
    return register_io_source(
        io_source=source,
        schema=source.polars_schema(),
        explain_name=f"frameport {scanned.location}",
        explain_detail="columns, filters and row limits pushed to the service",
    )


class _ScanSource:
    """The IO source polars calls with the columns, predicate and row limit it needs."""

    def __init__(self, scanned: _Scanned, schema: pa.Schema) -> None:
        self._scanned = scanned
        self._schema = schema

    def polars_schema(self) -> pl.Schema:
        import polars as pl

        frame = pl.from_arrow(self._schema.empty_table())
        assert isinstance(frame, pl.DataFrame)
        return frame.schema

    def __call__(
        self,
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        scanned, pushdown = self._pushed(with_columns, predicate, n_rows)
        recorder = _recording()
        if recorder is not None:
            recorder.append(self._describe(scanned, pushdown, with_columns, predicate, n_rows))
            return
        yield from self._frames(scanned, with_columns, predicate, n_rows, batch_size)

    def _pushed(
        self, with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None
    ) -> tuple[_Scanned, Pushdown]:
        from ._predicate import Pushdown, split_predicate

        spec = self._scanned.spec
        pushdown = Pushdown(None, ())
        if predicate is not None:
            pushdown = split_predicate(predicate, self._schema)
            if spec.head is not None and pushdown.pushed is not None:
                # a filter after head() would change which rows head() keeps
                pushdown = Pushdown(None, (str(predicate),))
            if pushdown.pushed is not None:
                spec = spec.where(pushdown.pushed)
        if with_columns is not None:
            needed = [*with_columns, *([] if predicate is None else predicate.meta.root_names())]
            wanted = [name for name in dict.fromkeys(needed) if not name.startswith("$")]
            spec = spec.select(wanted or ["$id"])
        if predicate is None and n_rows is not None:
            spec = spec.first(n_rows)
        return _Scanned(self._scanned.requester, self._scanned.location, spec), pushdown

    def _frames(
        self,
        scanned: _Scanned,
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        import polars as pl

        remaining = n_rows
        if remaining == 0:
            return
        for batch in iterate_sync(_batches(scanned, batch_size)):
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None:
                frame = frame.select(with_columns)
            if remaining is not None:
                frame = frame.head(remaining)
                remaining -= frame.height
            yield frame
            if remaining == 0:
                return

    def _describe(
        self,
        scanned: _Scanned,
        pushdown: Pushdown,
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
    ) -> str:
        lines = [f"Scan of {scanned.location}:"]
        columns = "all" if with_columns is None else ", ".join(with_columns) or "none"
        lines.append(f"  columns polars needs: {columns}")
        if predicate is not None:
            pushed = "nothing" if pushdown.pushed is None else repr(pushdown.pushed)
            lines.append(f"  filter pushed to the service: {pushed}")
            for part in pushdown.local:
                lines.append(f"  filter applied by polars only: {part}")
            lines.append("  polars applies the whole predicate to the rows that come back")
        if n_rows is not None:
            where = "service (head)" if predicate is None else "scan, after the filter"
            lines.append(f"  row limit {n_rows}: applied by the {where}")
        explained = run_sync(scanned.read()).explain()
        lines.extend(f"  | {line}" for line in explained.splitlines())
        return "\n".join(lines)


async def _batches(scanned: _Scanned, rows: int | None) -> AsyncGenerator[pa.RecordBatch]:
    """The scanned rows, re-chunked to `rows` rows a batch when polars asks for a size."""
    read = await scanned.read(reading=True)
    with read.bar(None) as bar:
        async with aclosing(read.pages(bar, collect=False)) as pages:
            async for batch in rechunk(pages, rows=rows):
                yield batch


_record_lock = threading.Lock()
_recorder: list[str] | None = None


def _recording() -> list[str] | None:
    return _recorder


def explain_scans(frame: pl.LazyFrame) -> str:
    """What each frameport scan in the lazy query `frame` sends to the service and what polars
    does itself. Runs the query once with the scans recording instead of reading (nothing is
    fetched but the tables' columns); a collect of another query at the same time would
    record too, so call it where nothing else is collecting."""
    global _recorder
    with _record_lock:
        _recorder = []
        try:
            frame.collect()
            reports = _recorder
        finally:
            _recorder = None
    return "\n".join(reports) if reports else "No frameport scan in this query."
