"""The query language (service interface, "Queries"): parse the JSON query strings, validate
them against a schema, and convert their values to what the SQL compares.

Each element of `queries` is a JSON object `{"method", "column" | "attribute", "values"}`.
`parse_queries` turns the strings of one request into a `ListQuery`: filters (a tree of
`Condition` and `Group`), the selected keys, orders, limit, offset and cursor. Problems raise
`QueryError` with the service's message; the routes decide which error type carries it.

>>> schema = Schema({"age": Field("age", "integer", "c_1", "c_1")})
>>> query = parse_queries(['{"method":"greaterThan","column":"age","values":[30]}'], schema)
>>> query.filters[0].method, query.filters[0].values
('greaterThan', (30,))
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..wire import _json as request_json
from ..wire._params import UID_DESCRIPTION, is_uid
from ._collation import fold
from ._columns import INT64_MAX, INT64_MIN, normalize_datetime
from ._regex import PatternError, compile_pattern

MAX_VALUES = 500
DEFAULT_LIMIT = 25

#: Filter methods: the value-count rule of each. The four comparisons take several values,
#: OR-ed (service interface, "Queries").
AT_LEAST_ONE = frozenset(
    {
        "equal",
        "contains",
        "containsAny",
        "containsAll",
        "notContains",
        "lessThan",
        "lessThanEqual",
        "greaterThan",
        "greaterThanEqual",
    }
)
EXACTLY_ONE = frozenset(
    {
        "notEqual",
        "search",
        "notSearch",
        "startsWith",
        "notStartsWith",
        "endsWith",
        "notEndsWith",
        "regex",
    }
)
EXACTLY_TWO = frozenset({"between", "notBetween"})
NO_VALUES = frozenset({"isNull", "isNotNull"})
PRESENCE = frozenset({"exists", "notExists"})
LOGICAL = frozenset({"and", "or"})
SPATIAL = frozenset(
    {
        "crosses",
        "notCrosses",
        "distanceEqual",
        "distanceNotEqual",
        "distanceGreaterThan",
        "distanceLessThan",
        "intersects",
        "notIntersects",
        "overlaps",
        "notOverlaps",
        "touches",
        "notTouches",
    }
)
VECTOR = frozenset({"vectorDot", "vectorCosine", "vectorEuclidean"})
FILTERS = (
    AT_LEAST_ONE | EXACTLY_ONE | EXACTLY_TWO | NO_VALUES | PRESENCE | LOGICAL | SPATIAL | VECTOR
) | {"elemMatch"}
ORDERS = frozenset({"orderAsc", "orderDesc", "orderRandom"})
CURSORS = frozenset({"cursorAfter", "cursorBefore"})
PAGING = frozenset({"limit", "offset"}) | CURSORS
ALL_METHODS = FILTERS | ORDERS | PAGING | {"select"}

#: Methods only meaningful on text; other columns reject them.
TEXT_ONLY = frozenset(
    {
        "startsWith",
        "notStartsWith",
        "endsWith",
        "notEndsWith",
        "regex",
        "search",
        "notSearch",
    }
)
CONTAINS = frozenset({"contains", "containsAny", "containsAll", "notContains"})
ARRAY_METHODS = CONTAINS | NO_VALUES | PRESENCE

_PHP_TYPES = {bool: "boolean", int: "integer", float: "double", str: "string", list: "array"}


class QueryError(Exception):
    """A query the service refuses; `message` is the text of the error body."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _invalid(detail: str) -> QueryError:
    return QueryError(f"Invalid query: {detail}")


@dataclass(frozen=True)
class Field:
    """One queryable key of a source: its value kind and the SQL expressions behind it.

    `kind` is `string`, `id`, `integer`, `float`, `boolean`, `datetime`, `sequence` or
    `spatial`.
    `sql` is the stored value, `compare_sql` what comparisons and ordering use (the folded
    text for strings). Both are internal expressions, never user text.
    """

    key: str
    kind: str
    sql: str
    compare_sql: str
    fold: bool = False
    array: bool = False
    encrypted: bool = False
    search_table: str | None = None


@dataclass(frozen=True)
class Schema:
    """The keys one list endpoint can filter and order by, and what `select` accepts."""

    fields: Mapping[str, Field]
    selectable: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RawQuery:
    """A parsed, not yet validated query; `values` of and/or hold nested RawQuery objects."""

    method: str
    attribute: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Condition:
    """A filter on one field with values converted for SQL (folded, UTC, 0/1, ...)."""

    method: str
    field: Field
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Group:
    """`and` / `or` of nested filters."""

    method: str
    children: tuple[Condition | Group, ...]


Filter = Condition | Group


@dataclass(frozen=True)
class Order:
    """One ordering key; `field` None means random order."""

    field: Field | None
    descending: bool = False


@dataclass(frozen=True)
class Cursor:
    """`cursorAfter` / `cursorBefore` an item ID."""

    before: bool
    item_id: str


@dataclass
class ListQuery:
    """Everything the queries of one request ask for."""

    filters: list[Filter] = field(default_factory=list)
    select: list[str] | None = None
    orders: list[Order] = field(default_factory=list)
    limit: int | None = None
    offset: int | None = None
    cursor: Cursor | None = None


# --- parsing ---------------------------------------------------------------------------


def _php_type(value: Any) -> str:
    if value is None:
        return "NULL"
    return _PHP_TYPES.get(type(value), "array")


def parse_query(text: str) -> RawQuery:
    """One JSON query string; QueryError with the service's parser messages."""
    try:
        decoded = request_json.loads(text)
    except ValueError:
        raise QueryError("Invalid query: Syntax error") from None
    return parse_object(decoded)


def parse_object(decoded: Any) -> RawQuery:
    """One decoded query object (nested ones included)."""
    if isinstance(decoded, list):
        decoded = {}
    if not isinstance(decoded, dict):
        raise QueryError(f"Invalid query. Must be an array, got {_php_type(decoded)}")
    method = decoded.get("method", "")
    if not isinstance(method, str):
        raise QueryError(f"Invalid query method. Must be a string, got {_php_type(method)}")
    if method not in ALL_METHODS:
        raise QueryError(f"Invalid query method: {method}")
    attribute = _attribute_member(decoded)
    values = decoded.get("values", [])
    if values is None:
        values = []
    if not isinstance(values, list):
        raise QueryError(f"Invalid query values. Must be an array, got {_php_type(values)}")
    if method in LOGICAL or method == "elemMatch":
        return RawQuery(method, attribute, tuple(parse_object(value) for value in values))
    return RawQuery(method, attribute, tuple(values))


def _attribute_member(decoded: dict[str, Any]) -> str:
    """`column` or `attribute` (either is accepted; both with different values is an error)."""
    present = [decoded[name] for name in ("column", "attribute") if name in decoded]
    if len(present) == 2 and present[0] != present[1]:
        raise _invalid('"column" and "attribute" are both set, with different values')
    attribute = present[0] if present else ""
    if attribute is None:
        attribute = ""
    if not isinstance(attribute, str):
        raise QueryError(f"Invalid query attribute. Must be a string, got {_php_type(attribute)}")
    return attribute


# --- validation ------------------------------------------------------------------------


def parse_queries(
    texts: Sequence[str], schema: Schema, *, allowed: frozenset[str] = ALL_METHODS
) -> ListQuery:
    """Parse and validate the `queries` of one request against `schema`."""
    result = ListQuery()
    for text in texts:
        raw = parse_query(text)
        if raw.method not in allowed:
            raise QueryError(f"Invalid query method: {raw.method}")
        _add(result, raw, schema)
    if result.cursor is not None and any(order.field is None for order in result.orders):
        raise _invalid("Cursor queries cannot be combined with orderRandom")
    return result


def _add(result: ListQuery, raw: RawQuery, schema: Schema) -> None:
    method = raw.method
    if method in FILTERS:
        result.filters.append(_filter(raw, schema))
    elif method == "select":
        result.select = _select(raw, schema, result.select or [])
    elif method in ORDERS:
        result.orders.append(_order(raw, schema))
    elif method == "limit":
        limit = _number(raw, "limit", 1)  # every one is validated; the first wins
        result.limit = limit if result.limit is None else result.limit
    elif method == "offset":
        offset = _number(raw, "offset", 0)
        result.offset = offset if result.offset is None else result.offset
    else:
        cursor = _cursor(raw)
        result.cursor = cursor if result.cursor is None else result.cursor


def _number(raw: RawQuery, name: str, minimum: int) -> int:
    description = f"Value must be a valid range between {minimum:,} and {INT64_MAX:,}"
    if len(raw.values) != 1:
        raise _invalid(f"Invalid {name}: {description}")
    value = raw.values[0]
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        value = int(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= INT64_MAX:
        raise _invalid(f"Invalid {name}: {description}")
    return value


def _cursor(raw: RawQuery) -> Cursor:
    if len(raw.values) != 1 or not is_uid(raw.values[0]):
        raise _invalid(f"Invalid cursor: {UID_DESCRIPTION}")
    return Cursor(raw.method == "cursorBefore", str(raw.values[0]))


def _select(raw: RawQuery, schema: Schema, selected: list[str]) -> list[str]:
    """The keys selected so far plus this query's; duplicates are refused within one query
    only (several select queries are merged)."""
    if not raw.values:
        raise _invalid("Select queries require at least one value.")
    if not all(isinstance(value, str) for value in raw.values):
        raise _invalid("Select queries only accept strings.")
    if len(set(raw.values)) != len(raw.values):
        raise _invalid("Duplicate attributes in select query")
    for value in raw.values:
        if value != "*" and value not in schema.fields and value not in schema.selectable:
            raise _invalid(f"Attribute not found in schema: {value}")
    return selected + [value for value in raw.values if value not in selected]


def _order(raw: RawQuery, schema: Schema) -> Order:
    if raw.method == "orderRandom":
        return Order(None)
    found = _field(schema, raw.attribute or "$sequence")
    if found.array:
        raise _invalid(f'Cannot order by attribute "{found.key}" because it is an array.')
    return Order(found, raw.method == "orderDesc")


def _field(schema: Schema, key: str) -> Field:
    found = schema.fields.get(key)
    if found is None:
        raise _invalid(f"Attribute not found in schema: {key}")
    if found.encrypted:
        raise _invalid(f"Cannot query encrypted attribute: {key}")
    return found


def _filter(raw: RawQuery, schema: Schema) -> Filter:
    method, values = raw.method, raw.values
    title = method[0].upper() + method[1:]
    if method in LOGICAL:
        if any(nested.method not in FILTERS for nested in values):
            raise _invalid(f"{title} queries can only contain filter queries")
        if len(values) < 2:
            raise _invalid(f"{title} queries require at least two queries")
        return Group(method, tuple(_filter(nested, schema) for nested in values))
    if method == "elemMatch":
        raise _invalid("elemMatch is not supported by the database")
    if method in PRESENCE:
        return _presence(raw, schema, title)
    if method in AT_LEAST_ONE and not values:
        raise _invalid(f"{title} queries require at least one value.")
    if method in EXACTLY_ONE and len(values) != 1:
        raise _invalid(f"{title} queries require exactly one value.")
    if method in EXACTLY_TWO and len(values) != 2:
        raise _invalid(f"{title} queries require exactly two values.")
    if method in SPATIAL and not values:
        raise _invalid(f"{title} queries require at least one value.")
    found = _field(schema, raw.attribute)
    if method in SPATIAL and found.kind != "spatial":
        raise _invalid(
            f'Spatial query "{method}" cannot be applied on non-spatial attribute: {found.key}'
        )
    if method in SPATIAL:
        raise _invalid(f'Spatial query "{method}" is not supported by the local service')
    if method in VECTOR:
        raise _invalid("Vector queries can only be used on vector attributes")
    if method in NO_VALUES:
        return Condition(method, found, ())
    if len(values) > MAX_VALUES:
        raise _invalid(f"Query on attribute has greater than {MAX_VALUES} values: {found.key}")
    converted = tuple(_value(found, method, value) for value in values)
    _check_method_fits(found, method)
    if method == "regex":
        try:
            compile_pattern(str(values[0]))
        except PatternError as exc:
            raise _invalid(f"Invalid regular expression: {exc}") from None
    return Condition(method, found, converted)


def _presence(raw: RawQuery, schema: Schema, title: str) -> Filter:
    """`exists` / `notExists`: on `attribute`, or on each attribute named in `values`."""
    keys = [raw.attribute] if raw.attribute else list(raw.values)
    if not keys:
        raise _invalid(f"{title} queries require at least one value.")
    if any(not isinstance(key, str) for key in keys):
        raise _invalid(f'Query value is invalid for attribute "{raw.attribute}"')
    conditions = tuple(Condition(raw.method, _field(schema, key), ()) for key in keys)
    return conditions[0] if len(conditions) == 1 else Group("and", conditions)


def _check_method_fits(found: Field, method: str) -> None:
    is_text = found.kind in ("string", "id")
    if found.kind == "spatial" and method not in ("equal", "notEqual"):
        raise _invalid(f'Cannot query {method} on attribute "{found.key}" because it is spatial.')
    if found.kind == "relationship":
        raise _invalid(f'Cannot query {method} on attribute "{found.key}": it is a relationship.')
    if found.array and method not in ARRAY_METHODS:
        raise _invalid(f'Cannot query {method} on attribute "{found.key}" because it is an array.')
    if not found.array and method in CONTAINS and not is_text:
        name = "notContains" if method == "notContains" else "contains"
        raise _invalid(
            f'Cannot query {name} on attribute "{found.key}" because it is not an array, '
            "string, or object."
        )
    if method in TEXT_ONLY and not is_text:
        raise _invalid(f'Cannot query {method} on attribute "{found.key}" because it is not text.')
    if method in ("search", "notSearch") and found.search_table is None:
        raise _invalid(f'Searching by attribute "{found.key}" requires a fulltext index.')


def _value(found: Field, method: str, value: Any) -> Any:
    """One query value converted to what SQL compares; QueryError when it does not fit."""
    converted = convert_value(found.kind, value)
    if converted is None:
        raise _invalid(f'Query value is invalid for attribute "{found.key}"')
    if found.fold and not found.array and method not in ("regex", "search", "notSearch"):
        return fold(converted)
    return converted


def convert_value(kind: str, value: Any) -> Any:
    """`value` as SQL compares it for a field of `kind` (booleans 0/1, datetimes UTC), or None."""
    if kind in ("string", "id"):
        return value if isinstance(value, str) else None
    if kind in ("integer", "sequence"):
        if kind == "sequence" and isinstance(value, str) and value.isdigit():
            value = int(value)
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and INT64_MIN <= value <= INT64_MAX
        ):
            return value
        return None
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range
            return None
        return number if math.isfinite(number) else None
    if kind == "boolean":
        return int(value) if isinstance(value, bool) else None
    if kind == "spatial":  # compared as the canonical JSON text the column stores
        return json.dumps(value, separators=(",", ":")) if isinstance(value, list) else None
    return normalize_datetime(value)
