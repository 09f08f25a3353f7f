"""Compiling a filter tree into the service's query strings, with pandas' null semantics.

The rows a filter returns must be the rows `DataFrame.query` keeps on the frame the client
builds (nullable `Int64` and `boolean`, `float64`, `str`, `datetime64[ms, UTC]`). pandas'
treatment of a null row depends on the dtype. Measured with pandas 3.1.1 (python engine),
the value each condition has on a null row (T kept, F dropped, NA = `<NA>`, which drops it):

=========================  =====  =======  =======  ===  ========
condition on a null row    Int64  boolean  float64  str  datetime
=========================  =====  =======  =======  ===  ========
a == v                     NA     NA       F        F    F
a != v                     NA     NA       T        T    T
a < v  (<=, >, >=)         NA     NA       F        F    F
~(a == v)                  NA     NA       T        T    T
~(a != v)                  NA     NA       F        F    F
~(a < v)                   NA     NA       T        T    T
a in [...]  (isin)         F      F        F        F    F
a not in [...]  (~isin)    T      T        T        T    T
a.between(lo, hi)          NA     NA       F        F    F
~a.between(lo, hi)         NA     NA       T        T    T
a.str.startswith(p) [1]    --     --       --       F    --
~a.str.startswith(p) [1]   --     --       --       T    --
a.isna()                   T      T        T        T    T
~a.isna(), a.notna()       F      F        F        F    F
b, ~b  (boolean column)    --     NA       --       --   --
=========================  =====  =======  =======  ===  ========

[1] and `endswith`, `contains`, `match`. `==`/`!=` against a list behave as `in`/`not in`.
`and`/`or`/`not` combine with Kleene's logic (`NA & False` is False, `NA | True` is True,
`~NA` is NA) and a final NA drops the row. `tests/test_expr_compiler.py` measures this table
again in the installed pandas.

How that becomes service queries: negation is pushed down to the leaves (De Morgan holds
in Kleene's logic); after that the formula is monotone, so NA may be read as False, which is
exactly what SQL's NULL does. Each leaf is then sent as the service method for its non-null
rows, plus `or isNull` when pandas keeps the null rows (e.g. `score != 1.5` on a float column
becomes `or(notEqual, isNull)`).

The service compares strings without regard to case and accents: a string condition is sent
only to narrow the rows (a superset) and the exact condition is applied by the client to
what comes back (the residual); a negated string condition cannot narrow and is left to the
client alone. `$id` compares exactly. Values are snapped to what the column can hold
(`age > 30.5` on an integer column is `age >= 31`; date-times are compared to the
millisecond), so no residual is needed for them. pandas compares an integer column with a float
in float64, where beyond ±2**53 a float stands for every integer rounding to it
(`age == 2.0**53` holds for 2**53 + 1 too), and `isin` takes its list as numpy does (as
float64 when it holds a float, or integers of both signs beyond int64); the compiler sends the
integers that pandas' comparison keeps.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from frameport._core._queries import (
    MAX_QUERY_LENGTH,
    MAX_VALUES_PER_QUERY,
    JsonScalar,
    ServiceQuery,
    and_query,
    check_member,
    or_query,
)
from frameport._core._timefmt import format_service_datetime
from frameport._exceptions import FilterError
from frameport._expr import _nodes as nodes
from frameport._expr._builder import Expr
from frameport._expr._columns import ColumnKind, ColumnSpec, column_spec
from frameport._expr._fitting import MAX_FILTER_QUERIES, Part, fit_requests
from frameport._expr._values import INT64_MAX, INT64_MIN, Scalar, parse_datetime_literal

__all__ = ["CompiledFilter", "compile_filter", "pandas_null_value"]

_COMPLEMENT: dict[nodes.ComparisonOp, nodes.ComparisonOp] = {
    "==": "!=",
    "!=": "==",
    "<": ">=",
    "<=": ">",
    ">": "<=",
    ">=": "<",
}
_ORDER_METHODS: dict[nodes.ComparisonOp, str] = {
    "<": "lessThan",
    "<=": "lessThanEqual",
    ">": "greaterThan",
    ">=": "greaterThanEqual",
}
_STRING_METHODS = {"startswith": "startsWith", "endswith": "endsWith", "contains": "contains"}
_NA_KINDS: frozenset[ColumnKind] = frozenset({"integer", "boolean"})
#: Integers up to this magnitude are exact in float64, the type pandas compares an integer
#: column with a float in.
_FLOAT_EXACT_INTEGERS = 2**53
#: Regexes built only from these pieces mean the same in Python and in the service's PCRE, and
#: match more, never less, when the service ignores case (so no negated class: `[^a-z]` refuses
#: "N" then).
_PORTABLE_REGEX = re.compile(
    r"(?:[\w .,:;'\"!%&/=<>@#~-]|\\[^\w\s]|[\^$*+?|]|\((?!\?)|\)|\[(?!\^)[^\]\[\\]*\])*"
)


@dataclass(frozen=True, eq=False)
class CompiledFilter:
    """A filter as the service receives it.

    `requests` holds the filter query strings of each request to send (usually exactly one;
    with no filter one empty request; none at all when the filter can match no row). The
    caller merges the rows of several requests without duplicates (by `$id`) and keeps the
    rows for which `evaluate(residual, batch)` is true, when there is a residual.
    """

    requests: tuple[tuple[str, ...], ...]
    residual: Expr | None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompiledFilter):
            return NotImplemented
        mine = None if self.residual is None else self.residual.node
        theirs = None if other.residual is None else other.residual.node
        return self.requests == other.requests and mine == theirs

    def __hash__(self) -> int:
        return hash((self.requests, None if self.residual is None else self.residual.node))

    def explain(self) -> str:
        """Both parts, readably: the query strings per request, then the client-side part."""
        lines: list[str] = []
        if not self.requests:
            lines.append("No request: the filter matches no row.")
        for number, queries in enumerate(self.requests, start=1):
            title = f"Request {number} of {len(self.requests)}"
            lines.append(f"{title}: {'no filter' if not queries else ''}".rstrip())
            lines.extend(f"  {query}" for query in queries)
        if self.residual is not None:
            lines.append(f"Applied by the client to the rows returned: {self.residual!r}")
        return "\n".join(lines)


def compile_filter(
    expr: Expr | None,
    schema: Mapping[str, ColumnSpec],
    *,
    member: str = "column",
    max_queries: int = MAX_FILTER_QUERIES,
    max_query_length: int = MAX_QUERY_LENGTH,
) -> CompiledFilter:
    """Compile `expr` for a table with the given columns.

    `member` is "column" for `/v1/tablesdb`, "attribute" for `/v1/databases`. `max_queries`
    is how many filter query strings one request may carry (the service allows 100 in all;
    the default leaves room for select, order, limit and cursor queries), `max_query_length`
    how many characters each may have.
    Raises `FilterError` when the filter cannot be expressed (unknown column, a condition
    the column's kind does not support, a value of the wrong type).
    """
    wire_member = check_member(member)
    if expr is None:
        return CompiledFilter(((),), None)
    if not isinstance(expr, Expr):
        raise FilterError(f"Expected a filter expression, got {type(expr).__name__}.")
    pushed = nodes.push_negation(expr.node)
    conjuncts = list(pushed.operands) if isinstance(pushed, nodes.And) else [pushed]
    translations = [_translate(conjunct, schema) for conjunct in conjuncts]
    if any(translation.query is False for translation in translations):
        return CompiledFilter((), None)
    parts = [
        Part(frozenset({index}), translation.query)
        for index, translation in enumerate(translations)
        if isinstance(translation.query, ServiceQuery)
    ]
    fitted = fit_requests(
        parts, member=wire_member, max_queries=max_queries, max_length=max_query_length
    )
    inexact = {index for index, t in enumerate(translations) if not t.exact} | fitted.relaxed
    residual = [conjuncts[index] for index in sorted(inexact)]
    for node in residual:
        if nodes.contains_search(node):
            raise FilterError(
                f"The condition {nodes.render(node)} needs the client to check it, but .search() "
                "is evaluated by the service only; combine .search() with other conditions "
                "through & (and) only."
            )
    return CompiledFilter(
        fitted.requests, Expr(nodes.combine(nodes.And, residual)) if residual else None
    )


def pandas_null_value(leaf: nodes.Leaf, kind: ColumnKind) -> bool | None:
    """The value pandas gives `leaf` (not negated) on a null row: True, False or None for NA."""
    if isinstance(leaf, nodes.IsNull):
        return True
    if kind in _NA_KINDS:
        return False if isinstance(leaf, nodes.IsIn) else None
    return isinstance(leaf, nodes.Comparison) and leaf.op == "!="


@dataclass(frozen=True)
class _Translation:
    """Service query for a condition; True = every row, False = no row. `exact` is False
    when the query only narrows (returns a superset) and the client must check the rest."""

    query: ServiceQuery | bool
    exact: bool


_NO_NARROWING = _Translation(True, False)


def _translate(node: nodes.Node, schema: Mapping[str, ColumnSpec]) -> _Translation:
    if isinstance(node, nodes.And):
        return _all_of([_translate(operand, schema) for operand in node.operands])
    if isinstance(node, nodes.Or):
        return _any_of([_translate(operand, schema) for operand in node.operands])
    if isinstance(node, nodes.Not):
        if isinstance(node.operand, nodes.And | nodes.Or | nodes.Not):
            return _translate(nodes.push_negation(node), schema)
        return _translate_leaf(node.operand, True, schema)
    return _translate_leaf(node, False, schema)


def _all_of(parts: Sequence[_Translation]) -> _Translation:
    if any(part.query is False for part in parts):
        return _Translation(False, True)
    exact = all(part.exact for part in parts)
    queries = _flat([part.query for part in parts], "and")
    return _Translation(and_query(queries) if queries else True, exact)


def _any_of(parts: Sequence[_Translation]) -> _Translation:
    if any(part.query is True and part.exact for part in parts):
        return _Translation(True, True)
    exact = all(part.exact for part in parts)
    if any(part.query is True for part in parts):
        return _Translation(True, exact)
    queries = _flat([part.query for part in parts], "or")
    return _Translation(or_query(queries) if queries else False, exact)


def _flat(queries: Sequence[ServiceQuery | bool], method: str) -> list[ServiceQuery]:
    flat: list[ServiceQuery] = []
    for query in queries:
        if isinstance(query, ServiceQuery):
            if query.method == method:
                flat.extend(value for value in query.values if isinstance(value, ServiceQuery))
            else:
                flat.append(query)
    return flat


def _translate_leaf(
    leaf: nodes.Leaf, negated: bool, schema: Mapping[str, ColumnSpec]
) -> _Translation:
    column = nodes.leaf_column(leaf)
    spec = column_spec(schema, column)
    if isinstance(leaf, nodes.IsNull):
        return _Translation(ServiceQuery("isNotNull" if negated else "isNull", column), True)
    if spec.array:
        raise FilterError(
            f"{column!r} is an array column; a filter can only test it with .isna() or "
            f".notna(), not with {nodes.render(leaf)}."
        )
    if isinstance(leaf, nodes.Search):
        if spec.kind != "string":
            raise FilterError(f".search() needs a string column; {column!r} is {spec.kind}.")
        method = "notSearch" if negated else "search"
        return _Translation(ServiceQuery(method, column, (leaf.text,)), True)
    if isinstance(leaf, nodes.ColumnRef):
        if spec.kind != "boolean":
            raise FilterError(
                f"The column {column!r} on its own is not a condition (it is {spec.kind}); "
                f"compare it with a value, e.g. {nodes.render(leaf)} > 0."
            )
        return _Translation(ServiceQuery("equal", column, (not negated,)), True)
    try:
        rows = _non_null_rows(leaf, negated, spec.kind)
    except FilterError as exc:
        condition = nodes.render(leaf)
        raise FilterError(f"Cannot filter on {condition}: {exc}", text=condition) from None
    null_value = pandas_null_value(leaf, spec.kind)
    keeps_nulls = null_value is not None and null_value != negated
    return _with_nulls(rows, keeps_nulls, column, spec.kind)


def _with_nulls(
    rows: _Translation, keeps_nulls: bool, column: str, kind: ColumnKind
) -> _Translation:
    """Add (or exclude) the null rows, which every service method leaves out."""
    if kind == "id":
        return rows
    query = rows.query
    if keeps_nulls:
        if query is True:
            return rows
        is_null = ServiceQuery("isNull", column)
        return _Translation(is_null if query is False else or_query([query, is_null]), rows.exact)
    if query is True:
        return _Translation(ServiceQuery("isNotNull", column), rows.exact)
    return rows


def _non_null_rows(leaf: nodes.Leaf, negated: bool, kind: ColumnKind) -> _Translation:
    """The condition on the rows where the column holds a value."""
    if isinstance(leaf, nodes.StringPredicate):
        return _string_predicate(leaf, negated, kind)
    if (
        kind == "boolean"
        and isinstance(leaf, nodes.Between | nodes.Comparison)
        and (isinstance(leaf, nodes.Between) or leaf.op not in ("==", "!="))
    ):
        raise FilterError(
            "boolean columns support ==, !=, isin and isna, and are a condition on their "
            "own (flag, ~flag)."
        )
    if kind == "integer" and isinstance(leaf, nodes.Comparison | nodes.Between):
        leaf, negated = _integer_bounds(leaf, negated)
    if isinstance(leaf, nodes.Comparison):
        op = _COMPLEMENT[leaf.op] if negated else leaf.op
        if kind == "string":
            _checked_text(leaf.value)
            if op != "==":
                return _NO_NARROWING
            return _Translation(ServiceQuery("equal", leaf.column, (leaf.value,)), False)
        return _Translation(_compare(op, leaf.column, leaf.value, _GRIDS[kind]), True)
    if isinstance(leaf, nodes.IsIn):
        return _membership(leaf, negated, kind)
    if isinstance(leaf, nodes.Between):
        return _between(leaf, negated, kind)
    raise TypeError(f"not a leaf: {leaf!r}")


def _integer_bounds(
    leaf: nodes.Comparison | nodes.Between, negated: bool
) -> tuple[nodes.Leaf, bool]:
    """`leaf` on an integer column with integers for the floats beyond ±2**53 (pandas compares
    in float64, where such a float stands for every integer that rounds to it)."""
    if isinstance(leaf, nodes.Between):
        low, high = _integers_rounding_to(leaf.low), _integers_rounding_to(leaf.high)
        if low is None and high is None:
            return leaf, negated
        low_value = leaf.low if low is None else low[0]
        return nodes.Between(
            leaf.column, low_value, leaf.high if high is None else high[1]
        ), negated
    integers = _integers_rounding_to(leaf.value)
    if integers is None:
        return leaf, negated
    lowest, highest = integers
    if leaf.op in ("==", "!="):
        return nodes.Between(leaf.column, lowest, highest), negated != (leaf.op == "!=")
    bound = lowest if leaf.op in ("<", ">=") else highest
    return nodes.Comparison(leaf.column, leaf.op, bound), negated


def _integers_rounding_to(value: Scalar) -> tuple[int, int] | None:
    """The lowest and highest integer whose float64 is `value`, for a float beyond ±2**53 (and
    within ±2**64, beyond which no int64 compares equal anyway); None otherwise."""
    if not isinstance(value, float) or not _FLOAT_EXACT_INTEGERS <= abs(value) < 2**64:
        return None
    centre = int(value)
    lowest = centre - int(value - math.nextafter(value, -math.inf)) // 2
    highest = centre + int(math.nextafter(value, math.inf) - value) // 2
    # the integer halfway between two floats rounds to the even one
    lowest += float(lowest) != value
    highest -= float(highest) != value
    return lowest, highest


def _string_predicate(leaf: nodes.StringPredicate, negated: bool, kind: ColumnKind) -> _Translation:
    if kind not in ("string", "id"):
        raise FilterError(f".str methods need a string column, and {leaf.column!r} is {kind}.")
    if negated:
        return _NO_NARROWING
    if leaf.method == "match":
        if not _PORTABLE_REGEX.fullmatch(leaf.pattern):
            return _NO_NARROWING
        return _Translation(ServiceQuery("regex", leaf.column, (f"^(?:{leaf.pattern})",)), False)
    method = _STRING_METHODS[leaf.method]
    return _Translation(ServiceQuery(method, leaf.column, (leaf.pattern,)), False)


def _membership(leaf: nodes.IsIn, negated: bool, kind: ColumnKind) -> _Translation:
    values: list[JsonScalar]
    if kind == "string":
        values = [_checked_text(value) for value in leaf.values]
    else:
        grid = _GRIDS[kind]
        members = leaf.values
        if kind == "integer" and np.asarray(members).dtype.kind == "f":
            # pandas' isin takes the list as numpy does, here as float64: 2**53 + 1 is 2**53
            members = tuple(float(value) for value in members)
        points = [grid.point_of(value) for value in members]
        values = [grid.wire(point) for point in points if grid.holds(point)]
    values = [value for _, value in dict.fromkeys((type(value), value) for value in values)]
    if not values:
        return _Translation(negated, True)
    if kind == "string":
        if negated:
            return _NO_NARROWING
        return _Translation(_equal_chunks(leaf.column, values), False)
    if negated:
        unequal = [ServiceQuery("notEqual", leaf.column, (value,)) for value in values]
        return _Translation(and_query(unequal), True)
    return _Translation(_equal_chunks(leaf.column, values), True)


def _equal_chunks(column: str, values: Sequence[JsonScalar]) -> ServiceQuery:
    """`equal` on the values, as an `or` of queries of at most 500 values each."""
    chunks = [
        ServiceQuery("equal", column, tuple(values[start : start + MAX_VALUES_PER_QUERY]))
        for start in range(0, len(values), MAX_VALUES_PER_QUERY)
    ]
    return or_query(chunks)


def _between(leaf: nodes.Between, negated: bool, kind: ColumnKind) -> _Translation:
    if kind == "string":
        _checked_text(leaf.low)
        _checked_text(leaf.high)
        return _NO_NARROWING
    grid = _GRIDS[kind]
    low, high = grid.ceil(grid.point_of(leaf.low)), grid.floor(grid.point_of(leaf.high))
    if low > high or grid.above_range(low) or grid.below_range(high):
        return _Translation(negated, True)
    low, high = grid.clamp(low), grid.clamp(high)
    method = "notBetween" if negated else "between"
    query = ServiceQuery(method, leaf.column, (grid.wire(low), grid.wire(high)))
    return _Translation(query, True)


def _compare(
    op: nodes.ComparisonOp, column: str, value: Scalar, grid: _Grid
) -> ServiceQuery | bool:
    """`column <op> value` on the values the column can hold, exactly."""
    point = grid.point_of(value)
    if op in ("==", "!="):
        if not grid.holds(point):
            return op == "!="
        return ServiceQuery("equal" if op == "==" else "notEqual", column, (grid.wire(point),))
    below = op in ("<", "<=")
    if grid.on_grid(point):
        bound, method = point, _ORDER_METHODS[op]
    elif below:
        bound, method = grid.floor(point), "lessThanEqual"
    else:
        bound, method = grid.ceil(point), "greaterThanEqual"
    if grid.above_range(bound):
        return below
    if grid.below_range(bound):
        return not below
    return ServiceQuery(method, column, (grid.wire(bound),))


class _Grid:
    """The values a column kind holds. This base holds every value of its types as it is
    (`$id`, boolean and float columns); integers and millisecond instants refine it."""

    def __init__(self, kind: ColumnKind, expected: str, *types: type) -> None:
        self._kind = kind
        self._expected = expected
        self._types = types

    def point_of(self, value: Scalar) -> Any:
        if type(value) not in self._types:
            raise _wrong_type(value, self._kind, self._expected)
        return value

    def on_grid(self, point: Any) -> bool:
        return True

    def floor(self, point: Any) -> Any:
        return point

    ceil = floor
    clamp = floor

    def above_range(self, point: Any) -> bool:
        return False

    below_range = above_range

    def holds(self, point: Any) -> bool:
        return self.on_grid(point)

    def wire(self, point: Any) -> JsonScalar:
        return point  # type: ignore[no-any-return]


class _IntegerGrid(_Grid):
    def on_grid(self, point: int | float) -> bool:
        return isinstance(point, int) or point.is_integer()

    def floor(self, point: int | float) -> int:
        return point if isinstance(point, int) else math.floor(point)

    def ceil(self, point: int | float) -> int:
        return point if isinstance(point, int) else math.ceil(point)

    def above_range(self, point: int | float) -> bool:
        return point > INT64_MAX

    def below_range(self, point: int | float) -> bool:
        return point < INT64_MIN

    def clamp(self, point: int | float) -> int | float:
        return min(max(point, INT64_MIN), INT64_MAX)

    def holds(self, point: int | float) -> bool:
        return self.on_grid(point) and INT64_MIN <= point <= INT64_MAX

    def wire(self, point: int | float) -> JsonScalar:
        return int(point)


class _FloatGrid(_Grid):
    def point_of(self, value: Scalar) -> float:
        try:
            return float(super().point_of(value))
        except OverflowError as exc:
            raise FilterError(f"{value!r} is too large for a float column.") from exc


class _InstantGrid(_Grid):
    """Date-time columns hold milliseconds."""

    def point_of(self, value: Scalar) -> pd.Timestamp:
        return parse_datetime_literal(super().point_of(value))

    def on_grid(self, point: pd.Timestamp) -> bool:
        return bool(point == point.floor("ms"))

    def floor(self, point: pd.Timestamp) -> pd.Timestamp:
        return point.floor("ms")

    def ceil(self, point: pd.Timestamp) -> pd.Timestamp:
        return point.ceil("ms")

    def wire(self, point: pd.Timestamp) -> JsonScalar:
        return format_service_datetime(point)


_GRIDS: dict[ColumnKind, _Grid] = {
    "integer": _IntegerGrid("integer", "a number", int, float),
    "float": _FloatGrid("float", "a number", int, float),
    "datetime": _InstantGrid("datetime", "a date-time or ISO-8601 text", str),
    "boolean": _Grid("boolean", "True or False", bool),
    "id": _Grid("id", "a string", str),
}


def _checked_text(value: Scalar) -> str:
    if not isinstance(value, str):
        raise _wrong_type(value, "string", "a string")
    return value


def _wrong_type(value: Scalar, kind: str, expected: str) -> FilterError:
    return FilterError(f"the value {value!r} does not fit a column of kind {kind}; use {expected}.")
