"""Parallel keyset paging and ranged bucket reads, measured.

Printed, in one run (figures, not assertions):

1. rows/s of ``to_pandas`` and ``to_parquet`` serial and with ``parallel=2`` and ``4``
   (a) against the local service in its own process (``frameport serve``, rate limits off,
       100,000 sample people): the service's work is part of the figure;
   (b) against the replay server of `benchmarks/read.py` (recorded pages, the client alone),
       for 100,000 and 1,000,000 rows;
   (c) against the replay server answering each page after `DELAY` seconds, as a distant
       service does (network and query time): what parallel paging is for;
2. the peak RSS growth of ``to_parquet`` over 100,000 and 1,000,000 replayed rows, serial and
   parallel (fresh subprocess each): parallel writes stay streaming;
3. the bytes a one-column ``pd.read_parquet("frameport://...", columns=[...])`` fetches,
   against the file's size (a whole download).

    .venv/bin/python benchmarks/partitioned.py [--repeat 3] [--rows 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from read import (
    DATABASE,
    PROJECT,
    RECORDED_ROWS,
    best_rate,
    frameport_table,
    peak_growth,
    record,
    replay_server,
)
from support.served import KEY, local_service

PARALLEL = (None, 2, 4)
DELAY = 0.05
"""Seconds the replay server waits before each page in (c)."""


# ---------------------------------------------------------------------------------------------
# The local service in its own process


def load_people(endpoint: str, rows: int) -> None:
    from frameport._client import Client
    from frameport._demo import sample_people

    with Client(endpoint, PROJECT, key=KEY) as client:
        frame = sample_people(rows)
        client.create_table(DATABASE, "people", schema=frame).insert(frame, progress=False)


# ---------------------------------------------------------------------------------------------
# Reads


def read_rates(
    endpoint: str, table_id: str, rows: int, repeat: int, key: str
) -> dict[str, dict[int | None, float]]:
    """rows/s of to_pandas and to_parquet for each `PARALLEL` setting."""
    from frameport._client import Client

    rates: dict[str, dict[int | None, float]] = {"to_pandas": {}, "to_parquet": {}}
    with Client(endpoint, PROJECT, key=key) as client, tempfile.TemporaryDirectory() as out:
        table = client.table(DATABASE, table_id)
        for parallel in PARALLEL:

            def pandas(parallel: int | None = parallel) -> int:
                return len(table.to_pandas(progress=False, parallel=parallel))

            def parquet(parallel: int | None = parallel) -> int:
                path = Path(out) / "out.parquet"
                return table.to_parquet(path, progress=False, parallel=parallel).rows

            assert pandas() == rows and parquet() == rows  # complete, and warm
            rates["to_pandas"][parallel] = best_rate(pandas, repeat)
            rates["to_parquet"][parallel] = best_rate(parquet, repeat)
    return rates


def print_rates(title: str, rates: dict[str, dict[int | None, float]]) -> None:
    print(f"\n{title}")
    for terminal, by_setting in rates.items():
        serial = by_setting[None]
        for parallel, rate in by_setting.items():
            label = f"{terminal}(parallel={parallel})"
            print(f"  {label:28} {rate:12,.0f} rows/s   {rate / serial:5.2f}x serial")


# ---------------------------------------------------------------------------------------------
# Memory of a parallel export, in a fresh subprocess


def parquet_memory(endpoint: str, rows: int, parallel: int | None) -> float:
    """Peak RSS growth (bytes) of one to_parquet."""
    client, table = frameport_table(endpoint, rows)
    table.head(1).to_pandas(progress=False)  # imports, connections and the loop are warm
    with tempfile.TemporaryDirectory() as out:
        path = Path(out) / "out.parquet"
        _, _, growth = peak_growth(
            lambda: table.to_parquet(path, progress=False, parallel=parallel)
        )
    client.close()
    return growth


def measure_parquet_memory(endpoint: str, rows: int, parallel: int | None) -> float:
    output = subprocess.run(
        [sys.executable, __file__, "memory", endpoint, str(rows), str(parallel or 1)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return float(json.loads(output.strip().splitlines()[-1]))


# ---------------------------------------------------------------------------------------------
# Ranged reads through fsspec


def column_read_bytes(endpoint: str) -> tuple[int, int, int]:
    """(file size, bytes fetched for one column of eight, bytes of a whole read)."""
    import fsspec
    import numpy as np
    import pandas as pd

    from frameport._client import Client

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({f"c{i}": rng.random(500_000) for i in range(8)})
    options = {"endpoint": endpoint, "project": PROJECT, "key": KEY}
    with Client(endpoint, PROJECT, key=KEY) as client:
        bucket = client.create_bucket("bench", "bench")
        file = bucket.upload_dataframe(frame, "wide.parquet", progress=False)
    fs = fsspec.filesystem("frameport", **options)
    url = "frameport://bench/wide.parquet"
    before = fs.received_bytes
    one = pd.read_parquet(url, columns=["c3"], storage_options=options)
    column = fs.received_bytes - before
    assert one["c3"].equals(frame["c3"])
    before = fs.received_bytes
    assert pd.read_parquet(url, storage_options=options).equals(frame)
    return file.size, column, fs.received_bytes - before


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=100_000, help="rows in the local service")
    args = parser.parse_args()
    os.environ["FRAMEPORT_PROGRESS"] = "0"
    print(f"cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="frameport-bench-") as temporary:
        directory = Path(temporary)
        with local_service(directory / "service") as endpoint:
            print(f"loading {args.rows:,} rows into the local service ...", flush=True)
            load_people(endpoint, args.rows)
            local = read_rates(endpoint, "people", args.rows, args.repeat, KEY)
            sizes = column_read_bytes(endpoint)
        print_rates(f"(a) local service, own process, {args.rows:,} rows (best of "
                    f"{args.repeat})", local)  # fmt: skip
        print(f"recording {RECORDED_ROWS:,} rows for the replay server ...", flush=True)
        (directory / "replay").mkdir()
        record(directory / "replay")
        with replay_server(directory / "replay") as endpoint:
            for rows in (RECORDED_ROWS, 1_000_000):
                replayed = read_rates(endpoint, f"rows-{rows}", rows, args.repeat, "bench")
                print_rates(f"(b) replay server (client alone), {rows:,} rows", replayed)
            memory = {
                (rows, parallel): measure_parquet_memory(endpoint, rows, parallel)
                for rows in (RECORDED_ROWS, 1_000_000)
                for parallel in PARALLEL
            }
        with replay_server(directory / "replay", delay=DELAY) as endpoint:
            distant = read_rates(endpoint, f"rows-{RECORDED_ROWS}", RECORDED_ROWS, 1, "bench")
            print_rates(f"(c) replay server, {DELAY * 1000:.0f} ms per page, "
                        f"{RECORDED_ROWS:,} rows", distant)  # fmt: skip
    mib = 2**20
    print("\nto_parquet, peak RSS growth (fresh subprocess each):")
    for (rows, parallel), growth in memory.items():
        print(f"  {rows:>9,} rows, parallel={parallel!s:5} {growth / mib:8.1f} MiB")
    size, column, whole = sizes
    print("\nfsspec: pd.read_parquet('frameport://bench/wide.parquet'), 8 float columns:")
    print(f"  file size                 {size:12,} bytes")
    print(f"  columns=['c3'] fetched    {column:12,} bytes  ({column / size:.1%} of the file)")
    print(f"  all columns fetched       {whole:12,} bytes  ({whole / size:.1%})")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "memory":
        setting = int(sys.argv[4])
        print(json.dumps(parquet_memory(sys.argv[2], int(sys.argv[3]), setting or None)))
    else:
        main()
