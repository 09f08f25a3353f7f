"""The kinds of a filter's columns, as the filter compiler needs them: read from the table's
Arrow schema, or (for tables whose columns cannot be read) guessed from the filter's values
and checked again as the rows show them (`KindCheck`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from ..._expr import ColumnKind, ColumnSpec, Expr, compile_filter
from ..._expr._nodes import And, Between, ColumnRef, Comparison, IsIn, Node, Not, Or, leaf_column

if TYPE_CHECKING:
    from ..._expr._nodes import Leaf


def filter_columns(schema: pa.Schema) -> dict[str, ColumnSpec]:
    """The compiler's view of the table's columns (the ``$`` fields it knows itself; a column
    of inferred types seen only as null has no kind yet and is left out)."""
    columns: dict[str, ColumnSpec] = {}
    for item in schema:
        if item.name.startswith("$") or pa.types.is_null(item.type):
            continue
        array = pa.types.is_list(item.type)
        columns[item.name] = ColumnSpec(_kind(item.type.value_type if array else item.type), array)
    return columns


def _kind(kind: pa.DataType) -> ColumnKind:
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_integer(kind):
        return "integer"
    if pa.types.is_floating(kind):
        return "float"
    if pa.types.is_timestamp(kind):
        return "datetime"
    return "string"


def guessed_columns(condition: Expr | None) -> dict[str, ColumnSpec]:
    """Column kinds guessed from the filter's values, for tables whose columns cannot be read:
    numbers and booleans as what they are, anything else as text (which the client
    re-checks)."""
    guesses: dict[str, ColumnSpec] = {}
    for leaf in _leaves(None if condition is None else condition.node):
        guesses.setdefault(leaf_column(leaf), ColumnSpec(_guessed_kind(leaf)))
    return guesses


def _guessed_kind(leaf: Node) -> ColumnKind:
    if isinstance(leaf, ColumnRef):
        return "boolean"
    if isinstance(leaf, Comparison):
        value: object = leaf.value
    elif isinstance(leaf, IsIn) and leaf.values:
        value = leaf.values[0]
    elif isinstance(leaf, Between):
        value = leaf.low
    else:
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return "float" if isinstance(value, float) else "string"


def _leaves(node: Node | None) -> Iterable[Leaf]:
    if isinstance(node, And | Or):
        for operand in node.operands:
            yield from _leaves(operand)
    elif isinstance(node, Not):
        yield from _leaves(node.operand)
    elif node is not None:
        yield node


def expr_columns(condition: Expr | None) -> list[str]:
    """The columns a filter reads, in order of appearance."""
    names = [leaf_column(leaf) for leaf in _leaves(None if condition is None else condition.node)]
    return list(dict.fromkeys(names))


class KindCheck:
    """For types inferred from the rows: the filter checked against the kinds of its columns
    as they become known (the guessed kinds stand in for the others), so that a value that
    does not fit a column raises the `FilterError` a read with an API key raises, before the
    client evaluates the filter. Checks again only when a kind changes."""

    def __init__(self, condition: Expr, member: str) -> None:
        self._condition = condition
        self._guessed = guessed_columns(condition)
        self._member = member
        self._checked: dict[str, ColumnSpec] | None = None

    def __call__(self, schema: pa.Schema) -> None:
        seen = filter_columns(schema)
        known = {name: seen[name] for name in self._guessed if name in seen}
        if known != self._checked:
            compile_filter(self._condition, {**self._guessed, **known}, member=self._member)
            self._checked = known
