"""Spark writes into a table: ``df.write.format("frameport").mode("append" | "overwrite")``.

* Each task loads its partition's Arrow batches through the load's write path (one load,
  `load_on_worker`, as Ray's sink does) and sends its `WriteReport` back in its commit
  message; the driver's `commit` adds them up and logs the summary (``frameport.spark``,
  also printed to the driver's stderr; it names the table, never a credential).
* ``id_from`` (a column of IDs) or ``id_hash`` (key columns, comma-separated) make a rerun
  of a failed job meet the rows its tasks wrote instead of writing them twice; without
  them every run writes its rows anew, with new IDs.
* A failed job (`abort`) leaves in the table every row its tasks wrote before it failed:
  the finished tasks' and part of the failed ones'. The log says how many and how to go on.
* ``overwrite``: the rows replace the table's (``on_conflict`` is ``replace`` unless set).
  When the job starts the driver notes the table's last ``$sequence``; only after every
  task committed does it delete the rows that existed then and that the job did not write
  (their IDs are in the commit messages). A failed overwrite deletes nothing, so the table
  never ends up emptier than the job's rows; rows written by others while the job ran stay.
  A row the table's rules reject fails an overwrite's task (the job deletes nothing).
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ...._core import Requester, run_sync
from ...._exceptions import LoadError
from ...._expr import col
from ...._schema import ArrowArray
from ..._location import TableLocation
from ...read import SEQUENCE, QuerySpec, TableRead, column_models, table_last_sequence
from ...writes import (
    DEFAULT_ON_CONFLICT,
    LoadOptions,
    OnConflict,
    WriteReport,
    by_id,
    change_rows,
    selected_ids,
)
from .._loading import Connects, check_id_columns, combined_report, load_on_worker
from ._options import SourceOptions

log = logging.getLogger("frameport.spark")

WRITE_OPTIONS = ("id_from", "id_hash", "on_conflict")
"""The options a write takes besides the source's."""


def load_options(options: Mapping[str, str], overwrite: bool) -> LoadOptions:
    """The load's options from the write's: ``id_from``, ``id_hash`` (comma-separated)
    and ``on_conflict`` (``skip`` by default, ``replace`` for an overwrite)."""
    id_hash = options.get("id_hash")
    conflict = options.get("on_conflict")
    if overwrite and conflict == "skip":
        raise LoadError(
            'mode("overwrite") replaces the table\'s rows, and on_conflict="skip" would keep '
            "the old values of the rows it meets: drop the option (overwrite replaces them), "
            'or write with mode("append")'
        )
    on_conflict: OnConflict = DEFAULT_ON_CONFLICT if not overwrite else "replace"
    loaded = LoadOptions(
        on_conflict=conflict or on_conflict,  # type: ignore[arg-type]  # checked by check()
        id_from=options.get("id_from") or None,
        id_hash=[name.strip() for name in id_hash.split(",")] if id_hash else None,
        progress=False,
        keep_ids=overwrite,
    )
    loaded.check()
    return loaded


@dataclass
class TaskWritten(WriterCommitMessage):
    """What one task wrote: its load's report and, for an overwrite, the IDs it sent."""

    report: WriteReport
    ids: ArrowArray | None = None


def table_writer(options: SourceOptions, schema: StructType, overwrite: bool) -> TableWriter:
    """The writer of a DataFrame of `schema` into the table the source's `options` name."""
    loading = load_options(options.extra, overwrite)
    return TableWriter(options, options.location, loading, schema.fieldNames(), overwrite=overwrite)


class TableWriter(DataSourceArrowWriter):
    """Writes a DataFrame into a table (see the module docstring). Made on the driver,
    where it checks the table and the ID columns before any task runs."""

    def __init__(
        self,
        client: Connects,
        location: TableLocation,
        options: LoadOptions,
        columns: Sequence[str],
        *,
        overwrite: bool,
    ) -> None:
        """`client`: the source's options (picklable; their credentials travel with the
        tasks, as a read's do)."""
        check_id_columns(options, columns, "the DataFrame")
        self._client = client
        self._location = location
        self._options = options
        self._overwrite = overwrite
        self._last_sequence = run_sync(_start(client, location))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskWritten:  # type: ignore[override]
        """Runs in a task: loads the partition's batches as one stream."""
        batches = iter(iterator)
        first = next(batches, None)
        if first is None:
            return TaskWritten(WriteReport())
        reader = pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], batches))
        (result,) = load_on_worker(self._client, self._location, [reader], self._options)
        ids = None
        if self._overwrite and result.ids is not None:
            ids = pa.array([i for i in result.ids if i is not None], pa.string())
        return TaskWritten(result.report, ids)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """On the driver, once every task committed: the reports added up and logged; for
        an overwrite, the rows the job did not write deleted."""
        written = [m for m in messages if isinstance(m, TaskWritten)]
        report = combined_report(m.report for m in written)
        line = f"wrote {self._location}: {report.summary()}"
        if self._overwrite:
            kept = [m.ids for m in written if m.ids is not None]
            ids = pa.concat_arrays(kept) if kept else pa.array([], pa.string())
            last = self._last_sequence
            deleted = run_sync(_delete_unwritten(self._client, self._location, last, ids))
            line += f" · overwrite deleted {deleted:,} earlier rows"
        _tell(logging.INFO, line)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """On the driver, after a task failed: what the job left in the table."""
        finished = [m for m in messages if isinstance(m, TaskWritten)]
        report = combined_report(m.report for m in finished)
        failed = len(messages) - len(finished)
        again = (
            "run the job again: it meets the rows written already"
            if self._options.keys
            else "a rerun writes them again (give id_from or id_hash to meet them instead)"
        )
        deleted = " · the overwrite deleted nothing" if self._overwrite else ""
        _tell(
            logging.WARNING,
            f"the write into {self._location} failed: {len(finished)} tasks finished "
            f"({report.summary()}), {failed} did not and may have written part of their "
            f"rows, which stay in the table{deleted}; {again}",
        )


def _tell(level: int, line: str) -> None:
    log.log(level, line)
    print(f"frameport: {line}", file=sys.stderr)


async def _start(client: Connects, location: TableLocation) -> int:
    """The table's last ``$sequence`` (0 when it has no rows); a missing table raises
    `NotFoundError` here, before any task runs."""
    connection = client.connect()
    try:
        await column_models(connection, location)
        return await table_last_sequence(connection, location) or 0
    finally:
        await connection.aclose()


async def _delete_unwritten(
    client: Connects, location: TableLocation, last: int, written: ArrowArray
) -> int:
    """Delete the rows up to ``$sequence`` `last` whose ID is not in `written`; how many."""
    connection = client.connect()
    try:
        return await _delete_stale(connection, location, last, written)
    finally:
        await connection.aclose()


async def _delete_stale(
    requester: Requester, location: TableLocation, last: int, written: ArrowArray
) -> int:
    if last == 0:
        return 0
    earlier = QuerySpec().where(col(SEQUENCE) <= last)
    read = await TableRead.make(requester, location, earlier)
    ids = pa.array(await selected_ids(read), pa.string())
    stale = [str(i) for i in ids.filter(pc.invert(pc.is_in(ids, value_set=written))).to_pylist()]
    for queries in by_id(stale, read.plan.member):
        await change_rows(read.narrowed(*queries), "delete", None, dry_run=False)
    return len(stale)
