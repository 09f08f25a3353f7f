"""Column types: their create parameters, their models and the check of one row value.

A column is defined once (`ColumnDef`) from the parameters of `POST …/columns/<type>` or from
one JSON definition of a table's `columns` (service interface, "Columns"). One value sent in
row data is checked and converted to what the row table stores with `check_scalar`.

>>> check_scalar(ColumnDef("age", "integer", required=False, min=0, max=150), 42)
42
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..wire._errors import ServiceError, invalid_param
from ..wire._params import Params
from ..wire._timefmt import SERVICE_FORM, format_time
from ._db_terms import Terms
from ._spatial import SPATIAL_TYPES, InvalidGeometry, geometry_text

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MAX = 2**31 - 1
FLOAT_MAX = sys.float_info.max
STRING_TYPES = ("string", "varchar", "text", "mediumtext", "longtext")
TEXT_SIZES = {"text": 65_535, "mediumtext": 16_777_215, "longtext": 4_294_967_295}
FORMAT_SIZES = {"email": 254, "ip": 39, "url": 2000}
ENCRYPT_MIN_SIZE = 150
MAX_ELEMENTS, MAX_ELEMENT_LENGTH = 100, 255
DATETIME_DESCRIPTION = "Value must be valid date between 0000-01-01 and 9999-12-31."

#: Route type (the last path segment of `POST …/columns/<type>`) → (stored type, format).
ROUTE_TYPES: dict[str, tuple[str, str]] = {
    "string": ("string", ""),
    "varchar": ("varchar", ""),
    "text": ("text", ""),
    "mediumtext": ("mediumtext", ""),
    "longtext": ("longtext", ""),
    "integer": ("integer", ""),
    "bigint": ("bigint", ""),
    "float": ("double", ""),
    "boolean": ("boolean", ""),
    "datetime": ("datetime", "datetime"),
    "email": ("string", "email"),
    "enum": ("string", "enum"),
    "ip": ("string", "ip"),
    "url": ("string", "url"),
    "point": ("point", ""),
    "line": ("line", ""),
    "polygon": ("polygon", ""),
    "relationship": ("relationship", ""),
}
RELATION_TYPES = ("oneToOne", "oneToMany", "manyToOne", "manyToMany")
ON_DELETE = ("restrict", "cascade", "setNull")

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class ColumnDef:
    """One column of a table, as stored in the metadata."""

    key: str
    type: str
    required: bool
    format: str = ""
    size: int = 0
    array: bool = False
    default: Any = None
    min: int | float | None = None
    max: int | float | None = None
    elements: tuple[str, ...] = ()
    encrypt: bool = False
    status: str = "available"
    error: str = ""
    created_at: str = ""
    updated_at: str = ""
    position: int = 0

    @property
    def kind(self) -> str:
        """What values look like: `string`, `integer`, `float`, `boolean`, `datetime` or
        `spatial`."""
        if self.type in STRING_TYPES:
            return "string"
        if self.type in SPATIAL_TYPES:
            return "spatial"
        if self.type == "relationship":
            return "relationship"
        return {"double": "float", "bigint": "integer"}.get(self.type, self.type)

    @property
    def stored_as_json(self) -> bool:
        """Arrays and geometries are stored as their JSON text."""
        return self.array or self.kind in ("spatial", "relationship")

    @property
    def sql_name(self) -> str:
        """The row table's column holding the value (an internal name, never user text)."""
        return f"c_{self.position}"

    @property
    def fold_name(self) -> str | None:
        """The shadow column with the folded text, for string columns that are not arrays."""
        return f"f_{self.position}" if self.kind == "string" and not self.array else None

    @property
    def json_name(self) -> str | None:
        """Float columns also keep the shortest exact JSON text of their value (`j_<p>`):
        SQLite's own float formatting is not exact to the last bit."""
        return f"j_{self.position}" if self.type == "double" and not self.array else None

    @property
    def compare_name(self) -> str:
        """The column that comparisons and ordering use."""
        return self.fold_name or self.sql_name

    @property
    def available(self) -> bool:
        return self.status == "available"


# --- values ----------------------------------------------------------------------------


_DATE_START = re.compile(r"\d{4}-\d{2}-\d{2}")


def normalize_datetime(value: object) -> str | None:
    """An ISO-8601 date or date-time as `YYYY-MM-DDTHH:MM:SS.mmm+00:00` (UTC), else None.

    >>> normalize_datetime("2024-01-31T12:00:00+02:00")
    '2024-01-31T10:00:00.000+00:00'
    """
    if not isinstance(value, str) or not _DATE_START.match(value):
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if SERVICE_FORM.fullmatch(value):  # already what formatting it would give
        return value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return format_time(moment)
    except OverflowError:
        return None


def is_email(value: str) -> bool:
    return _EMAIL.match(value) is not None


def is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def is_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return bool(parts.scheme and parts.netloc) and not any(c.isspace() for c in value)


class InvalidValue(Exception):
    """A row value that does not fit its column; the message is the validator description."""


def _range_description(low: int | float, high: int | float) -> str:
    return f"Value must be a valid range between {low:,} and {high:,}"


def check_scalar(column: ColumnDef, value: Any) -> Any:
    """One (non-array) value converted to its stored form; InvalidValue when it does not fit."""
    kind = column.kind
    if kind == "string":
        return _check_string(column, value)
    if kind == "spatial":
        try:
            return geometry_text(column.type, value)
        except InvalidGeometry as exc:
            raise InvalidValue(str(exc)) from None
    if kind == "relationship":  # related row IDs, kept as given (not checked, not expanded)
        ids = value if isinstance(value, list) else [value]
        if not all(isinstance(item, str) for item in ids):
            raise InvalidValue("Value must be a related row ID or a list of them")
        return json.dumps(value)
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidValue("Value must be a valid integer")
        low, high = _bounds(column, INT64_MIN, INT64_MAX)
        if not low <= value <= high:
            raise InvalidValue(_range_description(low, high))
        return value
    if kind == "float":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise InvalidValue("Value must be a valid float")
        number = float(value)
        low, high = _bounds(column, -FLOAT_MAX, FLOAT_MAX)
        if not math.isfinite(number) or not low <= number <= high:
            raise InvalidValue(_range_description(low, high))
        return number
    if kind == "boolean":
        if not isinstance(value, bool):
            raise InvalidValue("Value must be a valid boolean")
        return value
    normalized = normalize_datetime(value)
    if normalized is None:
        raise InvalidValue(DATETIME_DESCRIPTION)
    return normalized


def _bounds(column: ColumnDef, low: Any, high: Any) -> tuple[Any, Any]:
    return (low if column.min is None else column.min, high if column.max is None else column.max)


def _check_string(column: ColumnDef, value: Any) -> str:
    size = column.size
    if not isinstance(value, str):
        raise InvalidValue(f"Value must be a valid string and no longer than {size} chars")
    if column.format == "email" and not is_email(value):
        raise InvalidValue("Value must be a valid email address")
    if column.format == "ip" and not is_ip(value):
        raise InvalidValue("Value must be a valid IP address")
    if column.format == "url" and not is_url(value):
        raise InvalidValue("Value must be a valid URL")
    if column.format == "enum" and value not in column.elements:
        raise InvalidValue(f"Value must be one of ({', '.join(column.elements)})")
    if size and len(value) > size:
        raise InvalidValue(f"Value must be a valid string and no longer than {size} chars")
    return value


# --- definitions -----------------------------------------------------------------------


def _string_size(route_type: str, params: Params) -> int:
    if route_type == "string":
        return params.integer("size", required=True, minimum=1, maximum=1_073_741_824) or 0
    if route_type == "varchar":
        return params.integer("size", required=True, minimum=1, maximum=16_381) or 0
    if route_type in TEXT_SIZES:
        return TEXT_SIZES[route_type]
    if route_type == "enum":
        return MAX_ELEMENT_LENGTH
    return FORMAT_SIZES.get(route_type, 0)


def _elements(params: Params) -> tuple[str, ...]:
    elements = params.string_list(
        "elements", max_items=MAX_ELEMENTS, max_length=MAX_ELEMENT_LENGTH, required=True
    )
    if not elements or any(not element for element in elements):
        raise invalid_param(
            "elements",
            f"Value must be a valid array no longer than {MAX_ELEMENTS} items and Value must be "
            f"a valid string and at least 1 chars and no longer than {MAX_ELEMENT_LENGTH} chars",
        )
    return tuple(elements)


def _parse_default(column: ColumnDef, params: Params) -> Any:
    """The `default` parameter in its stored form (None when not sent)."""
    if not params.has("default"):
        return None
    kind, fmt = column.kind, column.format
    if kind == "spatial":
        return params.raw("default")
    if kind == "integer":
        return params.integer("default")
    if kind == "float":
        return params.number("default")
    if kind == "boolean":
        return params.boolean("default")
    raw = params.string("default")
    if kind == "datetime":
        normalized = normalize_datetime(raw)
        if normalized is None:
            raise invalid_param("default", DATETIME_DESCRIPTION)
        return normalized
    checks = {"email": (is_email, "email address"), "ip": (is_ip, "IP address")}
    checks["url"] = (is_url, "URL")
    if fmt in checks and raw is not None and not checks[fmt][0](raw):
        raise invalid_param("default", f"Value must be a valid {checks[fmt][1]}")
    return raw


def _check_default(column: ColumnDef, terms: Terms) -> None:
    """The rules on `default`, `min` and `max` (service interface, "Columns")."""
    noun = terms.column
    value_invalid = terms.error("column", "value_invalid")
    if column.min is not None and column.max is not None and column.min > column.max:
        raise ServiceError(value_invalid, "Minimum value must be lesser than maximum value")
    if column.default is None:
        return
    unsupported = terms.error("column", "default_unsupported")
    if column.required:
        raise ServiceError(unsupported, f"Cannot set default value for required {noun}")
    if column.array:
        raise ServiceError(unsupported, f"Cannot set default value for array {noun}s")
    if column.format == "enum" and column.default not in column.elements:
        raise ServiceError(value_invalid, "Default value not found in elements")
    try:
        check_scalar(column, column.default)
    except InvalidValue as exc:
        raise ServiceError(value_invalid, f"Invalid default value: {exc}") from None


def parse_column(route_type: str, params: Params, terms: Terms) -> ColumnDef:
    """A column definition from the parameters of `POST …/columns/<route_type>`."""
    stored_type, fmt = ROUTE_TYPES[route_type]
    key = params.uid("key", allow_unique=False)
    column = ColumnDef(
        key=key,
        type=stored_type,
        format=fmt,
        required=(
            params.boolean("required", False)
            if stored_type == "relationship"
            else params.boolean("required", required=True)
        ),
        array=params.boolean("array", False),
        size=_string_size(route_type, params),
        encrypt=params.boolean("encrypt", False) if stored_type in STRING_TYPES else False,
    )
    if column.encrypt and column.type in ("string", "varchar") and column.size < ENCRYPT_MIN_SIZE:
        raise ServiceError(
            "general_bad_request",
            f"Size too small. Encrypted strings require a minimum size of {ENCRYPT_MIN_SIZE} "
            "characters.",
        )
    if fmt == "enum":
        column = replace(column, elements=_elements(params))
    if stored_type == "relationship":
        return _relationship(column, params)
    if stored_type in SPATIAL_TYPES and column.array:
        raise invalid_param("array", "Spatial columns cannot be arrays")
    if stored_type in ("integer", "bigint"):
        low = params.integer("min", minimum=INT64_MIN, maximum=INT64_MAX)
        high = params.integer("max", minimum=INT64_MIN, maximum=INT64_MAX)
        low = INT64_MIN if low is None else low
        high = INT64_MAX if high is None else high
        size = 8 if high > INT32_MAX or stored_type == "bigint" else 4
        column = replace(column, min=low, max=high, size=size)
    elif stored_type == "double":
        low_float, high_float = params.number("min"), params.number("max")
        column = replace(
            column,
            min=-FLOAT_MAX if low_float is None else low_float,
            max=FLOAT_MAX if high_float is None else high_float,
            size=8,
        )
    column = replace(column, default=_parse_default(column, params))
    _check_default(column, terms)
    return column


def _relationship(column: ColumnDef, params: Params) -> ColumnDef:
    """A relationship column; its options are kept in `elements`: (related table, relation
    type, on delete). Values are related row IDs, stored as sent."""
    related = params.uid("relatedTableId", allow_unique=False)
    relation = params.string("type", default="oneToMany") or "oneToMany"
    on_delete = params.string("onDelete", default="restrict") or "restrict"
    if relation not in RELATION_TYPES:
        raise invalid_param("type", f"Value must be one of ({', '.join(RELATION_TYPES)})")
    if on_delete not in ON_DELETE:
        raise invalid_param("onDelete", f"Value must be one of ({', '.join(ON_DELETE)})")
    return replace(column, required=False, elements=(related, relation, on_delete))


def route_type_of(definition: dict[str, Any]) -> str | None:
    """The route type a JSON column definition (`{"type": "string", "format": "email"}`) means."""
    type_name, fmt = definition.get("type"), definition.get("format") or ""
    if type_name in ("string",) and fmt in ("email", "enum", "ip", "url"):
        return str(fmt)
    if type_name == "double":
        return "float"
    return type_name if isinstance(type_name, str) and type_name in ROUTE_TYPES else None


# --- models ----------------------------------------------------------------------------


def column_model(column: ColumnDef) -> dict[str, Any]:
    """The Column/Attribute model, chosen by type and format (service interface, "Models")."""
    model: dict[str, Any] = {
        "key": column.key,
        "type": column.type,
        "status": column.status,
        "error": column.error,
        "required": column.required,
        "array": column.array,
        "$createdAt": column.created_at,
        "$updatedAt": column.updated_at,
    }
    if column.type in ("integer", "bigint", "double"):
        model.update(min=column.min, max=column.max)
    elif column.type == "datetime" or column.format in ("email", "ip", "url"):
        model["format"] = column.format
    elif column.format == "enum":
        model.update(elements=list(column.elements), format="enum")
    elif column.type in ("string", "varchar"):
        model["size"] = column.size
    elif column.type == "relationship":
        related, relation, on_delete = column.elements
        model.update(
            relatedTable=related,
            relationType=relation,
            twoWay=False,
            twoWayKey="",
            onDelete=on_delete,
            side="parent",
        )
    model["default"] = column.default
    if column.type in STRING_TYPES and not column.format:
        model["encrypt"] = column.encrypt
    return model
