"""Streaming reads of a table: ``spark.readStream.format("frameport")``, the rows inserted or
updated since the last micro-batch, read as the batch reader reads (the same options, the
partition planner's ranges, Arrow batches on the executors).

* An offset is ``{"updatedAt": <service time>, "sequence": <$sequence>}``. A micro-batch
  from offset A to offset B holds the rows of the query with A's ``updatedAt`` <=
  ``$updatedAt`` < B's and ``$sequence`` <= B's: the incremental read of ``sync`` and
  ``changes()`` (`updated_since`), closed at both ends so that Spark reading a micro-batch
  again (after a failure) gets the same rows, unless they changed since: a row updated again
  comes in a later micro-batch, with its new values.
* A new offset is the service's time (its ``Date`` header, never this machine's clock) less
  ``lag`` seconds (5 by default, as ``sync``'s): writes the service had begun but not
  finished by then still land in a later micro-batch. Its ``sequence`` is the table's last
  ``$sequence`` then; the micro-batch's partitions are ranges of ``$sequence`` up to it.
* ``startingOffsets``: ``earliest`` (the default: every row first) or ``latest`` (only
  changes from the query's start on).
* Deletes are out of scope: a deleted row sends nothing. Find them with ``sync(...,
  deletes="scan")`` or ``changes()``, whose gone-row scan compares counts per range with
  the rows held, which a stream source does not hold.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from ...._core import run_sync
from ...._exceptions import FrameportError
from ...._expr import col
from ...changes import DEFAULT_LAG, minus_seconds, service_now, service_text
from ...read import SEQUENCE, TableRead, table_last_sequence
from ._options import SourceOptions
from ._reader import TableReader, query_spec

STREAM_OPTIONS = ("lag", "startingoffsets")
"""The options a streaming read takes besides the source's (Spark hands them over in lower
case: ``startingOffsets``)."""
EARLIEST = {"updatedAt": "1970-01-01T00:00:00.000+00:00", "sequence": 0}
UPDATED_AT = "$updatedAt"


class TableStreamReader(DataSourceStreamReader):
    """The micro-batches of a table query's inserts and updates (see the module docstring)."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self._options = options
        self._schema = schema
        self._lag = _lag(options.extra.get("lag"))
        self._starting = options.extra.get("startingoffsets", "earliest").strip().lower()
        if self._starting not in ("earliest", "latest"):
            raise ValueError(
                'The option startingOffsets takes "earliest" (every row first) or "latest" '
                f"(changes from now on); got {self._starting!r}."
            )

    def initialOffset(self) -> dict[str, object]:
        return dict(EARLIEST) if self._starting == "earliest" else run_sync(self._latest(None))

    def latestOffset(
        self, start: dict[str, object] | None = None, limit: object = None
    ) -> dict[str, object]:
        """Now less the lag; `start` when no row of the query changed since (so Spark runs
        no empty micro-batch)."""
        return run_sync(self._latest(start))

    def partitions(
        self, start: dict[str, object], end: dict[str, object]
    ) -> Sequence[InputPartition]:
        if _moment(end) <= _moment(start):
            return []
        return TableReader(self._window(start, end), self._schema).partitions()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return TableReader(self._options, self._schema).read(partition)

    def _window(self, start: dict[str, object], end: dict[str, object]) -> SourceOptions:
        """The source's options reading the rows changed from `start` to `end`."""
        window = (
            (col(UPDATED_AT) >= str(start["updatedAt"]))
            & (col(UPDATED_AT) < str(end["updatedAt"]))
            & (col(SEQUENCE) <= int(str(end["sequence"])))
        )
        query = self._options.query
        return replace(self._options, query=window if query is None else query & window)

    async def _latest(self, start: dict[str, object] | None) -> dict[str, object]:
        options = self._options
        connection = options.connect()
        try:
            now = await service_now(connection, options.location.rows_path)
            if now is None:
                raise FrameportError(
                    f"the service at {options.endpoint} sent no Date header, which a "
                    "streaming read takes its offsets from; read the table in batches instead"
                )
            last = await table_last_sequence(connection, options.location)
            until = minus_seconds(service_text(now), self._lag)
            offset: dict[str, object] = {"updatedAt": until, "sequence": last or 0}
            if start is None:
                return offset
            if _moment(offset) <= _moment(start):
                return start
            spec = query_spec(self._window(start, offset), ["$id"]).first(1)
            read = await TableRead.make(connection, options.location, spec)
            batches, _ = await read.collect(progress=False)
        finally:
            await connection.aclose()
        return offset if any(batch.num_rows for batch in batches) else start


def _moment(offset: dict[str, object]) -> datetime:
    return datetime.fromisoformat(str(offset["updatedAt"]))


def _lag(text: str | None) -> float:
    if text is None or not text.strip():
        return DEFAULT_LAG
    try:
        lag = float(text)
    except ValueError:
        lag = -1.0
    if not (math.isfinite(lag) and lag >= 0):
        raise ValueError(f"The option lag takes seconds >= 0, e.g. '5' (got {text!r}).")
    return lag
