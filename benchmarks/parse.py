"""Decoding one page of rows: Arrow's JSON reader against going through Python dicts.

Builds a realistic page (5000 rows, the internal fields and ten columns of every type, as the
service sends them) and prints rows/s for

  (a) json.loads + pa.RecordBatch.from_pylist  the plain way through Python dicts
  (b) json.loads + batch_from_rows             frameport's fallback (checks every value)
  (c) decode_page                              Arrow's JSON reader, the path frameport takes

and the ratio (c)/(a). Every result is checked equal before anything is timed. Then the
candidates for a faster decoder, each against (c) (goal: 1.5x the rows/s of Arrow's reader,
types exact), on one thread (polars' pool is set to one thread):

  (d) polars read_json + to_arrow + casts     polars' reader with the schema (datetimes and
                                               `$sequence` as text), converted to the batch
  (e) polars read_json alone                   its parse, before any conversion
  (f) Arrow's reader over NDJSON rows          the rows one per line (made beforehand)
  (g) orjson.loads                             parse only, to Python objects
  (h) DuckDB read_json + to_arrow + casts      DuckDB's reader (one thread) with the columns'
                                               types, converted to the batch
  (i) polars read_ndjson over NDJSON rows      polars' line reader, which refuses misfits
                                               where its read_json converts them (made
                                               beforehand, parse only)

and which misfits each reader lets through silently (`decode_page` either reads a value
exactly or raises `RowDecodeError`).

    .venv/bin/python benchmarks/parse.py [--rows 5000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import string
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

from frameport._core._pages import last_row_id
from frameport._schema import arrow_schema
from frameport._tables._decode import _text_for_timestamps, batch_from_rows, decode_page

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


DECODER_GOAL = 1.5  # a new decoder's rows/s against Arrow's reader, per core, at least


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
    wire = pa.schema(
        [f.with_type(_text_for_timestamps(f.type)) if f.name != "$sequence" else f for f in schema]
    )
    for row in rows:
        row["$sequence"] = int(row["$sequence"])
    batch = pa.RecordBatch.from_pylist(rows, schema=wire)
    columns = [column.cast(field.type) for column, field in zip(batch.columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def polars_wire_schema(schema: pa.Schema) -> dict[str, Any]:
    """The polars types the rows are read as (``$sequence`` and datetimes as text)."""
    import polars as pl

    wire: dict[str, Any] = {
        f.name: pl.Series(pa.array([], _text_for_timestamps(f.type))).dtype for f in schema
    }
    return {**wire, "$sequence": pl.String}


def rows_array(body: bytes) -> io.BytesIO:
    """The rows array of a page body (its first ``[`` to its last ``]``), as a file."""
    return io.BytesIO(memoryview(body)[body.index(b"[") : body.rindex(b"]") + 1])


def polars_rows(body: bytes, wire: dict[str, Any]) -> Any:
    """The rows array of a page body read by polars with the types `wire`."""
    import polars as pl

    return pl.read_json(rows_array(body), schema=wire)


def to_batch(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """A reader's table of the rows, cast column by column to `schema`, as one batch."""
    columns = [table.column(field.name).cast(field.type) for field in schema]
    return pa.Table.from_arrays(columns, schema=schema).combine_chunks().to_batches()[0]


def polars_reader(schema: pa.Schema) -> Callable[[bytes], pa.RecordBatch]:
    """A decoder on polars' JSON reader: `polars_rows`, converted to Arrow and cast to
    `schema`."""
    wire = polars_wire_schema(schema)

    def decode(body: bytes) -> pa.RecordBatch:
        return to_batch(polars_rows(body, wire).to_arrow(), schema)

    return decode


def duckdb_type(kind: pa.DataType) -> str:
    """The DuckDB type a column of `kind` is read as (`$sequence` as text)."""
    if pa.types.is_list(kind):
        return duckdb_type(kind.value_type) + "[]"
    if pa.types.is_timestamp(kind):
        return "TIMESTAMPTZ"
    scalars = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE"}
    return scalars.get(kind, "BOOLEAN" if pa.types.is_boolean(kind) else "VARCHAR")


def duckdb_reader(schema: pa.Schema) -> Callable[[bytes], pa.RecordBatch]:
    """A decoder on DuckDB's JSON reader, on one thread: the rows array read with the
    columns' types, converted to Arrow and cast to `schema`."""
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET threads = 1")
    columns = {f.name: duckdb_type(f.type) for f in schema} | {"$sequence": "VARCHAR"}

    def decode(body: bytes) -> pa.RecordBatch:
        read = connection.read_json(rows_array(body), format="array", columns=columns)
        return to_batch(read.to_arrow_table(), schema)

    return decode


MISFITS: dict[str, tuple[pa.DataType, object]] = {  # a column's type, a value that misfits
    "5.5 in an integer column": (pa.int64(), 5.5),
    "2**63 in an integer column": (pa.int64(), 2**63),
    "true in an integer column": (pa.int64(), True),
    "1 in a string column": (pa.string(), 1),
}


def silent_misfits(decode: Callable[[bytes, pa.Schema], object]) -> list[str]:
    """The misfits `decode` reads without raising."""
    silent = []
    for name, (kind, value) in MISFITS.items():
        schema = pa.schema([pa.field("$id", pa.string()), pa.field("value", kind)])
        body = json.dumps({"total": 1, "rows": [{"$id": "a", "value": value}]}).encode()
        try:
            decode(body, schema)
        except Exception:
            continue
        silent.append(name)
    return silent


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
    arrow = seconds["(c) decode_page (Arrow JSON reader)"]
    ratio = seconds["(a) json.loads + from_pylist"] / arrow
    print(f"decode_page is {ratio:.2f}x the rows/s of json.loads + from_pylist")
    compare_candidates(body, schema, args.repeat)


def compare_candidates(body: bytes, schema: pa.Schema, repeat: int) -> None:
    """The faster-decoder candidates on `body`, against Arrow's reader (`decode_page`)."""
    os.environ["POLARS_MAX_THREADS"] = "1"  # read before polars is imported: one core each
    import orjson
    import polars as pl
    import pyarrow.json as pa_json

    by_polars, wire = polars_reader(schema), polars_wire_schema(schema)
    by_duckdb = duckdb_reader(schema)
    assert by_polars(body).equals(decode_page(body, schema)[1]), "polars reads other values"
    assert by_duckdb(body).equals(decode_page(body, schema)[1]), "DuckDB reads other values"
    rows = json.loads(body)["rows"]
    lines = b"\n".join(json.dumps(row, ensure_ascii=False).encode() for row in rows)
    as_text = pa.schema([f.with_type(pa.string()) if f.name == "$sequence" else f for f in schema])
    options = pa_json.ParseOptions(explicit_schema=as_text, unexpected_field_behavior="ignore")
    reading = pa_json.ReadOptions(use_threads=False, block_size=len(lines) + 1)
    candidates: dict[str, Callable[[], object]] = {
        "(d) polars read_json + to_arrow + casts": lambda: by_polars(body),
        "(e) polars read_json alone": lambda: polars_rows(body, wire),
        "(f) Arrow's reader over NDJSON rows": lambda: pa_json.read_json(
            pa.BufferReader(lines),  # type: ignore[arg-type]
            read_options=reading,
            parse_options=options,
        ),
        "(g) orjson.loads": lambda: orjson.loads(body),
        "(h) DuckDB read_json + to_arrow + casts": lambda: by_duckdb(body),
        "(i) polars read_ndjson over NDJSON rows": lambda: pl.read_ndjson(
            io.BytesIO(lines), schema=wire
        ),
    }
    candidates["(c) decode_page, again"] = lambda: decode_page(body, schema)
    # Rounds that take each once, by CPU time (every thread of the process): a busy machine
    # slows every contender of a round alike.
    cpu = dict.fromkeys(candidates, float("inf"))
    for _ in range(repeat * 3):
        for name, run in candidates.items():
            started = time.process_time()
            run()
            cpu[name] = min(cpu[name], time.process_time() - started)
    arrow = cpu.pop("(c) decode_page, again")
    print(f"faster-decoder candidates, CPU time on one thread each, against (c)'s {arrow * 1e3:.2f}"
          f" ms (goal: {DECODER_GOAL:g}x):")  # fmt: skip
    for name, elapsed in cpu.items():
        print(f"{name:40s} {elapsed * 1e3:9.3f} ms  {arrow / elapsed:5.2f}x")
    print("misfits read without an error:")
    print(f"  decode_page: {', '.join(silent_misfits(decode_page)) or 'none'}")
    polars_silent = silent_misfits(lambda page, kinds: polars_reader(kinds)(page))
    print(f"  polars:      {', '.join(polars_silent) or 'none'}")
    duckdb_silent = silent_misfits(lambda page, kinds: duckdb_reader(kinds)(page))
    print(f"  DuckDB:      {', '.join(duckdb_silent) or 'none'}")


if __name__ == "__main__":
    main()
