"""Decoding one page of rows: Arrow's JSON reader against going through Python dicts.

Builds a realistic page (5000 rows, the internal fields and ten columns of every type, as the
service sends them) and prints rows/s for

  (a) json.loads + pa.RecordBatch.from_pylist  the plain way through Python dicts
  (b) json.loads + batch_from_rows             frameport's fallback (checks every value)
  (c) decode_page                              Arrow's JSON reader, the path frameport takes

and the ratio (c)/(a). Every result is checked equal before anything is timed.

    .venv/bin/python benchmarks/parse.py [--rows 5000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import random
import string
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

from frameport._schema import arrow_schema
from frameport._tables.read._decode import batch_from_rows, decode_page, last_row_id

COLUMNS: list[dict[str, Any]] = [
    {"key": "name", "type": "string", "size": 255},
    {"key": "email", "type": "string", "format": "email"},
    {"key": "city", "type": "string", "format": "enum", "elements": ["Oslo", "Bergen", "Tromsø"]},
    {"key": "age", "type": "integer"},
    {"key": "visits", "type": "integer"},
    {"key": "score", "type": "double"},
    {"key": "active", "type": "boolean"},
    {"key": "born", "type": "datetime", "format": "datetime"},
    {"key": "tags", "type": "string", "array": True},
    {"key": "ratings", "type": "integer", "array": True},
]
_EPOCH = datetime(2020, 1, 1, tzinfo=UTC)


def wire_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+00:00"


def make_row(sequence: int, rng: random.Random) -> dict[str, Any]:
    created = wire_time(_EPOCH + timedelta(seconds=sequence * 37.123))
    words = " ".join(
        "".join(rng.choices(string.ascii_letters, k=rng.randint(3, 9)))
        for _ in range(rng.randint(1, 4))
    )
    return {
        "$id": f"{sequence:013x}{rng.getrandbits(28):07x}",
        "$sequence": str(sequence),
        "$createdAt": created,
        "$updatedAt": created,
        "$permissions": [f'read("user:u{sequence % 97}")', f'update("user:u{sequence % 97}")'],
        "$tableId": "people",
        "$databaseId": "crm",
        "name": words + rng.choice(["", " «Ødegård»", ' "quoted"', " back\\slash"]),
        "email": f"user{sequence}@example.org",
        "city": rng.choice(["Oslo", "Bergen", "Tromsø", None]),
        "age": rng.randint(0, 99),
        "visits": rng.choice([None, rng.randint(0, 10**12)]),
        "score": rng.choice([None, round(rng.uniform(-1e3, 1e3), 6)]),
        "active": rng.choice([True, False, None]),
        "born": wire_time(_EPOCH - timedelta(days=rng.randint(0, 30000), milliseconds=sequence)),
        "tags": rng.sample(["a", "b", "vip", "new", "ø"], k=rng.randint(0, 3)),
        "ratings": [rng.randint(1, 5) for _ in range(rng.randint(0, 4))],
    }


def make_page(rows: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    page = {"total": rows, "rows": [make_row(i + 1, rng) for i in range(rows)]}
    return json.dumps(page, ensure_ascii=False, separators=(",", ":")).encode()


def via_from_pylist(body: bytes, schema: pa.Schema) -> pa.RecordBatch:
    """The plain way: Python dicts, then Arrow converts strings to timestamps column-wise."""
    rows = json.loads(body)["rows"]
    wire = pa.schema([f.with_type(_texts(f.type)) if f.name != "$sequence" else f for f in schema])
    for row in rows:
        row["$sequence"] = int(row["$sequence"])
    batch = pa.RecordBatch.from_pylist(rows, schema=wire)
    columns = [column.cast(field.type) for column, field in zip(batch.columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _texts(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(kind):
        return pa.string()
    if pa.types.is_list(kind):
        return pa.list_(_texts(kind.value_type))
    return kind


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    schema = arrow_schema(COLUMNS)
    body = make_page(args.rows)
    total, fast = decode_page(body, schema)
    plain = via_from_pylist(body, schema)
    checked = batch_from_rows(json.loads(body)["rows"], schema)
    assert total == args.rows and fast.num_rows == args.rows
    assert fast.equals(plain) and fast.equals(checked), "the decoders disagree"
    assert last_row_id(body) == fast.column("$id")[-1].as_py()

    runs: dict[str, Callable[[], object]] = {
        "(a) json.loads + from_pylist": lambda: via_from_pylist(body, schema),
        "(b) json.loads + batch_from_rows": lambda: batch_from_rows(
            json.loads(body)["rows"], schema
        ),
        "(c) decode_page (Arrow JSON reader)": lambda: decode_page(body, schema),
        "    last_row_id": lambda: last_row_id(body),
    }
    print(f"page: {args.rows} rows, {len(body) / 1e6:.2f} MB, {len(schema)} fields")
    seconds = {name: best_seconds(run, args.repeat) for name, run in runs.items()}
    for name, elapsed in seconds.items():
        print(f"{name:40s} {elapsed * 1e3:9.3f} ms  {args.rows / elapsed:14,.0f} rows/s")
    ratio = seconds["(a) json.loads + from_pylist"] / seconds["(c) decode_page (Arrow JSON reader)"]
    print(f"decode_page is {ratio:.2f}x the rows/s of json.loads + from_pylist")


if __name__ == "__main__":
    main()
