"""Client-side evaluation of a filter with pandas, on the frame's own dtypes.

This is pandas' semantics by construction: each node becomes the pandas operation that
`DataFrame.query` would run (`==` → `Series.__eq__`, `in` → `Series.isin`, `not` → `~`, ...),
so nulls behave as the compiler's table describes. One deliberate difference: a string
compared with a date-time column is read as a date-time (naive text as UTC) for every
operator, where `DataFrame.query` turns `==`/`!=`/`in` with a string into an `isin` that never
matches a date-time.

>>> from frameport._expr import col
>>> frame = pd.DataFrame({"age": pd.array([25, None, 40], dtype="Int64")})
>>> evaluate(col("age") > 30, frame).tolist()
[False, False, True]
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pandas as pd

from frameport._exceptions import FilterError
from frameport._expr._builder import Expr
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
from frameport._expr._render import render
from frameport._expr._values import Scalar, parse_datetime_literal

__all__ = ["evaluate"]

_OPERATORS: dict[str, Callable[[Any, Any], pd.Series]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def evaluate(expr: Expr | Node, frame: pd.DataFrame) -> pd.Series:
    """A boolean mask over `frame`'s rows: True where `frame.query(...)` keeps the row.

    `frame[evaluate(expr, frame)]` filters a batch the way pandas would.
    """
    node = expr.node if isinstance(expr, Expr) else expr
    mask = _mask(node, frame)
    if isinstance(mask.dtype, pd.BooleanDtype):
        mask = mask.fillna(False)
    return mask.astype(bool)


def _mask(node: Node, frame: pd.DataFrame) -> pd.Series:
    if isinstance(node, And):
        result = _mask(node.operands[0], frame)
        for operand in node.operands[1:]:
            result = result & _mask(operand, frame)
        return result
    if isinstance(node, Or):
        result = _mask(node.operands[0], frame)
        for operand in node.operands[1:]:
            result = result | _mask(operand, frame)
        return result
    if isinstance(node, Not):
        return ~_mask(node.operand, frame)
    try:
        return _leaf_mask(node, frame)
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, FilterError):
            raise
        raise FilterError(f"pandas cannot evaluate {render(node)}: {exc}") from exc


def _leaf_mask(node: Node, frame: pd.DataFrame) -> pd.Series:
    if isinstance(node, ColumnRef):
        series = _column(frame, node.name)
        if not (pd.api.types.is_bool_dtype(series.dtype)):
            raise FilterError(
                f"The column {node.name!r} is {series.dtype}, not boolean, so it is not a "
                "condition on its own."
            )
        return series
    if isinstance(node, Comparison):
        series = _column(frame, node.column)
        return _OPERATORS[node.op](series, _operand(node.value, series))
    if isinstance(node, IsIn):
        series = _column(frame, node.column)
        return series.isin([_operand(value, series) for value in node.values])
    if isinstance(node, Between):
        series = _column(frame, node.column)
        return series.between(_operand(node.low, series), _operand(node.high, series))
    if isinstance(node, IsNull):
        return _column(frame, node.column).isna()
    if isinstance(node, StringPredicate):
        return _string_mask(node, _column(frame, node.column))
    if isinstance(node, Search):
        raise FilterError(
            f"{render(node)} is a fulltext search, which only the service can evaluate."
        )
    raise TypeError(f"not a filter node: {node!r}")


def _string_mask(node: StringPredicate, series: pd.Series) -> pd.Series:
    strings = series.str
    if node.method == "startswith":
        return strings.startswith(node.pattern)
    if node.method == "endswith":
        return strings.endswith(node.pattern)
    if node.method == "contains":
        return strings.contains(node.pattern, regex=False)
    return strings.match(node.pattern)


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name not in frame.columns:
        raise FilterError(f"The frame has no column {name!r} to filter on.")
    return frame[name]


def _operand(value: Scalar, series: pd.Series) -> Scalar | pd.Timestamp:
    """`value` as pandas compares it with `series`: text is a date-time for date-time columns."""
    dtype = series.dtype
    if isinstance(value, str) and pd.api.types.is_datetime64_any_dtype(dtype):
        stamp = parse_datetime_literal(value)
        if isinstance(dtype, pd.DatetimeTZDtype):
            return stamp.tz_convert(dtype.tz)
        return stamp.tz_localize(None)
    return value
