"""The query-string form of a filter tree, in the pandas `DataFrame.query` grammar.

`parse(render(node))` gives back an equal tree:

>>> from frameport._expr._nodes import Comparison, IsIn, Not, And
>>> render(And((Comparison("age", ">", 30), Not(IsIn("city", ("Oslo",))))))
"age > 30 and city not in ['Oslo']"
"""

from __future__ import annotations

import keyword
import unicodedata

from frameport._expr._nodes import (
    And,
    Between,
    ColumnRef,
    Comparison,
    IsIn,
    IsNull,
    Node,
    Not,
    Or,
    Search,
    StringPredicate,
)
from frameport._expr._values import Scalar, literal_text

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
        return f"{quote_column(node.column)} {node.op} {literal_text(node.value)}"
    if isinstance(node, IsIn):
        return f"{quote_column(node.column)} in {_list(node.values)}"
    if isinstance(node, Between):
        low, high = literal_text(node.low), literal_text(node.high)
        return f"{quote_column(node.column)}.between({low}, {high})"
    if isinstance(node, IsNull):
        return f"{quote_column(node.column)}.isna()"
    if isinstance(node, StringPredicate):
        plain = ", regex=False" if node.method == "contains" else ""
        pattern = literal_text(node.pattern)
        return f"{quote_column(node.column)}.str.{node.method}({pattern}{plain})"
    if isinstance(node, Search):
        return f"{quote_column(node.column)}.search({literal_text(node.text)})"
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
    return "[" + ", ".join(literal_text(value) for value in values) + "]"
