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

import functools
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
    Leaf,
    Node,
    Not,
    Or,
    Search,
    leaf_column,
    render,
)
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
    if isinstance(node, And | Or):
        masks = (_mask(operand, frame) for operand in node.operands)
        return functools.reduce(operator.and_ if isinstance(node, And) else operator.or_, masks)
    if isinstance(node, Not):
        return ~_mask(node.operand, frame)
    try:
        return _leaf_mask(node, frame)
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, FilterError):
            raise
        raise FilterError(f"pandas cannot evaluate {render(node)}: {exc}") from exc


def _leaf_mask(node: Leaf, frame: pd.DataFrame) -> pd.Series:
    if isinstance(node, Search):
        raise FilterError(
            f"{render(node)} is a fulltext search, which only the service can evaluate."
        )
    series = _column(frame, leaf_column(node))
    if isinstance(node, ColumnRef):
        if not (pd.api.types.is_bool_dtype(series.dtype)):
            raise FilterError(
                f"The column {node.name!r} is {series.dtype}, not boolean, so it is not a "
                "condition on its own."
            )
        return series
    if isinstance(node, Comparison):
        return _OPERATORS[node.op](series, _operand(node.value, series))
    if isinstance(node, IsIn):
        return series.isin([_operand(value, series) for value in node.values])
    if isinstance(node, Between):
        return series.between(_operand(node.low, series), _operand(node.high, series))
    if isinstance(node, IsNull):
        return series.isna()
    if node.method == "contains":
        return series.str.contains(node.pattern, regex=False)
    return getattr(series.str, node.method)(node.pattern)  # type: ignore[no-any-return]


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
