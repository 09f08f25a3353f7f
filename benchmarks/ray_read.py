"""Ray Data against one process: `fp.ray.read_table` against `to_arrow`, and a Ray write
through `fp.ray.TableSink` against `Table.load`, on the same machine and service.

Starts `frameport serve` in a subprocess and a local Ray of `--cpus` CPUs (its start-up and
its workers' first task, which imports frameport there, are printed, not counted), loads
`--rows` rows of 8 columns into a table with `Table.load` (the write baseline), writes the
same rows into new tables from a Ray dataset of one block and of a block per CPU (goal:
rows/s ≥ 0.9 × the load's), then reads the first table with `to_arrow` (the read
baseline) and as a Ray dataset gathered on the driver (goal: rows/s ≥ 0.8 × `to_arrow`'s),
best of `--repeat`.
The workers connect with FRAMEPORT_KEY from their environment, as on a cluster.

    .venv/bin/python benchmarks/ray_read.py [--rows 200000] [--cpus 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import frameport as fp
from support.served import KEY, PROJECT, local_service


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
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
        schema = rows.slice(0, 100).to_pandas()
        loaded = client.create_table("bench", "loaded", schema=schema)
        warm = client.create_table("bench", "warm", schema=schema)
        warming = timed(
            lambda: ray.data.from_arrow(rows.slice(0, 100)).write_datasink(
                fp.ray.TableSink(warm, id_from="key")
            )
        )
        print(f"Ray workers' first task (imports): {warming:.1f} s (not counted)")
        load = timed(lambda: loaded.load(rows, id_from="key", progress=False))
        print(f"Table.load: {options.rows / load:,.0f} rows/s")
        for blocks in (1, options.cpus):
            written = client.create_table("bench", f"written{blocks}", schema=schema)
            dataset = ray.data.from_arrow(rows).repartition(blocks)
            sink = fp.ray.TableSink(written, id_from="key")
            write = timed(lambda: dataset.write_datasink(sink))  # noqa: B023
            assert written.count() == options.rows, "the Ray write lost or duplicated rows"
            print(f"Ray write, {blocks} block(s): {options.rows / write:,.0f} rows/s, ", end="")
            print(f"{load / write:.2f}x Table.load (goal >= 0.9x)")

        def arrow() -> None:
            assert loaded.to_arrow(progress=False).num_rows == options.rows

        def through_ray() -> None:
            blocks = ray.get(fp.ray.read_table(loaded).to_arrow_refs())
            assert sum(block.num_rows for block in blocks) == options.rows

        baseline = min(timed(arrow) for _ in range(options.repeat))
        read = min(timed(through_ray) for _ in range(options.repeat))
        print(f"to_arrow:        {options.rows / baseline:,.0f} rows/s")
        print(f"read_table:      {options.rows / read:,.0f} rows/s")
        print(f"read_table / to_arrow: {baseline / read:.2f}x (goal >= 0.8x)")
        ray.shutdown()


if __name__ == "__main__":
    main()
