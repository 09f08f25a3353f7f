"""Regular expressions for the `regex` filter, matched in linear time by RE2.

A backtracking engine (Python's `re`) can take exponential time on patterns such as
`(a+)+$`, and it holds the GIL while it does, so one query would stall every request. RE2
matches in time linear in the text and refuses what it cannot match that way
(backreferences, lookaround) with `PatternError`, which the query parser answers as an
invalid query. Matching is case-insensitive with search semantics, as a case-insensitive
MariaDB REGEXP is; it does not ignore accents.

>>> compile_pattern("^tr.*c$").search("Trường đại học") is not None
True
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

import re2


class PatternError(ValueError):
    """The text is not a regular expression RE2 can match in linear time."""


class Pattern(Protocol):
    def search(self, text: str) -> object | None: ...


_OPTIONS = re2.Options()
_OPTIONS.case_sensitive = False
_OPTIONS.log_errors = False


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Pattern:
    """A compiled, case-insensitive pattern; PatternError when RE2 refuses it."""
    try:
        compiled: Pattern = re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        raise PatternError(text) from None
    except UnicodeEncodeError:
        raise PatternError("the pattern is not valid Unicode") from None
    return compiled
