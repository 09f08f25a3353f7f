"""Preparing a query string for Python's parser, as pandas' query() does.

The query grammar is Python's expression grammar with three changes, applied here outside
string literals: `&` and `|` mean `and` and `or` (so `a > 1 & b < 2` needs no parentheses),
`` `any name` `` is a column name, and `@name` is a variable. Backtick names and variables are
replaced by placeholder identifiers; `origins` maps every character of the prepared text back
to its offset in the user's text, so errors can point at what the user wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from frameport._exceptions import FilterError

_VARIABLE_NAME = re.compile(r"[^\W\d]\w*")
_WHITESPACE = "\n\r\t\f\v"


@dataclass(frozen=True)
class PreparedSource:
    """Python expression text plus what its placeholders stand for."""

    text: str
    origins: tuple[int, ...]
    columns: dict[str, str]
    variables: dict[str, str]

    def origin(self, index: int, user_text: str) -> int:
        """The offset in the user's text of character `index` of the prepared text."""
        if index < len(self.origins):
            return self.origins[index]
        return len(user_text)


def prepare(user_text: str) -> PreparedSource:
    """Rewrite `user_text` into an expression `ast.parse` can read; see the module docstring."""
    prefix = _placeholder_prefix(user_text)
    pieces: list[str] = []
    origins: list[int] = []
    columns: dict[str, str] = {}
    variables: dict[str, str] = {}

    def emit(text: str, origin: int, *, verbatim: bool = False) -> None:
        pieces.append(text)
        if verbatim:
            origins.extend(range(origin, origin + len(text)))
        else:
            origins.extend([origin] * len(text))

    def emit_placeholder(placeholder: str, start: int, end: int) -> None:
        # its last character maps to the token's last one, so error spans cover the token
        pieces.append(f" {placeholder} ")
        origins.extend([start] * len(placeholder) + [end - 1, end - 1])

    index = 0
    while index < len(user_text):
        char = user_text[index]
        if char in "'\"":
            end = _string_end(user_text, index)
            emit(user_text[index:end], index, verbatim=True)
            index = end
        elif char == "`":
            end = user_text.find("`", index + 1)
            if end < 0:
                raise FilterError(
                    f"The backtick at offset {index} is never closed; quote column names as "
                    "`first name`.",
                    text=user_text[index:],
                    offset=index,
                )
            name = user_text[index + 1 : end]
            if not name:
                raise FilterError(
                    f"Empty column name `` at offset {index}.", text="``", offset=index
                )
            placeholder = f"{prefix}c{len(columns)}"
            columns[placeholder] = name
            emit_placeholder(placeholder, index, end + 1)
            index = end + 1
        elif char == "@":
            match = _VARIABLE_NAME.match(user_text, index + 1)
            if match is None:
                raise FilterError(
                    f"'@' at offset {index} must be followed by a variable name, e.g. @limit.",
                    text="@",
                    offset=index,
                )
            placeholder = f"{prefix}v{len(variables)}"
            variables[placeholder] = match.group()
            emit_placeholder(placeholder, index, match.end())
            index = match.end()
        elif char == "&":
            emit(" and ", index)
            index += 1
        elif char == "|":
            emit(" or ", index)
            index += 1
        elif char == "#":
            raise FilterError(
                f"'#' at offset {index} is not allowed in a filter (comments are not supported).",
                text="#",
                offset=index,
            )
        else:
            emit(" " if char in _WHITESPACE else char, index)
            index += 1
    prepared = "".join(pieces)
    indent = len(prepared) - len(prepared.lstrip(" "))  # a leading space is an IndentationError
    return PreparedSource(prepared[indent:], tuple(origins[indent:]), columns, variables)


def _string_end(text: str, start: int) -> int:
    """The index just after the string literal that opens at `start`."""
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    index = start + len(quote)
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text.startswith(quote, index):
            return index + len(quote)
        if text[index] == "\n" and len(quote) == 1:
            break
        index += 1
    raise FilterError(
        f"The string that starts at offset {start} is never closed.",
        text=text[start:],
        offset=start,
    )


def _placeholder_prefix(text: str) -> str:
    """An identifier prefix that occurs nowhere in `text`."""
    serial = 0
    while f"__fp{serial}_" in text:
        serial += 1
    return f"__fp{serial}_"
