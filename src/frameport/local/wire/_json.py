"""JSON from a request, decoded with limits: bounded nesting, bounded size once decoded, valid
Unicode only.

Python's decoder raises `RecursionError` on deep nesting and accepts lone UTF-16 surrogates
(`"\\ud800"`), which no database or encoder downstream can store. Decoded, a body may also take
far more memory than its text: `{}` is 2 bytes of text and a 64-byte dict, so 16 MiB of empty
objects became 0.9 GiB. `loads` bounds what a text may decode into by what legitimate bodies
hold, measured: at most `MAX_OBJECTS` objects (a bulk write holds 100 rows, a table 100
column definitions) and at most one array per `BYTES_PER_ARRAY` bytes of text (the densest
legitimate arrays are geometry points, `[0,0],`), with `MIN_ARRAYS` allowed in any text.
Beyond those, and for the cases above, it raises the `ValueError` every caller already
answers with a 4xx (`JSONTooLarge` for the size limits).

>>> loads('{"a": [1, 2]}')
{'a': [1, 2]}
>>> loads("[" * 100 + "]" * 100)
Traceback (most recent call last):
ValueError: JSON nested deeper than 64 levels
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

MAX_DEPTH = 64
MAX_OBJECTS = 10_000
BYTES_PER_ARRAY = 6
MIN_ARRAYS = 10_000
#: An escaped surrogate; text without one cannot decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class JSONTooLarge(ValueError):
    """The text would decode into more objects or arrays than a legitimate body holds."""


def loads(text: str | bytes | bytearray) -> Any:
    """`json.loads` within the limits above; ValueError (or JSONTooLarge) beyond them."""
    brackets = text.count("[") if isinstance(text, str) else text.count(b"[")
    allowed_arrays = max(MIN_ARRAYS, len(text) // BYTES_PER_ARRAY)
    if brackets > allowed_arrays:  # brackets inside strings count too: an upper bound
        raise JSONTooLarge(
            f"JSON with {brackets:,} arrays in {len(text):,} bytes: at most one array per "
            f"{BYTES_PER_ARRAY} bytes"
        )
    try:
        value = json.loads(text, object_pairs_hook=_ObjectCounter())
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    sample = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
    surrogates = _SURROGATE_ESCAPE.search(sample) is not None
    if surrogates or isinstance(value, (dict, list)):
        _check(value, surrogates=surrogates)
    return value


def loads_text(value: Any) -> Any:
    """`value` decoded when it is text holding JSON; anything else (or text that is not
    JSON) as it is. Parameters may send arrays and objects as JSON strings."""
    if not isinstance(value, str):
        return value
    try:
        return loads(value)
    except ValueError:
        return value


class _ObjectCounter:
    """The decoder's object hook: a dict per object, until there are too many."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        self.count += 1
        if self.count > MAX_OBJECTS:
            raise JSONTooLarge(f"JSON with more than {MAX_OBJECTS:,} objects")
        return dict(pairs)


def is_valid_text(text: str) -> bool:
    """Whether `text` encodes to UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _children(item: dict[str, Any] | list[Any]) -> Iterator[Any]:
    return iter(item.values() if isinstance(item, dict) else item)


def _check(value: Any, *, surrogates: bool) -> None:
    """Depth (and, with `surrogates`, valid text) by a walk whose memory is its depth."""
    if surrogates:
        _check_text(value)
        for key in value if isinstance(value, dict) else ():
            _check_text(key)
    path = [_children(value)]
    while path:
        child = next(path[-1], _END)
        if child is _END:
            path.pop()
            continue
        if surrogates:
            _check_text(child)
        if isinstance(child, (dict, list)):
            if len(path) >= MAX_DEPTH:
                raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
            if surrogates and isinstance(child, dict):
                for key in child:
                    _check_text(key)
            path.append(_children(child))


_END = object()


def _check_text(value: Any) -> None:
    if isinstance(value, str) and not is_valid_text(value):
        raise ValueError("JSON text holds a lone UTF-16 surrogate")
