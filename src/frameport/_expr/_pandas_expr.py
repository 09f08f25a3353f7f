"""pandas 3 ``pd.col(...)`` expressions read as frameport filters (pandas 2 has no ``pd.col``:
there nothing is one).

Evaluated on a stand-in frame whose columns are frameport's `col(...)`, a pandas `Expression`
replays the user's operators and methods on frameport's builder, which gives the same filter
as `fp.col` and refuses what it cannot send.

>>> import pandas as pd
>>> from_pandas_expression((pd.col("age") > 30) & pd.col("city").isin(["Oslo"]))
age > 30 and city in ['Oslo']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

import pandas.api.typing

from frameport._exceptions import FilterError
from frameport._expr._builder import Expr, col

if TYPE_CHECKING:
    from pandas.api.typing import Expression as PandasExpression
else:
    PandasExpression = getattr(pandas.api.typing, "Expression", None)  # pandas 3 and later


def is_pandas_expression(value: object) -> TypeGuard[PandasExpression]:
    """Whether `value` is a pandas 3 ``pd.col(...)`` expression."""
    return PandasExpression is not None and isinstance(value, PandasExpression)


_OPERATORS = {
    "__add__": "+", "__radd__": "+", "__sub__": "-", "__rsub__": "-", "__mul__": "*",
    "__rmul__": "*", "__truediv__": "/", "__rtruediv__": "/", "__floordiv__": "//",
    "__rfloordiv__": "//", "__mod__": "%", "__rmod__": "%", "__pow__": "**", "__rpow__": "**",
    "__xor__": "^", "__rxor__": "^", "__getitem__": "[...]",
}  # fmt: skip  # a table: each operator method and its symbol


class _EveryName:
    """The stand-in's column index: every name is a column (the builder and the service
    check them)."""

    def __contains__(self, name: object) -> bool:
        return True


class _Columns:
    """Stands in for the DataFrame: ``frame["age"]`` is ``col("age")``."""

    columns = _EveryName()

    def __getitem__(self, name: object) -> Expr:
        if not isinstance(name, str):
            raise FilterError(f"pd.col() names a column by its text name, got {name!r}.")
        return col(name)


def from_pandas_expression(expression: PandasExpression) -> Expr:
    """The frameport filter for the pandas expression `expression`; raises `FilterError`
    naming the part that has no frameport equivalent."""
    try:
        result = expression._eval_expression(_Columns())  # type: ignore[attr-defined]
    except FilterError as exc:
        raise FilterError(f"The pandas expression {expression!r} cannot be sent: {exc}") from exc
    except (AttributeError, TypeError, ValueError) as exc:
        raise FilterError(
            f"The pandas expression {expression!r} cannot be sent: {_part(exc)}. Filters take "
            "comparisons with values, isin, between, isna/notna and str.startswith/endswith/"
            "contains/match, combined with &, | and ~."
        ) from exc
    if not isinstance(result, Expr):
        raise FilterError(
            f"The pandas expression {expression!r} is not a condition; compare a column, "
            "e.g. pd.col('age') > 30."
        )
    return result


def _part(exc: Exception) -> str:
    """The operation that failed, from Python's message about the builder."""
    message = str(exc)
    attribute = getattr(exc, "name", None)
    if isinstance(exc, AttributeError) and attribute:
        operation = _OPERATORS.get(attribute, f".{attribute}")
        return f"{operation} is not a filter operation"
    return message.replace("'Expr'", "a column").replace("'StringMethods'", "a column's .str")
