"""Ray Data against one process: `fp.ray.read_table` against `to_arrow`, and a Ray write
through `fp.ray.TableSink` against `Table.load`, on the same machine and service.

Starts `frameport serve` in a subprocess and a local Ray of `--cpus` CPUs (its start-up and
its workers' first task, which imports frameport there, are printed, not counted). Writes:
`--rows` rows of 8 columns loaded into a new table with `Table.load` (the baseline), and
written into new tables from a Ray dataset of one block and of a block per CPU (goal:
rows/s ≥ 0.9 × the load's). Read: a table of `--read-rows` rows (the size of the Spark
read's table) read with `to_arrow` (the baseline) and as a Ray dataset gathered on the
driver (goal: rows/s ≥ 0.8 × `to_arrow`'s). Every figure is the best of `--repeat` runs.
The workers connect with FRAMEPORT_KEY from their environment, as on a cluster.

    .venv/bin/python benchmarks/ray_read.py [--rows 200000] [--read-rows 1000000] [--cpus 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

import frameport as fp
from support.served import KEY, PROJECT, local_service

Write = Callable[[fp.Table, pa.Table], object]


def source(rows: int) -> pa.Table:
    rng = np.random.default_rng(51)
    numbers = np.arange(rows)
    return pa.table(
        {
            "key": pa.array([f"k{i}" for i in numbers]),
            "name": pa.array([f"person {i}" for i in numbers]),
            "city": pa.array(rng.choice(["Oslo", "Bergen", "Trondheim"], rows)),
            "age": pa.array(rng.integers(0, 100, rows)),
            "score": pa.array(rng.random(rows)),
            "active": pa.array(rng.random(rows) > 0.5),
            "visits": pa.array(rng.integers(0, 10_000, rows)),
            "note": pa.array([f"note {i % 1000}" for i in numbers]),
        }
    )


def timed(action: object) -> float:
    started = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - started


def best_write(client: fp.Client, rows: pa.Table, name: str, repeat: int, write: Write) -> float:
    """The fastest of `repeat` runs of `write` (`rows` into a new table each time), checked
    for lost or duplicated rows."""
    schema = rows.slice(0, 100).to_pandas()
    seconds = []
    for run in range(repeat):
        table = client.create_table("bench", f"{name}{run}", schema=schema)
        seconds.append(timed(lambda: write(table, rows)))  # noqa: B023
        assert table.count() == rows.num_rows, f"{name} lost or duplicated rows"
    return min(seconds)


def through_load(table: fp.Table, rows: pa.Table) -> None:
    """The write baseline: `rows` loaded into `table` with `Table.load`."""
    table.load(rows, id_from="key", progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--read-rows", type=int, default=1_000_000)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    options = parser.parse_args()
    rows = source(options.rows)
    os.environ["FRAMEPORT_KEY"] = KEY  # before Ray starts: its workers inherit it
    import ray
    import ray.data

    with tempfile.TemporaryDirectory() as work, local_service(Path(work) / "data") as endpoint:
        started = time.perf_counter()
        ray.init(num_cpus=options.cpus, include_dashboard=False, log_to_driver=False)
        print(f"Ray start-up: {time.perf_counter() - started:.1f} s (not counted)")
        client = fp.Client(endpoint, PROJECT, key=KEY)
        client.create_database("bench")

        def through_sink(blocks: int) -> Write:
            def write(table: fp.Table, rows: pa.Table) -> None:
                dataset = ray.data.from_arrow(rows).repartition(blocks)
                dataset.write_datasink(fp.ray.TableSink(table, id_from="key"))

            return write

        warming = best_write(client, rows.slice(0, 100), "warm", 1, through_sink(1))
        print(f"Ray workers' first task (imports): {warming:.1f} s (not counted)")
        load = best_write(client, rows, "loaded", options.repeat, through_load)
        print(f"Table.load: {options.rows / load:,.0f} rows/s")
        for blocks in (1, options.cpus):
            write = best_write(
                client, rows, f"written{blocks}_", options.repeat, through_sink(blocks)
            )
            print(f"Ray write, {blocks} block(s): {options.rows / write:,.0f} rows/s, ", end="")
            print(f"{load / write:.2f}x Table.load (goal >= 0.9x)")

        big = source(options.read_rows)
        read_table = client.create_table("bench", "read", schema=big.slice(0, 100).to_pandas())
        read_table.load(big, id_from="key", progress=False)
        del big

        def arrow() -> None:
            assert read_table.to_arrow(progress=False).num_rows == options.read_rows

        def through_ray() -> None:
            blocks = ray.get(fp.ray.read_table(read_table).to_arrow_refs())
            assert sum(block.num_rows for block in blocks) == options.read_rows

        baseline = min(timed(arrow) for _ in range(options.repeat))
        read = min(timed(through_ray) for _ in range(options.repeat))
        print(f"read of {options.read_rows:,} rows:")
        print(f"to_arrow:        {options.read_rows / baseline:,.0f} rows/s")
        print(f"read_table:      {options.read_rows / read:,.0f} rows/s")
        print(f"read_table / to_arrow: {baseline / read:.2f}x (goal >= 0.8x)")
        ray.shutdown()


if __name__ == "__main__":
    main()
