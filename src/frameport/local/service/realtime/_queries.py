"""Subscription queries of realtime: which methods, and which rows match (service interface,
"Realtime events").

A subscription's queries are JSON query strings, parsed by the query language's parser and
then limited to the methods realtime allows. They are evaluated against each event's payload
(the row after the write) the way the service does it, in PHP: `equal` and `notEqual` are
strict (`1` and `1.0` differ, so do `"1"` and `1`), the comparisons are PHP 8's loose ones
(two numeric strings compare as numbers, a number and a non-numeric string compare as text),
a key missing from the payload matches nothing, queries are ANDed, and a `select(["*"])`
anywhere makes the subscription match every event.

>>> older = '{"method":"greaterThan","attribute":"age","values":[30]}'
>>> queries = parse_subscription_queries([older])
>>> queries.matches({"age": 31}), queries.matches({"age": "31"}), queries.matches({})
(True, True, False)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...store._query import QueryError, RawQuery, parse_query

ALLOWED_METHODS = (
    "equal",
    "notEqual",
    "lessThan",
    "lessThanEqual",
    "greaterThan",
    "greaterThanEqual",
    "isNull",
    "isNotNull",
    "and",
    "or",
    "select",
)
#: The query a URL channel without queries gets: every event on its channels.
SELECT_ALL_TEXT = '{"method":"select","values":["*"]}'
_PHP_WHITESPACE = " \t\n\r\v\f"
_NUMERIC = re.compile(
    rf"[{_PHP_WHITESPACE}]*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[{_PHP_WHITESPACE}]*"
)
_INTEGER = re.compile(rf"[{_PHP_WHITESPACE}]*[+-]?\d+[{_PHP_WHITESPACE}]*")


class SubscriptionQueryError(Exception):
    """A query realtime refuses; `message` is the text of the error frame."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class SubscriptionQueries:
    """The queries of one subscription: as sent back to the client, and as a predicate."""

    texts: tuple[str, ...]
    conditions: tuple[RawQuery, ...] = ()
    match_all: bool = False

    def matches(self, payload: Mapping[str, Any]) -> bool:
        """Whether the event whose payload is `payload` reaches this subscription."""
        return self.match_all or all(_holds(query, payload) for query in self.conditions)


def parse_subscription_queries(texts: Sequence[Any]) -> SubscriptionQueries:
    """The queries of one subscription; SubscriptionQueryError names the first refused one.

    Like the service, every query is parsed first and then the allowed methods are checked,
    nested ones included, last query first.
    """
    if not texts:
        return SubscriptionQueries(())
    parsed = []
    for text in texts:
        if not isinstance(text, str):
            raise SubscriptionQueryError(_invalid("Syntax error"))
        try:
            parsed.append(parse_query(text))
        except QueryError as exc:
            raise SubscriptionQueryError(_invalid(exc.message)) from None
    pending = list(parsed)
    while pending:
        query = pending.pop()
        if query.method not in ALLOWED_METHODS:
            raise SubscriptionQueryError(
                _invalid(
                    f"Query method '{query.method}' is not supported in Realtime queries. "
                    f"Allowed: {', '.join(ALLOWED_METHODS)}"
                )
            )
        if query.method == "select" and list(query.values) != ["*"]:
            raise SubscriptionQueryError(
                _invalid(
                    'Only select("*") is allowed in Realtime queries. select("*") means '
                    '"listen to all events".'
                )
            )
        if query.method in ("and", "or"):
            pending.extend(query.values)
    return SubscriptionQueries(
        tuple(query_text(query) for query in parsed),
        tuple(query for query in parsed if query.method != "select"),
        match_all=any(query.method == "select" for query in parsed),
    )


def _invalid(detail: str) -> str:
    return detail if detail.startswith("Invalid query") else f"Invalid query: {detail}"


def query_text(query: RawQuery) -> str:
    """A query as the service writes it back: method, attribute (when set), values."""
    return json.dumps(_query_object(query), separators=(",", ":"))


def _query_object(query: RawQuery) -> dict[str, Any]:
    data: dict[str, Any] = {"method": query.method}
    if query.attribute:
        data["attribute"] = query.attribute
    nested = query.method in ("and", "or")
    data["values"] = [_query_object(value) if nested else value for value in query.values]
    return data


# --- evaluation ------------------------------------------------------------------------------


def _holds(query: RawQuery, payload: Mapping[str, Any]) -> bool:
    method = query.method
    if method == "and":
        return all(_holds(nested, payload) for nested in query.values)
    if method == "or":
        return any(_holds(nested, payload) for nested in query.values)
    if query.attribute not in payload:
        return False
    value = payload[query.attribute]
    if method == "isNull":
        return value is None
    if method == "isNotNull":
        return value is not None
    if method == "equal":
        return any(_identical(value, target) for target in query.values)
    if method == "notEqual":
        return not any(_identical(value, target) for target in query.values)
    wanted = _COMPARISONS[method]
    for target in query.values:
        order = _php_compare(value, target)
        if order is not None and order in wanted:
            return True
    return False


_COMPARISONS = {
    "lessThan": (-1,),
    "lessThanEqual": (-1, 0),
    "greaterThan": (1,),
    "greaterThanEqual": (0, 1),
}


def _identical(left: Any, right: Any) -> bool:
    """PHP's `===` on decoded JSON: same type and same value (int and float differ)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_identical, left, right))
    if isinstance(left, dict):
        return list(left) == list(right) and all(_identical(left[k], right[k]) for k in left)
    return bool(left == right)


def _php_compare(left: Any, right: Any) -> int | None:
    """PHP 8's `<=>` on decoded JSON values; None where it has no sensible answer (objects)."""
    if isinstance(left, dict) or isinstance(right, dict):
        return None
    if isinstance(left, list) or isinstance(right, list):
        return _compare_arrays(left, right)
    if left is None and isinstance(right, str):
        return _compare_strings("", right)
    if right is None and isinstance(left, str):
        return _compare_strings(left, "")
    if isinstance(left, bool) or isinstance(right, bool) or left is None or right is None:
        return _sign(int(bool(left)) - int(bool(right)))
    if isinstance(left, str) and isinstance(right, str):
        return _compare_strings(left, right)
    if isinstance(left, str):
        return _compare_number_text(right, left, flip=True)
    if isinstance(right, str):
        return _compare_number_text(left, right, flip=False)
    return _sign(left - right) if not (math.isnan(left) or math.isnan(right)) else None


def _compare_arrays(left: Any, right: Any) -> int | None:
    """An array is greater than anything else; two arrays compare by length, then items."""
    if not isinstance(left, list):
        return -1
    if not isinstance(right, list):
        return 1
    if len(left) != len(right):
        return _sign(len(left) - len(right))
    for one, other in zip(left, right, strict=True):
        order = _php_compare(one, other)
        if order != 0:
            return order
    return 0


def _compare_strings(left: str, right: str) -> int:
    """Two numeric strings compare as numbers, anything else byte-wise."""
    left_number, right_number = _numeric(left), _numeric(right)
    if left_number is not None and right_number is not None:
        return _sign(left_number - right_number)
    return _sign((left > right) - (left < right))


def _compare_number_text(number: float, text: str, *, flip: bool) -> int:
    """A number and a string: as numbers when the string is numeric, else as text."""
    parsed = _numeric(text)
    if parsed is not None:
        order = _sign(number - parsed)
    else:
        order = _compare_strings(_php_number_text(number), text)
    return -order if flip else order


def _numeric(text: str) -> float | None:
    if _INTEGER.fullmatch(text):
        return int(text.strip(_PHP_WHITESPACE))
    if _NUMERIC.fullmatch(text):
        return float(text.strip(_PHP_WHITESPACE))
    return None


def _php_number_text(number: float) -> str:
    """A number as PHP writes it in a string comparison: `2.0` is `"2"`."""
    if isinstance(number, float) and number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return str(number)


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)
