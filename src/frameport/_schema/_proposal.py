"""The columns a frame's, an Arrow table's or a file's values call for, each with its reason.

A column's type follows its values' type (`new_column`'s rules), with two exceptions for
what files and `pd.read_csv` make of values:

* numbers that are all whole, with nulls among them, are an integer column (pandas reads an
  integer column with nulls as float64, and writes it as ``19.0``);
* text that is all ISO dates or datetimes (``2024-01-05``, ``2024-01-05T10:30:00Z``) is a
  datetime column.

"Whole" and "ISO date" mean what a write converts (`converts_to`), so the rows that made
the proposal load into it. Values read in batches (a file's blocks) are judged together:
integers and floats make a float column, text and datetimes a text column, other mixes a
text column that says so.

>>> proposal = propose_frame(pd.DataFrame({"age": [19.0, None]}))
>>> proposal["age"], proposal.reasons["age"]
('integer', 'whole numbers and nulls')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import pyarrow as pa

from ._reading import DEFAULT_STRING_SIZE, MAX_ENUM_ELEMENTS
from ._validation import converts_to
from ._writing import (
    SERVICE_FIELDS,
    NewColumn,
    arrow_column,
    check_column_keys,
    parse_column_type,
    series_values,
)

EDITED = "set by hand"
"""The reason of a column whose type was set on the proposal."""


class SchemaProposal(MutableMapping[str, str]):
    """The columns proposed for a table: ``{column: type name}`` with the reason for each.

    `frameport.infer_schema` makes it from a DataFrame, an Arrow table or a file, before
    anything is created; ``create_table(schema=frame)`` creates the same columns. Printed, it
    shows each column, what its values are and the type they call for. Edit it like a dict
    (``proposal["age"] = "float"``, ``del proposal["notes"]``; the type names of
    ``create_table``'s mapping form) and pass it as ``create_table(schema=proposal)``.

    >>> fp.infer_schema(pd.read_csv("people.csv"))                     # doctest: +SKIP
    SchemaProposal of the CSV file people.csv, 2 columns; create_table(schema=...) takes it:
      age     whole numbers and nulls → integer
      joined  ISO dates as text       → datetime
    """

    def __init__(self, columns: Iterable[tuple[NewColumn, str]], *, source: str) -> None:
        self._columns: dict[str, NewColumn] = {}
        self._reasons: dict[str, str] = {}
        for column, reason in columns:
            self._columns[column.key] = column
            self._reasons[column.key] = reason
        self._source = source

    @property
    def source(self) -> str:
        """What the proposal was made from (``"a DataFrame"``, ``"the CSV file p.csv"``)."""
        return self._source

    @property
    def reasons(self) -> dict[str, str]:
        """``{column: why}``: what the column's values are (``"whole numbers and nulls"``),
        or ``"set by hand"`` for a type set on the proposal."""
        return dict(self._reasons)

    def definitions(self) -> list[dict[str, Any]]:
        """The columns as the JSON bodies the service's create-column endpoint takes."""
        return [column.definition() for column in self._columns.values()]

    def __getitem__(self, key: str) -> str:
        return _type_text(self._columns[key])

    def __setitem__(self, key: str, type_name: str) -> None:
        check_column_keys([key])
        self._columns[key] = parse_column_type(key, type_name)
        self._reasons[key] = EDITED

    def __delitem__(self, key: str) -> None:
        del self._columns[key]
        del self._reasons[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def lines(self) -> str:
        """One line per column: ``age  whole numbers and nulls → integer``."""
        width = max((len(key) for key in self._columns), default=0)
        why = max((len(reason) for reason in self._reasons.values()), default=0)
        return "\n".join(
            f"  {key:<{width}}  {self._reasons[key]:<{why}} → {self[key]}" for key in self
        )

    def __repr__(self) -> str:
        count = f"{len(self)} column{'s' if len(self) != 1 else ''}"
        head = f"SchemaProposal of {self._source}, {count}; create_table(schema=...) takes it:"
        return f"{head}\n{self.lines()}" if self else head


def _type_text(column: NewColumn) -> str:
    """The mapping-form name of `column`, its size included (``"string(512)"``)."""
    size = "" if column.size is None else f"({column.size})"
    return f"{column.type}{size}{'[]' if column.array else ''}"


@dataclass(frozen=True)
class _Seen:
    """What a column's values were, in the batches seen so far."""

    column: NewColumn  # the column their type calls for
    nulls: bool  # some value is null
    empty: bool  # every value is null, or there are none
    whole: bool  # every value converts to an integer
    dates: bool  # every value converts to a datetime
    mixed: tuple[str, ...] = ()  # the types of columns whose values are mixed


def _seen(key: str, values: pa.Array[Any], *, dtype: str) -> _Seen:
    column = arrow_column(key, values, dtype=dtype)
    empty = values.null_count == len(values)
    scalar = not empty and not column.array
    return _Seen(
        column,
        nulls=values.null_count > 0,
        empty=empty,
        whole=scalar and column.type in ("integer", "float") and converts_to(values, "integer"),
        dates=scalar and column.type in ("datetime", "string") and converts_to(values, "datetime"),
    )


def _merged(before: _Seen, now: _Seen) -> _Seen:
    if before.empty or now.empty:
        kept = now if before.empty else before
        return replace(kept, nulls=before.nulls or now.nulls)
    pair = {before.column.type_name, now.column.type_name}
    if len(pair) == 1:
        column, mixed = _wider(before.column, now.column), before.mixed
    elif pair in ({"integer", "float"}, {"datetime", "string"}):  # float; string
        column = now.column if now.column.type in ("float", "string") else before.column
        mixed = before.mixed or now.mixed
    else:
        sizes = [c.size or 0 for c in (before.column, now.column)]
        column = NewColumn(before.column.key, "string", size=max(DEFAULT_STRING_SIZE, *sizes))
        mixed = tuple(sorted({*before.mixed, *now.mixed, *pair} - {"string"}))
    return _Seen(
        column,
        nulls=before.nulls or now.nulls,
        empty=False,
        whole=before.whole and now.whole,
        dates=before.dates and now.dates,
        mixed=mixed,
    )


def _wider(before: NewColumn, now: NewColumn) -> NewColumn:
    """One column for values of one type seen in two batches: the larger size, every enum
    element (more than the service allows: text)."""
    if before.elements is not None and now.elements is not None:
        elements = tuple(dict.fromkeys([*before.elements, *now.elements]))
        if len(elements) <= MAX_ENUM_ELEMENTS:
            return replace(before, elements=elements)
        longest = max(len(element) for element in elements)
        return NewColumn(before.key, "string", size=max(DEFAULT_STRING_SIZE, longest))
    if before.size is None or now.size is None:
        return before
    return replace(before, size=max(before.size, now.size))


def _decided(seen: _Seen) -> tuple[NewColumn, str]:
    """The column `seen` calls for, and why."""
    column = seen.column
    nulls = " and nulls" if seen.nulls else ""
    if seen.empty:
        return column, "only nulls" if seen.nulls else "no values"
    if seen.mixed:
        return column, f"mixed values ({', '.join(seen.mixed)}, text){nulls}"
    if column.array:
        return column, f"lists of {_VALUES.get(column.type, column.type + ' values')}{nulls}"
    if column.type == "float" and seen.whole:
        if seen.nulls:
            return replace(column, type="integer"), "whole numbers and nulls"
        return column, "whole numbers as floats, no nulls"
    if column.type == "string" and seen.dates:
        return NewColumn(column.key, "datetime"), f"ISO dates as text{nulls}"
    if column.type == "enum":
        return column, f"{len(column.elements or ())} categories{nulls}"
    return column, f"{_VALUES.get(column.type, column.type + ' values')}{nulls}"


_VALUES = {
    "integer": "integers",
    "float": "numbers with a fraction",
    "boolean": "true/false values",
    "datetime": "datetimes",
    "string": "text",
}


def propose_frame(frame: pd.DataFrame) -> SchemaProposal:
    """The proposal for a pandas DataFrame's columns (the service's own fields left out)."""
    keys = [str(key) for key in frame.columns]
    check_column_keys(keys)
    seen = [
        _seen(key, series_values(key, frame.iloc[:, i]), dtype=str(frame.iloc[:, i].dtype))
        for i, key in enumerate(keys)
        if key not in SERVICE_FIELDS
    ]
    return SchemaProposal(map(_decided, seen), source="a DataFrame")


def propose_batches(
    schema: pa.Schema, batches: Iterable[pa.RecordBatch], *, source: str
) -> SchemaProposal:
    """The proposal for Arrow batches read in turn (a file's blocks): `schema`'s columns,
    then any that appear later; a column missing from a batch is null there."""
    seen: dict[str, _Seen] = {}
    rows = 0
    for batch in _with_schema_first(schema, batches):
        check_column_keys(batch.schema.names)
        for key, values in zip(batch.schema.names, batch.columns, strict=True):
            if key in SERVICE_FIELDS:
                continue
            now = _seen(key, values, dtype=str(values.type))
            before = seen.get(key)
            if before is None and rows:
                now = replace(now, nulls=True)
            seen[key] = now if before is None else _merged(before, now)
        for key in seen.keys() - set(batch.schema.names):
            seen[key] = replace(seen[key], nulls=seen[key].nulls or batch.num_rows > 0)
        rows += batch.num_rows
    return SchemaProposal(map(_decided, seen.values()), source=source)


def _with_schema_first(
    schema: pa.Schema, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_pylist([], schema=schema)
    yield from batches


def column_definitions(
    schema: pd.DataFrame | SchemaProposal | Mapping[str, str],
) -> list[dict[str, Any]]:
    """The create-column JSON bodies for a DataFrame's columns (its `propose_frame`), a
    proposal, or a ``{column: type name}`` mapping; every column optional
    (``"required": false``). The service's own fields (`SERVICE_FIELDS`) are left out; other
    names that cannot be keys raise ValueError (`check_column_keys`).

    >>> column_definitions({"age": "integer"})
    [{'key': 'age', 'type': 'integer', 'required': False, 'array': False}]
    """
    if isinstance(schema, pd.DataFrame):
        schema = propose_frame(schema)
    if isinstance(schema, SchemaProposal):
        return schema.definitions()
    check_column_keys(schema)
    return [
        parse_column_type(key, name).definition()
        for key, name in schema.items()
        if str(key) not in SERVICE_FIELDS
    ]
