"""pandas → service columns to create, and DataFrame rows → the JSON values the service stores."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._core._ids import ID_RULE, is_valid_id
from .._core._json import python_number
from .._core._timefmt import format_service_datetime
from ._reading import (
    ARROW_BY_COLUMN_TYPE,
    CONSTANT_FIELDS,
    DEFAULT_STRING_SIZE,
    MAX_ENUM_ELEMENT_LENGTH,
    MAX_ENUM_ELEMENTS,
    MAX_STRING_SIZE,
    SPATIAL_COLUMN_TYPES,
    SYSTEM_SCHEMA,
    TIMESTAMP,
    WIRE_DATETIME_FORMAT,
)

if TYPE_CHECKING:
    ListArray: TypeAlias = pa.ListArray[Any] | pa.LargeListArray[Any]
    """An Arrow list array, either offset width."""


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
    return arrow_column(key, series_values(key, series), dtype=str(series.dtype))


def series_values(key: str, series: pd.Series) -> pa.Array[Any]:
    """The values of the DataFrame column `key` as Arrow (NaN as null); TypeError when they
    mix types Arrow cannot hold in one array."""
    try:
        values: pa.Array[Any] = pa.array(series, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"column {key!r} holds values of mixed or unsupported types") from exc
    return values


def arrow_column(key: str, values: pa.Array[Any], *, dtype: str) -> NewColumn:
    """The service column for Arrow `values` (the rules of `new_column`); `dtype` names their
    type in the error for a type the service cannot store."""
    array = pa.types.is_list(values.type) or pa.types.is_large_list(values.type)
    if array:
        values = cast("ListArray", values).flatten()
    if pa.types.is_dictionary(values.type):
        encoded = cast("pa.DictionaryArray[Any, Any]", values)
        if _fits_enum(encoded.dictionary) and not array:
            return NewColumn(key, "enum", elements=tuple(map(str, encoded.dictionary.to_pylist())))
        values = encoded.dictionary_decode()
    kind = next((name for test, name in _COLUMN_TYPE_BY_ARROW_KIND if test(values.type)), None)
    if kind is None:
        raise TypeError(f"column {key!r} has dtype {dtype}, which the service cannot store")
    size = string_size(_longest_text(values)) if kind == "string" else None
    return NewColumn(key, kind, array=array, size=size)


def _fits_enum(categories: pa.Array[Any]) -> bool:
    if not (pa.types.is_string(categories.type) or pa.types.is_large_string(categories.type)):
        return False
    return 0 < len(categories) <= MAX_ENUM_ELEMENTS and (
        _longest_text(categories) <= MAX_ENUM_ELEMENT_LENGTH
    )


def _longest_text(values: pa.Array[Any]) -> int:
    if pa.types.is_null(values.type) or len(values) == 0:
        return 0
    text = cast("pa.StringArray | pa.LargeStringArray", values)
    longest = pc.max(pc.utf8_length(text)).as_py()
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
    if match["array"] is not None and kind in SPATIAL_COLUMN_TYPES:
        raise ValueError(f"column {key!r}: {kind} columns cannot be arrays; drop the []")
    size = int(match["size"]) if match["size"] else DEFAULT_STRING_SIZE
    return NewColumn(
        key, kind, array=match["array"] is not None, size=size if kind in _SIZED_TYPES else None
    )


def to_json_value(value: object) -> Any:
    """One Python value as the JSON value the service stores.

    None, NaN, ``pd.NA`` and ``NaT`` → None; numpy scalars → Python scalars; datetimes →
    `format_service_datetime` text (a `date` is its midnight, UTC); lists, tuples and arrays →
    lists. Infinite floats raise ValueError (JSON has no infinity).

    >>> to_json_value(np.float64("nan")) is None, to_json_value(np.int32(3))
    (True, 3)
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    number = python_number(value)
    if isinstance(number, float) and math.isnan(number):
        return None
    if isinstance(number, float) and math.isinf(number):
        raise ValueError(f"cannot write {number}: JSON has no infinity")
    if number is not None:
        return number
    if isinstance(value, str):
        return value
    if isinstance(value, np.datetime64):
        return None if np.isnat(value) else format_service_datetime(pd.Timestamp(value))
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


def batch_to_rows(batch: pa.RecordBatch | pa.Table) -> list[dict[str, Any]]:
    """The rows of an Arrow batch as JSON-ready dicts, column by column (datetimes as the
    service's text, lists as lists); the values Arrow cannot hand over as JSON go through
    `to_json_value`.

    >>> batch_to_rows(pa.record_batch({"n": [1, None]}))
    [{'n': 1}, {'n': None}]
    """
    keys = batch.schema.names
    columns = [_arrow_json_column(key, batch.column(i)) for i, key in enumerate(keys)]
    return [dict(zip(keys, values, strict=True)) for values in zip(*columns, strict=True)]


def _arrow_json_column(key: str, values: pa.Array[Any] | pa.ChunkedArray[Any]) -> list[Any]:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.offset:  # a slice: list offsets are rebuilt from an unsliced copy
        values = pa.concat_arrays([values])
    try:
        try:
            return _jsonable(values).to_pylist()
        except _NotJsonable:
            return [to_json_value(value) for value in values.to_pylist()]
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"column {key!r}: {exc}") from exc


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


def _jsonable(values: pa.Array[Any]) -> pa.Array[Any]:
    """`values` with datetimes as service text, so that `to_pylist` gives JSON values."""
    kind = values.type
    if pa.types.is_dictionary(kind):
        return _jsonable(cast("pa.DictionaryArray[Any, Any]", values).dictionary_decode())
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return format_timestamps(values)
    if pa.types.is_floating(kind) and pc.any(pc.is_inf(values)).as_py():
        raise ValueError("cannot write an infinite float: JSON has no infinity")
    if pa.types.is_decimal(kind):
        return values.cast(pa.float64())
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        lists = cast("ListArray", values)
        return with_list_values(lists, _jsonable(lists.values))
    if pa.types.is_duration(kind) or pa.types.is_binary(kind) or pa.types.is_struct(kind):
        raise _NotJsonable
    return values


_YEAR_ZERO_MS = int(np.datetime64("0000-01-01", "ms").astype(np.int64))
_UTC_SUFFIX = "+00:00"
_PER_MILLISECOND = {"ms": 1, "us": 1_000, "ns": 1_000_000}


def format_timestamps(values: pa.Array[Any]) -> pa.StringArray:
    """Dates and timestamps as the service's text: UTC (naive means UTC), milliseconds,
    floored."""
    if pa.types.is_date(values.type) or values.type.unit == "s":
        values = values.cast(pa.timestamp("ms"))  # checked: fails rather than overflows
    per_millisecond = _PER_MILLISECOND[values.type.unit]
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    millis = values.cast(pa.int64()).fill_null(0).to_numpy() // per_millisecond
    if len(millis) and millis.min() < _YEAR_ZERO_MS:  # NumPy writes years before 0 otherwise
        floored = cast("pa.TimestampArray[Any, Any]", pa.array(millis, TIMESTAMP, mask=mask))
        return pc.strftime(floored, format=WIRE_DATETIME_FORMAT)
    # NumPy writes the text five times as fast as `pc.strftime`, the same for years 0 on.
    text = np.datetime_as_string(millis.view("datetime64[ms]"), unit="ms")
    digits = pa.array(text, pa.string(), mask=mask)
    joined = pc.binary_join_element_wise(digits, _UTC_SUFFIX, "")  # type: ignore[call-overload]
    return cast("pa.StringArray", joined)


def with_list_values(lists: ListArray, values: pa.Array[Any]) -> pa.Array[Any]:
    """`lists` with its child values replaced by `values` (same length, same offsets)."""
    if isinstance(lists, pa.LargeListArray):
        return pa.LargeListArray.from_arrays(lists.offsets, values, mask=lists.is_null())
    return pa.ListArray.from_arrays(lists.offsets, values, mask=lists.is_null())
