"""The filter DSL: build or parse a filter, compile it for the service, evaluate it locally.

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

from frameport._expr._builder import Expr, col
from frameport._expr._columns import ColumnKind, ColumnSpec
from frameport._expr._compiler import CompiledFilter, compile_filter
from frameport._expr._evaluate import evaluate
from frameport._expr._parser import parse

__all__ = [
    "ColumnKind",
    "ColumnSpec",
    "CompiledFilter",
    "Expr",
    "col",
    "compile_filter",
    "evaluate",
    "parse",
]
