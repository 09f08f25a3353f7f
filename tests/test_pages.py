"""Page bodies → Arrow batches: the fast reader agrees with the Python-dict fallback."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from frameport import RowDecodeError
from frameport._core._pages import last_row_id, rows_at_most
from frameport._schema import TIMESTAMP, InferredSchema, arrow_schema
from frameport._tables._decode import batch_from_rows, decode_page, decode_page_inferring

COLUMNS: list[dict[str, Any]] = [
    {"key": "name", "type": "string", "size": 100},
    {"key": "email", "type": "string", "format": "email"},
    {"key": "age", "type": "integer"},
    {"key": "score", "type": "double"},
    {"key": "active", "type": "boolean"},
    {"key": "born", "type": "datetime", "format": "datetime"},
    {"key": "tags", "type": "string", "array": True},
    {"key": "ratings", "type": "integer", "array": True},
    {"key": "weights", "type": "double", "array": True},
    {"key": "flags", "type": "boolean", "array": True},
    {"key": "visits", "type": "datetime", "array": True},
]
SCHEMA = arrow_schema(COLUMNS)


@contextmanager
def pages_log() -> Iterator[list[logging.LogRecord]]:
    """The records `frameport._tables._decode` logs meanwhile, DEBUG included."""
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect(logging.DEBUG)
    logger = logging.getLogger("frameport._tables._decode")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def wire_time(moment: datetime) -> str:
    """The service's text for an aware datetime, in the datetime's own offset."""
    offset = moment.utcoffset() or timedelta()
    minutes = abs(int(offset.total_seconds())) // 60
    sign = "-" if offset < timedelta() else "+"
    return (
        moment.replace(tzinfo=None).isoformat(timespec="milliseconds")
        + f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    )


def in_offset(moment: datetime, minutes: int) -> str:
    return wire_time(moment.astimezone(timezone(timedelta(minutes=minutes))))


ids = st.from_regex(r"[a-zA-Z0-9][a-zA-Z0-9._-]{0,35}", fullmatch=True)
texts = st.text(max_size=12) | st.sampled_from(
    ['"', "\\", '\\"', '"$id":"x"', '{"$id": "y"}', "\n\t\u2028\x00", "é😀", ""]
)
int64s = st.integers(-(2**63), 2**63 - 1)
floats = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53), 2**53)
datetimes = st.builds(
    in_offset,
    st.datetimes(
        min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
    st.sampled_from([0, 120, -330, 840, -660]),
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "name": texts,
    "email": texts,
    "age": int64s,
    "score": floats,
    "active": st.booleans(),
    "born": datetimes,
    "tags": st.lists(st.none() | texts, max_size=3),
    "ratings": st.lists(st.none() | int64s, max_size=3),
    "weights": st.lists(floats, max_size=3),
    "flags": st.lists(st.booleans(), max_size=3),
    "visits": st.lists(datetimes, max_size=3),
}
columns = st.fixed_dictionaries({}, optional={k: st.none() | v for k, v in VALUES.items()})
system = st.fixed_dictionaries(
    {
        "$id": ids,
        "$createdAt": datetimes,
        "$updatedAt": datetimes,
        "$permissions": st.lists(st.sampled_from(['read("any")', 'update("user:u1")'])),
        "$tableId": st.just("people"),
        "$databaseId": st.just("crm"),
    }
)


@st.composite
def pages(draw: st.DrawFn) -> tuple[bytes, list[dict[str, Any]]]:
    """A page body as the service could send it, and its rows."""
    rows = []
    quoted_sequence = draw(st.booleans())
    for number, (internal, values) in enumerate(
        draw(st.lists(st.tuples(system, columns), max_size=12)), start=1
    ):
        sequence = str(number) if quoted_sequence else number
        rows.append({"$id": internal.pop("$id"), "$sequence": sequence, **internal, **values})
    envelope: dict[str, Any] = {"total": len(rows) + draw(st.integers(0, 5000)), "rows": rows}
    if draw(st.booleans()):
        envelope = {"rows": rows, "total": envelope["total"]}
    body = json.dumps(
        envelope,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 1])),
        separators=draw(st.sampled_from([None, (",", ":")])),
    )
    return body.encode(), rows


@given(pages())
def test_decode_page_reads_with_arrow_and_agrees_with_the_fallback(
    page: tuple[bytes, list[dict[str, Any]]],
) -> None:
    body, rows = page
    with pages_log() as records:
        total, batch = decode_page(body, SCHEMA)
    assert records == []  # Arrow's reader took the page: the comparison below means something
    assert total == json.loads(body)["total"]
    assert batch.schema == SCHEMA
    assert batch.equals(batch_from_rows(rows, SCHEMA))
    assert batch.column("$id").to_pylist() == [row["$id"] for row in rows]
    assert batch.column("name").to_pylist() == [row.get("name") for row in rows]


@given(pages())
def test_last_row_id_is_the_id_of_the_decoded_last_row(
    page: tuple[bytes, list[dict[str, Any]]],
) -> None:
    body, _ = page
    _, batch = decode_page(body, SCHEMA)
    expected = batch.column("$id")[-1].as_py() if batch.num_rows else None
    assert last_row_id(body) == expected


@given(pages())
def test_rows_at_most_counts_every_quoted_id_key(page: tuple[bytes, list[dict[str, Any]]]) -> None:
    body, rows = page
    assert len(rows) <= rows_at_most(body) == body.count(b'"$id"')


def test_last_row_id_skips_nested_rows_and_ids_inside_values() -> None:
    body = json.dumps(
        {
            "total": 2,
            "rows": [
                {"$id": "first", "note": '"$id": "no"'},
                {"$id": "last", "rel": {"$id": "nested"}, "many": [{"$id": "n2"}], "x": '\\"$id'},
            ],
        }
    ).encode()
    assert last_row_id(body) == "last"
    assert last_row_id(b'{"total": 0, "rows": []}') is None
    assert last_row_id(b'{"rows": [], "total": 0}') is None
    assert last_row_id(b'{"total": 1, "rows": [{"n": 1}]}') is None


def test_empty_page_has_the_schema_and_no_rows() -> None:
    for body in (b'{"total":0,"rows":[]}', b'{"total": 7, "rows": []}\n'):
        total, batch = decode_page(body, SCHEMA)
        assert batch.schema == SCHEMA and batch.num_rows == 0
    assert total == 7


def test_legacy_documents_key() -> None:
    body = b'{"total": 1, "documents": [{"$id": "d1", "$sequence": 4, "age": 3}]}'
    total, batch = decode_page(body, SCHEMA, items_key="documents")
    assert (total, batch.column("$sequence").to_pylist(), batch.column("age").to_pylist()) == (
        1,
        [4],
        [3],
    )


def test_datetimes_with_offsets_become_utc_milliseconds() -> None:
    body = (
        b'{"total": 1, "rows": [{"$id": "a", "$createdAt": "2020-10-15T06:38:00.123+02:00",'
        b' "born": "2020-10-15T06:38:00.000-05:30"}]}'
    )
    _, batch = decode_page(body, SCHEMA)
    assert batch.column("$createdAt").to_pylist() == [datetime(2020, 10, 15, 4, 38, 0, 123000, UTC)]
    assert batch.column("born").to_pylist() == [datetime(2020, 10, 15, 12, 8, tzinfo=UTC)]


@pytest.mark.parametrize(
    ("row", "column", "expected"),
    [
        ({"age": 5.0}, "age", 5),  # an integral float in an integer column
        ({"ratings": [1, 2.0]}, "ratings", [1, 2]),
        ({"score": 1e400}, "score", float("inf")),  # beyond double: json.loads reads infinity
    ],
)
def test_fallback_reads_what_arrow_refuses(row: dict[str, Any], column: str, expected: Any) -> None:
    body = json.dumps({"total": 1, "rows": [{"$id": "a", "$sequence": "1", **row}]})
    body = body.replace("Infinity", "1e400")
    with pages_log() as records:
        _, batch = decode_page(body.encode(), SCHEMA)
    assert [r.levelno for r in records] == [logging.DEBUG]
    assert batch.schema == SCHEMA
    assert batch.column(column).to_pylist() == [expected]


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ({"age": 2**64}, "age"),
        ({"age": 1.5}, "age"),
        ({"age": True}, "age"),
        ({"score": False}, "score"),
        ({"name": 5}, "name"),
        ({"active": 1}, "active"),
        ({"tags": "a"}, "tags"),
        ({"tags": ["a", 1]}, "tags"),
        ({"born": "yesterday"}, "born"),
        ({"born": 1602743880}, "born"),
        ({"$sequence": "x1"}, "$sequence"),
    ],
)
def test_values_that_fit_nowhere_name_their_column(row: dict[str, Any], column: str) -> None:
    body = json.dumps({"total": 1, "rows": [{"$id": "a", "$sequence": "1", **row}]}).encode()
    with pytest.raises(RowDecodeError, match=re.escape(repr(column))) as caught:
        decode_page(body, SCHEMA)
    assert caught.value.column == column


def test_fallback_reads_a_sequence_that_changes_form_within_a_page() -> None:
    body = b'{"total": 2, "rows": [{"$id": "a", "$sequence": 1}, {"$id": "b", "$sequence": "2"}]}'
    with pages_log() as records:
        _, batch = decode_page(body, SCHEMA)
    assert records
    assert batch.column("$sequence").to_pylist() == [1, 2]


def test_a_body_that_is_not_a_page_raises() -> None:
    for body in (b"", b"<html>", b"[1, 2]", b'{"total": 1, "rows": [1]}'):
        with pytest.raises(RowDecodeError):
            decode_page(body, SCHEMA)


def test_sequence_as_number_or_text() -> None:
    for sequence in (b'"12"', b"12"):
        body = b'{"total": 1, "rows": [{"$id": "a", "$sequence": ' + sequence + b"}]}"
        with pages_log() as records:
            _, batch = decode_page(body, SCHEMA)
        assert records == []
        assert batch.column("$sequence").to_pylist() == [12]


def test_decode_page_inferring_settles_types_across_pages() -> None:
    inferred = InferredSchema()
    first = b'{"total": 3, "rows": [{"$id": "a", "$sequence": "1", "n": null, "when": null}]}'
    second = (
        b'{"total": 3, "rows": [{"$id": "b", "$sequence": "2", "n": 1,'
        b' "when": "2020-10-15T06:38:00.000+00:00", "word": "2020-10-15"}]}'
    )
    third = b'{"total": 3, "rows": [{"$id": "c", "$sequence": "3", "n": 2.5, "when": null}]}'
    batches = []
    for body in (first, second, third):
        _, batch = decode_page_inferring(body, inferred)
        batches.append(batch)
    schema = inferred.schema
    assert [schema.field(k).type for k in ("n", "when", "word")] == [
        pa.float64(),
        TIMESTAMP,
        pa.string(),
    ]
    table = pa.Table.from_batches([inferred.conform(b) for b in batches])
    assert table.column("n").to_pylist() == [None, 1.0, 2.5]
    assert table.column("word").to_pylist() == [None, "2020-10-15", None]
    assert table.column("$sequence").to_pylist() == [1, 2, 3]


def test_decode_page_inferring_falls_back_on_conflicting_values() -> None:
    inferred = InferredSchema()
    decode_page_inferring(b'{"total": 2, "rows": [{"$id": "a", "n": 1}]}', inferred)
    with pages_log() as records:
        _, batch = decode_page_inferring(
            b'{"total": 2, "rows": [{"$id": "b", "n": 0.5}]}', inferred
        )
    assert records  # n was read as int64, the reader refused 0.5
    assert batch.column("n").to_pylist() == [0.5]
    with pytest.raises(RowDecodeError, match="'n'"):
        decode_page_inferring(b'{"total": 2, "rows": [{"$id": "c", "n": "x"}]}', inferred)


@given(pages(), st.integers(1, 4))
def test_inferring_across_pages_reads_the_same_values_as_the_typed_decode(
    page: tuple[bytes, list[dict[str, Any]]], pages_count: int
) -> None:
    body, rows = page
    _, typed = decode_page(body, SCHEMA)
    size = -(-len(rows) // pages_count) or 1
    inferred = InferredSchema()
    batches = []
    for start in range(0, max(len(rows), 1), size):
        part = json.dumps({"total": len(rows), "rows": rows[start : start + size]}).encode()
        batches.append(decode_page_inferring(part, inferred)[1])
    table = pa.Table.from_batches([inferred.conform(b) for b in batches], inferred.schema)
    assert table.num_rows == len(rows)
    for name in table.column_names:
        assert table.column(name).to_pylist() == typed.column(name).to_pylist(), name
    present = {key for row in rows for key, value in row.items() if value is not None}
    assert set(table.column_names) >= present - {"$tableId", "$databaseId"}
