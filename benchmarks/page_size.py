"""Rows per page: the cost of a request against the cost of a row, near and far, and what the
page size does to a read's speed, memory and time to its first rows.

The local service runs in its own process (``frameport serve``, rate limits off), started
once per distance over the same 200,000-row table (sample people): near (no delay) and far
(``--latency 50 --bandwidth 100``). For each page size, each in a fresh subprocess, the best
of `--repeat`:

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

from read import DATABASE, PROJECT, peak_growth
from support.served import KEY, local_service

DISTANCES: dict[str, list[str]] = {
    "near": [],
    "far (50 ms, 100 Mbit/s)": ["--latency", "50", "--bandwidth", "100"],
}
PAGE_SIZES = (1000, 2500, 5000, 10_000, 20_000)
DEFAULT = 5000


def load_table(endpoint: str, rows: int) -> None:
    from frameport._client import Client
    from frameport._demo import sample_people

    with Client(endpoint, PROJECT, key=KEY) as client:
        frame = sample_people(rows)
        client.create_table(DATABASE, "people", schema=frame).insert(frame, progress=False)


def cell(endpoint: str, how: str, page_size: int) -> dict[str, float]:
    """One read (in a subprocess of its own): seconds, rows and, for ``auto``, memory."""
    from frameport._client import Client

    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        table.head(1).to_pandas(progress=False)  # imports, a connection and the loop are warm
        if how == "first":
            started = time.perf_counter()
            for first in table.iter_batches(progress=False, system=True, page_size=page_size):
                return {"seconds": time.perf_counter() - started, "rows": float(len(first))}
            raise SystemExit("the table is empty")
        parallel: int | Literal["auto"] = 1 if how == "serial" else "auto"
        frame, seconds, growth = peak_growth(
            lambda: table.to_pandas(
                progress=False, system=True, page_size=page_size, parallel=parallel
            )
        )
        return {
            "seconds": seconds,
            "rows": float(len(frame)),
            "peak_growth": growth,
            "frame_bytes": float(frame.memory_usage(deep=True).sum()),
        }


def measure(endpoint: str, how: str, page_size: int, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        output = subprocess.run(
            [sys.executable, __file__, "cell", endpoint, how, str(page_size)],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        runs.append(json.loads(output.strip().splitlines()[-1]))
    best: dict[str, float] = min(runs, key=lambda run: run["seconds"])
    if "peak_growth" in best:
        best["memory_ratio"] = max(run["peak_growth"] / run["frame_bytes"] for run in runs)
    return best


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares of ``y = a + b·x``: (a, b)."""
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return mean_y - slope * mean_x, slope


def report(distance: str, rows: int, cells: dict[int, dict[str, dict[str, float]]]) -> None:
    points = [
        (float(size), cells[size]["serial"]["seconds"] / -(-rows // size)) for size in PAGE_SIZES
    ]
    request, per_row = fit(points)
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
    with tempfile.TemporaryDirectory(prefix="frameport-bench-") as scratch:
        data = Path(scratch) / "data"
        with local_service(data) as endpoint:
            load_table(endpoint, args.rows)
        for distance, extra in DISTANCES.items():
            with local_service(data, extra) as endpoint:
                cells = {
                    size: {
                        how: measure(endpoint, how, size, args.repeat)
                        for how in ("serial", "auto", "first")
                    }
                    for size in PAGE_SIZES
                }
            report(distance, args.rows, cells)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "cell":
        print(json.dumps(cell(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        main()
