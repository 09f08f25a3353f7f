"""Query objects as the service reads them, and the one place that writes their JSON text.

Each element of the `queries` parameter is a JSON object `{"method", "column", "values"}`
(the member is `attribute` on the legacy `/v1/databases` interface); `and`/`or` nest query
objects, not strings, in `values`.

>>> limit_query(50)
'{"method":"limit","values":[50]}'
>>> order_query("age", ascending=False)
'{"method":"orderDesc","column":"age"}'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

from frameport._core._ids import is_valid_id
from frameport._exceptions import FilterError

#: At most this many query strings per request.
MAX_QUERIES_PER_REQUEST = 100
#: Each query string is at most this many characters.
MAX_QUERY_LENGTH = 4096
#: At most this many values in one query.
MAX_VALUES_PER_QUERY = 500

Member = Literal["column", "attribute"]
JsonScalar: TypeAlias = str | int | float | bool

QUERY_MEMBERS: tuple[Member, ...] = get_args(Member)


@dataclass(frozen=True, slots=True)
class ServiceQuery:
    """One query object; `values` holds nested `ServiceQuery`s for `and`/`or`."""

    method: str
    column: str | None = None
    values: tuple[JsonScalar | ServiceQuery, ...] = ()

    def to_json_object(self, member: Member) -> dict[str, object]:
        """The query as a JSON-ready dict, naming the field with `member`."""
        body: dict[str, object] = {"method": self.method}
        if self.column is not None:
            body[member] = self.column
        body["values"] = [
            value.to_json_object(member) if isinstance(value, ServiceQuery) else value
            for value in self.values
        ]
        return body

    def contains_search(self) -> bool:
        if self.method in ("search", "notSearch"):
            return True
        return any(
            isinstance(value, ServiceQuery) and value.contains_search() for value in self.values
        )


def render_query(query: ServiceQuery, member: Member = "column") -> str:
    """The JSON text of one query, compact as it is sent."""
    return json_text(query.to_json_object(member))


def json_text(value: object) -> str:
    """Compact JSON; non-ASCII text stays as is (the length limit counts characters)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def check_member(member: str) -> Member:
    if member not in QUERY_MEMBERS:
        raise FilterError(f"The query member must be 'column' or 'attribute', not {member!r}.")
    return member


def and_query(operands: Sequence[ServiceQuery]) -> ServiceQuery:
    """`and` of two or more queries (one operand is returned as is)."""
    return operands[0] if len(operands) == 1 else ServiceQuery("and", None, tuple(operands))


def or_query(operands: Sequence[ServiceQuery]) -> ServiceQuery:
    """`or` of two or more queries (one operand is returned as is)."""
    return operands[0] if len(operands) == 1 else ServiceQuery("or", None, tuple(operands))


def select_query(columns: Iterable[str], member: str = "column") -> str:
    """`select` of the named columns (select names no field, so `member` changes nothing)."""
    check_member(member)
    names = list(columns)
    if not names:
        raise FilterError("select() needs at least one column name.")
    if not all(isinstance(name, str) and name for name in names):
        raise FilterError("select() takes column names (non-empty strings).")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise FilterError(f"select() names {', '.join(duplicates)} more than once.")
    return json_text({"method": "select", "values": names})


def order_query(column: str, ascending: bool = True, member: str = "column") -> str:
    if not isinstance(column, str) or not column:
        raise FilterError(f"sort() takes a column name, got {column!r}.")
    method = "orderAsc" if ascending else "orderDesc"
    return json_text({"method": method, check_member(member): column})


def equal_query(column: str, values: Sequence[JsonScalar], member: str = "column") -> str:
    """`equal`: the column's value is one of `values`."""
    return json_text({"method": "equal", check_member(member): column, "values": list(values)})


def limit_query(count: int) -> str:
    """`limit` to `count` rows (at least 1)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise FilterError(f"The row limit must be a whole number of at least 1, got {count!r}.")
    return json_text({"method": "limit", "values": [count]})


def offset_query(count: int) -> str:
    """`offset`: skip the first `count` rows (0 or more)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise FilterError(f"The row offset must be a whole number of at least 0, got {count!r}.")
    return json_text({"method": "offset", "values": [count]})


def cursor_after_query(row_id: str) -> str:
    if not is_valid_id(row_id):
        raise FilterError(f"{row_id!r} is not a row ID (1-36 of a-z A-Z 0-9 . - _).")
    return json_text({"method": "cursorAfter", "values": [row_id]})
