"""The batch reader of the ``frameport`` source: its partitions are the partition planner's
ranges of the query (planned where Spark plans the read, on the driver's side, so a missing
table or a filter the service refuses raises before any task runs), each read on an executor
through the ordinary read (`read_arrow`) and handed to Spark as Arrow record batches.

Decisions:

* The columns read are the schema Spark hands the reader: the table's (or the ``columns``
  option's) by default, or a schema the user gives (``.schema("name string, age bigint")``),
  since Spark's Python sources learn nothing of the columns a query uses. A given schema
  names columns of the table with their ``to_arrow`` types in Spark.
* `FilteringTableReader` adds ``pushFilters``. Spark refuses a reader that defines it when
  ``spark.sql.python.filterPushdown.enabled`` is false, so `TableReader` has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from ...._core import run_sync
from ...._expr import Expr
from ...._schema import SYSTEM_SCHEMA
from ...read import QuerySpec, TableRead
from .._partition import PartitionSpec, PlannedPartitions, planned_partitions, read_arrow
from ._filters import pushed
from ._options import SourceOptions
from ._types import batch_schema, conformed_batches, spark_schema

BYTES_PER_PARTITION = 64 * 1024 * 1024
"""Estimated bytes (Arrow memory) per partition when the ``partitions`` option is not given."""
CALLER = "spark.read.format('frameport')"


class TableReader(DataSourceReader):
    """Reads the rows of a table query, one Spark partition per planned range."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self._options = options
        self._schema = schema
        self._pushed: list[Expr] = []

    def partitions(self) -> Sequence[InputPartition]:
        planned = run_sync(self._planned())
        return [InputPartition(spec) for spec in planned.specs]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        spec: PartitionSpec = partition.value
        table = read_arrow(spec, self._schema.fieldNames())
        yield from conformed_batches(table, batch_schema(self._schema))

    async def _planned(self) -> PlannedPartitions:
        options = self._options
        spec = query_spec(options, self._schema.fieldNames(), self._pushed)
        connection = options.connect()
        try:
            planned = await planned_partitions(
                connection,
                options.location,
                spec,
                caller=CALLER,
                parts=options.partitions,
                bytes=BYTES_PER_PARTITION,
                page_size=options.page_size,
            )
        finally:
            await connection.aclose()
        _check_types(self._schema, planned.schema)
        return planned


class FilteringTableReader(TableReader):
    """A `TableReader` that takes the filters the DSL can say from Spark."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        for spark_filter in filters:
            expr = pushed(spark_filter, self._schema)
            if expr is None:
                yield spark_filter
            else:
                self._pushed.append(expr)


def query_spec(
    options: SourceOptions, names: Sequence[str], filters: Sequence[Expr] = ()
) -> QuerySpec:
    """The query reading the columns `names` (``$`` fields among them) of the rows the
    ``query`` option and `filters` keep."""
    spec = QuerySpec(page_size=options.page_size)
    for condition in [options.query, *filters]:
        if condition is not None:
            spec = spec.where(condition)
    system = [name for name in names if name in SYSTEM_SCHEMA.names]
    columns = [name for name in names if name not in SYSTEM_SCHEMA.names]
    return spec.showing(system).select(columns or ["$id"])


async def table_schema(options: SourceOptions) -> StructType:
    """The Spark schema of what the options read: ``to_arrow``'s columns (the ``columns``
    option's, if given), after ``$id``."""
    spec = QuerySpec(page_size=options.page_size)
    if options.query is not None:
        spec = spec.where(options.query)
    if options.columns is not None:
        spec = spec.select(options.columns)
    connection = options.connect()
    try:
        read = await TableRead.make(connection, options.location, spec)
        schema = read.plan.output
        if schema is None:  # a signed-in user without the columns: inferred from rows
            schema = (
                await planned_partitions(connection, options.location, spec, caller=CALLER)
            ).schema
    finally:
        await connection.aclose()
    return spark_schema(schema)


def _check_types(wanted: StructType, schema: pa.Schema) -> None:
    """ValueError naming a column the given schema declares with another type than the
    table's."""
    table = spark_schema(schema)
    for field in wanted.fields:
        actual = table[field.name].dataType
        if field.dataType != actual:
            raise ValueError(
                f"The schema given to the frameport source declares {field.name!r} as "
                f"{field.dataType.simpleString()}, but the table's is "
                f"{actual.simpleString()}: declare it as {actual.simpleString()}."
            )
