"""`sync`: a Delta Lake table kept equal to a table (or a filtered, projected view of it).

* The first run writes a full snapshot, streamed batch by batch into the Delta writer
  (memory bounded as in `to_parquet`).
* Later runs read only the rows with ``$updatedAt`` at or after the last watermark minus
  `lag` seconds and merge them by ``$id`` (update or insert). The watermark is the service's
  time (its ``Date`` header) when a run starts; the lag covers writes the service had begun
  but not finished then. The changed rows are held in memory for the merge.
* ``deletes="scan"`` also finds the rows that are gone and removes them: it compares the
  service's count of the view per range of ``$sequence`` with the Delta table's and reads the
  ``$id``s of the ranges that differ (`changes.gone_ids`); ``deletes="ignore"`` skips that.
* Each run is one Delta commit (merge, write, or an empty append when nothing changed) with
  the watermark and the run's figures in its metadata, so a reader sees a table before or
  after a run; a run that fails commits nothing, and the next one reads from the previous
  watermark again.
* A column added to (or removed from) the view rewrites the table with the new columns in
  that one commit; a column whose type changed raises `SchemaChangeError`.

>>> report = await sync_delta(requester, location, spec, "people_delta")   # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, write_deltalake

from ..._exceptions import FrameportError, ResumeError
from ..._schema import ArrowArray
from .._location import TableLocation
from .._system import ALL_SYSTEM
from ..changes import gone_ids, minus_seconds, service_now, service_text, updated_since
from ..read import QuerySpec, TableRead
from ._state import LastSync, changed_columns, commit_metadata, delta_type, last_sync

if TYPE_CHECKING:
    from ..._core import Requester

DeleteMode = Literal["scan", "ignore"]

DEFAULT_LAG = 5.0
"""Seconds before the last watermark a later run starts reading (writes in flight then)."""

_GONE = "__frameport_gone"


@dataclass(frozen=True)
class SyncReport:
    """One sync: rows `inserted`, `updated` and `deleted` in the Delta table, the Delta
    `version` it committed, `seconds` taken, `rows_read` from the service, `ids_read` by the
    deletes scan, whether it wrote
    the whole view (`full`: the first run, or the columns changed) and the `watermark` it
    recorded (the service's time when it started)."""

    inserted: int
    updated: int
    deleted: int
    version: int
    seconds: float
    rows_read: int
    ids_read: int
    full: bool
    watermark: str | None

    def summary(self) -> str:
        """The report as a line for people (what ``frameport sync`` prints)."""
        kind = "full snapshot" if self.full else "incremental"
        return (
            f"{kind}: {self.inserted:,} inserted, {self.updated:,} updated, "
            f"{self.deleted:,} deleted ({self.rows_read:,} rows and {self.ids_read:,} IDs read) "
            f"in {self.seconds:.1f} s; "
            f"Delta version {self.version}, watermark {self.watermark}"
        )


async def sync_delta(
    requester: Requester,
    location: TableLocation,
    spec: QuerySpec,
    target: str | Path,
    *,
    deletes: DeleteMode = "scan",
    lag: float = DEFAULT_LAG,
    page_size: int | None = None,
    progress: bool | None = None,
) -> SyncReport:
    """Bring the Delta table at `target` up to date with the view `spec` of the table at
    `location`; see the module docstring."""
    started = time.perf_counter()
    _check_options(spec, deletes, lag)
    # The merge matches by $id, finds changes by $updatedAt and new rows by $sequence: the
    # Delta table keeps every $ field, and the read stays in $sequence order.
    spec = replace(spec, order=(), system=ALL_SYSTEM)
    read = await TableRead.make(requester, location, spec, page_size=page_size)
    output = read.plan.output
    if output is None:
        raise FrameportError(
            "sync needs the table's column types, which this client may not read; "
            "use an API key with tables.read."
        )
    now = await service_now(requester, location.rows_path)
    view = json.dumps({"table": str(location), "requests": read.plan.requests})
    state = await asyncio.to_thread(last_sync, target)
    if state is not None and state.view != view:
        origin = (
            "synced from another view (table, filter or columns)"
            if state.view
            else ("not written by a sync")
        )
        raise ResumeError(
            f"the Delta table at {target} was {origin}; sync into a new target, or sync the "
            "view it was written from."
        )
    watermark = service_text(now) if now is not None else (state.watermark if state else None)
    if state is None or state.watermark is None or changed_columns(state.schema, output):
        return await _snapshot(read, output, target, state, view, watermark, started, progress)
    since = minus_seconds(state.watermark, lag)
    batches, _ = await updated_since(read, since).collect(progress)
    changed = pa.Table.from_batches(batches, schema=output)
    gone: ArrowArray = pa.array([], pa.string())
    ids_read = 0
    if deletes == "scan":
        gone, ids_read = await _gone_ids(read, state.table, changed)
    figures = await asyncio.to_thread(merge_rows, state, changed, gone, view, watermark)
    return merged(figures, started, changed.num_rows, ids_read, watermark)


def merged(
    figures: dict[str, int], started: float, rows_read: int, ids_read: int, watermark: str | None
) -> SyncReport:
    """The report of an incremental run that merged with `figures` (see `merge_rows`)."""
    return SyncReport(
        inserted=figures["inserted"],
        updated=figures["updated"],
        deleted=figures["deleted"],
        version=figures["version"],
        seconds=time.perf_counter() - started,
        rows_read=rows_read,
        ids_read=ids_read,
        full=False,
        watermark=watermark,
    )


def _check_options(spec: QuerySpec, deletes: str, lag: float) -> None:
    if deletes not in ("scan", "ignore"):
        raise ValueError(f'deletes must be "scan" or "ignore" (got {deletes!r})')
    if isinstance(lag, bool) or not isinstance(lag, int | float) or not lag >= 0:
        raise ValueError(f"lag must be a number of seconds >= 0 (got {lag!r})")
    if spec.head is not None:
        raise ValueError("sync keeps a whole view in step; drop head() from the query")


async def _snapshot(
    read: TableRead,
    output: pa.Schema,
    target: str | Path,
    state: LastSync | None,
    view: str,
    watermark: str | None,
    started: float,
    progress: bool | None,
) -> SyncReport:
    """Write the whole view as the table's new version (streamed), in one commit."""
    schema = pa.schema([field.with_type(delta_type(field.type)) for field in output])
    counted = [0]
    loop = asyncio.get_running_loop()
    previous = 0 if state is None else state.table.count()
    figures = {"full": True}
    with read.bar(progress) as bar:
        stream = read.pages(bar, collect=False)

        def batches() -> Iterator[pa.RecordBatch]:
            while True:
                batch = asyncio.run_coroutine_threadsafe(anext(stream, None), loop).result()
                if batch is None:
                    return
                counted[0] += batch.num_rows
                yield batch.cast(schema)

        async with aclosing(stream):
            reader = pa.RecordBatchReader.from_batches(schema, batches())
            metadata = commit_metadata(view, watermark, figures)
            await asyncio.to_thread(
                write_deltalake,
                str(target),
                reader,
                mode="overwrite",
                schema_mode=None if state is None else "overwrite",
                commit_properties=CommitProperties(custom_metadata=metadata),
            )
    version = await asyncio.to_thread(lambda: DeltaTable(str(target)).version())
    rows = counted[0]
    return SyncReport(
        inserted=rows if state is None else max(rows - previous, 0),
        updated=0 if state is None else min(rows, previous),
        deleted=0 if state is None else max(previous - rows, 0),
        version=version,
        seconds=time.perf_counter() - started,
        rows_read=rows,
        ids_read=0,
        full=True,
        watermark=watermark,
    )


async def _gone_ids(
    read: TableRead, table: DeltaTable, changed: pa.Table
) -> tuple[ArrowArray, int]:
    """The ``$id``s in the Delta table that the view no longer has, and how many ``$id``s
    were read to find them (see `changes.gone_ids`)."""
    synced = await asyncio.to_thread(lambda: table.to_pyarrow_table(columns=["$id", "$sequence"]))
    new = changed.select(["$id", "$sequence"])
    known = synced.column("$id").combine_chunks()
    new = new.filter(pc.invert(pc.is_in(new.column("$id"), value_set=known)))
    holding = pa.concat_tables([synced, new.cast(synced.schema)])
    return await gone_ids(read.ids_only(), holding)


def merge_rows(
    state: LastSync, changed: pa.Table, gone: ArrowArray, view: str, watermark: str | None
) -> dict[str, int]:
    """Merge the changed rows and remove the gone ones, in one commit; the figures. A row
    both changed and gone (deleted after the changed rows were read) is gone."""
    schema = state.schema
    changed = changed.filter(pc.invert(pc.is_in(changed.column("$id"), value_set=gone)))
    rows = (
        changed.select(schema.names)
        .cast(schema)
        .append_column(_GONE, pa.repeat(False, changed.num_rows).cast(pa.bool_()))
    )
    removals = pa.table(
        {field.name: pa.nulls(len(gone), field.type) for field in schema}
    ).set_column(schema.get_field_index("$id"), "$id", gone.cast(pa.string()))
    removals = removals.append_column(_GONE, pa.repeat(True, len(gone)).cast(pa.bool_()))
    source = pa.concat_tables([rows, removals])
    if source.num_rows == 0:
        figures = {"inserted": 0, "updated": 0, "deleted": 0}
        metadata = commit_metadata(view, watermark, figures)
        write_deltalake(
            state.table,
            schema.empty_table(),
            mode="append",
            commit_properties=CommitProperties(custom_metadata=metadata),
        )
        return {**figures, "version": DeltaTable(state.table.table_uri).version()}
    columns = {f"`{name}`": f"s.`{name}`" for name in schema.names}
    # The figures are known only after the merge; the commit records the rows it was given.
    given = {"changed_rows": changed.num_rows, "gone_rows": len(gone)}
    metadata = commit_metadata(view, watermark, given)
    result = (
        state.table.merge(
            source,
            predicate="t.`$id` = s.`$id`",
            source_alias="s",
            target_alias="t",
            commit_properties=CommitProperties(custom_metadata=metadata),
        )
        .when_matched_delete(predicate=f"s.`{_GONE}`")
        .when_matched_update(
            updates=columns, predicate=f"NOT s.`{_GONE}` AND s.`$updatedAt` <> t.`$updatedAt`"
        )
        .when_not_matched_insert(updates=columns, predicate=f"NOT s.`{_GONE}`")
        .execute()
    )
    return {
        "inserted": int(result["num_target_rows_inserted"]),
        "updated": int(result["num_target_rows_updated"]),
        "deleted": int(result["num_target_rows_deleted"]),
        "version": DeltaTable(state.table.table_uri).version(),
    }
