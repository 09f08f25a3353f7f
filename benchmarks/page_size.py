"""Rows per page: the cost of a request against the cost of a row, near and far, and what the
page size does to a read's speed, memory and time to its first rows.

The local service runs in its own process (``frameport serve``, rate limits off), started
once per distance over the same 200,000-row table (sample people): near (no delay) and far
(``--latency 50 --bandwidth 100``). For each page size, each in a fresh subprocess, the best
of `--repeat` (the reads are `distance.py`'s read cells, with a page size):

* ``to_pandas`` serial (``parallel=1``, every ``$`` field): its seconds a page give the fit
  *time a page = request + rows × row*, the cost of a request against the cost of a row;
* ``to_pandas`` with the default ``parallel="auto"``: rows/s and peak RSS growth against the
  frame (the kernel's high-water mark);
* ``iter_batches``: the time from the call to the first batch.

Printed: the fit per distance, and a table per distance with each size's figures against
5000 rows a page (frameport's default), so the default can be judged: fixed if one size
wins everywhere, adaptive if not.

    .venv/bin/python benchmarks/page_size.py [--rows 200000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from distance import measure_read, served_at_each_distance
from read import DATABASE, PROJECT
from support.served import KEY

DISTANCES: dict[str, list[str]] = {
    "near": [],
    "far (50 ms, 100 Mbit/s)": ["--latency", "50", "--bandwidth", "100"],
}
PAGE_SIZES = (1000, 2500, 5000, 10_000, 20_000)
DEFAULT = 5000


def first_batch(endpoint: str, page_size: int) -> dict[str, float]:
    """The seconds from ``iter_batches`` to its first batch (in a subprocess of its own)."""
    from frameport._client import Client

    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        table.head(1).to_pandas(progress=False)  # imports, a connection and the loop are warm
        started = time.perf_counter()
        for first in table.iter_batches(progress=False, system=True, page_size=page_size):
            return {"seconds": time.perf_counter() - started, "rows": float(len(first))}
    raise SystemExit("the table is empty")


def measure_first(endpoint: str, page_size: int, repeat: int) -> dict[str, float]:
    """The fastest of `repeat` `first_batch` runs, each in a fresh subprocess."""
    runs = []
    for _ in range(repeat):
        output = subprocess.run(
            [sys.executable, __file__, "first", endpoint, str(page_size)],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        runs.append(json.loads(output.strip().splitlines()[-1]))
    return dict(min(runs, key=lambda run: run["seconds"]))


def report(distance: str, rows: int, cells: dict[int, dict[str, dict[str, float]]]) -> None:
    points = [
        (float(size), cells[size]["serial"]["seconds"] / -(-rows // size)) for size in PAGE_SIZES
    ]
    per_row, request = statistics.linear_regression(*zip(*points, strict=True))
    print(f"\n{distance}: a serial page costs {request * 1e3:.1f} ms + {per_row * 1e6:.2f} µs a "
          f"row: a request is worth {request / per_row:,.0f} rows")  # fmt: skip
    base = cells[DEFAULT]
    print(f"  {'rows a page':>11} {'auto rows/s':>12} {'vs 5000':>8} {'serial vs 5000':>15} "
          f"{'peak/frame':>11} {'first batch ms':>15}")  # fmt: skip
    for size in PAGE_SIZES:
        auto, serial, first = cells[size]["auto"], cells[size]["serial"], cells[size]["first"]
        print(
            f"  {size:11,} {rows / auto['seconds']:12,.0f} "
            f"{base['auto']['seconds'] / auto['seconds']:7.2f}x "
            f"{base['serial']['seconds'] / serial['seconds']:14.2f}x "
            f"{auto['memory_ratio']:10.2f}x {first['seconds'] * 1e3:15.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    os.environ["FRAMEPORT_PROGRESS"] = "0"
    for distance, endpoint in served_at_each_distance(args.rows, DISTANCES):
        cells = {
            size: {
                "serial": measure_read(endpoint, "1", args.repeat, size),
                "auto": measure_read(endpoint, "auto", args.repeat, size),
                "first": measure_first(endpoint, size, args.repeat),
            }
            for size in PAGE_SIZES
        }
        report(distance, args.rows, cells)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "first":
        print(json.dumps(first_batch(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
