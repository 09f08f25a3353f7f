"""Update operators: a change the service applies to a row's current value.

In the data of an update (`TableQuery.update`), a column's value may be an operator instead
of a value: ``fp.increment("visits", 1)`` adds one to each row's own ``visits``. The service
applies it atomically, row by row. On the wire an operator is the JSON text
``{"method": <name>, "values": [...]}`` (docs: the service interface, "Update operators").

>>> increment("visits", 1, max=100).wire()
'{"method":"increment","values":[1,100]}'
>>> now().wire()
'{"method":"dateSetNow","values":[]}'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..._schema import to_json_value


@dataclass(frozen=True)
class UpdateOperator:
    """One operator: the service's `method`, its `values`, and the `column` it was written
    for (None: whichever column it is set on)."""

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
        target = "" if self.column is None else f"{self.column!r}, "
        return f"UpdateOperator({target}{self.method}{list(self.values)!r})"


def _bounded(by: float, bound: float | None) -> tuple[float, ...]:
    return (by,) if bound is None else (by, bound)


def increment(
    column: str | None = None, by: float = 1, *, max: float | None = None
) -> UpdateOperator:
    """Add `by` to the number (never past `max`)."""
    return UpdateOperator("increment", _bounded(by, max), column)


def decrement(
    column: str | None = None, by: float = 1, *, min: float | None = None
) -> UpdateOperator:
    """Subtract `by` from the number (never below `min`)."""
    return UpdateOperator("decrement", _bounded(by, min), column)


def multiply(
    column: str | None = None, by: float = 1, *, max: float | None = None
) -> UpdateOperator:
    """Multiply the number by `by` (never past `max`)."""
    return UpdateOperator("multiply", _bounded(by, max), column)


def divide(column: str | None = None, by: float = 1, *, min: float | None = None) -> UpdateOperator:
    """Divide the number by `by` (never below `min`)."""
    return UpdateOperator("divide", _bounded(by, min), column)


def append(column: str | None = None, *values: object) -> UpdateOperator:
    """Add `values` at the end of the array."""
    return UpdateOperator("arrayAppend", values, column)


def prepend(column: str | None = None, *values: object) -> UpdateOperator:
    """Add `values` at the start of the array."""
    return UpdateOperator("arrayPrepend", values, column)


def remove(column: str | None = None, value: object = None) -> UpdateOperator:
    """Remove every element equal to `value` from the array."""
    return UpdateOperator("arrayRemove", (value,), column)


def concat(column: str | None = None, text: str = "") -> UpdateOperator:
    """Add `text` at the end of the string."""
    return UpdateOperator("stringConcat", (text,), column)


def toggle(column: str | None = None) -> UpdateOperator:
    """Turn the boolean over."""
    return UpdateOperator("toggle", (), column)


def now(column: str | None = None) -> UpdateOperator:
    """Set the datetime to the service's present moment."""
    return UpdateOperator("dateSetNow", (), column)


def update_data(changes: dict[str, Any]) -> dict[str, Any]:
    """The data of a bulk update: plain values as the service stores them, operators as
    their wire text. An operator written for another column raises ValueError."""
    if not isinstance(changes, dict) or not changes:
        raise ValueError("set= takes a dict of column: value (or operator), e.g. {'n': 1}")
    data: dict[str, Any] = {}
    for column, value in changes.items():
        if isinstance(value, UpdateOperator):
            if value.column is not None and value.column != column:
                raise ValueError(
                    f"set={{{column!r}: {value!r}}} applies an operator written for column "
                    f"{value.column!r} to {column!r}; name the same column in both places"
                )
            data[column] = value.wire()
        else:
            data[column] = to_json_value(value)
    return data
