"""The Arrow schema of rows whose column models cannot be read, inferred page by page."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from .._exceptions import RowDecodeError
from ._reading import SYSTEM_SCHEMA, TIMESTAMP, WIRE_DATETIME
from ._writing import format_timestamps, with_list_values

if TYPE_CHECKING:
    from ._writing import ListArray

log = logging.getLogger(__name__)


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


def _observed_type(values: pa.Array[Any]) -> pa.DataType | None:
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
        element = _observed_type(cast("ListArray", values).flatten())
        return None if element is None else pa.list_(element)
    return None


def _all_wire_datetimes(values: pa.Array[Any]) -> bool:
    return bool(pc.all(pc.match_substring_regex(values, WIRE_DATETIME.pattern)).as_py())


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


def _conform_array(values: pa.Array[Any], target: pa.DataType) -> pa.Array[Any]:
    if values.type == target:
        return values
    if pa.types.is_string(target) and pa.types.is_timestamp(values.type):
        return format_timestamps(values)
    if pa.types.is_list(target) and pa.types.is_list(values.type):
        lists = cast("ListArray", values)
        return with_list_values(lists, _conform_array(lists.values, target.value_type))
    return values.cast(target)
