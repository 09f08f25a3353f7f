"""Importing a Parquet file into a table: `Table.load` against hand-written loops.

Starts `frameport serve` in a subprocess, writes a Parquet file of `--rows` rows and 12
columns, and imports it into fresh tables:

* the best hand-written raw-HTTP bulk loop (httpx, 100-row bulk creates, 1, 2 and 4 requests
  at once) — the baseline;
* `Table.load` — goal: rows/s ≥ 0.9 × the baseline;
* the share of the load's time spent checking rows (`validate_batch` over the whole file,
  timed apart) — goal ≤ 10 %;
* peak RSS growth of the loading process — goal ≤ 150 MB;
* a load killed at 50 % (SIGKILL) and resumed — goal: the resumed part ≤ 60 % of a full load;
* the reference client's loop, as the service's Python SDK works (`requests`, one JSON body
  per 100-row create_rows call, serially), for users to compare.

The local service (Python, SQLite) is what bounds the rate on one machine: both sides share
its cores, so the default is 100,000 rows (about a minute per import on 2 cores);
``--rows 1000000`` runs the full-size file.

    .venv/bin/python benchmarks/load.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import requests

import frameport as fp
from frameport._schema import ColumnRules, validate_batch
from support.memory import PeakRss
from support.served import KEY, PROJECT, local_service

COLUMNS = {
    "name": "string",
    "email": "email",
    "city": "string",
    "age": "integer",
    "visits": "integer",
    "score": "float",
    "ratio": "float",
    "active": "boolean",
    "joined": "datetime",
    "level": "integer",
    "note": "string",
    "site": "url",
}


def write_source(path: Path, rows: int) -> None:
    rng = np.random.default_rng(29)
    numbers = np.arange(rows)
    table = pa.table(
        {
            "name": pa.array([f"person {i}" for i in numbers]),
            "email": pa.array([f"user{i}@example.com" for i in numbers]),
            "city": pa.array(rng.choice(["Oslo", "Bergen", "Trondheim"], rows)),
            "age": pa.array(rng.integers(0, 100, rows)),
            "visits": pa.array(rng.integers(0, 10_000, rows)),
            "score": pa.array(rng.random(rows)),
            "ratio": pa.array(rng.random(rows)),
            "active": pa.array(rng.random(rows) > 0.5),
            "joined": pa.array(
                (1_600_000_000_000 + rng.integers(0, 10**11, rows)).astype("datetime64[ms]")
            ),
            "level": pa.array(rng.integers(1, 5, rows)),
            "note": pa.array([f"note {i % 1000}" for i in numbers]),
            "site": pa.array([f"https://example.com/{i}" for i in numbers]),
        }
    )
    pq.write_table(table, path, row_group_size=50_000)


def body_rows(batch: pa.RecordBatch, first: int) -> list[dict[str, object]]:
    from frameport._schema import batch_to_rows

    rows = batch_to_rows(batch)
    for offset, row in enumerate(rows):
        row["$id"] = f"raw{first + offset:012x}"
    return rows


def raw_loop(endpoint: str, path: Path, rows_path: str, concurrency: int) -> float:
    """Seconds for the hand-written loop: 100-row bulk creates, `concurrency` at once."""

    async def run() -> None:
        headers = {"X-Service-Project": PROJECT, "X-Service-Key": KEY}
        async with httpx.AsyncClient(base_url=endpoint, headers=headers, timeout=60) as client:
            slots = asyncio.Semaphore(concurrency)
            tasks: set[asyncio.Task[None]] = set()

            async def send(rows: list[dict[str, object]]) -> None:
                try:
                    (await client.post(rows_path, json={"rows": rows})).raise_for_status()
                finally:
                    slots.release()

            first = 0
            for batch in pq.ParquetFile(path).iter_batches(batch_size=100):
                rows = body_rows(batch, first)
                first += batch.num_rows
                await slots.acquire()
                task = asyncio.ensure_future(send(rows))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            await asyncio.gather(*tasks)

    started = time.perf_counter()
    asyncio.run(run())
    return time.perf_counter() - started


def reference_loop(endpoint: str, path: Path, rows_path: str) -> float:
    """Seconds for the reference client's way: requests, one 100-row create_rows call at a time
    (the SDK encodes each body with json.dumps)."""
    session = requests.Session()
    session.headers.update(
        {"X-Service-Project": PROJECT, "X-Service-Key": KEY, "Content-Type": "application/json"}
    )
    started = time.perf_counter()
    first = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=100):
        rows = body_rows(batch, first)
        first += batch.num_rows
        body = json.dumps({"rows": rows})
        session.post(endpoint + rows_path, data=body).raise_for_status()
    return time.perf_counter() - started


KILLED = """
import sys
import frameport as fp
endpoint, table, path = sys.argv[1:]
client = fp.Client(endpoint, "bench", key="standard_benchmark")
client.table("bench", table).load(path, resume=True, progress=False)
"""


def killed_and_resumed(client: fp.Client, endpoint: str, path: Path, rows: int) -> float:
    """Seconds the resumed part of a load killed at 50 % takes."""
    table = client.create_table("bench", "resumed", schema=COLUMNS)
    killed = subprocess.Popen([sys.executable, "-c", KILLED, endpoint, table.id, str(path)])
    while table.count() < rows // 2 and killed.poll() is None:
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    started = time.perf_counter()
    report = table.load(path, resume=True, progress=False)
    seconds = time.perf_counter() - started
    assert report.written == rows and table.count() == rows, report
    return seconds


def validation_seconds(path: Path) -> float:
    rules = {key: ColumnRules.from_model(model) for key, model in _models().items()}
    started = time.perf_counter()
    for batch in pq.ParquetFile(path).iter_batches(batch_size=10_000):
        validate_batch(batch, rules)
    return time.perf_counter() - started


def _models() -> dict[str, dict[str, object]]:
    models: dict[str, dict[str, object]] = {}
    for key, kind in COLUMNS.items():
        model: dict[str, object] = {"key": key, "type": "string", "size": 255}
        if kind in ("email", "url"):
            model = {"key": key, "type": "string", "format": kind}
        elif kind != "string":
            model = {"key": key, "type": {"float": "double"}.get(kind, kind)}
        models[key] = model
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    rows = parser.parse_args().rows
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "source.parquet"
        write_source(source, rows)
        os.environ["FRAMEPORT_CACHE_DIR"] = str(Path(work) / "cache")
        with local_service(Path(work) / "data") as endpoint:
            client = fp.Client(endpoint, PROJECT, key=KEY)
            client.create_database("bench")
            raw = {}
            for concurrency in (1, 2, 4):
                table = client.create_table("bench", f"raw{concurrency}", schema=COLUMNS)
                raw[concurrency] = raw_loop(endpoint, source, table.location.rows_path, concurrency)
            best = min(raw.values())
            table = client.create_table("bench", "load", schema=COLUMNS)
            with PeakRss() as rss:
                started = time.perf_counter()
                report = table.load(source, progress=False)
                loaded = time.perf_counter() - started
            assert report.written == rows and table.count() == rows, report
            checking = validation_seconds(source)
            resumed = killed_and_resumed(client, endpoint, source, rows)
            table = client.create_table("bench", "reference", schema=COLUMNS)
            reference = reference_loop(endpoint, source, table.location.rows_path)
            client.close()
    print(f"{rows:,} rows, 12 columns, from Parquet")
    for concurrency, seconds in raw.items():
        print(f"  raw bulk loop, {concurrency} at once: {rows / seconds:,.0f} rows/s")
    print(f"  Table.load:                  {rows / loaded:,.0f} rows/s")
    print(f"  reference create_rows loop:  {rows / reference:,.0f} rows/s")
    print(f"throughput: load / best raw loop = {best / loaded:.2f}  (goal >= 0.90)")
    print(f"validation share: {checking / loaded:.1%}  (goal <= 10 %)")
    print(f"peak RSS growth: {(rss.peak - rss.start) / 2**20:.0f} MB  (goal <= 150 MB)")
    print(f"resume after a kill at 50 %: {resumed / loaded:.2f} of a full load  (goal <= 0.60)")
    print(f"load / reference loop: {reference / loaded:.2f}x faster")


if __name__ == "__main__":
    main()
