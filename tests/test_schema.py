"""Service column types ↔ Arrow types ↔ pandas dtypes, inference, and write conversion."""

from __future__ import annotations

import gc
import json
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from frameport import DTYPE_TABLE, FilterError, RowDecodeError
from frameport._core._timefmt import format_service_datetime
from frameport._schema import (
    SYSTEM_SCHEMA,
    TIMESTAMP,
    InferredSchema,
    arrow_schema,
    batch_to_rows,
    batches_to_pandas,
    column_arrow_type,
    column_definitions,
    column_type_name,
    frame_to_rows,
    is_json_text,
    new_column,
    parse_column_type,
    propose_batches,
    propose_frame,
    string_size,
    to_json_value,
    to_pandas,
)
from frameport._tables._decode import decode_page

OSLO = timezone(timedelta(hours=2))


def service_model(definition: dict[str, Any]) -> dict[str, Any]:
    """The column model the service reports for a create-column body
    (service interface, "Columns", "Models")."""
    model = {**definition, "status": "available"}
    kind = definition["type"]
    if kind in ("email", "ip", "url", "enum"):
        model.update(type="string", format=kind)
    elif kind == "float":
        model["type"] = "double"
    elif kind == "datetime":
        model["format"] = "datetime"
    return model


# ---------------------------------------------------------------------------------------------
# Column models → Arrow


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ({"type": "string", "size": 10}, pa.string()),
        ({"type": "varchar", "size": 10}, pa.string()),
        ({"type": "text"}, pa.string()),
        ({"type": "mediumtext"}, pa.string()),
        ({"type": "longtext"}, pa.string()),
        ({"type": "string", "format": "email"}, pa.string()),
        ({"type": "string", "format": "ip"}, pa.string()),
        ({"type": "string", "format": "url"}, pa.string()),
        ({"type": "string", "format": "enum", "elements": ["a"]}, pa.string()),
        ({"type": "integer", "min": 0, "max": 10}, pa.int64()),
        ({"type": "double"}, pa.float64()),
        ({"type": "boolean"}, pa.bool_()),
        ({"type": "datetime", "format": "datetime"}, TIMESTAMP),
        ({"type": "bigint"}, pa.int64()),
        ({"type": "point"}, pa.list_(pa.float64())),
        ({"type": "line"}, pa.list_(pa.list_(pa.float64()))),
        ({"type": "polygon"}, pa.list_(pa.list_(pa.list_(pa.float64())))),
        ({"type": "relationship"}, None),
    ],
)
def test_column_model_to_arrow(model: dict[str, Any], expected: pa.DataType | None) -> None:
    assert column_arrow_type({"key": "c", **model}) == expected
    as_array = column_arrow_type({"key": "c", "array": True, **model})
    assert as_array == (None if expected is None else pa.list_(expected))


def test_column_type_names() -> None:
    assert column_type_name({"type": "string", "format": "email"}) == "email"
    assert column_type_name({"type": "string", "format": ""}) == "string"
    assert column_type_name({"type": "double"}) == "float"
    assert column_type_name({"type": "datetime", "format": "datetime"}) == "datetime"


COLUMNS: list[dict[str, Any]] = [
    {"key": "name", "type": "string", "size": 20, "status": "available"},
    {"key": "age", "type": "integer", "status": "processing"},
    {"key": "gone", "type": "integer", "status": "deleting"},
    {"key": "broken", "type": "integer", "status": "failed"},
    {"key": "owner", "type": "relationship", "status": "available"},
    {"key": "tags", "type": "string", "array": True, "size": 10},
]


def test_arrow_schema_puts_internal_fields_first_and_reads_unmapped_columns_as_text() -> None:
    schema = arrow_schema(COLUMNS)
    assert schema.names == [*SYSTEM_SCHEMA.names, "name", "age", "owner", "tags"]
    assert schema.field("owner").type == pa.string() and is_json_text(schema.field("owner"))
    assert schema.field("tags").type == pa.list_(pa.string())
    assert str(SYSTEM_SCHEMA.field("$sequence").type) == "int64"
    assert SYSTEM_SCHEMA.field("$createdAt").type == pa.timestamp("ms", tz="UTC")


def test_arrow_schema_with_select() -> None:
    assert arrow_schema(COLUMNS, select=["tags", "$id", "name"]).names[-2:] == ["tags", "name"]
    assert arrow_schema(COLUMNS, select=["$id"]).names == SYSTEM_SCHEMA.names
    assert arrow_schema(COLUMNS, select=["*"]) == arrow_schema(COLUMNS)
    assert arrow_schema(COLUMNS, select=["owner"]).names == [*SYSTEM_SCHEMA.names, "owner"]
    with pytest.raises(FilterError, match="'nope'"):
        arrow_schema(COLUMNS, select=["name", "nope"])


# ---------------------------------------------------------------------------------------------
# Arrow → pandas

EVERY_FIELD: list[tuple[str, pa.DataType]] = [
    ("i", pa.int64()),
    ("f", pa.float64()),
    ("b", pa.bool_()),
    ("s", pa.string()),
    ("t", TIMESTAMP),
    ("l", pa.list_(pa.string())),
]
EVERY_TYPE = pa.schema(EVERY_FIELD)
READ_DTYPES = ["Int64", "float64", "boolean", "str", "datetime64[ms, UTC]", "object"]


def every_type_table() -> pa.Table:
    return pa.table(
        {
            "i": [1, None],
            "f": [1.5, None],
            "b": [True, None],
            "s": ["x", None],
            "t": pa.array([0, None], TIMESTAMP),
            "l": [["a", None], None],
        },
        schema=EVERY_TYPE,
    )


def test_to_pandas_dtypes_with_nulls_and_when_empty() -> None:
    full = every_type_table()
    for data in (full, full.slice(0, 0), full.to_batches()[0], EVERY_TYPE.empty_table()):
        frame = to_pandas(data)
        assert [str(dtype) for dtype in frame.dtypes] == READ_DTYPES
    frame = to_pandas(full)
    assert frame["i"].tolist() == [1, pd.NA]
    assert frame["l"].tolist() == [["a", None], None]
    assert frame["t"][0] == pd.Timestamp(0, unit="ms", tz="UTC") and frame["t"].isna()[1]


def test_to_pandas_pyarrow_backend() -> None:
    for data in (every_type_table(), EVERY_TYPE.empty_table()):
        frame = to_pandas(data, dtype_backend="pyarrow")
        assert list(frame.dtypes) == [pd.ArrowDtype(field.type) for field in EVERY_TYPE]
    with pytest.raises(ValueError, match="dtype_backend"):
        to_pandas(every_type_table(), dtype_backend="numpy_nullable")  # type: ignore[arg-type]


def system_rows() -> pa.Table:
    """Three rows of the service's fields, two of them with the same permissions."""
    moment = datetime(2020, 10, 15, 6, 38, tzinfo=UTC)
    rows = [
        {"$id": f"r{n}", "$sequence": n, "$createdAt": moment, "$updatedAt": moment,
         "$permissions": permissions}
        for n, permissions in enumerate([['read("any")'], ['read("any")'], []])
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=SYSTEM_SCHEMA)


@pytest.mark.parametrize("dtype_backend", [None, "pyarrow"])
def test_permissions_read_as_tuples_pandas_can_hash(dtype_backend: Any) -> None:
    table = system_rows()
    frames = [
        to_pandas(table, dtype_backend=dtype_backend),
        batches_to_pandas(table.to_batches(), table.schema, dtype_backend=dtype_backend),
    ]
    for frame in frames:
        assert frame["$permissions"].dtype == object
        assert frame["$permissions"].tolist() == [('read("any")',), ('read("any")',), ()]
        assert frame["$permissions"].nunique() == 2
        assert len(frame.drop(columns=["$id", "$sequence"]).drop_duplicates()) == 2
        assert frame.groupby("$permissions").size().to_dict() == {(): 1, ('read("any")',): 2}
        assert len(frame.merge(frame, on="$permissions")) == 5
    empty = to_pandas(SYSTEM_SCHEMA.empty_table(), dtype_backend=dtype_backend)
    assert empty["$permissions"].dtype == object


# ---------------------------------------------------------------------------------------------
# The published write → read table


def test_dtype_table_names_the_common_dtypes() -> None:
    written = {row.written for row in DTYPE_TABLE}
    assert {"int64", "Int64", "float64", "bool", "boolean", "str", "string", "object"} <= written
    assert {"category", "datetime64[ns]", "datetime64[ns, UTC]"} <= written


def expected_read_back(value: Any) -> Any:
    if isinstance(value, datetime):
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return pd.Timestamp(value)
    return value


@pytest.mark.parametrize("row", DTYPE_TABLE, ids=lambda row: f"{row.written}-{row.column_type}")
def test_dtype_table_round_trip(row: Any) -> None:
    series = pd.Series(list(row.example), dtype=row.written, name="c")
    assert str(series.dtype) == row.written
    spec = new_column("c", series)
    assert spec.type_name == row.column_type
    model = service_model(spec.definition())
    assert column_arrow_type(model) == row.arrow

    rows = [
        {"$id": f"r{i}", "$sequence": str(i), **values}
        for i, values in enumerate(frame_to_rows(series.to_frame()))
    ]
    body = json.dumps({"total": len(rows), "rows": rows}).encode()
    _, batch = decode_page(body, arrow_schema([model]))
    assert batch.schema.field("c").type == row.arrow
    read = to_pandas(batch)["c"]
    assert str(read.dtype) == row.read
    assert str(to_pandas(batch.slice(0, 0))["c"].dtype) == row.read
    assert to_pandas(batch, dtype_backend="pyarrow")["c"].dtype == pd.ArrowDtype(row.arrow)
    expected = [expected_read_back(value) for value in row.example]
    assert [None if v is pd.NA or v is pd.NaT or v != v else v for v in read.tolist()] == [
        None if v is None else v for v in expected
    ]


# ---------------------------------------------------------------------------------------------
# pandas → service columns


def test_column_definitions_from_a_frame() -> None:
    frame = pd.DataFrame(
        {
            "$id": ["a", "b"],
            "n": pd.array([1, None], dtype="Int64"),
            "x": [0.5, np.nan],
            "ok": [True, False],
            "name": ["short", "y" * 300],
            "kind": pd.Categorical(["a", "b"]),
            "when": pd.Series([pd.Timestamp("2020-01-01", tz="Europe/Oslo"), pd.NaT]),
            "tags": [["p", "q"], None],
            "ns": [[1, 2], []],
            "empty": [None, None],
        }
    )
    assert column_definitions(frame) == [
        {"key": "n", "type": "integer", "required": False, "array": False},
        {"key": "x", "type": "float", "required": False, "array": False},
        {"key": "ok", "type": "boolean", "required": False, "array": False},
        {"key": "name", "type": "string", "required": False, "array": False, "size": 512},
        {"key": "kind", "type": "enum", "required": False, "array": False, "elements": ["a", "b"]},
        {"key": "when", "type": "datetime", "required": False, "array": False},
        {"key": "tags", "type": "string", "required": False, "array": True, "size": 255},
        {"key": "ns", "type": "integer", "required": False, "array": True},
        {"key": "empty", "type": "string", "required": False, "array": False, "size": 255},
    ]
    assert dict(propose_frame(frame)) == {
        "n": "integer",
        "x": "float",
        "ok": "boolean",
        "name": "string(512)",
        "kind": "enum",
        "when": "datetime",
        "tags": "string(255)[]",
        "ns": "integer[]",
        "empty": "string(255)",
    }


@pytest.mark.parametrize(
    ("blocks", "proposed", "reason"),
    [
        ([[1, 2], [1.5, None]], "float", "numbers with a fraction and nulls"),
        ([[1, 2], [3.0, None]], "integer", "whole numbers and nulls"),
        ([[None, None], [7, 8]], "integer", "integers and nulls"),
        ([["2024-01-05"], [datetime(2024, 1, 6)]], "datetime", "ISO dates as text"),
        ([["2024-01-05"], ["soon"]], "string(255)", "text"),
        ([[True], [1], ["x" * 300]], "string(512)", "mixed values (boolean, integer, text)"),
        ([[["a"]], [["b", "c" * 300]]], "string(512)[]", "lists of text"),
    ],
)
def test_a_files_blocks_are_judged_together(
    blocks: list[list[Any]], proposed: str, reason: str
) -> None:
    batches = [pa.record_batch({"c": values}) for values in blocks]
    proposal = propose_batches(batches[0].schema, batches, source="blocks")
    assert (proposal["c"], proposal.reasons["c"]) == (proposed, reason)


def test_a_column_missing_from_some_blocks_holds_nulls_there() -> None:
    batches = [pa.record_batch({"a": [1.0]}), pa.record_batch({"a": [2.0], "b": [3.0]})]
    proposal = propose_batches(batches[0].schema, batches, source="lines")
    assert dict(proposal) == {"a": "float", "b": "integer"}
    assert proposal.reasons == {
        "a": "whole numbers as floats, no nulls",
        "b": "whole numbers and nulls",
    }


def test_categories_that_cannot_be_an_enum() -> None:
    many = pd.Series(pd.Categorical([f"v{i}" for i in range(101)]))
    assert new_column("c", many) == new_column("c", many.astype(str))
    assert new_column("c", many).type == "string"
    long = pd.Series(pd.Categorical(["z" * 256]))
    assert new_column("c", long).type == "string"
    assert new_column("c", pd.Series(pd.Categorical([1, 2]))).type == "integer"


def test_string_sizes() -> None:
    assert [string_size(n) for n in (0, 255, 256, 257, 1000, 70000)] == [
        255,
        255,
        256,
        512,
        1024,
        131072,
    ]
    assert new_column("c", pd.Series(["é" * 256])).size == 256  # characters, not bytes


def test_unstorable_columns_raise_type_error() -> None:
    with pytest.raises(TypeError, match="'mixed'"):
        new_column("mixed", pd.Series(["a", 1], dtype=object))
    with pytest.raises(TypeError, match="'gap'"):
        new_column("gap", pd.Series(pd.to_timedelta([1, 2], unit="s")))


def test_mapping_form() -> None:
    assert column_definitions({"age": "integer", "bio": "string(1000)", "mail": "email[]"}) == [
        {"key": "age", "type": "integer", "required": False, "array": False},
        {"key": "bio", "type": "string", "required": False, "array": False, "size": 1000},
        {"key": "mail", "type": "email", "required": False, "array": True},
    ]
    assert parse_column_type("s", "string").size == 255
    for bad in ("enum", "bogus", "integer(5)", "string[](3)"):
        with pytest.raises(ValueError, match="'c'"):
            parse_column_type("c", bad)


# ---------------------------------------------------------------------------------------------
# Inference across pages


def test_inference_null_first_then_settles() -> None:
    inferred = InferredSchema()
    first: list[dict[str, Any]] = [{"$id": "a", "$tableId": "t", "n": None, "tags": []}]
    assert inferred.add_rows(first)
    assert inferred.schema.field("n").type == pa.null()
    assert inferred.schema.field("tags").type == pa.list_(pa.null())
    first_batch = inferred.conform(pa.RecordBatch.from_pylist([{"n": None, "tags": []}]))
    assert inferred.add_rows([{"n": 3, "tags": ["x"]}])
    assert inferred.schema.names == [*SYSTEM_SCHEMA.names, "n", "tags"]
    assert inferred.schema.field("n").type == pa.int64()
    assert inferred.schema.field("tags").type == pa.list_(pa.string())
    assert not inferred.add_rows([{"n": None}, {"tags": None}])  # nulls change nothing
    again = inferred.conform(first_batch)
    assert again.schema == inferred.schema
    assert again.column("n").to_pylist() == [None] and again.column("tags").to_pylist() == [[]]


def test_inference_widens_int_to_float_either_order() -> None:
    one: list[dict[str, Any]] = [{"x": 1}]
    half: list[dict[str, Any]] = [{"x": 0.5}]
    for pages in ([one, half], [half, one]):
        inferred = InferredSchema()
        batches = []
        for page in pages:
            inferred.add_rows(page)
            batches.append(pa.RecordBatch.from_pylist(page))
        assert inferred.schema.field("x").type == pa.float64()
        values = pa.Table.from_batches([inferred.conform(b) for b in batches]).column("x")
        assert values.sort().to_pylist() == [0.5, 1.0]


def test_inference_of_datetimes_and_their_widening_to_text() -> None:
    inferred = InferredSchema()
    page = [{"when": "2020-10-15T06:38:00.000+02:00"}]
    inferred.add_rows(page)
    assert inferred.schema.field("when").type == TIMESTAMP
    early = inferred.conform(pa.RecordBatch.from_pylist(page))
    assert early.column("when").to_pylist() == [datetime(2020, 10, 15, 4, 38, tzinfo=UTC)]
    assert inferred.add_rows([{"when": "soon"}])
    assert inferred.schema.field("when").type == pa.string()
    assert inferred.conform(early).column("when").to_pylist() == ["2020-10-15T04:38:00.000+00:00"]
    assert not inferred.add_rows([{"when": "2021-01-01T00:00:00.000+00:00"}])


def test_inference_conflicts_and_objects() -> None:
    inferred = InferredSchema()
    inferred.add_rows([{"flag": True, "rel": {"$id": "x"}}])
    assert "rel" not in inferred.schema.names
    with pytest.raises(RowDecodeError, match="'flag'") as caught:
        inferred.add_rows([{"flag": 1}])
    assert caught.value.column == "flag"
    with pytest.raises(RowDecodeError, match="'mixed'"):
        inferred.add_rows([{"mixed": 1}, {"mixed": "a"}])


def test_inference_keeps_order_of_first_appearance_and_fills_missing_columns() -> None:
    inferred = InferredSchema()
    inferred.add_rows([{"b": 1}, {"a": "x"}])
    inferred.add_rows([{"c": True}])
    assert inferred.schema.names[-3:] == ["b", "a", "c"]
    batch = inferred.conform(pa.RecordBatch.from_pylist([{"c": False}]))
    assert batch.to_pylist()[0] | {} == {
        **dict.fromkeys(SYSTEM_SCHEMA.names),
        "b": None,
        "a": None,
        "c": False,
    }


# ---------------------------------------------------------------------------------------------
# Python values → JSON


@pytest.mark.parametrize(
    "missing", [None, float("nan"), np.float32("nan"), pd.NA, pd.NaT, np.datetime64("NaT")]
)
def test_missing_values_become_null(missing: Any) -> None:
    assert to_json_value(missing) is None


def test_scalars_become_python_json_values() -> None:
    converted = [to_json_value(v) for v in (np.int32(3), np.float32(0.5), np.bool_(True), "é")]
    assert converted == [3, 0.5, True, "é"]
    assert [type(v) for v in converted] == [int, float, bool, str]
    assert to_json_value([np.int64(1), None, (2.5, pd.NA)]) == [1, None, [2.5, None]]
    assert to_json_value(np.array(["a", "b"])) == ["a", "b"]
    assert to_json_value({"k": np.nan}) == {"k": None}
    with pytest.raises(ValueError, match="infinity"):
        to_json_value(float("-inf"))
    with pytest.raises(TypeError, match="timedelta"):
        to_json_value(timedelta(1))


def test_datetimes_become_utc_text_with_milliseconds() -> None:
    aware = datetime(2020, 10, 15, 8, 38, 0, 123999, tzinfo=OSLO)
    assert to_json_value(aware) == "2020-10-15T06:38:00.123+00:00"
    assert to_json_value(datetime(2020, 10, 15, 6, 38)) == "2020-10-15T06:38:00.000+00:00"
    stamp = pd.Timestamp("2020-10-15 06:38:00.123456789", tz="America/New_York")
    assert to_json_value(stamp) == "2020-10-15T10:38:00.123+00:00"
    assert to_json_value(np.datetime64("2020-10-15T06:38:00.5")) == "2020-10-15T06:38:00.500+00:00"
    assert to_json_value(date(999, 1, 2)) == "0999-01-02T00:00:00.000+00:00"
    assert format_service_datetime(datetime(1969, 12, 31, 23, 59, 59, 999999)) == (
        "1969-12-31T23:59:59.999+00:00"
    )


def test_frame_to_rows_column_kinds() -> None:
    frame = pd.DataFrame(
        {
            "n": pd.array([1, None], dtype="Int64"),
            "x": [np.nan, 2.0],
            "s": pd.Series(["a", None], dtype="str"),
            "when": pd.Series([pd.Timestamp("2020-10-15 08:38:00.1239", tz="Europe/Oslo"), pd.NaT]),
            "naive": pd.Series([pd.Timestamp("2020-10-15 06:38"), pd.NaT]),
            "kind": pd.Categorical(["b", None]),
            "tags": [["a"], None],
            "mixed": pd.Series([1, "a"], dtype=object),
            "days": [date(2020, 1, 2), None],
        }
    )
    frame.index = pd.Index([10, 20])  # the index is not written
    assert frame_to_rows(frame) == [
        {
            "n": 1,
            "x": None,
            "s": "a",
            "when": "2020-10-15T06:38:00.123+00:00",
            "naive": "2020-10-15T06:38:00.000+00:00",
            "kind": "b",
            "tags": ["a"],
            "mixed": 1,
            "days": "2020-01-02T00:00:00.000+00:00",
        },
        dict.fromkeys(["n", "s", "when", "naive", "kind", "tags", "days"])
        | {"x": 2.0, "mixed": "a"},
    ]
    assert frame_to_rows(frame.iloc[:0]) == []
    with pytest.raises(ValueError, match="'x'"):
        frame_to_rows(pd.DataFrame({"x": [1.0, np.inf]}))
    with pytest.raises(TypeError, match="'gap'"):
        frame_to_rows(pd.DataFrame({"gap": pd.to_timedelta([1], unit="s")}))


frames_columns = {
    "int": (st.integers(-(2**63), 2**63 - 1), "int64", False),
    "Int": (st.integers(-(2**63), 2**63 - 1), "Int64", True),
    "float": (st.floats(allow_infinity=False), "float64", True),
    "bool": (st.booleans(), "bool", False),
    "boolean": (st.booleans(), "boolean", True),
    "str": (st.text(max_size=5), "str", True),
    "naive": (st.datetimes(min_value=datetime(1700, 1, 1), max_value=datetime(2200, 1, 1)),
              "datetime64[ns]", True),
    "aware": (st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                           timezones=st.sampled_from([UTC, OSLO])), "datetime64[us, UTC]", True),
    "category": (st.sampled_from(["p", "q", "r"]), "category", True),
    "lists": (st.lists(st.integers(-5, 5), max_size=2), "object", True),
}  # fmt: skip


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    length = draw(st.integers(0, 6))
    data = {}
    for name, (values, dtype, nullable) in frames_columns.items():
        items = st.none() | values if nullable else values
        data[name] = pd.Series(draw(st.lists(items, min_size=length, max_size=length)), dtype=dtype)
    return pd.DataFrame(data)


@given(frames())
def test_frame_to_rows_equals_value_by_value_conversion(frame: pd.DataFrame) -> None:
    expected = [
        {key: to_json_value(frame[key].array[i]) for key in frame.columns}
        for i in range(len(frame))
    ]
    assert frame_to_rows(frame) == expected


_SECONDS_IN_PYTHON = (-62_135_510_400, 253_402_128_000)  # 0001-01-02 to 9999-12-30 (UTC)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@given(st.data(), st.sampled_from(list(_PER_SECOND)), st.sampled_from([None, "UTC", "Europe/Oslo"]))
def test_arrow_timestamps_are_written_as_each_value_alone_would_be(
    data: st.DataObject, unit: str, zone: str | None
) -> None:
    scale = _PER_SECOND[unit]
    low, high = (max(bound * scale, 1 - 2**63) for bound in _SECONDS_IN_PYTHON)  # pandas: NaT
    high = min(high, 2**63 - 1)
    if unit == "ns":
        # The oracle goes through pandas Timestamps, which overflow within hours of their
        # bounds once a zone is applied (Oslo's local time, or pandas 2.3 localizing to UTC
        # an hour below the maximum). A day's margin; the bounds themselves are written by
        # `test_timestamp_bounds_are_written_as_pandas_holds_them`.
        low, high = low + 86_400 * scale, high - 86_400 * scale
    values = data.draw(st.lists(st.none() | st.integers(low, high), max_size=8))
    column = pa.array(values, pa.int64()).cast(pa.timestamp(unit, zone))
    assert [row["t"] for row in batch_to_rows(pa.record_batch({"t": column}))] == [
        to_json_value(stamp.as_py()) if stamp.is_valid else None for stamp in column
    ]


@pytest.mark.parametrize("zone", [None, "UTC", "Europe/Oslo"])
def test_timestamp_bounds_are_written_as_pandas_holds_them(zone: str | None) -> None:
    bounds = [pd.Timestamp.min.value, None, pd.Timestamp.max.value]
    column = pa.array(bounds, pa.int64()).cast(pa.timestamp("ns", zone))
    assert [row["t"] for row in batch_to_rows(pa.record_batch({"t": column}))] == [
        "1677-09-21T00:12:43.145+00:00", None, "2262-04-11T23:47:16.854+00:00",
    ]  # fmt: skip


def test_dates_and_years_before_one_are_written_in_the_service_form() -> None:
    days = pa.array([date(1, 1, 1), None, date(999, 12, 31), date(2020, 2, 29)])
    before_one = pa.array([-62_135_596_800_001, -62_198_755_200_000] * 2, pa.timestamp("ms"))
    rows = batch_to_rows(pa.record_batch([days, before_one], names=["d", "t"]))
    assert [row["d"] for row in rows] == [
        "0001-01-01T00:00:00.000+00:00", None, "0999-12-31T00:00:00.000+00:00",
        "2020-02-29T00:00:00.000+00:00",
    ]  # fmt: skip
    assert [row["t"] for row in rows[:2]] == [
        "0000-12-31T23:59:59.999+00:00", "-0001-01-01T00:00:00.000+00:00",
    ]  # fmt: skip


@pytest.mark.parametrize("unit", ["ms", "us"])
def test_a_time_in_a_zones_repeated_hour_is_written(unit: str) -> None:
    # 02:11 on 1965-09-19 came twice in Oslo; flooring in local time raised ArrowInvalid.
    utc = pa.array(["1965-09-19T00:11:28.216"]).cast(pa.timestamp(unit))
    column = utc.cast(pa.timestamp(unit, "Europe/Oslo"))
    assert batch_to_rows(pa.record_batch({"t": column})) == [{"t": "1965-09-19T00:11:28.216+00:00"}]


@pytest.mark.parametrize("collecting", [True, False])
def test_list_columns_convert_and_leave_the_garbage_collector_as_it_was(collecting: bool) -> None:
    data = pa.table({"tags": pa.array([["a", "b"], None, []], pa.list_(pa.string()))})
    if not collecting:
        gc.disable()
    try:
        frame = to_pandas(data)
        assert gc.isenabled() is collecting
    finally:
        gc.enable()
    assert frame["tags"].tolist() == [["a", "b"], None, []]
