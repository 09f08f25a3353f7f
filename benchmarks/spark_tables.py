"""Spark against the paths through the driver, on the same machine and service.

* Read: a `--rows`-row table into a Spark DataFrame, counted and cached, through the
  ``frameport`` source against `to_arrow()` then ``spark.createDataFrame`` with Arrow enabled
  (goal: ≥ 1.0×, best of `--repeat`), and the driver process's peak RSS growth for each (the
  kernel's high-water mark, reset before each; goal ≤ 10 % of the table's Arrow size; the
  JVM and the Python workers are other processes).
* Pushdown: a 1 %-selective filter (``visits < 100``) through Spark with
  ``spark.sql.python.filterPushdown.enabled``: the rows the service sent for the read
  (its per-table counter; an in-process service of `--pushdown-rows` rows) against the
  table's (goal: ≤ 2 % of the rows).
* Write: `--write-rows` rows from a Spark DataFrame of one partition and of `--partitions`
  (contiguous slices, in the rows' order) against `Table.load` of the same rows, each into
  a new table, best of `--repeat` (goal: rows/s ≥ 0.9×; Ray's figure is ``ray_read.py``'s).

Spark's start-up and the Python workers' first task are printed, not counted.

    .venv/bin/python benchmarks/spark_tables.py [--rows 1000000] [--write-rows 200000]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

import frameport as fp
from frameport.local import LocalService
from ray_read import best_write, source, through_load, timed
from support.memory import PeakRss
from support.served import KEY, PROJECT, local_service


def options(endpoint: str, table: fp.Table) -> dict[str, str]:
    return {
        "endpoint": endpoint,
        "project": PROJECT,
        "database": table.database_id,
        "table": table.id,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--write-rows", type=int, default=200_000)
    parser.add_argument("--pushdown-rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    settings = parser.parse_args()
    os.environ["FRAMEPORT_KEY"] = KEY  # the Python workers inherit it
    os.environ["PYSPARK_PYTHON"] = sys.executable
    started = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "ERROR")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    fp.spark.register(spark)
    print(f"Spark start-up: {time.perf_counter() - started:.1f} s (not counted)")
    with tempfile.TemporaryDirectory() as work, local_service(Path(work) / "data") as endpoint:
        client = fp.Client(endpoint, PROJECT, key=KEY)
        client.create_database("bench")
        write(spark, client, endpoint, settings)
        read(spark, client, endpoint, settings)
    pushdown(spark, settings.pushdown_rows)
    spark.stop()


def write(
    spark: SparkSession, client: fp.Client, endpoint: str, settings: argparse.Namespace
) -> None:
    rows = source(settings.write_rows)
    warming = best_write(
        client, rows.slice(0, 100), "warm", 1,
        lambda table, rows: save(spark.createDataFrame(rows), endpoint, table),
    )  # fmt: skip
    print(f"Python workers' first write: {warming:.1f} s (not counted)")
    load = best_write(client, rows, "loaded", settings.repeat, through_load)
    print(f"Table.load:  {settings.write_rows / load:,.0f} rows/s")
    for partitions in sorted({1, settings.partitions}):
        df = in_order(spark, rows, partitions)
        df.cache().count()
        spark_write = best_write(
            client, rows, f"written{partitions}_", settings.repeat,
            lambda table, rows: save(df, endpoint, table),  # noqa: B023
        )  # fmt: skip
        df.unpersist()
        rate = settings.write_rows / spark_write
        print(f"Spark write, {partitions} partition(s): {rate:,.0f} rows/s, ", end="")
        print(f"{load / spark_write:.2f}x Table.load (goal >= 0.9x)")


def in_order(spark: SparkSession, rows: pa.Table, partitions: int) -> DataFrame:
    """`rows` as a DataFrame of `partitions` contiguous slices, each in the rows' order, as
    `Table.load` sends them (a round-robin ``repartition`` shuffles the keys, and inserting
    shuffled keys costs the service's index about a sixth more, `Table.load`'s too)."""
    numbered = rows.append_column("n", pa.array(range(rows.num_rows), pa.int64()))
    df = spark.createDataFrame(numbered).repartitionByRange(partitions, "n")
    return df.sortWithinPartitions("n").drop("n")


def save(df: DataFrame, endpoint: str, table: fp.Table) -> None:
    writer = df.write.format("frameport").options(**options(endpoint, table))
    writer.option("id_from", "key").mode("append").save()


def read(
    spark: SparkSession, client: fp.Client, endpoint: str, settings: argparse.Namespace
) -> None:
    rows = source(settings.rows)
    table = client.create_table("bench", "read", schema=rows.slice(0, 100).to_pandas())
    table.load(rows, id_from="key", progress=False)
    size = table.to_arrow(progress=False).nbytes
    del rows

    def through_source() -> None:
        df = spark.read.format("frameport").options(**options(endpoint, table)).load()
        assert df.cache().count() == settings.rows
        df.unpersist()

    def through_driver() -> None:
        df = spark.createDataFrame(table.to_arrow(progress=False))
        assert df.cache().count() == settings.rows
        df.unpersist()

    figures: dict[str, tuple[float, int]] = {}
    for name, action in (("source", through_source), ("driver", through_driver)):
        gc.collect()
        pa.default_memory_pool().release_unused()  # else freed Arrow pages hide the growth
        with PeakRss() as rss:
            seconds = min(timed(action) for _ in range(settings.repeat))
        figures[name] = (seconds, rss.own_peak - rss.own_start)
    (source_s, source_rss), (driver_s, driver_rss) = figures["source"], figures["driver"]
    print(f"table: {settings.rows:,} rows, {size / 2**20:,.0f} MiB in Arrow")
    for label, seconds, grown in (
        ("to_arrow + createDataFrame", driver_s, driver_rss),
        ("frameport source", source_s, source_rss),
    ):
        rate = settings.rows / seconds
        print(f"{label:27} {rate:,.0f} rows/s, driver peak +{grown / 2**20:,.0f} MiB")
    print(f"source / driver path: {driver_s / source_s:.2f}x (goal >= 1.0x); ", end="")
    print(f"driver peak growth {source_rss / size:.1%} of the table (goal <= 10%)")


def pushdown(spark: SparkSession, count: int) -> None:
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    fp.spark.register(spark)
    with LocalService(key=KEY, project=PROJECT) as service:
        client = fp.Client(service.endpoint, PROJECT, key=KEY)
        client.create_database("bench")
        rows = source(count).set_column(6, "visits", pa.array(range(count)))
        table = client.create_table("bench", "pushed", schema=rows.slice(0, 100).to_pandas())
        table.load(rows, id_from="key", progress=False)
        before = service.rows_served_from("bench", "pushed")
        df = spark.read.format("frameport").options(**options(service.endpoint, table)).load()
        kept = df.where(F.col("visits") < count // 100).count()
        sent = service.rows_served_from("bench", "pushed") - before
    print(f"pushdown: {kept:,} of {count:,} rows kept, the service sent {sent:,}: ", end="")
    print(f"{sent / count:.2%} of the rows (goal <= 2%)")


if __name__ == "__main__":
    main()
