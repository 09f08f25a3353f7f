"""Table queries as polars frames: eager, or lazy (`to_polars`; a polars IO source).

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
from typing import TYPE_CHECKING

import pyarrow as pa

from ..._core._sync import iterate_sync, on_loop_thread, run_sync
from .._location import TableLocation
from .._rechunk import rechunk
from ..read import QuerySpec, TableRead

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
        source = _ScanSource(requester, location, spec)
        return await source.lazy_frame()
    read = await TableRead.make(requester, location, spec, reading=True)
    batches, schema = await read.collect(progress=None)
    frame = pl.from_arrow(pa.Table.from_batches(batches, schema=schema))
    assert isinstance(frame, pl.DataFrame)
    return frame


class _ScanSource:
    """The IO source polars calls with the columns, predicate and row limit it needs, over
    the rows of `spec` on the table at `location`."""

    def __init__(self, requester: Requester, location: TableLocation, spec: QuerySpec) -> None:
        self._requester, self._location, self._spec = requester, location, spec
        self._schema = pa.schema([])

    async def lazy_frame(self) -> pl.LazyFrame:
        """A polars LazyFrame over the rows, with columns, filters and row limits pushed
        down."""
        import polars as pl
        from polars.io.plugins import register_io_source

        self._schema = await (await self._read(self._spec)).schema()
        empty = pl.from_arrow(self._schema.empty_table())
        assert isinstance(empty, pl.DataFrame)
        return register_io_source(
            io_source=self,
            schema=empty.schema,
            explain_name=f"frameport {self._location}",
            explain_detail="columns, filters and row limits pushed to the service",
        )

    async def _read(self, spec: QuerySpec, *, reading: bool = False) -> TableRead:
        return await TableRead.make(self._requester, self._location, spec, reading=reading)

    def __call__(
        self,
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        spec, pushdown = self._pushed(with_columns, predicate, n_rows)
        if _recorder is not None:
            _recorder.append(self._describe(spec, pushdown, with_columns, predicate, n_rows))
            return
        yield from self._frames(spec, with_columns, predicate, n_rows, batch_size)

    def _pushed(
        self, with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None
    ) -> tuple[QuerySpec, Pushdown]:
        from ._predicate import Pushdown, split_predicate

        spec = self._spec
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
        return spec, pushdown

    def _frames(
        self,
        spec: QuerySpec,
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        import polars as pl

        remaining = n_rows
        if remaining == 0:
            return
        for batch in iterate_sync(self._batches(spec, batch_size)):
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
        spec: QuerySpec,
        pushdown: Pushdown,
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
    ) -> str:
        lines = [f"Scan of {self._location}:"]
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
        explained = run_sync(self._read(spec)).explain()
        lines.extend(f"  | {line}" for line in explained.splitlines())
        return "\n".join(lines)

    async def _batches(self, spec: QuerySpec, rows: int | None) -> AsyncGenerator[pa.RecordBatch]:
        """The rows of `spec`, re-chunked to `rows` a batch when polars asks for a size."""
        read = await self._read(spec, reading=True)
        with read.bar(None) as bar:
            async with aclosing(read.pages(bar, collect=False)) as pages:
                async for batch in rechunk(pages, rows=rows):
                    yield batch


_record_lock = threading.Lock()
_recorder: list[str] | None = None


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
