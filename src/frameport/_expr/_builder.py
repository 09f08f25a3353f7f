"""The user-facing expression builder: `col()` and `Expr`.

>>> from frameport._expr import col
>>> (col("age") > 30) & col("city").isin(["Oslo", "Bergen"])
age > 30 and city in ['Oslo', 'Bergen']

`col("x")` names a column; any other operand (a bare string included) is a literal value.
"""

from __future__ import annotations

import re
from typing import NoReturn, cast

from frameport._exceptions import FilterError
from frameport._expr._nodes import (
    MIRRORED_OP,
    And,
    Between,
    ColumnRef,
    Comparison,
    ComparisonOp,
    IsIn,
    IsNull,
    Node,
    Not,
    Or,
    Search,
    StringMethod,
    StringPredicate,
    combine,
    render,
)
from frameport._expr._values import normalize_scalar, normalize_scalars

__all__ = ["Expr", "StringMethods", "col", "string_predicate"]


def col(name: str) -> Expr:
    """The column `name` (`"$id"`, `"$createdAt"`... name the service's own fields).

    >>> col("age") >= 18
    age >= 18
    """
    if not isinstance(name, str) or not name:
        raise FilterError(f"A column name must be a non-empty string, got {name!r}.")
    if "`" in name:
        raise FilterError(f"The column name {name!r} contains a backtick, which no column has.")
    return Expr(ColumnRef(name))


class Expr:
    """A column or a condition on columns, built with operators and methods.

    Combine conditions with `&` (and), `|` (or) and `~` (not). `repr()` gives the
    query-string form, which `parse()` reads back into an equal expression.
    """

    __slots__ = ("_node",)
    __hash__ = None  # type: ignore[assignment]  # == builds a condition, so no hashing

    def __init__(self, node: Node) -> None:
        self._node = node

    @property
    def node(self) -> Node:
        """The immutable tree this expression wraps."""
        return self._node

    def __repr__(self) -> str:
        return render(self._node)

    def __bool__(self) -> NoReturn:
        raise TypeError(
            "A filter expression has no truth value: combine conditions with & (and), | (or) and "
            "~ (not), each comparison in parentheses, e.g. (col('a') > 1) & (col('b') < 2); for a "
            "range use col('a').between(1, 5). Python's and/or/not and chained comparisons "
            "(1 < col('a') < 5) ask for a truth value and cannot work."
        )

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        return self._compare("==", other)

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        return self._compare("!=", other)

    def __lt__(self, other: object) -> Expr:
        return self._compare("<", other)

    def __le__(self, other: object) -> Expr:
        return self._compare("<=", other)

    def __gt__(self, other: object) -> Expr:
        return self._compare(">", other)

    def __ge__(self, other: object) -> Expr:
        return self._compare(">=", other)

    def __and__(self, other: object) -> Expr:
        return Expr(combine(And, (self._node, _condition(other, "&"))))

    def __rand__(self, other: object) -> Expr:
        return Expr(combine(And, (_condition(other, "&"), self._node)))

    def __or__(self, other: object) -> Expr:
        return Expr(combine(Or, (self._node, _condition(other, "|"))))

    def __ror__(self, other: object) -> Expr:
        return Expr(combine(Or, (_condition(other, "|"), self._node)))

    def __invert__(self) -> Expr:
        return Expr(Not(self._node))

    def isin(self, values: object) -> Expr:
        """The column's value is one of `values` (a list-like; null never matches)."""
        return Expr(IsIn(self._column("isin"), normalize_scalars(values)))

    def between(self, low: object, high: object) -> Expr:
        """`low <= column <= high`, both ends inclusive as in pandas."""
        column = self._column("between")
        return Expr(Between(column, normalize_scalar(low), normalize_scalar(high)))

    def isna(self) -> Expr:
        """The column holds no value."""
        return Expr(IsNull(self._column("isna")))

    def notna(self) -> Expr:
        """The column holds a value."""
        return Expr(Not(IsNull(self._column("notna"))))

    isnull = isna
    notnull = notna

    def search(self, text: str) -> Expr:
        """The service's fulltext search; the column needs a fulltext index."""
        column = self._column("search")
        if not isinstance(text, str):
            raise FilterError(f".search() takes a text, got {type(text).__name__}.")
        return Expr(Search(column, cast(str, normalize_scalar(text))))

    def _column(self, method: str) -> str:
        if not isinstance(self._node, ColumnRef):
            raise FilterError(
                f".{method} applies to a column, e.g. col('city').{method}(...), "
                f"not to the condition {render(self._node)}."
            )
        return self._node.name

    def _compare(self, op: ComparisonOp, other: object) -> Expr:
        if isinstance(other, Expr):
            if isinstance(self._node, ColumnRef) and isinstance(other._node, ColumnRef):
                raise FilterError(
                    f"Comparing two columns ({render(self._node)} {op} {render(other._node)}) "
                    "is not supported by the service; compare a column with a value."
                )
            if isinstance(other._node, ColumnRef):
                return other._compare(MIRRORED_OP[op], self)
            raise FilterError(
                f"Cannot compare the condition {render(other._node)} with a value; "
                "compare a column, e.g. col('age') > 30."
            )
        if not isinstance(self._node, ColumnRef):
            raise FilterError(
                f"Cannot compare the condition {render(self._node)} {op} {other!r}; "
                "compare a column, e.g. col('age') > 30."
            )
        column = self._node.name
        if isinstance(other, list | tuple | set | frozenset):
            raise FilterError(
                f"To compare {column} with several values use col({column!r}).isin([...])."
            )
        return Expr(Comparison(column, op, normalize_scalar(other)))

    # last in the class body: from here on `str` names this property
    @property
    def str(self) -> StringMethods:
        """String predicates: `startswith`, `endswith`, `contains`, `match`."""
        return StringMethods(self._column("str"))


class StringMethods:
    """The `.str` accessor of a column expression."""

    __slots__ = ("_column",)

    def __init__(self, column: str) -> None:
        self._column = column

    def startswith(self, prefix: str) -> Expr:
        """The text starts with `prefix` (exact, case-sensitive, as in pandas)."""
        return Expr(string_predicate(self._column, "startswith", prefix))

    def endswith(self, suffix: str) -> Expr:
        """The text ends with `suffix`."""
        return Expr(string_predicate(self._column, "endswith", suffix))

    def contains(self, text: str) -> Expr:
        """The text contains `text` as a plain substring (no regular expression)."""
        return Expr(string_predicate(self._column, "contains", text))

    def match(self, pattern: str) -> Expr:
        """The regular expression `pattern` matches at the start of the text (`re.match`)."""
        return Expr(string_predicate(self._column, "match", pattern))


def string_predicate(column: str, method: StringMethod, pattern: object) -> StringPredicate:
    """A checked `StringPredicate` (the pattern must be text; a regex must compile)."""
    if not isinstance(pattern, str):
        raise FilterError(f".str.{method}() takes a text, got {type(pattern).__name__}.")
    text = cast(str, normalize_scalar(pattern))
    if method == "match":
        try:
            re.compile(text)
        except re.error as exc:
            raise FilterError(
                f"The regular expression {text!r} is invalid: {exc}.", text=text
            ) from exc
    return StringPredicate(column, method, text)


def _condition(other: object, operator: str) -> Node:
    if not isinstance(other, Expr):
        raise FilterError(
            f"{operator} combines two conditions, got {type(other).__name__}; "
            "write e.g. (col('a') > 1) & (col('b') < 2)."
        )
    return other.node
