"""Reading filters written in the pandas `DataFrame.query` grammar.

>>> parse("age > 30 and city in ['Oslo', 'Bergen']")
age > 30 and city in ['Oslo', 'Bergen']
>>> parse("1 < age <= 5")
age > 1 and age <= 5

The text is parsed with `ast.parse(mode="eval")` and only an allowlist of node types is
accepted; nothing is ever evaluated. Anything outside the grammar raises `FilterError` with
the offending text and its offset.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from collections import ChainMap
from collections.abc import Mapping
from typing import NoReturn, TypeVar

from frameport._exceptions import FilterError
from frameport._expr import _nodes as nodes
from frameport._expr._builder import Expr, string_predicate
from frameport._expr._source import PreparedSource, prepare
from frameport._expr._values import Scalar, normalize_scalar, normalize_scalars

__all__ = ["parse"]

_COMPARISON_OPS: dict[type[ast.cmpop], nodes.ComparisonOp] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_STRING_METHODS: tuple[nodes.StringMethod, ...] = ("startswith", "endswith", "contains", "match")
_REGEX_METACHARACTERS = re.compile(r"[.^$*+?{}\[\]\\|()]")
_T = TypeVar("_T")
_GRAMMAR_HINT = "write conditions like \"age > 30 and city in ['Oslo', 'Bergen']\""


def parse(text: str, *, local_dict: Mapping[str, object] | None = None, level: int = 0) -> Expr:
    """Parse a filter written in the pandas `DataFrame.query` grammar.

    `@name` takes the value of the variable `name` from `local_dict` when given, else from the
    caller's local variables, then from the caller's globals; `level` looks that many frames
    further up (a wrapper around `parse` passes `level=1`).
    """
    if not isinstance(text, str):
        raise FilterError(f"A filter must be a string, got {type(text).__name__}.")
    source = prepare(text)
    scope: Mapping[str, object] = {}
    if source.variables:
        frame = sys._getframe(level + 1)
        try:
            scope = ChainMap(
                dict(local_dict) if local_dict is not None else dict(frame.f_locals),
                frame.f_globals,
            )
        finally:
            del frame
    return Expr(_Parser(text, source, scope).parse())


_Operand = nodes.ColumnRef | Scalar | tuple[Scalar, ...]
"""A column, a value or a list of values."""


class _Parser:
    def __init__(self, text: str, source: PreparedSource, scope: Mapping[str, object]) -> None:
        self._text = text
        self._source = source
        self._scope = scope
        line_ends = re.finditer(r"\r\n|\r|\n", source.text)
        self._line_starts = [0, *(match.end() for match in line_ends)]

    def parse(self) -> nodes.Node:
        if not self._source.text.strip():
            raise FilterError("The filter is empty; " + _GRAMMAR_HINT + ".", text="", offset=0)
        try:
            with warnings.catch_warnings():
                # e.g. "invalid escape sequence": the literal still reads as pandas reads it
                warnings.simplefilter("ignore", SyntaxWarning)
                warnings.simplefilter("ignore", DeprecationWarning)
                tree = ast.parse(self._source.text, mode="eval")
        except SyntaxError as exc:
            raise self._syntax_error(exc) from None
        except (ValueError, RecursionError, MemoryError) as exc:
            raise FilterError(
                f"The filter cannot be parsed ({exc}); " + _GRAMMAR_HINT + ".",
                text=self._text,
                offset=0,
            ) from None
        try:
            return self._condition(tree.body)
        except RecursionError:
            raise FilterError(
                "The filter is nested too deeply to be parsed.", text=self._text, offset=0
            ) from None

    def _condition(self, node: ast.expr) -> nodes.Node:
        if isinstance(node, ast.BoolOp):
            operands = [self._condition(value) for value in node.values]
            return nodes.combine(nodes.And if isinstance(node.op, ast.And) else nodes.Or, operands)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.Invert):
            return nodes.Not(self._condition(node.operand))
        if isinstance(node, ast.Compare):
            return self._comparison(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        operand = self._operand(node)
        if isinstance(operand, nodes.ColumnRef):
            return operand
        self._fail(
            node, "{text} is a value, not a condition; compare it with a column, e.g. age > 30"
        )

    def _comparison(self, node: ast.Compare) -> nodes.Node:
        operands = [node.left, *node.comparators]
        pairs = zip(node.ops, operands, operands[1:], strict=False)
        return nodes.combine(nodes.And, [self._comparison_pair(*pair) for pair in pairs])

    def _comparison_pair(self, op: ast.cmpop, left: ast.expr, right: ast.expr) -> nodes.Node:
        first, second = self._operand(left), self._operand(right)
        if isinstance(op, ast.In | ast.NotIn):
            if not isinstance(first, nodes.ColumnRef) or not isinstance(second, tuple):
                self._fail_span(
                    left,
                    right,
                    "{text}: 'in' needs a column on the left and a list on the right, "
                    "e.g. city in ['Oslo', 'Bergen']",
                )
            membership = nodes.IsIn(first.name, second)
            return nodes.Not(membership) if isinstance(op, ast.NotIn) else membership
        symbol = _COMPARISON_OPS.get(type(op))
        if symbol is None:
            self._fail_span(left, right, "{text}: use ==, !=, <, <=, >, >=, in or not in")
        if isinstance(first, nodes.ColumnRef) and isinstance(second, nodes.ColumnRef):
            self._fail_span(
                left,
                right,
                "{text} compares two columns, which the service cannot do; "
                "compare a column with a value",
            )
        if isinstance(second, nodes.ColumnRef):
            first, second, symbol = second, first, nodes.MIRRORED_OP[symbol]
        if not isinstance(first, nodes.ColumnRef):
            self._fail_span(left, right, "{text} compares two values; one side must be a column")
        if isinstance(second, tuple):
            if symbol not in ("==", "!="):
                self._fail_span(left, right, "{text}: only ==, != and in compare with a list")
            membership = nodes.IsIn(first.name, second)
            return membership if symbol == "==" else nodes.Not(membership)
        assert not isinstance(second, nodes.ColumnRef)  # two columns were refused above
        return nodes.Comparison(first.name, symbol, second)

    def _call(self, node: ast.Call) -> nodes.Node:
        function = node.func
        if not isinstance(function, ast.Attribute):
            self._fail(node, "{text}: only column methods can be called, e.g. city.isna()")
        receiver, method = function.value, function.attr
        if isinstance(receiver, ast.Attribute) and receiver.attr == "str":
            return self._string_call(node, self._column_of(receiver.value), method)
        column = self._column_of(receiver)
        if method in ("isna", "isnull", "notna", "notnull"):
            self._arguments(node, 0)
            missing = nodes.IsNull(column)
            return missing if method in ("isna", "isnull") else nodes.Not(missing)
        if method == "isin":
            (values,) = self._arguments(node, 1)
            message = "{text}: expected a list of values, e.g. ['Oslo', 'Bergen']"
            return nodes.IsIn(column, self._expect(values, tuple, message))
        if method == "between":
            low, high = self._arguments(node, 2)
            return nodes.Between(column, self._scalar(low), self._scalar(high))
        if method == "search":
            (text,) = self._arguments(node, 1)
            return nodes.Search(column, self._text_value(text))
        self._fail(
            node,
            "{text}: the supported column methods are isna(), notna(), isin([...]), "
            "between(low, high), search(text) and str.startswith/endswith/contains/match",
        )

    def _string_call(self, node: ast.Call, column: str, method: str) -> nodes.Node:
        if method not in _STRING_METHODS:
            self._fail(
                node,
                "{text}: the supported string methods are startswith, endswith, contains and match",
            )
        regex = True
        if method == "contains":
            regex = self._regex_flag(node)
        (argument,) = self._arguments(node, 1, keywords=("regex",) if method == "contains" else ())
        pattern = self._text_value(argument)
        if method == "contains" and regex and _REGEX_METACHARACTERS.search(pattern):
            self._fail(
                node,
                "{text}: str.contains() reads a regular expression unless regex=False; "
                "add regex=False for a plain substring, or use str.match() for a regex",
            )
        try:
            return string_predicate(column, method, pattern)
        except FilterError as exc:
            self._fail(node, "{text}: " + _clause(exc))

    def _regex_flag(self, node: ast.Call) -> bool:
        for keyword in node.keywords:
            if keyword.arg == "regex":
                value = keyword.value
                if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                    return value.value
                self._fail(value, "{text}: regex= takes True or False")
        return True

    def _arguments(
        self, node: ast.Call, count: int, *, keywords: tuple[str, ...] = ()
    ) -> list[ast.expr]:
        unknown = [keyword for keyword in node.keywords if keyword.arg not in keywords]
        starred = any(isinstance(argument, ast.Starred) for argument in node.args)
        if len(node.args) != count or unknown or starred:
            plural = "argument" if count == 1 else "arguments"
            self._fail(node, f"{{text}}: this method takes {count} positional {plural}")
        return list(node.args)

    def _operand(self, node: ast.expr) -> _Operand:
        if isinstance(node, ast.Name):
            if node.id in self._source.columns:
                return nodes.ColumnRef(self._source.columns[node.id])
            if node.id in self._source.variables:
                return self._variable(node)
            return nodes.ColumnRef(node.id)
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub | ast.UAdd)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, int | float)
            and not isinstance(node.operand.value, bool)
        ):
            number = node.operand.value
            return self._literal(node, -number if isinstance(node.op, ast.USub) else number)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return tuple(self._scalar(element) for element in node.elts)
        self._fail(node, "{text} is not supported here; " + _GRAMMAR_HINT)

    def _column_of(self, node: ast.expr) -> str:
        message = "{text} is not a column; methods apply to columns, e.g. city.isna()"
        return self._expect(node, nodes.ColumnRef, message).name

    def _scalar(self, node: ast.expr) -> Scalar:
        operand = self._operand(node)
        if isinstance(operand, nodes.ColumnRef | tuple):
            self._fail(node, "{text}: expected a single value (a string, number or boolean)")
        return operand

    def _expect(self, node: ast.expr, kind: type[_T], template: str) -> _T:
        operand = self._operand(node)
        if not isinstance(operand, kind):
            self._fail(node, template)
        return operand

    def _text_value(self, node: ast.expr) -> str:
        value = self._scalar(node)
        if not isinstance(value, str):
            self._fail(node, "{text}: expected a string")
        return value

    def _constant(self, node: ast.Constant) -> Scalar:
        if node.value is None:
            self._fail(node, "{text}: test for missing values with .isna() or .notna()")
        if not isinstance(node.value, str | int | float):
            self._fail(node, "{text}: values are strings, numbers and True/False")
        return self._literal(node, node.value)

    def _literal(self, node: ast.expr, value: str | int | float) -> Scalar:
        try:
            return normalize_scalar(value)
        except FilterError as exc:
            self._fail(node, "{text}: " + _clause(exc))

    def _variable(self, node: ast.Name) -> _Operand:
        name = self._source.variables[node.id]
        if name not in self._scope:
            self._fail(node, "{text} is not a defined variable")
        value = self._scope[name]
        try:
            if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
                return normalize_scalar(value)
            return normalize_scalars(value)
        except FilterError as exc:
            self._fail(node, "{text}: " + _clause(exc))

    def _fail(self, node: ast.expr, template: str) -> NoReturn:
        self._fail_span(node, node, template)

    def _fail_span(self, first: ast.expr, last: ast.expr, template: str) -> NoReturn:
        start = self._user_offset(first.lineno, first.col_offset)
        end_line = last.end_lineno or last.lineno
        end_col = last.end_col_offset if last.end_col_offset is not None else last.col_offset
        end = max(start, self._user_offset(end_line, end_col - 1) + 1) if end_col else start
        snippet = self._text[start:end] or self._text[start : start + 1]
        message = template.replace("{text}", f"`{snippet}` (offset {start})").rstrip(".")
        raise FilterError(message[:1].upper() + message[1:] + ".", text=snippet, offset=start)

    def _syntax_error(self, exc: SyntaxError) -> FilterError:
        line = (exc.lineno or 1) - 1
        if exc.offset and 0 <= line < len(self._line_starts):
            index = self._line_starts[line] + exc.offset - 1
        else:  # Python reports a filter that ends too early at offset 0
            index = len(self._source.text)
        offset = min(self._source.origin(index, self._text), len(self._text))
        near = self._text[offset : offset + 20]
        where = f"near `{near}`" if near else "at the end"
        return FilterError(
            f"The filter is not valid at offset {offset} ({where}): {exc.msg}; "
            + _GRAMMAR_HINT
            + ".",
            text=near,
            offset=offset,
        )

    def _user_offset(self, lineno: int, byte_column: int) -> int:
        line_start = self._line_starts[min(lineno - 1, len(self._line_starts) - 1)]
        line = self._source.text[line_start:]
        column = len(line.encode("utf-8")[: max(byte_column, 0)].decode("utf-8", "ignore"))
        return self._source.origin(line_start + column, self._text)


def _clause(exc: FilterError) -> str:
    """An error message to continue a sentence with."""
    message = str(exc)
    return message[:1].lower() + message[1:]
