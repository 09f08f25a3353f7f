"""The Python data source named ``frameport``: `FrameportDataSource` reads without filter
pushdown, `FilteringDataSource` with it (Spark refuses a source whose reader defines
``pushFilters`` unless ``spark.sql.python.filterPushdown.enabled`` is true, so the session's
setting picks the class to register). Spark creates the source in a Python worker with the
options of each read; `schema` checks them and reads the table's columns there, before any
task runs.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from ...._core import run_sync
from ._options import SOURCE_NAME, source_options
from ._reader import FilteringTableReader, TableReader, table_schema
from ._stream import STREAM_OPTIONS, TableStreamReader
from ._writer import WRITE_OPTIONS, table_writer

PUSHDOWN_SETTING = "spark.sql.python.filterPushdown.enabled"


class FrameportDataSource(DataSource):
    """``spark.read.format("frameport")``: a table of the service, read in partitions."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        options = source_options(self.options, STREAM_OPTIONS)  # a batch reader refuses them
        return run_sync(table_schema(options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return TableReader(source_options(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return table_writer(source_options(self.options, WRITE_OPTIONS), schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TableStreamReader(source_options(self.options, STREAM_OPTIONS), schema)


class FilteringDataSource(FrameportDataSource):
    """The ``frameport`` source, taking the filters Spark pushes down."""

    def reader(self, schema: StructType) -> DataSourceReader:
        return FilteringTableReader(source_options(self.options), schema)
