"""A polars predicate split into the part frameport sends to the service and the rest.

polars hands an IO source its predicate as a `pl.Expr`. We read the expression's JSON form
(``expr.meta.serialize(format="json")``): columns, literals, comparisons, ``&``/``|``/``~`` and
the boolean and string functions. Literals are read back by polars itself (the literal node
deserialised and evaluated), so every literal type polars knows decodes as polars means it.

What translates becomes a frameport filter (`Expr`, compiled by the DSL): comparisons of a
column with a literal of the column's kind, `is_in`, `is_null`/`is_not_null`, `is_between`,
`str.starts_with`/`ends_with`/`contains` with literal text, a boolean column, and ``&``,
``|``, ``~`` of those. The top-level ``&`` is split: its parts that translate are pushed,
the others stay with polars. Below it, an ``|`` or ``~`` is pushed whole or not at all.

The pushed filter may keep more rows than polars would (frameport follows pandas' null rules,
e.g. ``x != 1`` keeps nulls of a float column) but never fewer: on every row where polars'
value for a leaf is not null, the DSL's is the same, and a row polars keeps under Kleene's
logic is kept whatever the unknown leaves are. So the caller always applies the whole
predicate to what comes back, and the result is exactly polars'.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any, TypeAlias

import polars as pl
import pyarrow as pa

from ..._expr import Expr, col
from ..read._kinds import filter_columns

_INT64 = (-(2**63), 2**63 - 1)
_EXACT_FLOAT_INT = 2**53

_COMPARISONS: dict[str, Callable[[Expr, object], Expr]] = {
    "Eq": lambda column, value: column == value,
    "NotEq": lambda column, value: column != value,
    "Lt": lambda column, value: column < value,
    "LtEq": lambda column, value: column <= value,
    "Gt": lambda column, value: column > value,
    "GtEq": lambda column, value: column >= value,
}
_MIRRORED = {"Eq": "Eq", "NotEq": "NotEq", "Lt": "Gt", "LtEq": "GtEq", "Gt": "Lt", "GtEq": "LtEq"}
_Node: TypeAlias = dict[str, Any]
"""One node of an expression's JSON form, e.g. ``{"Column": "age"}``."""

_AND = ("And", "LogicalAnd")
_OR = ("Or", "LogicalOr")


@dataclass(frozen=True)
class Pushdown:
    """A predicate split in two: `pushed` goes to the service (None: nothing), `local` lists
    the parts (as polars prints them) that only polars applies."""

    pushed: Expr | None
    local: tuple[str, ...]


class _Untranslatable(Exception):
    """A part of the predicate that frameport's filters cannot express."""


def split_predicate(predicate: pl.Expr, schema: pa.Schema) -> Pushdown:
    """Split `predicate` (on a table of `schema`) into what the service can do and the rest."""
    tree = json.loads(predicate.meta.serialize(format="json"))
    columns = filter_columns(schema)  # the service's fields and list columns stay with polars
    kinds: dict[str, str | None] = {
        name: spec.kind for name, spec in columns.items() if not spec.array
    }
    pushed: list[Expr] = []
    local: list[str] = []
    for part in _conjuncts(tree):
        try:
            pushed.append(_Translator(kinds).condition(part))
        except _Untranslatable:
            local.append(str(_as_polars(part)))
    return Pushdown(reduce(operator.and_, pushed) if pushed else None, tuple(local))


def _conjuncts(node: _Node) -> list[_Node]:
    binary = node.get("BinaryExpr")
    if binary is not None and binary["op"] in _AND:
        return [*_conjuncts(binary["left"]), *_conjuncts(binary["right"])]
    return [node]


def _as_polars(node: _Node) -> pl.Expr:
    return pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")


class _Translator:
    def __init__(self, kinds: dict[str, str | None]) -> None:
        self._kinds = kinds

    def condition(self, node: _Node) -> Expr:
        if "Column" in node:
            name = node["Column"]
            if self._kinds.get(name) != "boolean":
                raise _Untranslatable
            return col(name)
        if "BinaryExpr" in node:
            return self._binary(node["BinaryExpr"])
        if "Function" in node:
            return self._function(node["Function"])
        raise _Untranslatable

    def _binary(self, binary: _Node) -> Expr:
        op, left, right = binary["op"], binary["left"], binary["right"]
        if op in _AND:
            return self.condition(left) & self.condition(right)
        if op in _OR:
            return self.condition(left) | self.condition(right)
        if op not in _COMPARISONS:
            raise _Untranslatable
        if "Column" not in left:
            left, right, op = right, left, _MIRRORED[op]
        name = self._column(left)
        return _COMPARISONS[op](col(name), self._value(name, right))

    def _function(self, call: _Node) -> Expr:
        function, inputs = call["function"], call["input"]
        boolean = function.get("Boolean") if isinstance(function, dict) else None
        text = function.get("StringExpr") if isinstance(function, dict) else None
        if boolean == "Not":
            return ~self.condition(inputs[0])
        if boolean in ("IsNull", "IsNotNull"):
            name = self._column(inputs[0])
            return col(name).isna() if boolean == "IsNull" else col(name).notna()
        if isinstance(boolean, dict) and "IsIn" in boolean:
            name = self._column(inputs[0])
            return col(name).isin(self._values(name, inputs[1]))
        if isinstance(boolean, dict) and "IsBetween" in boolean:
            return self._between(inputs, boolean["IsBetween"]["closed"])
        if text is not None:
            return self._string(text, inputs)
        raise _Untranslatable

    def _between(self, inputs: Sequence[_Node], closed: str) -> Expr:
        name = self._column(inputs[0])
        low, high = self._value(name, inputs[1]), self._value(name, inputs[2])
        column = col(name)
        if closed == "Both":
            return column.between(low, high)
        lower = column >= low if closed == "Left" else column > low
        upper = column <= high if closed == "Right" else column < high
        return lower & upper

    def _string(self, method: str | _Node, inputs: Sequence[_Node]) -> Expr:
        name = self._column(inputs[0])
        if self._kinds.get(name) != "string":
            raise _Untranslatable
        pattern = _literal(inputs[1])
        if not isinstance(pattern, str):
            raise _Untranslatable
        column = col(name).str
        if method == "StartsWith":
            return column.startswith(pattern)
        if method == "EndsWith":
            return column.endswith(pattern)
        if isinstance(method, dict) and "Contains" in method:
            plain = method["Contains"]["literal"] or re.escape(pattern) == pattern
            if plain:
                return column.contains(pattern)
        raise _Untranslatable

    def _column(self, node: _Node) -> str:
        name = node.get("Column")
        if not isinstance(name, str) or self._kinds.get(name) is None:
            raise _Untranslatable
        return name

    def _value(self, name: str, node: _Node) -> object:
        value = _literal(node)
        if not _fits(self._kinds[name], value):
            raise _Untranslatable
        return value

    def _values(self, name: str, node: _Node) -> list[object]:
        values = _literal(node)
        if isinstance(values, pl.Series):
            values = values.to_list()
        if not isinstance(values, list) or not all(_fits(self._kinds[name], v) for v in values):
            raise _Untranslatable
        return values


def _literal(node: _Node) -> object:
    """A literal node's value as polars evaluates it (a list for a list literal)."""
    if "Literal" not in node:
        raise _Untranslatable
    series = pl.select(_as_polars(node)).to_series()
    if len(series) != 1:
        return series.to_list()
    return series.item()


def _fits(kind: str | None, value: object) -> bool:
    """Whether `value` compares with a column of `kind` the same way in polars and pandas."""
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return type(value) is int and _INT64[0] <= value <= _INT64[1]
    if kind == "float":
        if type(value) is int:
            return abs(value) <= _EXACT_FLOAT_INT
        return isinstance(value, float) and math.isfinite(value)
    if kind == "string":
        return isinstance(value, str)
    if kind == "datetime":
        return isinstance(value, dt.datetime) and value.tzinfo is not None
    return False
