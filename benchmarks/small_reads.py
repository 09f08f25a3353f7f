"""Small reads far away: how soon the first rows come, in round trips, and a 100,000-row read
far against near.

The local service runs in its own process (``frameport serve``, rate limits off), started
once per distance over the same 100,000-row table (sample people): near (no delay), far
(``--latency 50``) and far and narrow (``--latency 50 --bandwidth 100``). Each cell runs in a
fresh subprocess (imports, a connection and the loop warmed by a one-row read first) and is
the best of `--repeat`:

* the round trip: the median of seven requests for the table's model (the smallest request
  a read sends), which every ratio below is counted in;
* the first rows of ``head(100).to_pandas()`` (a notebook's look at a table) and of
  ``iter_batches()`` (its first batch, a page of 5000 rows), from the call;
* ``to_pandas()`` of the whole table with the defaults, rows/s (`distance.py`'s read cell).

Goals (the issue's "small reads far away"): far, the first rows within 1.5 round trips, and
the 100,000-row read >= 0.85x the near read's rows/s.

    .venv/bin/python benchmarks/small_reads.py [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import httpx

from distance import judge, measure_read, served_at_each_distance
from read import DATABASE, PROJECT
from support.served import KEY, headers

FIRST_ROWS_GOAL = 1.5  # round trips, at most
READ_GOAL = 0.85  # far rows/s against near, at least
HEAD_ROWS = 100


def first_rows(endpoint: str) -> dict[str, float]:
    """The round trip and the seconds to the first rows of a head read and of
    ``iter_batches`` (run in a subprocess of its own)."""
    from frameport._client import Client

    model = f"{endpoint}/tablesdb/{DATABASE}/tables/people"
    with httpx.Client(headers=headers()) as raw:
        raw.get(model).raise_for_status()
        trips = []
        for _ in range(7):
            started = time.perf_counter()
            raw.get(model).raise_for_status()
            trips.append(time.perf_counter() - started)
    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        table.head(1).to_pandas(progress=False)  # imports, a connection and the loop are warm
        started = time.perf_counter()
        head = table.head(HEAD_ROWS).to_pandas(progress=False)
        head_seconds = time.perf_counter() - started
        started = time.perf_counter()
        for batch in table.iter_batches(progress=False):
            batch_seconds, batch_rows = time.perf_counter() - started, len(batch)
            break
    return {
        "round_trip": statistics.median(trips),
        "head": head_seconds,
        "head_rows": float(len(head)),
        "first_batch": batch_seconds,
        "batch_rows": float(batch_rows),
    }


def measure_first_rows(endpoint: str, repeat: int) -> dict[str, float]:
    """The fastest of `repeat` `first_rows` runs (each figure its own best), each in a fresh
    subprocess."""
    runs = []
    for _ in range(repeat):
        output = subprocess.run(
            [sys.executable, __file__, "first", endpoint],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        runs.append(json.loads(output.strip().splitlines()[-1]))
    return {name: min(run[name] for run in runs) for name in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ["FRAMEPORT_PROGRESS"] = "0"
    cells: dict[str, dict[str, float]] = {}
    for distance, endpoint in served_at_each_distance(args.rows):
        first = measure_first_rows(endpoint, args.repeat)
        read = measure_read(endpoint, "auto", args.repeat)
        cells[distance] = {**first, "rate": read["rate"]}
        trip = first["round_trip"]
        print(
            f"{distance:24} round trip {trip * 1e3:5.1f} ms · head({HEAD_ROWS}) "
            f"{first['head'] * 1e3:6.1f} ms = {first['head'] / trip:4.2f} trips · first "
            f"batch ({first['batch_rows']:,.0f} rows) {first['first_batch'] * 1e3:6.1f} ms = "
            f"{first['first_batch'] / trip:4.2f} trips · to_pandas {read['rate']:9,.0f} rows/s",
            flush=True,
        )
    near = cells.pop("near")
    print("\ngoals:")
    for distance, cell in cells.items():
        trips = " trips"
        judge(f"{distance}: head's first rows", cell["head"] / cell["round_trip"],
              FIRST_ROWS_GOAL, at_least=False, unit=trips)  # fmt: skip
        judge(f"{distance}: first batch", cell["first_batch"] / cell["round_trip"],
              FIRST_ROWS_GOAL, at_least=False, unit=trips)  # fmt: skip
        judge(f"{distance}: {args.rows:,}-row read against near",
              cell["rate"] / near["rate"], READ_GOAL)  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "first":
        print(json.dumps(first_rows(sys.argv[2])))
    else:
        main()
