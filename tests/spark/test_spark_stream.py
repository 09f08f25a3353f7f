"""``spark.readStream.format("frameport")``: a table's inserts and updates in micro-batches,
on the shared local Spark session (`conftest.py`). The service's clock moves the offsets on
(`LocalService.advance_clock`): a micro-batch ends `lag` seconds before the service's time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

import frameport as fp
from frameport import Client, Table
from frameport.local import LocalService
from tables_support import new_id

pytestmark = pytest.mark.xdist_group("spark")

Options = Callable[[Table], dict[str, str]]
MicroBatches = list[tuple[int, list[tuple[str, int]]]]


def test_inserts_and_updates_arrive_across_two_micro_batches(
    spark: SparkSession,
    service: LocalService,
    key_client: Client,
    read_options: Options,
    tmp_path: Path,
) -> None:
    frame = pd.DataFrame({"key": [f"k{n}" for n in range(5)], "n": range(5)})
    table = key_client.create_table(new_id("spark"), new_id("s"), schema=frame)
    table.load(frame, id_from="key", progress=False)
    service.advance_clock(2)  # the rows are older than the service's time, whole seconds
    seen: MicroBatches = []

    def keep(df: DataFrame, batch: int) -> None:
        seen.append((batch, sorted((row["key"], row["n"]) for row in df.collect())))

    stream = spark.readStream.format("frameport").options(**read_options(table), lag="0")
    query = (
        stream.load()
        .writeStream.foreachBatch(keep)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        query.processAllAvailable()
        assert seen == [(0, [(f"k{n}", n) for n in range(5)])]
        table.where(fp.col("key") == "k1").update(set={"n": 100})
        table.load(pd.DataFrame({"key": ["k9"], "n": [9]}), id_from="key", progress=False)
        service.advance_clock(2)
        query.processAllAvailable()
    finally:
        query.stop()
    assert seen[1:] == [(1, [("k1", 100), ("k9", 9)])]


def test_latest_starts_from_now_and_a_bad_lag_is_refused(
    spark: SparkSession,
    service: LocalService,
    key_client: Client,
    read_options: Options,
    tmp_path: Path,
) -> None:
    frame = pd.DataFrame({"key": ["k0"], "n": [0]})
    table = key_client.create_table(new_id("spark"), new_id("s"), schema=frame)
    table.load(frame, id_from="key", progress=False)
    seen: dict[str, MicroBatches] = {"refused": [], "latest": []}

    def started(name: str, **settings: str) -> StreamingQuery:
        def keep(df: DataFrame, batch: int) -> None:
            seen[name].append((batch, sorted((row["key"], row["n"]) for row in df.collect())))

        stream = spark.readStream.format("frameport").options(**read_options(table), **settings)
        return (
            stream.load()
            .writeStream.foreachBatch(keep)
            .option("checkpointLocation", str(tmp_path / name))
            .start()
        )

    refused = started("refused", lag="soon")
    with pytest.raises(Exception, match="lag takes seconds"):
        refused.processAllAvailable()
    refused.stop()
    service.advance_clock(2)
    query = started("latest", lag="0", startingOffsets="latest")
    try:
        query.processAllAvailable()
        table.load(pd.DataFrame({"key": ["k1"], "n": [1]}), id_from="key", progress=False)
        service.advance_clock(2)
        query.processAllAvailable()
    finally:
        query.stop()
    # Spark runs a new query's first micro-batch even when its offsets are equal: empty.
    assert [rows for _, rows in seen["latest"]] == [[], [("k1", 1)]]
