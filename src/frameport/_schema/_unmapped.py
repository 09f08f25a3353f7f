"""Columns of types frameport does not map (relationships, and any type the service adds):
read as their JSON text, never dropped, with one warning per read naming them.

Such a column's field is a string field marked with `JSON_TEXT_METADATA`; page decoding
writes each value as ``json.dumps(value)`` (an ID as ``'"abc"'``, a list as ``'["a"]'``).

>>> field = json_text_field("author")
>>> is_json_text(field), field.type
(True, DataType(string))
"""

from __future__ import annotations

import warnings

import pyarrow as pa

JSON_TEXT_METADATA = {b"frameport.json_text": b"1"}


class UnmappedColumnWarning(UserWarning):
    """A table has columns of types frameport does not map; they are read as JSON text."""


def json_text_field(key: str) -> pa.Field[pa.DataType]:
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
        warnings.warn(
            f"columns read as JSON text, since frameport does not map their types: {listed}. "
            "Parse them with json.loads, or leave them out with select().",
            UnmappedColumnWarning,
            stacklevel=2,
        )
