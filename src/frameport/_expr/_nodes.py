"""The filter tree: immutable node classes.

A tree is built by `col()`/`Expr` or by `parse()`; both produce the same canonical nodes
(comparisons always hold the column on the left, nested `and`/`or` are flattened, `notna()`
is `Not(IsNull(...))`), so equal filters give equal trees.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
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
class Comparison:
    """`column <op> value`."""

    column: str
    op: ComparisonOp
    value: Scalar


@dataclass(frozen=True, slots=True)
class IsIn:
    """`column in [values...]` (pandas `Series.isin`)."""

    column: str
    values: tuple[Scalar, ...]


@dataclass(frozen=True, slots=True)
class Between:
    """`low <= column <= high` (pandas `Series.between`, both ends inclusive)."""

    column: str
    low: Scalar
    high: Scalar


@dataclass(frozen=True, slots=True)
class IsNull:
    """The column holds no value (pandas `isna`)."""

    column: str


@dataclass(frozen=True, slots=True)
class StringPredicate:
    """`column.str.<method>(pattern)`; `contains` is a plain substring test, `match` a regex."""

    column: str
    method: StringMethod
    pattern: str


@dataclass(frozen=True, slots=True)
class Search:
    """The service's fulltext search on a column that has a fulltext index."""

    column: str
    text: str


@dataclass(frozen=True, slots=True)
class Not:
    """Negation (pandas `~`)."""

    operand: Node


@dataclass(frozen=True, slots=True)
class And:
    """All operands hold; at least two operands, none of them an `And`."""

    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """At least one operand holds; at least two operands, none of them an `Or`."""

    operands: tuple[Node, ...]


Leaf: TypeAlias = ColumnRef | Comparison | IsIn | Between | IsNull | StringPredicate | Search
Node: TypeAlias = Leaf | Not | And | Or


def conjunction(operands: Iterable[Node]) -> Node:
    """`And` of the operands, flattening nested `And`s; a single operand is returned as is."""
    flat = tuple(_flatten(operands, And))
    return flat[0] if len(flat) == 1 else And(flat)


def disjunction(operands: Iterable[Node]) -> Node:
    """`Or` of the operands, flattening nested `Or`s; a single operand is returned as is."""
    flat = tuple(_flatten(operands, Or))
    return flat[0] if len(flat) == 1 else Or(flat)


def _flatten(operands: Iterable[Node], kind: type[And] | type[Or]) -> Iterable[Node]:
    for operand in operands:
        if isinstance(operand, kind):
            yield from operand.operands
        else:
            yield operand


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
        conjunctive = isinstance(node, And) != negate
        return conjunction(operands) if conjunctive else disjunction(operands)
    return Not(node) if negate else node
