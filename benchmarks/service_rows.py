"""Rows/s the local service serves when a client pages a whole table by cursor.

Starts a `LocalService`, makes a table with nine columns of every kind, loads 100,000 rows
through HTTP (bulk creates of 100 rows, four at a time) and then pages the whole table with
`limit(5000)` and `cursorAfter`, three ways:

  (a) served   the response bytes are read; the next cursor is found in the bytes
  (b) decoded  the same, plus `json.loads` of every page (what a Python client adds)
  (c) filtered a filter and an order on a string column (folded compare) over the same rows

and prints rows/s for each. The goal for (a): at least 200,000 rows/s.

    .venv/bin/python benchmarks/service_rows.py [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from frameport.local import LocalService

DB, TABLE = "bench", "people"
PAGE = 5000
COLUMNS: list[dict[str, Any]] = [
    {"key": "name", "type": "string", "size": 255, "required": False},
    {"key": "email", "type": "email", "required": False},
    {"key": "city", "type": "enum", "elements": ["Oslo", "Bergen", "Tromsø"], "required": False},
    {"key": "age", "type": "integer", "required": False},
    {"key": "visits", "type": "integer", "required": False},
    {"key": "score", "type": "double", "required": False},
    {"key": "active", "type": "boolean", "required": False},
    {"key": "born", "type": "datetime", "required": False},
    {"key": "tags", "type": "string", "size": 16, "array": True, "required": False},
]
_ID_MARK = b'"$id":"'


def make_row(index: int, rng: random.Random) -> dict[str, Any]:
    born = datetime(1950, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 2_000_000_000))
    return {
        "$id": f"r{index:07d}",
        "name": f"Person {index} {rng.choice(['Ærø', 'Ola', 'Kari', 'Søren'])}",
        "email": f"p{index}@example.org",
        "city": rng.choice(["Oslo", "Bergen", "Tromsø"]),
        "age": rng.randint(0, 99),
        "visits": rng.randint(0, 10**9),
        "score": rng.random() * 100,
        "active": rng.random() < 0.5,
        "born": born.isoformat(timespec="milliseconds"),
        "tags": rng.sample(["a", "b", "c", "d"], 2),
    }


def load(client: httpx.Client, count: int) -> None:
    """Create the table and bulk-load `count` rows, four requests at a time."""
    client.post("/tablesdb", json={"databaseId": DB, "name": DB}).raise_for_status()
    table = {"tableId": TABLE, "name": TABLE, "columns": COLUMNS}
    client.post(f"/tablesdb/{DB}/tables", json=table).raise_for_status()
    rng = random.Random(1)
    rows = [make_row(index, rng) for index in range(count)]
    path = f"/tablesdb/{DB}/tables/{TABLE}/rows"

    def send(start: int) -> None:
        client.post(path, json={"rows": rows[start : start + 100]}).raise_for_status()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(send, range(0, count, 100)))


def last_id(body: bytes) -> str:
    """The `$id` of the last row of a page, found without decoding the page."""
    start = body.rindex(_ID_MARK) + len(_ID_MARK)
    return body[start : body.index(b'"', start)].decode()


def page_through(client: httpx.Client, extra: list[str], decode: bool) -> int:
    """Rows read while paging the whole table by cursor."""
    path = f"/tablesdb/{DB}/tables/{TABLE}/rows"
    total, cursor = 0, None
    while True:
        queries = [*extra, json.dumps({"method": "limit", "values": [PAGE]})]
        if cursor:
            queries.append(json.dumps({"method": "cursorAfter", "values": [cursor]}))
        response = client.get(path, params={"queries[]": queries})
        response.raise_for_status()
        body = response.content
        if decode:
            rows = json.loads(body)["rows"]
            count = len(rows)
            cursor = rows[-1]["$id"] if rows else None
        else:
            count = body.count(_ID_MARK)
            cursor = last_id(body) if count else None
        if not count:
            return total
        total += count


def best_rate(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, rows = 0.0, 0
    for _ in range(repeat):
        started = time.perf_counter()
        rows = run()
        best = max(best, rows / (time.perf_counter() - started))
    return best, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with LocalService() as svc:
        headers = {"X-Service-Project": svc.project, "X-Service-Key": svc.key}
        with httpx.Client(base_url=svc.endpoint, headers=headers, timeout=300) as client:
            started = time.perf_counter()
            load(client, args.rows)
            loaded = time.perf_counter() - started
            print(f"loaded {args.rows:,} rows over HTTP in {loaded:.1f} s "
                  f"({args.rows / loaded:,.0f} rows/s)")  # fmt: skip
            filtered = [
                json.dumps({"method": "greaterThan", "column": "name", "values": ["person 1"]}),
                json.dumps({"method": "orderAsc", "column": "name"}),
            ]
            cases = {
                "(a) served  ": lambda: page_through(client, [], decode=False),
                "(b) decoded ": lambda: page_through(client, [], decode=True),
                "(c) filtered": lambda: page_through(client, filtered, decode=False),
            }
            for label, run in cases.items():
                rate, rows = best_rate(run, args.repeat)
                print(f"{label} {rows:>9,} rows  {rate:>11,.0f} rows/s")
            goal, _ = best_rate(cases["(a) served  "], 1)
            print(f"goal 200,000 rows/s served: {'met' if goal >= 200_000 else 'NOT met'}")


if __name__ == "__main__":
    main()
