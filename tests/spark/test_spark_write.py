"""``df.write.format("frameport")``: each task loads its partition through the load's write
path, on the shared local Spark session (`conftest.py`).

A killed task is a real one: a source whose writer, on its first attempt, writes half of its
partition and then ends its Python worker (`os._exit`), so the job fails (a local session
runs each task once); the job run again with ``id_from`` meets the rows the killed attempt
wrote, and without it writes them twice (so the kill is real).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

import frameport as fp
from frameport import Client, Table
from frameport._demo import sample_people
from frameport._tables.engines.spark import FrameportDataSource
from tables_support import new_id

pytestmark = pytest.mark.xdist_group("spark")

Options = Callable[[Table], dict[str, str]]


def source_frame(rows: int) -> pd.DataFrame:
    frame = sample_people(rows, seed=8).drop(columns=["signup"])
    return frame.assign(key=[f"k{n}" for n in range(rows)])


def spark_frame(spark: SparkSession, frame: pd.DataFrame, partitions: int) -> DataFrame:
    return spark.createDataFrame(pa.Table.from_pandas(frame, preserve_index=False)).repartition(
        partitions
    )


def table_rows(table: Table) -> pd.DataFrame:
    return table.sort("key").to_pandas(progress=False).drop(columns=["$id"])


def assert_rows_equal(table: Table, frame: pd.DataFrame) -> None:
    back = table_rows(table)
    expected = frame.sort_values("key").reset_index(drop=True)[back.columns.tolist()]
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)


def save(df: DataFrame, options: dict[str, str], mode: str, source: str = "frameport") -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp.FrameportWarning)
        df.write.format(source).options(**options).mode(mode).save()


def dying_source(first_attempt: Path) -> type[FrameportDataSource]:
    """A ``frameport`` source named ``frameport_dying`` whose first write task writes half of
    its partition, then ends its process. Defined in a function, so that Spark's workers get
    the classes themselves (by value), not a module they cannot import."""

    class DyingWriter(DataSourceArrowWriter):
        def __init__(self, writer: DataSourceWriter) -> None:
            self.writer = cast(DataSourceArrowWriter, writer)

        def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:  # type: ignore[override]
            batches = list(iterator)
            try:
                first_attempt.touch(exist_ok=False)
            except FileExistsError:
                return self.writer.write(iter(batches))
            rows = pa.Table.from_batches(batches)
            self.writer.write(iter(rows.slice(0, rows.num_rows // 2).to_batches()))
            os._exit(1)

        def commit(self, messages: list[WriterCommitMessage | None]) -> None:
            self.writer.commit(messages)

        def abort(self, messages: list[WriterCommitMessage | None]) -> None:
            self.writer.abort(messages)

    class DyingSource(FrameportDataSource):
        @classmethod
        def name(cls) -> str:
            return "frameport_dying"

        def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
            return DyingWriter(super().writer(schema, overwrite))

    return DyingSource


def test_a_write_equals_its_source_and_a_rerun_adds_nothing(
    spark: SparkSession, key_client: Client, read_options: Options
) -> None:
    frame = source_frame(600)
    table = key_client.create_table(new_id("spark"), new_id("w"), schema=frame)
    df = spark_frame(spark, frame, 3)
    options = {**read_options(table), "id_from": "key"}
    save(df, options, "append")
    assert_rows_equal(table, frame)
    save(df, options, "append")
    assert table.count() == 600


@pytest.mark.parametrize("id_from", ["key", None])
def test_a_write_rerun_after_a_killed_task_neither_duplicates_nor_loses_a_row(
    spark: SparkSession,
    key_client: Client,
    read_options: Options,
    tmp_path: Path,
    id_from: str | None,
) -> None:
    frame = source_frame(400)
    table = key_client.create_table(new_id("spark"), new_id("w"), schema=frame)
    first_attempt = tmp_path / "first-attempt"
    spark.dataSource.register(dying_source(first_attempt))
    options = read_options(table) | ({"id_from": id_from} if id_from else {})
    df = spark_frame(spark, frame, 2)
    with pytest.raises(Exception, match=r"(?i)python worker|crash|exited"):
        save(df, options, "append", "frameport_dying")
    assert first_attempt.exists()
    assert 100 <= table.count() < 400  # half a partition at least, and not every row
    save(df, options, "append", "frameport_dying")
    back = table.to_pandas(progress=False)
    assert set(back["key"]) == set(frame["key"])
    if id_from:
        assert len(back) == 400
    else:
        assert len(back) > 400  # the rows the killed job wrote, twice


def test_an_overwrite_replaces_the_rows_and_deletes_the_others_after_the_job(
    spark: SparkSession, key_client: Client, read_options: Options, tmp_path: Path
) -> None:
    old = source_frame(300).assign(age=-1)
    table = key_client.create_table(new_id("spark"), new_id("w"), schema=old)
    table.load(old, id_from="key", progress=False)
    new = source_frame(400).iloc[100:]  # keys 100..399: 200 met, 100 new, 100 to delete
    options = {**read_options(table), "id_from": "key"}
    spark.dataSource.register(dying_source(tmp_path / "first-attempt"))
    with pytest.raises(Exception, match=r"(?i)python worker|crash|exited"):
        save(spark_frame(spark, new, 2), options, "overwrite", "frameport_dying")
    assert table.where(fp.col("key").isin(["k0", "k99"])).count() == 2  # nothing deleted
    save(spark_frame(spark, new, 2), options, "overwrite")
    assert_rows_equal(table, new)


def test_bad_options_are_refused_before_any_task(
    spark: SparkSession, key_client: Client, read_options: Options
) -> None:
    frame = source_frame(10)
    table = key_client.create_table(new_id("spark"), new_id("w"), schema=frame)
    df = spark_frame(spark, frame, 1)
    with pytest.raises(Exception, match="no column 'serial'"):
        save(df, {**read_options(table), "id_from": "serial"}, "append")
    with pytest.raises(Exception, match="on_conflict"):
        save(df, {**read_options(table), "on_conflict": "skip"}, "overwrite")
    with pytest.raises(Exception, match=r"NotFound|not found|could not be found"):
        save(df, {**read_options(table), "table": "missing"}, "append")
    assert table.count() == 0
