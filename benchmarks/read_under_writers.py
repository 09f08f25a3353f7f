"""A one-row read's p99 while 60 writers queue behind a 20-second bulk update.

Starts `frameport serve` in a subprocess and fills a table with enough rows that one bulk
update of all of them (`PATCH .../rows`) holds SQLite's write lock for about `--seconds`
(calibrated on a first, smaller update). During a second such update, 60 writers create
rows in another table one at a time, and one reader fetches a single row over and over. The
script prints the reader's p99 latency then, beside its p99 on an idle service measured in
the same run, and compares it with the goal: reads need no write lock under SQLite's WAL, so
they must not wait for the writers (goal: p99 at most 0.5 s; once it was 18 s).

    .venv/bin/python benchmarks/read_under_writers.py [--seconds 20] [--writers 60]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from support.served import headers, local_service

GOAL_P99_SECONDS = 0.5
DB = "bench"
COLUMNS: list[dict[str, Any]] = [
    {"key": "name", "type": "string", "size": 64, "required": False},
    {"key": "n", "type": "integer", "required": False},
]
BIG, WRITTEN = f"/tablesdb/{DB}/tables/big/rows", f"/tablesdb/{DB}/tables/written/rows"
CALIBRATION_ROWS = 10_000


@contextmanager
def served() -> Iterator[httpx.Client]:
    limits = httpx.Limits(max_connections=100)
    with (
        tempfile.TemporaryDirectory(prefix="frameport-bench-") as data_dir,
        local_service(data_dir) as endpoint,
        httpx.Client(base_url=endpoint, headers=headers(), timeout=600, limits=limits) as client,
    ):
        yield client


def prepare(client: httpx.Client) -> None:
    client.post("/tablesdb", json={"databaseId": DB, "name": DB}).raise_for_status()
    for table in ("big", "written"):
        body = {"tableId": table, "name": table, "columns": COLUMNS}
        client.post(f"/tablesdb/{DB}/tables", json=body).raise_for_status()


def insert(client: httpx.Client, start: int, stop: int) -> None:
    for first in range(start, stop, 100):
        rows = [
            {"$id": f"r{n}", "name": f"row {n}", "n": n}
            for n in range(first, min(first + 100, stop))
        ]
        client.post(BIG, json={"rows": rows}).raise_for_status()


def bulk_update(client: httpx.Client, value: int) -> float:
    """Seconds one update of every row of the big table takes."""
    started = time.perf_counter()
    client.patch(BIG, json={"data": {"n": value}}).raise_for_status()
    return time.perf_counter() - started


def updating(
    client: httpx.Client, value: int, meanwhile: Callable[[threading.Event], object]
) -> float:
    """Seconds a bulk update takes, while `meanwhile(done)` runs until it ends."""
    done, seconds = threading.Event(), []

    def update() -> None:
        seconds.append(bulk_update(client, value))
        done.set()

    thread = threading.Thread(target=update)
    thread.start()
    meanwhile(done)
    thread.join()
    return seconds[0]


def read_latencies(client: httpx.Client, until: threading.Event, count: int = 0) -> list[float]:
    """Seconds each one-row read took, reading until `until` is set (or `count` reads)."""
    latencies: list[float] = []
    while not until.is_set() and (count == 0 or len(latencies) < count):
        started = time.perf_counter()
        client.get(f"{BIG}/r0").raise_for_status()
        latencies.append(time.perf_counter() - started)
    return latencies


def write_until(client: httpx.Client, writer: int, until: threading.Event, done: list[int]) -> None:
    n = 0
    while not until.is_set():
        body = {"rowId": f"w{writer}-{n}", "data": {"name": "w", "n": n}}
        client.post(WRITTEN, json=body).raise_for_status()
        n += 1
    done.append(n)


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20, help="the bulk update's length")
    parser.add_argument("--writers", type=int, default=60, help="writers queueing behind it")
    args = parser.parse_args()
    with served() as client:
        prepare(client)
        insert(client, 0, CALIBRATION_ROWS)
        idle = read_latencies(client, threading.Event(), count=200)
        # Calibrated with the reader running, as it will be: reads slow the update a little.
        per_row = updating(client, 1, lambda done: read_latencies(client, done)) / CALIBRATION_ROWS
        rows = max(CALIBRATION_ROWS, int(args.seconds / per_row))
        insert(client, CALIBRATION_ROWS, rows)

        busy: list[float] = []
        writes: list[int] = []

        def write_and_read(done: threading.Event) -> None:
            time.sleep(0.5)  # the update holds the write lock before the writers arrive
            writers = [
                threading.Thread(target=write_until, args=(client, number, done, writes))
                for number in range(args.writers)
            ]
            for writer in writers:
                writer.start()
            busy.extend(read_latencies(client, done))
            for writer in writers:
                writer.join()

        update_seconds = updating(client, 2, write_and_read)

    total = sum(writes)
    print(f"bulk update of {rows:,} rows: {update_seconds:.1f} s", end="; ")
    print(f"{args.writers} writers queued behind it, {total:,} rows written")
    print(f"one-row read, idle service:      p99 {p99(idle) * 1000:8.1f} ms ({len(idle)} reads)")
    print(
        f"one-row read, during the update: p99 {p99(busy) * 1000:8.1f} ms "
        f"({len(busy)} reads, max {max(busy) * 1000:.1f} ms)"
    )
    print(f"ratio busy / idle: {p99(busy) / p99(idle):.1f}x")
    met = p99(busy) <= GOAL_P99_SECONDS
    print(f"goal: p99 <= {GOAL_P99_SECONDS} s during the update: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
