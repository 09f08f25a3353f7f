"""How the local service compares text: case- and accent-insensitive folding, and REGEXP.

The service's database compares strings with a case- and accent-insensitive collation
(service interface, "Collation"). The local service reproduces it by comparing *folded* text:
case-folded, decomposed with Unicode NFKD, combining marks dropped. Letters that are not
decomposed stay themselves, so `đ` and `d` differ while `ờ` and `o` are equal.

>>> fold("Trường Đại Học")
'truong đai hoc'

Every SQLite connection gets the SQL functions `fold(text)` and `regexp(pattern, text)`
(the `REGEXP` operator); regular expressions are matched by `_regex` (RE2).
"""

from __future__ import annotations

import sqlite3
import unicodedata

from ._regex import compile_pattern


def fold(text: str) -> str:
    """The collation key of `text`: case-folded, NFKD-decomposed, combining marks dropped."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def fold_or_none(value: object) -> str | None:
    """`fold` for SQL: NULL and non-text values give NULL."""
    return fold(value) if isinstance(value, str) else None


def regexp(pattern: str | None, text: object) -> int | None:
    """SQLite's `text REGEXP pattern`: 1 when the pattern matches anywhere in the text."""
    if pattern is None or not isinstance(text, str):
        return None
    return 1 if compile_pattern(pattern).search(text) else 0


def register_text_functions(conn: sqlite3.Connection) -> None:
    """Add `fold()` and `regexp()` to a connection."""
    conn.create_function("fold", 1, fold_or_none, deterministic=True)
    conn.create_function("regexp", 2, regexp, deterministic=True)
