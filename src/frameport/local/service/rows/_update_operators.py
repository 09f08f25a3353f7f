"""Update operators in row data (service interface, "Update operators").

In the data of an update, upsert, bulk update or bulk upsert, a column value that is a JSON
string `{"method": <name>, "values": [...]}` naming a known operator is applied to the row's
current value instead of being stored. `$` keys are never parsed.

>>> apply_operator("increment", [5, 100], 98, "count", "integer", False, "")
100
>>> apply_operator("arrayFilter", ["greaterThan", 3], [1, 5, 7], "scores", "integer", True, "")
[5, 7]
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ...store._columns import ColumnDef, normalize_datetime
from ...store._schema_store import TableMeta
from ...wire._errors import ServiceError

NUMERIC = frozenset({"increment", "decrement", "multiply", "divide", "modulo", "power"})
ARRAY = frozenset(
    {
        "arrayAppend",
        "arrayPrepend",
        "arrayInsert",
        "arrayRemove",
        "arrayUnique",
        "arrayIntersect",
        "arrayDiff",
        "arrayFilter",
    }
)
STRING = frozenset({"stringConcat", "stringReplace"})
BOOLEAN = frozenset({"toggle"})
DATE = frozenset({"dateAddDays", "dateSubDays", "dateSetNow"})
OPERATORS = NUMERIC | ARRAY | STRING | BOOLEAN | DATE

_FILTERS: dict[str, Callable[[Any, Any], bool]] = {
    "equal": lambda item, value: item == value,
    "notEqual": lambda item, value: item != value,
    "greaterThan": lambda item, value: item is not None and item > value,
    "greaterThanEqual": lambda item, value: item is not None and item >= value,
    "lessThan": lambda item, value: item is not None and item < value,
    "lessThanEqual": lambda item, value: item is not None and item <= value,
    "isNull": lambda item, value: item is None,
    "isNotNull": lambda item, value: item is not None,
}


class InvalidOperator(ServiceError):
    """400 for an operator that cannot apply to its column."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(
            "general_argument_invalid", f'Invalid operator for attribute "{key}": {detail}'
        )


def parse_operator(value: Any) -> tuple[str, list[Any]] | None:
    """`(method, values)` when `value` is an operator's JSON string, else None."""
    if not isinstance(value, str) or not value.startswith("{"):
        return None
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    if not isinstance(decoded, dict) or decoded.get("method") not in OPERATORS:
        return None
    values = decoded.get("values", [])
    return str(decoded["method"]), values if isinstance(values, list) else [values]


def input_value(column: ColumnDef, stored: Any) -> Any:
    """A stored value as row data would send it (arrays decoded, booleans as booleans)."""
    if stored is None:
        return None
    if column.stored_as_json:
        return json.loads(stored)
    if column.kind == "boolean":
        return bool(stored)
    return stored


def resolve_operators(
    table: TableMeta, data: Mapping[str, Any], previous: Mapping[str, Any] | None, now: str
) -> dict[str, Any]:
    """`data` with every operator replaced by its result over the previous stored value."""
    resolved = dict(data)
    for key, value in data.items():
        column = table.column(key)
        parsed = parse_operator(value)
        if parsed is None or column is None or column.kind == "relationship":
            continue
        current = input_value(column, (previous or {}).get(key))
        method, values = parsed
        resolved[key] = apply_operator(method, values, current, key, column.kind, column.array, now)
    return resolved


def _number(values: list[Any], position: int, key: str, default: Any = None) -> Any:
    if len(values) <= position or values[position] is None:
        return default
    number = values[position]
    if not isinstance(number, (int, float)) or isinstance(number, bool):
        raise InvalidOperator(key, f"value {position + 1} must be a number")
    return number


def _numeric(method: str, values: list[Any], current: Any, key: str) -> Any:
    operand = _number(values, 0, key, 1 if method in ("increment", "decrement") else None)
    if operand is None:
        raise InvalidOperator(key, f"{method} needs a number")
    bound = _number(values, 1, key)
    base = current if current is not None else 0
    if method in ("divide", "modulo") and operand == 0:
        raise InvalidOperator(key, "cannot divide by zero")
    result: Any
    if method == "increment":
        result = base + operand
    elif method == "decrement":
        result = base - operand
    elif method == "multiply":
        result = base * operand
    elif method == "divide":
        result = base / operand
        if isinstance(base, int) and isinstance(operand, int) and result == int(result):
            result = int(result)
    elif method == "modulo":
        result = math.fmod(base, operand) if isinstance(base, float) else base % operand
    else:
        result = base**operand
    if bound is not None:
        upper = method in ("increment", "multiply", "power")
        result = min(result, bound) if upper else max(result, bound)
    return result


def _array(method: str, values: list[Any], current: Any, key: str) -> list[Any]:
    items = list(current or [])
    if method == "arrayAppend":
        return items + values
    if method == "arrayPrepend":
        return values + items
    if method == "arrayInsert":
        if len(values) != 2 or not isinstance(values[0], int) or isinstance(values[0], bool):
            raise InvalidOperator(key, "arrayInsert needs an index and a value")
        if not 0 <= values[0] <= len(items):
            raise InvalidOperator(key, f"index {values[0]} is outside the array")
        return [*items[: values[0]], values[1], *items[values[0] :]]
    if method == "arrayRemove":
        return [item for item in items if item not in values]
    if method == "arrayUnique":
        return [item for position, item in enumerate(items) if item not in items[:position]]
    if method == "arrayIntersect":
        return [item for item in items if item in values]
    if method == "arrayDiff":
        return [item for item in items if item not in values]
    condition = values[0] if values else None
    if condition not in _FILTERS:
        raise InvalidOperator(key, f"arrayFilter takes one of {', '.join(_FILTERS)}")
    test, operand = _FILTERS[condition], values[1] if len(values) > 1 else None
    try:
        return [item for item in items if test(item, operand)]
    except TypeError:
        raise InvalidOperator(key, "the filter value does not compare with the items") from None


def _date(method: str, values: list[Any], current: Any, key: str, now: str) -> str:
    if method == "dateSetNow":
        return now
    days = _number(values, 0, key)
    if days is None:
        raise InvalidOperator(key, f"{method} needs a number of days")
    moment = normalize_datetime(current) if current is not None else None
    if moment is None:
        raise InvalidOperator(key, f"{method} needs a date to change")
    parsed = datetime.fromisoformat(moment).astimezone(UTC)
    shifted = parsed + timedelta(days=days if method == "dateAddDays" else -days)
    return shifted.isoformat(timespec="milliseconds")


def apply_operator(
    method: str, values: list[Any], current: Any, key: str, kind: str, array: bool, now: str
) -> Any:
    """The new value of column `key` (of `kind`) after `method` with `values`."""
    if method in ARRAY:
        if not array:
            raise InvalidOperator(key, f"{method} applies to array columns only")
        return _array(method, values, current, key)
    if array:
        raise InvalidOperator(key, f"{method} does not apply to an array column")
    if method in NUMERIC and kind in ("integer", "float"):
        return _numeric(method, values, current, key)
    if method in STRING and kind == "string":
        text = current or ""
        if method == "stringConcat":
            return text + "".join(str(value) for value in values)
        if len(values) != 2 or not all(isinstance(value, str) for value in values):
            raise InvalidOperator(key, "stringReplace needs the text to find and its replacement")
        return text.replace(values[0], values[1])
    if method in BOOLEAN and kind == "boolean":
        return not current
    if method in DATE and kind == "datetime":
        return _date(method, values, current, key, now)
    raise InvalidOperator(key, f"{method} does not apply to a {kind} column")
