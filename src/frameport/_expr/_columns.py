"""What the compiler knows about a table's columns: their kind and whether they hold arrays."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from frameport._exceptions import unknown_column

ColumnKind = Literal["string", "integer", "float", "boolean", "datetime", "id"]


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """A column's kind as filters see it; `array=True` for array columns.

    Kinds: "string" (also email, enum, ip, url, text...), "integer", "float", "boolean",
    "datetime", and "id" for `$id` (compared exactly by the service).
    """

    kind: ColumnKind
    array: bool = False

    def __post_init__(self) -> None:
        if self.kind not in get_args(ColumnKind):
            raise ValueError(
                f"unknown column kind {self.kind!r}; use one of {get_args(ColumnKind)}"
            )


#: The service's own fields every row has.
INTERNAL_COLUMNS: Mapping[str, ColumnSpec] = {
    "$id": ColumnSpec("id"),
    "$sequence": ColumnSpec("integer"),
    "$createdAt": ColumnSpec("datetime"),
    "$updatedAt": ColumnSpec("datetime"),
}


def column_spec(schema: Mapping[str, ColumnSpec], name: str) -> ColumnSpec:
    """The spec of column `name`, including the internal fields; `FilterError` if unknown."""
    spec = schema.get(name) or INTERNAL_COLUMNS.get(name)
    if spec is None:
        message = f"The filter uses the column {name!r}, which the table does not have"
        raise unknown_column(message, name, schema)
    return spec
