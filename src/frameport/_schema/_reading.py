"""Service column types → Arrow types → pandas dtypes, and the published dtype table."""

from __future__ import annotations

import gc
import logging
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.extensions import ExtensionDtype

from .._core._memory import release_free_memory
from .._core._sync import warn_caller
from .._exceptions import unknown_column

log = logging.getLogger(__name__)

ArrowArray: TypeAlias = "pa.Array[pa.Scalar[pa.DataType]]"
"""An Arrow array of values of any one type."""

TIMESTAMP = pa.timestamp("ms", tz="UTC")
"""The Arrow type of every service datetime: milliseconds, UTC."""

POINT = pa.list_(pa.float64())
"""The Arrow type of a point column's value: ``[x, y]``."""

_SYSTEM_FIELDS: list[tuple[str, pa.DataType]] = [
    ("$id", pa.string()),
    ("$sequence", pa.int64()),
    ("$createdAt", TIMESTAMP),
    ("$updatedAt", TIMESTAMP),
    ("$permissions", pa.list_(pa.string())),
]
SYSTEM_SCHEMA = pa.schema(_SYSTEM_FIELDS)
"""The internal fields every row batch starts with (the service returns them even with a select)."""

PERMISSIONS = "$permissions"
"""The field of a row's (or a file's) permission strings. A DataFrame holds them as tuples:
pandas hashes and compares those (``drop_duplicates``, ``nunique``, ``groupby``, ``merge``),
where Python lists and Arrow list columns raise."""

CONSTANT_FIELDS = frozenset({"$tableId", "$databaseId", "$collectionId"})
"""Internal fields that are the same in every row of a table; row batches leave them out."""

ARROW_BY_COLUMN_TYPE: Mapping[str, pa.DataType] = {
    **dict.fromkeys(
        ("string", "varchar", "text", "mediumtext", "longtext", "email", "ip", "url", "enum"),
        pa.string(),
    ),
    "integer": pa.int64(),
    "bigint": pa.int64(),
    "float": pa.float64(),
    "boolean": pa.bool_(),
    "datetime": TIMESTAMP,
    "point": POINT,
    "line": pa.list_(POINT),
    "polygon": pa.list_(pa.list_(POINT)),
}
"""Service column type (as `column_type_name` names it) → Arrow type of one value."""

SPATIAL_COLUMN_TYPES = frozenset({"point", "line", "polygon"})
"""Geometries: a point `[x, y]`, a line (list of points), a polygon (list of rings)."""

_FORMATTED_STRING_TYPES = frozenset({"email", "ip", "url", "enum"})
_UNUSABLE_STATUSES = frozenset({"failed", "stuck", "deleting"})

DEFAULT_STRING_SIZE = 255
"""Size of a string column created for short texts; longer texts get the next power of two."""
MAX_STRING_SIZE = 1_073_741_824
MAX_ENUM_ELEMENTS = 100
MAX_ENUM_ELEMENT_LENGTH = 255

WIRE_DATETIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$")
WIRE_DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%S+00:00"  # Arrow's %S carries the milliseconds


# Columns of types frameport does not map (relationships, and any type the service adds): read
# as their JSON text, never dropped, with one warning per read naming them. Such a column's
# field is a string field marked with `JSON_TEXT_METADATA`; page decoding writes each value as
# ``json.dumps(value)`` (an ID as ``'"abc"'``, a list as ``'["a"]'``).

JSON_TEXT_METADATA = {b"frameport.json_text": b"1"}


class UnmappedColumnWarning(UserWarning):
    """A table has columns of types frameport does not map; they are read as JSON text."""


def json_text_field(key: str) -> pa.Field[pa.DataType]:
    """
    >>> field = json_text_field("author")
    >>> is_json_text(field), field.type
    (True, DataType(string))
    """
    return pa.field(key, pa.string(), metadata=JSON_TEXT_METADATA)


def is_json_text(field: pa.Field[pa.DataType]) -> bool:
    metadata = field.metadata or {}
    return metadata.get(b"frameport.json_text") == b"1"


def json_text_columns(schema: pa.Schema) -> list[str]:
    """The names of the fields read as JSON text."""
    return [field.name for field in schema if is_json_text(field)]


def warn_unmapped(schema: pa.Schema, types: dict[str, str]) -> None:
    """One warning naming every JSON-text column of `schema` and its service type."""
    names = json_text_columns(schema)
    if names:
        listed = ", ".join(f"{name!r} ({types.get(name, 'unknown')})" for name in names)
        warn_caller(
            f"columns read as JSON text, since frameport does not map their types: {listed}. "
            "Parse them with json.loads, or leave them out with select().",
            UnmappedColumnWarning,
        )


def column_type_name(column: Mapping[str, object]) -> str:
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


def column_arrow_type(column: Mapping[str, object]) -> pa.DataType | None:
    """The Arrow type of a column model's values, or None for types frameport does not map
    (relationships; they are read as JSON text)."""
    value_type = ARROW_BY_COLUMN_TYPE.get(column_type_name(column))
    if value_type is None:
        return None
    return pa.list_(value_type) if column.get("array") else value_type


def arrow_schema(
    columns: Iterable[Mapping[str, object]], *, select: Sequence[str] | None = None
) -> pa.Schema:
    """The Arrow schema of a row batch: `SYSTEM_SCHEMA`, then the table's columns.

    Columns that are failed, stuck or being deleted are left out (logged at DEBUG); columns of
    types frameport does not map are read as JSON text (`json_text_field`). With `select`,
    only the selected columns follow the internal fields, in the order selected; ``"*"``
    selects all. Selecting an internal field is allowed and changes nothing; selecting an
    unknown column raises `FilterError`.

    >>> arrow_schema([{"key": "tags", "type": "string", "array": True}]).names
    ['$id', '$sequence', '$createdAt', '$updatedAt', '$permissions', 'tags']
    """
    fields: dict[str, pa.DataType | pa.Field[pa.DataType]] = {}
    known: set[str] = set()
    for column in columns:
        key = str(column["key"])
        known.add(key)
        if column.get("status") in _UNUSABLE_STATUSES:
            log.debug("column %r left out: status %s", key, column.get("status"))
            continue
        value_type = column_arrow_type(column)
        fields[key] = json_text_field(key) if value_type is None else value_type
    if select is not None and "*" not in select:
        chosen: dict[str, pa.DataType | pa.Field[pa.DataType]] = {}
        for key in select:
            if key in SYSTEM_SCHEMA.names or key in CONSTANT_FIELDS:
                continue
            if key not in known:
                raise unknown_column(f"select names an unknown column {key!r}", key, known)
            if key in fields:
                chosen[key] = fields[key]
        fields = chosen
    return pa.schema(
        [
            *SYSTEM_SCHEMA,
            *(t if isinstance(t, pa.Field) else pa.field(k, t) for k, t in fields.items()),
        ]
    )


STR_DTYPE = pd.StringDtype(na_value=np.nan)
"""pandas 3's default string dtype, "str" (missing values are NaN), built the same way in
pandas 2.3, where the name "str" still means ``object``."""
_NULLABLE_BY_ARROW: Mapping[pa.DataType, ExtensionDtype] = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.uint8(): pd.UInt8Dtype(),
    pa.uint16(): pd.UInt16Dtype(),
    pa.uint32(): pd.UInt32Dtype(),
    pa.uint64(): pd.UInt64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
    pa.string(): STR_DTYPE,
    pa.large_string(): STR_DTYPE,
    pa.string_view(): STR_DTYPE,
}


DtypeBackend = Literal["pyarrow"] | None
"""The dtypes of a read's DataFrame: frameport's own (None), or ``ArrowDtype`` for every column
(``"pyarrow"``)."""


def to_pandas(
    data: pa.Table | pa.RecordBatch,
    *,
    dtype_backend: DtypeBackend = None,
    memory_pool: pa.MemoryPool | None = None,
) -> pd.DataFrame:
    """A DataFrame with frameport's read dtypes, the same for empty data.

    Default backend: integers → ``Int64`` (nulls stay integers), booleans → ``boolean``,
    floats → ``float64``, strings → ``str``, datetimes → ``datetime64[ms, UTC]``, arrays →
    ``object`` holding Python lists (None for null). ``dtype_backend="pyarrow"``: an
    ``ArrowDtype`` for every column. With either backend, ``$permissions`` is an ``object``
    column of tuples of strings (see `PERMISSIONS`). Arrow's allocations come from
    `memory_pool` (default: Arrow's default pool).

    >>> to_pandas(pa.table({"n": pa.array([1, None])})).dtypes["n"]
    Int64Dtype()
    """
    mapper = _types_mapper(dtype_backend)
    lists = [field.name for field in data.schema if _as_python_values(field, dtype_backend)]
    frame = data.drop_columns(lists).to_pandas(types_mapper=mapper, memory_pool=memory_pool)
    if len(frame.index) != data.num_rows:  # every column was a list
        frame = pd.DataFrame(index=pd.RangeIndex(data.num_rows))
    for name in lists:
        series = _python_list_series(name, data.column(name), index=frame.index)
        frame.insert(data.schema.get_field_index(name), name, series)
    return frame


def batches_to_pandas(
    batches: list[pa.RecordBatch],
    schema: pa.Schema,
    *,
    dtype_backend: DtypeBackend = None,
    memory_pool: pa.MemoryPool | None = None,
) -> pd.DataFrame:
    """`to_pandas` of the table `batches` make (of `schema`), taking the batches over: the
    list is emptied, and the table is converted column by column, each column's Arrow memory
    given back as soon as it is converted. A read's peak memory is then about the frame's
    rather than Arrow's and pandas' together (``str`` columns share Arrow's memory anyway;
    numbers and lists do not)."""
    table = pa.Table.from_batches(batches, schema=schema)
    batches.clear()
    mapper = _types_mapper(dtype_backend)
    rows = table.num_rows
    columns: dict[str, pd.Series[Any]] = {}
    release_free_memory()  # what the read itself freed
    for field in schema:
        column = table.select([0])
        table = table.remove_column(0)  # `column` holds the only reference
        if _as_python_values(field, dtype_backend):
            columns[field.name] = _python_list_series(field.name, column.column(0))
        else:
            converted = column.to_pandas(
                types_mapper=mapper, memory_pool=memory_pool, self_destruct=True
            )
            columns[field.name] = converted[field.name]
        del column  # emptied by self_destruct: unusable
        release_free_memory()
    return pd.DataFrame(columns, index=pd.RangeIndex(rows), copy=False)


def _types_mapper(dtype_backend: DtypeBackend) -> Callable[[pa.DataType], ExtensionDtype | None]:
    if dtype_backend == "pyarrow":
        return pd.ArrowDtype
    if dtype_backend is not None:
        raise ValueError(f"dtype_backend must be None or 'pyarrow', not {dtype_backend!r}")
    return _NULLABLE_BY_ARROW.get


def _is_list(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def _as_python_values(field: pa.Field[pa.DataType], dtype_backend: DtypeBackend) -> bool:
    """Whether the column `field` becomes an ``object`` column of Python values: a list
    column with the default backend, and ``$permissions`` with either."""
    if not _is_list(field.type):
        return False
    return dtype_backend != "pyarrow" or field.name == PERMISSIONS


def _python_list_series(
    name: str, column: pa.ChunkedArray[Any] | pa.Array[Any], index: pd.Index | None = None
) -> pd.Series[Any]:
    """The list column `name` as an ``object`` Series of Python lists (of tuples for
    ``$permissions``, one per distinct list: `_shared_tuples`), converted once, straight
    (not through numpy arrays first)."""
    if name == PERMISSIONS:
        tuples = _shared_tuples(column)
        if tuples is not None:
            return pd.Series(tuples, index=index, dtype=object, name=name, copy=False)
    with _cyclic_gc_paused():
        values = column.to_pylist()
        if name == PERMISSIONS:
            values = [None if value is None else tuple(value) for value in values]
    return pd.Series(values, index=index, dtype=object, name=name)


_JOINER = "\x00"


def _shared_tuples(column: pa.ChunkedArray[Any] | pa.Array[Any]) -> npt.NDArray[np.object_] | None:
    """The string lists of `column` as an ``object`` array of tuples, one tuple object per
    distinct list (the rows of a table mostly share their permissions): each list is joined
    into one string, and the distinct ones are split back. None when joining could make two
    lists alike (an element that is empty, null, or holds the joiner)."""
    values: Any = pc.list_flatten(column)
    shortest = pc.min(pc.binary_length(values)).as_py()  # None when no list has any
    if values.null_count or shortest == 0:
        return None
    if pc.any(pc.match_substring(values, _JOINER)).as_py():
        return None
    joined: Any = pc.binary_join(column, _JOINER)
    distinct: Any = pc.unique(joined)
    shared = np.empty(len(distinct), dtype=object)
    for position, text in enumerate(distinct.to_pylist()):  # one by one: numpy would unpack
        shared[position] = None if text is None else tuple(text.split(_JOINER)) if text else ()
    positions = pc.index_in(joined, value_set=distinct).to_numpy()
    rows: npt.NDArray[np.object_] = shared[positions]
    return rows


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


class TypeRead(NamedTuple):
    """How a column of a service type no pandas dtype creates reads back: create it by name
    (``create_table(..., schema={"c": "point"})``), write values like `example`."""

    column_type: str
    example: object
    arrow: pa.DataType
    read: str


TYPE_READS: tuple[TypeRead, ...] = (
    TypeRead("bigint", 2**62, pa.int64(), "Int64"),
    TypeRead("point", [10.5, 59.9], POINT, "object"),
    TypeRead("line", [[0.0, 0.0], [1.0, 1.0]], pa.list_(POINT), "object"),
    TypeRead(
        "polygon",
        [[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]],
        pa.list_(pa.list_(POINT)),
        "object",
    ),
    TypeRead("relationship (any unmapped type)", None, pa.string(), "str"),
)
"""Service types read with these Arrow types; unmapped types come as their JSON text."""


def type_reads_markdown() -> str:
    """TYPE_READS as a Markdown table (the documentation writes it with this at build time)."""
    header = ("service column", "Arrow type", "pandas dtype read")
    return _markdown(header, [(row.column_type, row.arrow, row.read) for row in TYPE_READS])


def system_fields_markdown(shown: Collection[str]) -> str:
    """The service's fields every row starts with (`SYSTEM_SCHEMA`) as a Markdown table: the
    Arrow type, the pandas dtype read (default backend), what one value is in the frame, and
    whether a read shows it by default (those in `shown`) or only when asked for (the
    documentation writes it with this)."""
    sample = {
        "$id": "r1",
        "$sequence": 1,
        "$createdAt": datetime(2020, 10, 15, 6, 38, tzinfo=UTC),
        "$updatedAt": datetime(2020, 10, 15, 6, 38, tzinfo=UTC),
        PERMISSIONS: ['read("any")'],
    }
    frame = to_pandas(pa.Table.from_pylist([sample], schema=SYSTEM_SCHEMA))
    header = ("field", "Arrow type", "pandas dtype read", "a value", "read by default")
    rows = [
        (
            field.name,
            field.type,
            frame.dtypes[field.name],
            repr(frame[field.name].tolist()[0]),
            "yes" if field.name in shown else "with system=",
        )
        for field in SYSTEM_SCHEMA
    ]
    return _markdown(header, rows)


def dtype_table_markdown() -> str:
    """DTYPE_TABLE as a Markdown table (the documentation writes it with this at build time)."""
    header = ("pandas dtype written", "service column", "Arrow type", "pandas dtype read")
    rows = [(row.written, row.column_type, row.arrow, row.read) for row in DTYPE_TABLE]
    return _markdown(header, rows)


def _markdown(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table with every cell as code."""
    lines = [f"| {' | '.join(header)} |", f"|{'---|' * len(header)}"]
    lines.extend("| " + " | ".join(f"`{cell}`" for cell in row) + " |" for row in rows)
    return "\n".join(lines)
