"""Spark's pushed filters as the filter DSL: `pushed` translates one filter Spark hands a
reader (``pushFilters``) into an `Expr` that keeps exactly the rows Spark would keep, or
returns None, and Spark applies that filter itself.

Decisions:

* Spark hands over the conjuncts of a query's filter, each a comparison with one column
  (``=``, ``<=>``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``is null``, ``is not null``,
  ``like 'p%'`` / ``'%s'`` / ``'%t%'``), or ``not`` of one; it never hands over ``or``.
* Spark keeps a row where the filter is true, and a comparison with null is null: it drops
  the row, negated too. The DSL has pandas' semantics, where ``~(a == 1)`` keeps a null
  ``a`` in a float or string column, so a negation is pushed as ``~(...) & a.notna()``.
* Only top-level columns of the types ``to_arrow`` gives with values of the column's own
  kind are pushed: strings, 64-bit integers, doubles (not NaN: Spark orders NaN above every
  number, pandas matches nothing with it) and booleans (equal or in a list: the DSL does
  not order them). Timestamps, lists, nested fields and
  ``in`` lists holding a null are left to Spark.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)
from pyspark.sql.types import BooleanType, DataType, DoubleType, LongType, StringType, StructType

from ...._expr import Expr, col

_COMPARISONS: dict[type[Filter], Callable[[Expr, Any], Expr]] = {
    EqualTo: lambda column, value: column == value,
    EqualNullSafe: lambda column, value: column == value,
    GreaterThan: lambda column, value: column > value,
    GreaterThanOrEqual: lambda column, value: column >= value,
    LessThan: lambda column, value: column < value,
    LessThanOrEqual: lambda column, value: column <= value,
}
_TEXT_MATCHES: dict[type[Filter], Callable[[Expr, str], Expr]] = {
    StringStartsWith: lambda column, text: column.str.startswith(text),
    StringEndsWith: lambda column, text: column.str.endswith(text),
    StringContains: lambda column, text: column.str.contains(text),
}


def pushed(spark_filter: Filter, schema: StructType) -> Expr | None:
    """The DSL filter keeping the rows Spark's `spark_filter` keeps on a table of `schema`,
    or None when the DSL cannot say it exactly."""
    if isinstance(spark_filter, Not):
        return _negated(spark_filter.child, schema)
    return _leaf(spark_filter, schema)


def _negated(child: Filter, schema: StructType) -> Expr | None:
    name = _column(child, schema)
    if name is None:
        return None
    column = col(name)
    if isinstance(child, IsNull):
        return column.notna()
    if isinstance(child, IsNotNull):
        return column.isna()
    expr = _leaf(child, schema)
    if expr is None:
        return None
    if isinstance(child, EqualNullSafe):  # a null a is distinct from any value: kept
        return ~expr | column.isna()
    return ~expr & column.notna()


def _leaf(spark_filter: Filter, schema: StructType) -> Expr | None:
    name = _column(spark_filter, schema)
    if name is None:
        return None
    column, kind = col(name), schema[name].dataType
    if isinstance(spark_filter, IsNull):
        return column.isna()
    if isinstance(spark_filter, IsNotNull):
        return column.notna()
    value = getattr(spark_filter, "value", None)
    compare = _COMPARISONS.get(type(spark_filter))
    if compare is not None:
        ordered = not isinstance(spark_filter, EqualTo | EqualNullSafe)
        if ordered and isinstance(kind, BooleanType):  # the DSL does not order booleans
            return None
        return compare(column, value) if _fits(value, kind) else None
    match = _TEXT_MATCHES.get(type(spark_filter))
    if match is not None:
        return match(column, value) if isinstance(value, str) and _fits(value, kind) else None
    if isinstance(spark_filter, In):
        values = list(value or ())
        if values and all(_fits(item, kind) for item in values):
            return column.isin(values)
    return None


def _column(spark_filter: Filter, schema: StructType) -> str | None:
    """The top-level column `spark_filter` tests, when it is one of `schema`'s of a kind the
    DSL compares exactly."""
    path = getattr(spark_filter, "attribute", None)
    if not isinstance(path, tuple) or len(path) != 1 or path[0] not in schema.fieldNames():
        return None
    kind = schema[path[0]].dataType
    return path[0] if isinstance(kind, StringType | LongType | DoubleType | BooleanType) else None


def _fits(value: object, kind: DataType) -> bool:
    """Whether `value` is a value of a column of `kind`, as Spark hands it over."""
    if isinstance(kind, StringType):
        return isinstance(value, str)
    if isinstance(kind, BooleanType):
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if isinstance(kind, LongType):
        return isinstance(value, int)
    return isinstance(value, int) or (isinstance(value, float) and not math.isnan(value))
