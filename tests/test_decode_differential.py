"""The page decoder against the json module on the same body, cell by cell and type by type:
random tables (every column type, arrays, geometries, a column frameport does not map), rows
with nulls, missing keys, unicode, the int64 limits, integers in float columns and datetimes
in any offset. The reference shares no code with the decoder (which reads pages with Arrow's
JSON reader): it parses the body with `json.loads` and turns each value into the Python value
its column's type gives back (`expected_cell`); a column read as JSON text is each value's
``json.dumps``.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from frameport._schema import arrow_schema, is_json_text
from frameport._tables._decode import decode_page

texts = st.text(max_size=8) | st.sampled_from(['"', "\\", "\u2028\x00\n", "é😀", "$id", ""])
int64s = st.integers(-(2**63), 2**63 - 1) | st.sampled_from([-(2**63), 2**63 - 1, 0])
floats = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(2**53), 2**53)  # integers in a float column
    | st.sampled_from([5e-324, 1.7976931348623157e308, -0.0])
)


def wire_time(moment: datetime, minutes: int) -> str:
    shifted = moment.astimezone(timezone(timedelta(minutes=minutes)))
    sign, offset = ("-" if minutes < 0 else "+"), abs(minutes)
    text = shifted.replace(tzinfo=None).isoformat(timespec="milliseconds")
    return f"{text}{sign}{offset // 60:02d}:{offset % 60:02d}"


datetimes = st.builds(
    wire_time,
    st.datetimes(datetime(1000, 1, 2), datetime(9999, 12, 30), timezones=st.just(UTC)),
    st.sampled_from([0, 60, -330, 840, -660]),
)
points = st.lists(floats, min_size=2, max_size=2)
lines = st.lists(points, min_size=2, max_size=3)
SCALARS: dict[str, tuple[dict[str, Any], st.SearchStrategy[Any]]] = {
    "string": ({"type": "string", "size": 100}, texts),
    "email": ({"type": "string", "format": "email"}, texts),
    "integer": ({"type": "integer"}, int64s),
    "double": ({"type": "double"}, floats),
    "boolean": ({"type": "boolean"}, st.booleans()),
    "datetime": ({"type": "datetime", "format": "datetime"}, datetimes),
}
GEOMETRIES: dict[str, tuple[dict[str, Any], st.SearchStrategy[Any]]] = {
    "point": ({"type": "point"}, points),
    "line": ({"type": "line"}, lines),
    "polygon": ({"type": "polygon"}, st.lists(lines, max_size=2)),
    # A relationship: frameport does not map it and reads each value as its JSON text.
    "relationship": ({"type": "relationship"}, st.none() | texts | st.lists(texts, max_size=2)),
}


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, st.SearchStrategy[Any]]]:
    """Column models of a random table, and the values of each column."""
    columns, values = [], {}
    kinds = draw(st.lists(st.sampled_from([*SCALARS, *GEOMETRIES]), min_size=1, max_size=7))
    for number, kind in enumerate(kinds):
        model, strategy = {**SCALARS, **GEOMETRIES}[kind]
        key = f"c{number}_{kind}"
        if kind in SCALARS and draw(st.booleans()):
            model, strategy = {**model, "array": True}, st.lists(st.none() | strategy, max_size=3)
        columns.append({"key": key, **model})
        values[key] = st.none() | strategy
    return columns, values


@st.composite
def pages(draw: st.DrawFn) -> tuple[pa.Schema, list[dict[str, Any]], bytes]:
    """A table's batch schema, rows as the service sends them, and their page body."""
    columns, values = draw(tables())
    quoted = draw(st.booleans())  # `$sequence` as text (response format >= 1.9.0) or a number
    rows = []
    for number in range(1, draw(st.integers(1, 8)) + 1):
        row: dict[str, Any] = {
            "$id": f"r{number}",
            "$sequence": str(number) if quoted else number,
            "$createdAt": draw(datetimes),
            "$updatedAt": draw(datetimes),
            "$permissions": draw(st.lists(st.sampled_from(['read("any")', "é"]), max_size=2)),
            "$tableId": "t",  # unmapped fields of the service: ignored
        }
        row.update(draw(st.fixed_dictionaries({}, optional=values)))  # a missing key is null
        rows.append(row)
    envelope = {"total": len(rows), "rows": rows}
    body = json.dumps(envelope, ensure_ascii=draw(st.booleans()), separators=(",", ":"))
    return arrow_schema(columns), rows, body.encode()


def expected_cell(kind: pa.DataType, value: Any) -> Any:
    """`value` as parsed by the json module, in the Python form a column of type `kind` gives
    back (`to_pylist`), by the rules of the column types: integers exact (`$sequence` from its
    text too), integers in a double column as floats, datetimes at any offset as the same
    instant in UTC, cut to the millisecond, arrays and geometries item by item."""
    if value is None:
        return None
    if pa.types.is_list(kind):
        return [expected_cell(kind.value_type, item) for item in value]
    if pa.types.is_timestamp(kind):
        moment = datetime.fromisoformat(value).astimezone(UTC)
        return moment.replace(microsecond=moment.microsecond // 1000 * 1000)
    if pa.types.is_int64(kind):
        return int(value)
    if pa.types.is_float64(kind):
        return float(value)
    return value


def expected_column(field: pa.Field[Any], rows: list[dict[str, Any]]) -> list[Any]:
    """The cells of `field` for `rows`: a missing key is null; a column read as JSON text
    holds each value's ``json.dumps``."""
    values = [row.get(field.name) for row in rows]
    if is_json_text(field):
        return [None if value is None else json.dumps(value) for value in values]
    return [expected_cell(field.type, value) for value in values]


def signed(cells: Any) -> Any:
    """`cells` with each float paired with its sign, so that -0.0 differs from 0.0."""
    if isinstance(cells, list):
        return [signed(cell) for cell in cells]
    if isinstance(cells, float):
        return (cells, math.copysign(1.0, cells))
    return cells


@settings(max_examples=150, deadline=None)
@given(pages())
def test_decoded_pages_match_the_json_modules_reading_cell_by_cell(
    page: tuple[pa.Schema, list[dict[str, Any]], bytes],
) -> None:
    schema, rows, body = page
    total, batch = decode_page(body, schema)
    assert total == len(rows)
    assert batch.schema == schema
    parsed = json.loads(body)["rows"]  # the body's rows as the json module reads them
    for field, column in zip(schema, batch.columns, strict=True):
        assert column.type == field.type, field.name
        assert signed(column.to_pylist()) == signed(expected_column(field, parsed)), field.name
