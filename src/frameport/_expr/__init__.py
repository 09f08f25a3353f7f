"""The filter DSL: build (`col`) or parse (`parse`) a filter, compile it for the service,
evaluate it on a DataFrame.

>>> from frameport._expr import col, compile_filter, ColumnSpec
>>> expr = (col("age") > 30) & col("city").isin(["Oslo", "Bergen"])
>>> expr
age > 30 and city in ['Oslo', 'Bergen']
>>> compiled = compile_filter(expr, {"age": ColumnSpec("integer"), "city": ColumnSpec("string")})
>>> compiled.requests
(('{"method":"greaterThan","column":"age","values":[30]}', \
'{"method":"equal","column":"city","values":["Oslo","Bergen"]}'),)
>>> compiled.residual
city in ['Oslo', 'Bergen']
"""

from frameport._core._queries import (
    MAX_QUERIES_PER_REQUEST,
    MAX_QUERY_LENGTH,
    MAX_VALUES_PER_QUERY,
    cursor_after_query,
    limit_query,
    offset_query,
    order_query,
    select_query,
)
from frameport._exceptions import FilterError
from frameport._expr._builder import Expr, StringMethods, col
from frameport._expr._columns import INTERNAL_COLUMNS, ColumnKind, ColumnSpec
from frameport._expr._compiler import CompiledFilter, compile_filter
from frameport._expr._evaluate import evaluate
from frameport._expr._fitting import MAX_FILTER_QUERIES, MAX_REQUESTS
from frameport._expr._parser import parse

__all__ = [
    "INTERNAL_COLUMNS",
    "MAX_FILTER_QUERIES",
    "MAX_QUERIES_PER_REQUEST",
    "MAX_QUERY_LENGTH",
    "MAX_REQUESTS",
    "MAX_VALUES_PER_QUERY",
    "ColumnKind",
    "ColumnSpec",
    "CompiledFilter",
    "Expr",
    "FilterError",
    "StringMethods",
    "col",
    "compile_filter",
    "cursor_after_query",
    "evaluate",
    "limit_query",
    "offset_query",
    "order_query",
    "parse",
    "select_query",
]
