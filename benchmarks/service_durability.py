"""What durable commits cost: rows/s inserted with SQLite `synchronous=FULL` against NORMAL.

The local service runs SQLite in WAL mode with `synchronous=FULL`, so an acknowledged write
survives a power cut (NORMAL survives only a crash of the process). This script starts one
service of each kind side by side and inserts the same rows through HTTP, two ways:

  (a) single   one row per request (one commit, so one fsync, per row), one at a time
  (b) bulk     100 rows per request, four requests in flight

and prints rows/s for each setting and the ratio FULL / NORMAL, measured in the same run.

    .venv/bin/python benchmarks/service_durability.py [--rows 2000] [--bulk-rows 50000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from frameport.local import LocalService

DB, TABLE = "bench", "writes"
COLUMNS: list[dict[str, Any]] = [
    {"key": "name", "type": "string", "size": 64, "required": False},
    {"key": "n", "type": "integer", "required": False},
    {"key": "score", "type": "double", "required": False},
]
ROWS_PATH = f"/tablesdb/{DB}/tables/{TABLE}/rows"


def row(index: int) -> dict[str, Any]:
    return {"name": f"row {index}", "n": index, "score": index / 7}


def prepare(client: httpx.Client) -> None:
    client.post("/tablesdb", json={"databaseId": DB, "name": DB}).raise_for_status()
    table = {"tableId": TABLE, "name": TABLE, "columns": COLUMNS}
    client.post(f"/tablesdb/{DB}/tables", json=table).raise_for_status()


def single(client: httpx.Client, count: int) -> None:
    for index in range(count):
        body = {"rowId": f"s{index}", "data": row(index)}
        client.post(ROWS_PATH, json=body).raise_for_status()


def bulk(client: httpx.Client, count: int) -> None:
    def send(start: int) -> None:
        rows = [{"$id": f"b{i}", **row(i)} for i in range(start, min(start + 100, count))]
        client.post(ROWS_PATH, json={"rows": rows}).raise_for_status()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(send, range(0, count, 100)))


def rows_per_second(
    client: httpx.Client, run: Callable[[httpx.Client, int], None], n: int
) -> float:
    started = time.perf_counter()
    run(client, n)
    return n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000, help="single-row inserts")
    parser.add_argument("--bulk-rows", type=int, default=50_000, help="rows sent in bulk")
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    for setting in ("NORMAL", "FULL"):
        service = LocalService(rate_limits=False)
        service.config.sqlite_synchronous = setting
        with service as svc:
            headers = {"X-Service-Project": svc.project, "X-Service-Key": svc.key}
            with httpx.Client(base_url=svc.endpoint, headers=headers, timeout=120) as client:
                prepare(client)
                results[setting] = {
                    "single": rows_per_second(client, single, args.rows),
                    "bulk": rows_per_second(client, bulk, args.bulk_rows),
                }
    print(f"{'':8}{'NORMAL rows/s':>16}{'FULL rows/s':>14}{'FULL/NORMAL':>14}")
    for kind in ("single", "bulk"):
        normal, full = results["NORMAL"][kind], results["FULL"][kind]
        print(f"{kind:8}{normal:16,.0f}{full:14,.0f}{full / normal:14.2f}")
    print("(the machine may be shared with other work: compare the ratios, not the rates)")


if __name__ == "__main__":
    main()
