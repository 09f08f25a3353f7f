"""Service column types, Arrow types and pandas dtypes: one table, both ways.

Reading: the column models of a table (``GET .../tables/{t}`` → ``columns``, legacy
``attributes``) give the Arrow schema of its row batches (`arrow_schema`); `to_pandas` turns
batches into a DataFrame with pandas 3 dtypes. When the columns cannot be read (session users),
`InferredSchema` settles the schema page by page.

Writing: a DataFrame's dtypes give the columns to create (`column_definitions`), and
`frame_to_rows` turns its rows into the JSON values the service stores.

`DTYPE_TABLE` is the published write → read table; a test holds the code to it.

>>> arrow_schema([{"key": "age", "type": "integer", "array": False}]).field("age").type
DataType(int64)
"""

from __future__ import annotations

import gc
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._exceptions import FilterError, RowDecodeError
from ._ids import ID_RULE, is_valid_id
from ._timefmt import format_service_datetime

log = logging.getLogger(__name__)

TIMESTAMP = pa.timestamp("ms", tz="UTC")
"""The Arrow type of every service datetime: milliseconds, UTC."""

SYSTEM_SCHEMA = pa.schema(
    [
        ("$id", pa.string()),
        ("$sequence", pa.int64()),
        ("$createdAt", TIMESTAMP),
        ("$updatedAt", TIMESTAMP),
        ("$permissions", pa.list_(pa.string())),
    ]
)
"""The internal fields every row batch starts with (the service returns them even with a select)."""

CONSTANT_FIELDS = frozenset({"$tableId", "$databaseId", "$collectionId"})
"""Internal fields that are the same in every row of a table; row batches leave them out."""

ARROW_BY_COLUMN_TYPE: Mapping[str, pa.DataType] = {
    **dict.fromkeys(
        ("string", "varchar", "text", "mediumtext", "longtext", "email", "ip", "url", "enum"),
        pa.string(),
    ),
    "integer": pa.int64(),
    "float": pa.float64(),
    "boolean": pa.bool_(),
    "datetime": TIMESTAMP,
}
"""Service column type (as `column_type_name` names it) → Arrow type of one value."""

_FORMATTED_STRING_TYPES = frozenset({"email", "ip", "url", "enum"})
_UNUSABLE_STATUSES = frozenset({"failed", "stuck", "deleting"})

DEFAULT_STRING_SIZE = 255
"""Size of a string column created for short texts; longer texts get the next power of two."""
MAX_STRING_SIZE = 1_073_741_824
MAX_ENUM_ELEMENTS = 100
MAX_ENUM_ELEMENT_LENGTH = 255

_WIRE_DATETIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$")
_WIRE_DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%S+00:00"  # Arrow's %S carries the milliseconds


# ---------------------------------------------------------------------------------------------
# Column models → Arrow


def column_type_name(column: Mapping[str, Any]) -> str:
    """The create-endpoint name of a column model's type.

    >>> column_type_name({"type": "string", "format": "email"})
    'email'
    >>> column_type_name({"type": "double"})
    'float'
    """
    kind = str(column.get("type"))
    if kind == "string" and column.get("format") in _FORMATTED_STRING_TYPES:
        return str(column["format"])
    return "float" if kind == "double" else kind


def column_arrow_type(column: Mapping[str, Any]) -> pa.DataType | None:
    """The Arrow type of a column model's values, or None for types frameport does not read
    (relationships, geometry)."""
    value_type = ARROW_BY_COLUMN_TYPE.get(column_type_name(column))
    if value_type is None:
        return None
    return pa.list_(value_type) if column.get("array") else value_type


def arrow_schema(
    columns: Iterable[Mapping[str, Any]], *, select: Sequence[str] | None = None
) -> pa.Schema:
    """The Arrow schema of a row batch: `SYSTEM_SCHEMA`, then the table's columns.

    Columns that are failed, stuck or being deleted, and columns of types frameport does not
    read, are left out (logged at DEBUG). With `select`, only the selected columns follow the
    internal fields, in the order selected; ``"*"`` selects all. Selecting an internal field
    is allowed and changes nothing; selecting an unknown column raises `FilterError`.

    >>> arrow_schema([{"key": "tags", "type": "string", "array": True}]).names
    ['$id', '$sequence', '$createdAt', '$updatedAt', '$permissions', 'tags']
    """
    fields: dict[str, pa.DataType] = {}
    known: set[str] = set()
    for column in columns:
        key = str(column["key"])
        known.add(key)
        if column.get("status") in _UNUSABLE_STATUSES:
            log.debug("column %r left out: status %s", key, column.get("status"))
            continue
        value_type = column_arrow_type(column)
        if value_type is None:
            log.debug("column %r left out: type %r is not read", key, column.get("type"))
            continue
        fields[key] = value_type
    if select is not None and "*" not in select:
        chosen: dict[str, pa.DataType] = {}
        for key in select:
            if key in SYSTEM_SCHEMA.names or key in CONSTANT_FIELDS:
                continue
            if key not in known:
                raise FilterError(f"select names an unknown column {key!r}", text=key)
            if key in fields:
                chosen[key] = fields[key]
        fields = chosen
    return pa.schema([*SYSTEM_SCHEMA, *(pa.field(k, t) for k, t in fields.items())])


# ---------------------------------------------------------------------------------------------
# Arrow → pandas

_STR_DTYPE = pd.StringDtype(na_value=np.nan)  # pandas 3's default "str"
_NULLABLE_BY_ARROW: Mapping[pa.DataType, Any] = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.uint8(): pd.UInt8Dtype(),
    pa.uint16(): pd.UInt16Dtype(),
    pa.uint32(): pd.UInt32Dtype(),
    pa.uint64(): pd.UInt64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
    pa.string(): _STR_DTYPE,
    pa.large_string(): _STR_DTYPE,
    pa.string_view(): _STR_DTYPE,
}


def to_pandas(
    data: pa.Table | pa.RecordBatch,
    *,
    dtype_backend: Literal["pyarrow"] | None = None,
    memory_pool: pa.MemoryPool | None = None,
) -> pd.DataFrame:
    """A DataFrame with frameport's read dtypes, the same for empty data.

    Default backend: integers → ``Int64`` (nulls stay integers), booleans → ``boolean``,
    floats → ``float64``, strings → ``str``, datetimes → ``datetime64[ms, UTC]``, arrays →
    ``object`` holding Python lists (None for null). ``dtype_backend="pyarrow"``: an
    ``ArrowDtype`` for every column. Arrow's allocations come from `memory_pool` (default:
    Arrow's default pool).

    >>> to_pandas(pa.table({"n": pa.array([1, None])})).dtypes["n"]
    Int64Dtype()
    """
    if dtype_backend == "pyarrow":
        return data.to_pandas(types_mapper=pd.ArrowDtype, memory_pool=memory_pool)
    if dtype_backend is not None:
        raise ValueError(f"dtype_backend must be None or 'pyarrow', not {dtype_backend!r}")
    lists = [
        f.name for f in data.schema if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)
    ]
    # List columns are converted once, straight to Python lists (not to numpy arrays first).
    plain = data.drop_columns(lists)
    frame = plain.to_pandas(types_mapper=_NULLABLE_BY_ARROW.get, memory_pool=memory_pool)
    if len(frame.index) != data.num_rows:  # every column was a list
        frame = pd.DataFrame(index=pd.RangeIndex(data.num_rows))
    for name in lists:
        with _cyclic_gc_paused():
            values = data.column(name).to_pylist()
        frame.insert(
            data.schema.get_field_index(name),
            name,
            pd.Series(values, index=frame.index, dtype=object),
        )
    return frame


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """The cyclic garbage collector held off, while building one Python list per row: lists of
    plain values form no cycles, and their sheer number would set off full collections, each
    scanning every object of the process (most of the cost of a list column)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# ---------------------------------------------------------------------------------------------
# The published write → read table


class DtypeMapping(NamedTuple):
    """One row of the write → read table: a DataFrame column written with dtype `written`
    (holding values like `example`) creates a `column_type` column and reads back as `arrow`,
    then as pandas dtype `read`."""

    written: str
    example: tuple[Any, ...]
    column_type: str
    arrow: pa.DataType
    read: str


DTYPE_TABLE: tuple[DtypeMapping, ...] = (
    DtypeMapping("int64", (1, -2), "integer", pa.int64(), "Int64"),
    DtypeMapping("int32", (1, -2), "integer", pa.int64(), "Int64"),
    DtypeMapping("Int64", (1, None), "integer", pa.int64(), "Int64"),
    DtypeMapping("float64", (1.5, None), "float", pa.float64(), "float64"),
    DtypeMapping("float32", (1.5, None), "float", pa.float64(), "float64"),
    DtypeMapping("Float64", (1.5, None), "float", pa.float64(), "float64"),
    DtypeMapping("bool", (True, False), "boolean", pa.bool_(), "boolean"),
    DtypeMapping("boolean", (True, None), "boolean", pa.bool_(), "boolean"),
    DtypeMapping("str", ("a", None), "string", pa.string(), "str"),
    DtypeMapping("string", ("a", None), "string", pa.string(), "str"),
    DtypeMapping("object", ("a", None), "string", pa.string(), "str"),
    DtypeMapping("category", ("a", "b", None), "enum", pa.string(), "str"),
    DtypeMapping(
        "datetime64[ns]",
        (datetime(2020, 10, 15, 6, 38), None),
        "datetime",
        TIMESTAMP,
        "datetime64[ms, UTC]",
    ),
    DtypeMapping(
        "datetime64[ns, UTC]",
        (datetime(2020, 10, 15, 6, 38, tzinfo=UTC), None),
        "datetime",
        TIMESTAMP,
        "datetime64[ms, UTC]",
    ),
    DtypeMapping(
        "datetime64[us, Europe/Oslo]",
        (datetime(2020, 10, 15, 6, 38, tzinfo=UTC), None),
        "datetime",
        TIMESTAMP,
        "datetime64[ms, UTC]",
    ),
    DtypeMapping("object", (["a", "b"], None), "string[]", pa.list_(pa.string()), "object"),
    DtypeMapping("object", ([1, 2], []), "integer[]", pa.list_(pa.int64()), "object"),
)
"""What a DataFrame column becomes in the service, and how it reads back (default backend).
Datetimes are stored in UTC with millisecond precision; naive ones are taken as UTC."""


def dtype_table_markdown() -> str:
    """DTYPE_TABLE as a Markdown table (the documentation writes it with this at build time)."""
    lines = [
        "| pandas dtype written | service column | Arrow type | pandas dtype read |",
        "|---|---|---|---|",
    ]
    for row in DTYPE_TABLE:
        lines.append(f"| `{row.written}` | `{row.column_type}` | `{row.arrow}` | `{row.read}` |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# pandas → service columns


@dataclass(frozen=True)
class NewColumn:
    """A service column to create: the create-endpoint type, array flag, string size, enum
    elements.

    >>> NewColumn("name", "string", size=255).definition()
    {'key': 'name', 'type': 'string', 'required': False, 'array': False, 'size': 255}
    """

    key: str
    type: str
    array: bool = False
    size: int | None = None
    elements: tuple[str, ...] | None = None

    @property
    def type_name(self) -> str:
        """The mapping-form name: ``"integer"``, ``"string[]"``."""
        return self.type + ("[]" if self.array else "")

    def definition(self) -> dict[str, Any]:
        """The JSON body the create-column endpoint (and ``columns`` of create-table) takes."""
        body: dict[str, Any] = {
            "key": self.key,
            "type": self.type,
            "required": False,
            "array": self.array,
        }
        if self.size is not None:
            body["size"] = self.size
        if self.elements is not None:
            body["elements"] = list(self.elements)
        return body


_COLUMN_TYPE_BY_ARROW_KIND: tuple[tuple[Callable[[pa.DataType], bool], str], ...] = (
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_integer, "integer"),
    (pa.types.is_floating, "float"),
    (pa.types.is_decimal, "float"),
    (pa.types.is_timestamp, "datetime"),
    (pa.types.is_date, "datetime"),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), "string"),
    (pa.types.is_null, "string"),
)
_SIZED_TYPES = frozenset({"string", "varchar"})
_KEY_CHARACTER = re.compile(r"[^a-zA-Z0-9._-]+")
SERVICE_FIELDS = frozenset(SYSTEM_SCHEMA.names) | CONSTANT_FIELDS
"""The service's own fields a frame read back holds: never created as columns."""
_TYPE_NAME = re.compile(r"^(?P<type>[a-z]+)(?:\((?P<size>\d+)\))?(?P<array>\[\])?$")


def string_size(longest: int) -> int:
    """The size of a string column for texts up to `longest` characters: 255, or the next
    power of two above that.

    >>> string_size(10), string_size(300)
    (255, 512)
    """
    if longest <= DEFAULT_STRING_SIZE:
        return DEFAULT_STRING_SIZE
    return min(1 << (longest - 1).bit_length(), MAX_STRING_SIZE)


def new_column(key: str, series: pd.Series) -> NewColumn:
    """The service column for a DataFrame column, from its dtype (object columns: from the
    values).

    Integers → integer, floats → float, booleans → boolean, strings (``str``, ``string``,
    object of str) → string sized by `string_size`, datetimes (naive or tz-aware) → datetime,
    category of strings → enum with the categories as elements (more than 100, or longer than
    255 characters: string; other categories: the categories' own type), object of lists →
    an array of the lists' element type. Anything else raises TypeError.

    >>> new_column("n", pd.Series([1, 2])).type_name
    'integer'
    """
    try:
        values = pa.array(series, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"column {key!r} holds values of mixed or unsupported types") from exc
    array = pa.types.is_list(values.type) or pa.types.is_large_list(values.type)
    if array:
        values = values.flatten()
    if pa.types.is_dictionary(values.type):
        categories = values.dictionary
        if _fits_enum(categories) and not array:
            return NewColumn(key, "enum", elements=tuple(categories.to_pylist()))
        values = values.dictionary_decode()
    kind = next((name for test, name in _COLUMN_TYPE_BY_ARROW_KIND if test(values.type)), None)
    if kind is None:
        raise TypeError(f"column {key!r} has dtype {series.dtype}, which the service cannot store")
    size = string_size(_longest_text(values)) if kind == "string" else None
    return NewColumn(key, kind, array=array, size=size)


def _fits_enum(categories: pa.Array) -> bool:
    if not (pa.types.is_string(categories.type) or pa.types.is_large_string(categories.type)):
        return False
    return 0 < len(categories) <= MAX_ENUM_ELEMENTS and (
        _longest_text(categories) <= MAX_ENUM_ELEMENT_LENGTH
    )


def _longest_text(values: pa.Array) -> int:
    if pa.types.is_null(values.type) or len(values) == 0:
        return 0
    longest = pc.max(pc.utf8_length(values)).as_py()
    return int(longest or 0)


def check_column_keys(keys: Iterable[object]) -> None:
    """Raise ValueError naming the first of `keys` (DataFrame column names) that cannot be a
    column key: 1 to 36 characters of ``a-z A-Z 0-9 . - _``, not starting with ``.``, ``-``
    or ``_``; ``$`` names are the service's own fields (`SERVICE_FIELDS`) only.

    >>> check_column_keys(["age", "$id"])
    >>> check_column_keys(["has space"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The column name 'has space' cannot be a column key: ...
    """
    for key in keys:
        name = str(key)
        if name in SERVICE_FIELDS or is_valid_id(name):
            continue
        if name.startswith("$"):
            problem = (
                "names starting with '$' are the service's own fields "
                f"({', '.join(sorted(SERVICE_FIELDS))})"
            )
        else:
            problem = f"a key has {ID_RULE}"
        raise ValueError(
            f"The column name {name!r} cannot be a column key: {problem}. Rename it first, "
            f"e.g. df.rename(columns={{{name!r}: {_suggested_key(name)!r}}})."
        )


def _suggested_key(name: str) -> str:
    """A valid key close to `name`: other characters as ``_``, leading ``.-_`` dropped."""
    key = _KEY_CHARACTER.sub("_", name).lstrip("._-")[:36].rstrip("._-")
    return key or "column"


def column_types(frame: pd.DataFrame) -> dict[str, str]:
    """The mapping form: ``{column: type name}``, arrays suffixed ``[]``; the service's own
    fields (`SERVICE_FIELDS`) are left out, other names that cannot be keys raise ValueError.

    >>> column_types(pd.DataFrame({"n": [1], "s": ["a"]}))
    {'n': 'integer', 's': 'string'}
    """
    return {spec.key: spec.type_name for spec in _new_columns_of_frame(frame)}


def _new_columns_of_frame(frame: pd.DataFrame) -> list[NewColumn]:
    keys = [str(key) for key in frame.columns]
    check_column_keys(keys)
    return [
        new_column(key, frame.iloc[:, i]) for i, key in enumerate(keys) if key not in SERVICE_FIELDS
    ]


def parse_column_type(key: str, type_name: str) -> NewColumn:
    """The column for a mapping-form type name: ``"integer"``, ``"string(1000)"``,
    ``"email[]"``. Strings without a size get 255. ``"enum"`` needs elements, so it is only
    made from a category column.

    >>> parse_column_type("tags", "string[]").definition()["array"]
    True
    """
    match = _TYPE_NAME.match(type_name.strip())
    kind = str(match["type"]) if match else ""
    if match is None or kind not in ARROW_BY_COLUMN_TYPE or kind == "enum":
        raise ValueError(
            f"column {key!r}: unknown type {type_name!r}; use one of "
            f"{sorted(set(ARROW_BY_COLUMN_TYPE) - {'enum'})}, optionally with (size) and []"
        )
    if match["size"] is not None and kind not in _SIZED_TYPES:
        raise ValueError(f"column {key!r}: type {kind!r} takes no size")
    size = int(match["size"]) if match["size"] else DEFAULT_STRING_SIZE
    return NewColumn(
        key, kind, array=match["array"] is not None, size=size if kind in _SIZED_TYPES else None
    )


def column_definitions(schema: pd.DataFrame | Mapping[str, str]) -> list[dict[str, Any]]:
    """The create-column JSON bodies for a DataFrame's columns or a ``{column: type name}``
    mapping; every column optional (``"required": false``). The service's own fields
    (`SERVICE_FIELDS`) are left out; other names that cannot be keys raise ValueError
    (`check_column_keys`).

    >>> column_definitions({"age": "integer"})
    [{'key': 'age', 'type': 'integer', 'required': False, 'array': False}]
    """
    if isinstance(schema, pd.DataFrame):
        specs = _new_columns_of_frame(schema)
    else:
        check_column_keys(schema)
        specs = [
            parse_column_type(key, name)
            for key, name in schema.items()
            if str(key) not in SERVICE_FIELDS
        ]
    return [spec.definition() for spec in specs]


# ---------------------------------------------------------------------------------------------
# Python / pandas values → the JSON the service stores


def to_json_value(value: Any) -> Any:
    """One Python value as the JSON value the service stores.

    None, NaN, ``pd.NA`` and ``NaT`` → None; numpy scalars → Python scalars; datetimes →
    `format_service_datetime` text (a `date` is its midnight, UTC); lists, tuples and arrays →
    lists. Infinite floats raise ValueError (JSON has no infinity).

    >>> to_json_value(np.float64("nan")) is None, to_json_value(np.int32(3))
    (True, 3)
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isnan(number):
            return None
        if math.isinf(number):
            raise ValueError(f"cannot write {number}: JSON has no infinity")
        return number
    if isinstance(value, str):
        return value
    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
        return None if value is pd.NaT else format_service_datetime(value)
    if isinstance(value, datetime):
        return format_service_datetime(value)
    if isinstance(value, date):
        return format_service_datetime(datetime(value.year, value.month, value.day))
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray | pa.Array):
        return [to_json_value(v) for v in value]
    raise TypeError(f"cannot write a {type(value).__name__} value to the service: {value!r}")


def frame_to_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a DataFrame as JSON-ready dicts (`to_json_value` rules), converted column
    by column through Arrow; only object columns of mixed types go value by value. The index
    is not written.

    >>> frame_to_rows(pd.DataFrame({"n": pd.array([1, None], dtype="Int64")}))
    [{'n': 1}, {'n': None}]
    """
    keys = [str(key) for key in frame.columns]
    columns = [_json_column(key, frame.iloc[:, i]) for i, key in enumerate(keys)]
    return [dict(zip(keys, values, strict=True)) for values in zip(*columns, strict=True)]


def _json_column(key: str, series: pd.Series) -> list[Any]:
    try:
        try:
            return _jsonable(pa.array(series, from_pandas=True)).to_pylist()
        except (pa.ArrowException, TypeError, OverflowError, _NotJsonable):
            return [to_json_value(value) for value in series.array]
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"column {key!r}: {exc}") from exc


class _NotJsonable(Exception):
    """An Arrow array with values `_jsonable` leaves to `to_json_value`."""


def _jsonable(values: pa.Array) -> pa.Array:
    """`values` with datetimes as service text, so that `to_pylist` gives JSON values."""
    kind = values.type
    if pa.types.is_dictionary(kind):
        return _jsonable(values.dictionary_decode())
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return _format_timestamps(values)
    if pa.types.is_floating(kind) and pc.any(pc.is_inf(values)).as_py():
        raise ValueError("cannot write an infinite float: JSON has no infinity")
    if pa.types.is_decimal(kind):
        return values.cast(pa.float64())
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _with_list_values(values, _jsonable(values.values))
    if pa.types.is_duration(kind) or pa.types.is_binary(kind) or pa.types.is_struct(kind):
        raise _NotJsonable
    return values


def _format_timestamps(values: pa.Array) -> pa.Array:
    if pa.types.is_date(values.type):
        values = values.cast(pa.timestamp("ms"))
    if values.type.tz is None:
        values = pc.assume_timezone(values, "UTC")
    floored = pc.floor_temporal(values, unit="millisecond").cast(TIMESTAMP)
    return pc.strftime(floored, format=_WIRE_DATETIME_FORMAT)


def _with_list_values(lists: pa.Array, values: pa.Array) -> pa.Array:
    """`lists` with its child values replaced by `values` (same length, same offsets)."""
    builder = pa.LargeListArray if pa.types.is_large_list(lists.type) else pa.ListArray
    return builder.from_arrays(lists.offsets, values, mask=lists.is_null())


# ---------------------------------------------------------------------------------------------
# Inference without access to the table's columns


def infer_batch(rows: Sequence[Mapping[str, Any]]) -> pa.RecordBatch:
    """The non-internal columns of decoded JSON rows as Arrow, types inferred from the values
    (a column absent from a row is null there; columns in order of first appearance).

    Raises `RowDecodeError` naming the column when its values mix types Arrow cannot unify
    (for example numbers and strings).
    """
    keys: dict[str, None] = {}
    for row in rows:
        keys.update(dict.fromkeys(k for k in row if not k.startswith("$")))
    arrays = []
    for key in keys:
        try:
            arrays.append(pa.array([row.get(key) for row in rows]))
        except (pa.ArrowException, OverflowError) as exc:
            message = f"column {key!r}: values of mixed types ({exc})"
            raise RowDecodeError(message, column=key) from exc
    return pa.RecordBatch.from_arrays(arrays, names=list(keys))


class InferredSchema:
    """The Arrow schema of a table whose column models cannot be read, settled page by page.

    Feed it every page (`add_batch` with a batch decoded with inferred types, or `add_rows`
    with decoded JSON rows), then `conform` each page's batch to the settled `schema`; batches
    conformed earlier must be conformed again when an add reports a change. Rules:

    1. The internal fields of `SYSTEM_SCHEMA` keep their fixed types; `CONSTANT_FIELDS` and
       other ``$`` fields are left out.
    2. Columns follow `SYSTEM_SCHEMA` in order of first appearance; a column missing from a
       page is null there.
    3. A column seen only as null has type ``null``, and the first page with a value settles
       it; an array seen only empty is ``list<null>`` until an element appears.
    4. Integers and floats make float64 (one page of ints, another of floats: float64).
    5. A string column whose values all have the service's datetime form
       (``2020-10-15T06:38:00.000+00:00``) is a UTC millisecond timestamp; once a value of
       another form appears it becomes string, and earlier timestamps are written back in
       that form.
    6. Arrays combine element types by the same rules.
    7. Any other mix (booleans with numbers, numbers with strings, arrays with scalars)
       raises `RowDecodeError` naming the column: the service's columns have one type.
    8. Columns holding JSON objects (expanded relationships) are left out.

    >>> inferred = InferredSchema()
    >>> [inferred.add_rows([{"n": value}]) for value in (None, 1, 1.5)]
    [True, True, True]
    >>> inferred.schema.field("n").type
    DataType(double)
    """

    def __init__(self) -> None:
        self._columns: dict[str, pa.DataType] = {}

    @property
    def schema(self) -> pa.Schema:
        """The schema settled so far: `SYSTEM_SCHEMA`, then the columns seen."""
        return pa.schema([*SYSTEM_SCHEMA, *(pa.field(k, t) for k, t in self._columns.items())])

    def add_batch(self, batch: pa.RecordBatch) -> bool:
        """Take in one page's batch; True when the schema changed."""
        changed = False
        for name, values in zip(batch.schema.names, batch.columns, strict=True):
            if name.startswith("$"):
                continue
            seen = _observed_type(values)
            if seen is None:
                log.debug("column %r left out: type %s is not read", name, values.type)
                continue
            current = self._columns.get(name)
            merged = seen if current is None else _merge_types(current, seen, name)
            if merged != current:
                self._columns[name] = merged
                changed = True
        return changed

    def add_rows(self, rows: Sequence[Mapping[str, Any]]) -> bool:
        """Take in one page's decoded JSON rows; True when the schema changed."""
        return self.add_batch(infer_batch(rows))

    def conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """`batch` cast to the current `schema`: missing columns null, types widened."""
        schema = self.schema
        arrays = []
        for field in schema:
            position = batch.schema.get_field_index(field.name)
            if position < 0:
                arrays.append(pa.nulls(batch.num_rows, field.type))
            else:
                arrays.append(_conform_array(batch.column(position), field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _observed_type(values: pa.Array) -> pa.DataType | None:
    kind = values.type
    if pa.types.is_null(kind) or pa.types.is_boolean(kind):
        return kind
    if pa.types.is_integer(kind):
        return pa.int64()
    if pa.types.is_floating(kind):
        return pa.float64()
    if pa.types.is_timestamp(kind):
        return TIMESTAMP
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if values.null_count == len(values):
            return pa.null()
        return TIMESTAMP if _all_wire_datetimes(values) else pa.string()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        element = _observed_type(values.flatten())
        return None if element is None else pa.list_(element)
    return None


def _all_wire_datetimes(values: pa.Array) -> bool:
    return bool(pc.all(pc.match_substring_regex(values, _WIRE_DATETIME.pattern)).as_py())


def _merge_types(current: pa.DataType, seen: pa.DataType, name: str) -> pa.DataType:
    if current == seen or pa.types.is_null(seen):
        return current
    if pa.types.is_null(current):
        return seen
    pair = {current, seen}
    if pair == {pa.int64(), pa.float64()}:
        return pa.float64()
    if pair == {TIMESTAMP, pa.string()}:
        return pa.string()
    if pa.types.is_list(current) and pa.types.is_list(seen):
        return pa.list_(_merge_types(current.value_type, seen.value_type, name))
    raise RowDecodeError(f"column {name!r} holds both {current} and {seen} values", column=name)


def _conform_array(values: pa.Array, target: pa.DataType) -> pa.Array:
    if values.type == target:
        return values
    if pa.types.is_string(target) and pa.types.is_timestamp(values.type):
        return _format_timestamps(values)
    if pa.types.is_list(target) and pa.types.is_list(values.type):
        return _with_list_values(values, _conform_array(values.values, target.value_type))
    return values.cast(target)
