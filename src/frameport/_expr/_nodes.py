"""The filter tree: immutable node classes, and their query-string form (`render`).

A tree is built by `col()`/`Expr` or by `parse()`; both produce the same canonical nodes
(comparisons always hold the column on the left, nested `and`/`or` are flattened, `notna()`
is `Not(IsNull(...))`), so equal filters give equal trees. `render` writes a tree in the
pandas `DataFrame.query` grammar, and `parse(render(node))` gives back an equal tree:

>>> render(And((Comparison("age", ">", 30), Not(IsIn("city", ("Oslo",))))))
"age > 30 and city not in ['Oslo']"
"""

from __future__ import annotations

import keyword
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import Literal, TypeAlias

from frameport._expr._values import Scalar

ComparisonOp = Literal["==", "!=", "<", "<=", ">", ">="]
StringMethod = Literal["startswith", "endswith", "contains", "match"]

#: The comparison that holds when the operands swap sides (`30 < age` is `age > 30`).
MIRRORED_OP: dict[ComparisonOp, ComparisonOp] = {
    "==": "==",
    "!=": "!=",
    "<": ">",
    "<=": ">=",
    ">": "<",
    ">=": "<=",
}


@dataclass(frozen=True, slots=True)
class ColumnRef:
    """A column; as a condition on its own it means "the (boolean) column is true"."""

    name: str


@dataclass(frozen=True, slots=True)
class _OnColumn:
    """A condition on the values of one column."""

    column: str


class IsNull(_OnColumn):
    """The column holds no value (pandas `isna`)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Comparison(_OnColumn):
    """`column <op> value`."""

    op: ComparisonOp
    value: Scalar


@dataclass(frozen=True, slots=True)
class IsIn(_OnColumn):
    """`column in [values...]` (pandas `Series.isin`)."""

    values: tuple[Scalar, ...]


@dataclass(frozen=True, slots=True)
class Between(_OnColumn):
    """`low <= column <= high` (pandas `Series.between`, both ends inclusive)."""

    low: Scalar
    high: Scalar


@dataclass(frozen=True, slots=True)
class StringPredicate(_OnColumn):
    """`column.str.<method>(pattern)`; `contains` is a plain substring test, `match` a regex."""

    method: StringMethod
    pattern: str


@dataclass(frozen=True, slots=True)
class Search(_OnColumn):
    """The service's fulltext search on a column that has a fulltext index."""

    text: str


@dataclass(frozen=True, slots=True)
class Not:
    """Negation (pandas `~`)."""

    operand: Node


@dataclass(frozen=True, slots=True)
class _Junction:
    operands: tuple[Node, ...]


class And(_Junction):
    """All operands hold; at least two operands, none of them an `And`."""

    __slots__ = ()


class Or(_Junction):
    """At least one operand holds; at least two operands, none of them an `Or`."""

    __slots__ = ()


Leaf: TypeAlias = ColumnRef | Comparison | IsIn | Between | IsNull | StringPredicate | Search
Node: TypeAlias = Leaf | Not | And | Or


def combine(kind: type[And] | type[Or], operands: Iterable[Node]) -> Node:
    """`kind` of the operands, flattening nested ones of that kind; a single operand is
    returned as is."""
    flat = tuple(chain.from_iterable(o.operands if isinstance(o, kind) else (o,) for o in operands))
    return flat[0] if len(flat) == 1 else kind(flat)


def leaf_column(leaf: Leaf) -> str:
    """The column a leaf tests."""
    return leaf.name if isinstance(leaf, ColumnRef) else leaf.column


def contains_search(node: Node) -> bool:
    """Whether the tree holds a `Search` (which only the service can evaluate)."""
    if isinstance(node, Search):
        return True
    if isinstance(node, Not):
        return contains_search(node.operand)
    if isinstance(node, And | Or):
        return any(contains_search(operand) for operand in node.operands)
    return False


def push_negation(node: Node, negate: bool = False) -> Node:
    """An equivalent tree whose `Not`s wrap leaves only (De Morgan's laws).

    Valid under pandas' three-valued logic too: `~(a & b)` is `~a | ~b` and `~~a` is `a`,
    with `~NA` being `NA`.
    """
    if isinstance(node, Not):
        return push_negation(node.operand, not negate)
    if isinstance(node, And | Or):
        operands = [push_negation(operand, negate) for operand in node.operands]
        return combine(And if isinstance(node, And) != negate else Or, operands)
    return Not(node) if negate else node


_OR, _AND, _NOT, _ATOM = 1, 2, 3, 4

#: Names pandas' query() resolves to something other than a column; quoted to stay columns.
_PANDAS_NAMES = frozenset({"inf", "Inf", "Timestamp", "datetime", "list", "tuple"})


def render(node: Node) -> str:
    """The query-string form of `node`."""
    if isinstance(node, Or):
        return " or ".join(_operand(operand, _OR + 1) for operand in node.operands)
    if isinstance(node, And):
        return " and ".join(_operand(operand, _AND + 1) for operand in node.operands)
    if isinstance(node, Not):
        return _render_not(node.operand)
    return _render_leaf(node)


def quote_column(name: str) -> str:
    """A column name as the grammar writes it: bare when it is a plain identifier, else
    in backticks (`` `first name` ``, `` `$id` ``)."""
    plain = (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and name not in _PANDAS_NAMES
        and unicodedata.normalize("NFKC", name) == name
    )
    return name if plain else f"`{name}`"


def _render_not(operand: Node) -> str:
    if isinstance(operand, IsIn):
        return f"{quote_column(operand.column)} not in {_list(operand.values)}"
    if isinstance(operand, IsNull):
        return f"{quote_column(operand.column)}.notna()"
    return "not " + _operand(operand, _NOT)


def _render_leaf(node: Node) -> str:
    if isinstance(node, ColumnRef):
        return quote_column(node.name)
    if isinstance(node, Comparison):
        return f"{quote_column(node.column)} {node.op} {node.value!r}"
    if isinstance(node, IsIn):
        return f"{quote_column(node.column)} in {_list(node.values)}"
    if isinstance(node, Between):
        low, high = repr(node.low), repr(node.high)
        return f"{quote_column(node.column)}.between({low}, {high})"
    if isinstance(node, IsNull):
        return f"{quote_column(node.column)}.isna()"
    if isinstance(node, StringPredicate):
        plain = ", regex=False" if node.method == "contains" else ""
        pattern = repr(node.pattern)
        return f"{quote_column(node.column)}.str.{node.method}({pattern}{plain})"
    if isinstance(node, Search):
        return f"{quote_column(node.column)}.search({node.text!r})"
    raise TypeError(f"not a filter node: {node!r}")


def _operand(node: Node, minimum: int) -> str:
    text = render(node)
    return f"({text})" if _precedence(node) < minimum else text


def _precedence(node: Node) -> int:
    if isinstance(node, Or):
        return _OR
    if isinstance(node, And):
        return _AND
    if isinstance(node, Not) and not isinstance(node.operand, IsIn | IsNull):
        return _NOT
    return _ATOM


def _list(values: tuple[Scalar, ...]) -> str:
    return "[" + ", ".join(repr(value) for value in values) + "]"
