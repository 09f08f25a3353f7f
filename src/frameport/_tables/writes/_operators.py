"""Update operators: a change the service applies to a row's current value.

In the data of an update (`TableQuery.update`), a column's value may be an operator instead
of a value: ``set={"visits": fp.increment(1)}`` (or ``fp.increment(by=1)``) adds one to each
row's own ``visits``. The column is the key of ``set=``; each operator takes its amount or
values first. The service applies it atomically, row by row. On the wire an operator is the
JSON text ``{"method": <name>, "values": [...]}`` (docs: the service interface, "Update
operators").

The spelling of 0.1.0 named the column first (``fp.increment("visits", 1)``); it still
works in this release, with a `FutureWarning` showing the new spelling. A text where a
number goes is read as that column, so an operator set on another column raises a
ValueError showing the right spelling; an amount of a wrong type raises a TypeError.

>>> increment(1, max=100).wire()
'{"method":"increment","values":[1,100]}'
>>> now().wire()
'{"method":"dateSetNow","values":[]}'
>>> increment(by=2)
fp.increment(2)
"""

from __future__ import annotations

import json
import numbers
import warnings
from dataclasses import dataclass
from typing import Any

from ..._core._call_stack import user_frame_depth
from ..._schema import to_json_value

_NAMES = {
    "increment": "increment",
    "decrement": "decrement",
    "multiply": "multiply",
    "divide": "divide",
    "arrayAppend": "append",
    "arrayPrepend": "prepend",
    "arrayRemove": "remove",
    "stringConcat": "concat",
    "toggle": "toggle",
    "dateSetNow": "now",
}
_BOUNDS = {"increment": "max", "multiply": "max", "decrement": "min", "divide": "min"}
_ARRAYS = frozenset({"arrayAppend", "arrayPrepend"})  # values first; a column only by position


@dataclass(frozen=True)
class UpdateOperator:
    """One operator: the service's `method`, its `values`, and the `column` it was written
    for (None: whichever column it is set on; only the column-first spelling of 0.1.0 sets
    it)."""

    method: str
    """The service's name of the operator, e.g. ``increment``."""
    values: tuple[object, ...]
    """Its arguments, as the service takes them."""
    column: str | None
    """The column it was written for; None: whichever column it is set on."""

    def wire(self) -> str:
        """The JSON text the service reads as this operator."""
        values = [to_json_value(value) for value in self.values]
        return json.dumps({"method": self.method, "values": values}, separators=(",", ":"))

    def __repr__(self) -> str:
        """How it is written, e.g. ``fp.increment(1, max=100)``."""
        shown = [repr(value) for value in self.values]
        bound = _BOUNDS.get(self.method)
        if bound is not None and len(shown) > 1:
            shown[1] = f"{bound}={shown[1]}"
        return f"fp.{_NAMES.get(self.method, self.method)}({', '.join(shown)})"


def _column_first(name: str, column: str, rest: tuple[object, ...], spelled: str) -> str:
    """`column`, after the FutureWarning of the column-first spelling of 0.1.0."""
    written = ", ".join(repr(value) for value in (column, *rest))
    warnings.warn(
        f"fp.{name}({written}) names the column, which set= names already: write "
        f"set={{{column!r}: {spelled}}}; the column-first spelling goes in the next release",
        FutureWarning,
        stacklevel=1 + user_frame_depth(),
    )
    return column


def _number(name: str, keyword: str, value: object, example: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"fp.{name}'s {keyword} takes a number, e.g. set={{'visits': {example}}} "
            f"(got {value!r})"
        )
    return value  # type: ignore[return-value]


def _numeric(
    method: str, by: float, legacy: tuple[float, ...], bound_name: str, bound: float | None
) -> UpdateOperator:
    name = _NAMES[method]
    column = None
    if isinstance(by, str):
        try:
            float(by)
        except ValueError:
            amount = legacy[0] if legacy else 1
            spelled = repr(UpdateOperator(method, (amount,), None))
            column, by, legacy = _column_first(name, by, legacy, spelled), amount, legacy[1:]
    if legacy:
        raise TypeError(f"fp.{name} takes one amount, e.g. set={{'visits': fp.{name}(2)}}")
    example = f"fp.{name}(2)"
    values = [_number(name, "amount (by=)", by, example)]
    if bound is not None:
        values.append(_number(name, f"{bound_name}=", bound, f"fp.{name}(2, {bound_name}=10)"))
    return UpdateOperator(method, tuple(values), column)


def increment(by: float = 1, *legacy: float, max: float | None = None) -> UpdateOperator:
    """Add `by` to the number (never past `max`): ``set={"visits": fp.increment(1)}``."""
    return _numeric("increment", by, legacy, "max", max)


def decrement(by: float = 1, *legacy: float, min: float | None = None) -> UpdateOperator:
    """Subtract `by` from the number (never below `min`): ``fp.decrement(2, min=0)``."""
    return _numeric("decrement", by, legacy, "min", min)


def multiply(by: float = 1, *legacy: float, max: float | None = None) -> UpdateOperator:
    """Multiply the number by `by` (never past `max`): ``fp.multiply(2)``."""
    return _numeric("multiply", by, legacy, "max", max)


def divide(by: float = 1, *legacy: float, min: float | None = None) -> UpdateOperator:
    """Divide the number by `by` (never below `min`): ``fp.divide(2)``."""
    return _numeric("divide", by, legacy, "min", min)


def append(*values: object) -> UpdateOperator:
    """Add `values` at the end of the array: ``set={"tags": fp.append("new")}``."""
    return UpdateOperator("arrayAppend", values, None)


def prepend(*values: object) -> UpdateOperator:
    """Add `values` at the start of the array: ``fp.prepend("first")``."""
    return UpdateOperator("arrayPrepend", values, None)


def remove(value: object, *legacy: object) -> UpdateOperator:
    """Remove every element equal to `value` from the array: ``fp.remove("old")``."""
    if legacy:
        spelled = repr(UpdateOperator("arrayRemove", legacy, None))
        column = _column_first("remove", str(value), legacy, spelled)
        return UpdateOperator("arrayRemove", legacy, column)
    return UpdateOperator("arrayRemove", (value,), None)


def concat(text: str, *legacy: str) -> UpdateOperator:
    """Add `text` at the end of the string: ``set={"name": fp.concat("!")}``."""
    column = None
    if legacy:
        spelled = repr(UpdateOperator("stringConcat", legacy, None))
        column, text = _column_first("concat", text, legacy, spelled), legacy[0]
    if not isinstance(text, str):
        raise TypeError(
            f"fp.concat takes the text to add, e.g. set={{'name': fp.concat('!')}} (got {text!r})"
        )
    return UpdateOperator("stringConcat", (text,), column)


def toggle(*legacy: str) -> UpdateOperator:
    """Turn the boolean over: ``set={"active": fp.toggle()}``."""
    return _no_values("toggle", legacy)


def now(*legacy: str) -> UpdateOperator:
    """Set the datetime to the service's present moment: ``set={"seen": fp.now()}``."""
    return _no_values("dateSetNow", legacy)


def _no_values(method: str, legacy: tuple[str, ...]) -> UpdateOperator:
    operator = UpdateOperator(method, (), None)
    if not legacy:
        return operator
    if len(legacy) > 1 or not isinstance(legacy[0], str):
        raise TypeError(f"{operator!r} takes nothing: write set={{'column': {operator!r}}}")
    return UpdateOperator(method, (), _column_first(_NAMES[method], legacy[0], (), repr(operator)))


def update_data(changes: dict[str, Any]) -> dict[str, Any]:
    """The data of a bulk update: plain values as the service stores them, operators as
    their wire text. An operator written for another column raises ValueError showing the
    right spelling."""
    if not isinstance(changes, dict) or not changes:
        raise ValueError("set= takes a dict of column: value (or operator), e.g. {'n': 1}")
    data: dict[str, Any] = {}
    for column, value in changes.items():
        if isinstance(value, UpdateOperator):
            data[column] = _set_on(column, value).wire()
        else:
            data[column] = to_json_value(value)
    return data


def _set_on(column: str, operator: UpdateOperator) -> UpdateOperator:
    """`operator` as set on `column`: an array operator whose first value is the column's
    name, among others, is the column-first spelling of 0.1.0 (warned)."""
    values = operator.values
    if operator.method in _ARRAYS and len(values) > 1 and values[0] == column:
        operator = UpdateOperator(operator.method, values[1:], None)
        _column_first(_NAMES[operator.method], column, operator.values, repr(operator))
    if operator.column is not None and operator.column != column:
        right = UpdateOperator(operator.method, operator.values, None)
        raise ValueError(
            f"set={{{column!r}: ...}} takes an operator whose first argument is its amount or "
            f"value, but {operator.column!r} was read as the name of another column: write "
            f"set={{{column!r}: {right!r}}}"
        )
    return operator
