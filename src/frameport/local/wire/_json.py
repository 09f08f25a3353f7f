"""JSON from a request, decoded with limits: bounded nesting, valid Unicode only.

Python's decoder raises `RecursionError` on deep nesting and accepts lone UTF-16 surrogates
(`"\\ud800"`), which no database or encoder downstream can store. `loads` turns both into
the `ValueError` every caller already answers with a 4xx.

>>> loads('{"a": [1, 2]}')
{'a': [1, 2]}
>>> loads("[" * 100 + "]" * 100)
Traceback (most recent call last):
ValueError: JSON nested deeper than 64 levels
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
#: An escaped surrogate; text without one cannot decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads(text: str | bytes) -> Any:
    """`json.loads`, with ValueError for nesting deeper than MAX_DEPTH or a lone surrogate."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    sample = text if isinstance(text, str) else text.decode("utf-8", "replace")
    surrogates = _SURROGATE_ESCAPE.search(sample) is not None
    if surrogates or isinstance(value, (dict, list)):
        _check(value, surrogates=surrogates)
    return value


def is_valid_text(text: str) -> bool:
    """Whether `text` encodes to UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check(value: Any, *, surrogates: bool) -> None:
    if surrogates:
        _check_text(value)
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth >= MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
        if surrogates:
            for child in children:
                _check_text(child)
            if isinstance(item, dict):
                for key in item:
                    _check_text(key)


def _check_text(value: Any) -> None:
    if isinstance(value, str) and not is_valid_text(value):
        raise ValueError("JSON text holds a lone UTF-16 surrogate")
