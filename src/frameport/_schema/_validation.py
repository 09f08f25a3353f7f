"""The rules a table's columns set for row values, checked on Arrow batches before a write.

`ColumnRules.from_model` reads one column model (its type, format, size, min and max, enum
elements, required, array); `validate_batch` converts a source batch to the columns' types
and finds the rows that break a rule, column by column with `pyarrow.compute`, so a
million rows cost a few array passes (only IP addresses and geometries are checked value
by value). A rejected row names every rule it breaks, in the order of the batch's columns:

========== ============================================================================
rule       broken when
========== ============================================================================
type       the value cannot be the column's type (text that is not a number, a number
           with a fraction for an integer column (named so), a number for a text column,
           ...)
required   the column is required and the value is null
size       the text is longer than the column's size
min / max  the number is below the column's minimum or above its maximum
enum       the text is not one of the column's elements
email      the text is not an e-mail address (``name@host.tld``)
url        the text is not a URL (a scheme, ``://`` and a host; no spaces)
ip         the text is not an IPv4 or IPv6 address
datetime   the date is outside 0000-01-01 … 9999-12-31, or the text is no ISO date
geometry   the value is no point ``[x, y]``, line (≥ 2 points) or polygon (closed rings
           of ≥ 4 points)
========== ============================================================================

Text converts to numbers, booleans (``true``/``false``) and dates, as CSV files hold them:
a text is judged as the number it writes would be in a frame, so ``19.0`` fits an integer
column (integral text converts exactly, whatever its digits) and ``1.5`` has a fraction.
Numbers never convert to text. Arrays are checked element by element.

>>> rules = {"age": ColumnRules("age", "integer", minimum=0)}
>>> checked = validate_batch(pa.record_batch({"age": ["7", "-1", "x"]}), rules)
>>> checked.rows.column("age").to_pylist(), checked.rejected.column("rule").to_pylist()
([7], ['min', 'type'])
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeAlias, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ._reading import SPATIAL_COLUMN_TYPES

ArrowValues: TypeAlias = Any
"""An Arrow array or boolean mask as the compute kernels take and give it (pyarrow's stubs
type those kernels' overloads too narrowly for arrays of any type)."""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
TEXT_SIZES = {"text": 65_535, "mediumtext": 16_777_215, "longtext": 4_294_967_295}
FORMAT_SIZES = {"email": 254, "ip": 39, "url": 2000}
_TEXT_TYPES = frozenset({"string", "varchar", *TEXT_SIZES})
_KIND_BY_TYPE = {"double": "float", "float": "float", "bigint": "integer"}
_INTEGRAL_TEXT = r"^[+-]?\d{1,38}(\.0*)?$"  # of trimmed text; 38 digits: exact as decimal128
_WHOLE_DECIMAL: pa.DataType = pa.decimal128(38, 0)
_FLOAT_TEXT = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
_FORMATS = {  # format: the pattern its text matches, what a text that does not is
    "email": (r"^[^@\s]+@[^@\s]+\.[^@\s]+$", "not an e-mail address"),
    "url": (r"^[A-Za-z][A-Za-z0-9+.\-]*://[^/?#\s]+\S*$", "not a URL (scheme://host...)"),
}
_ISO_DATE = r"^\d{4}-\d{2}-\d{2}"
_TEXT: pa.DataType = pa.string()
REJECTED_SCHEMA = pa.schema(
    [("row", pa.int64()), ("column", _TEXT), ("rule", _TEXT), ("message", _TEXT)]
)
"""The rejections of a batch: the row's position in it, and the column, rule and message."""


@dataclass(frozen=True)
class ColumnRules:
    """What one column accepts. `kind` is ``string``, ``integer``, ``float``, ``boolean``,
    ``datetime``, ``point``, ``line``, ``polygon`` or ``relationship`` (not checked);
    `format` is ``email``, ``url``, ``ip``, ``enum`` or empty."""

    key: str
    kind: str
    format: str = ""
    required: bool = False
    array: bool = False
    size: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    elements: tuple[str, ...] = ()

    @classmethod
    def from_model(cls, model: Mapping[str, Any]) -> ColumnRules:
        """The rules of a column model as the service sends it (`GET` of the table)."""
        type_name = str(model.get("type", "string"))
        fmt = str(model.get("format") or "")
        fmt = "" if fmt == "datetime" else fmt
        kind = "string" if type_name in _TEXT_TYPES else _KIND_BY_TYPE.get(type_name, type_name)
        size = model.get("size") or TEXT_SIZES.get(type_name) or FORMAT_SIZES.get(fmt)
        return cls(
            key=str(model["key"]),
            kind=kind,
            format=fmt,
            required=bool(model.get("required")),
            array=bool(model.get("array")),
            size=int(size) if size and kind == "string" else None,
            minimum=model.get("min"),
            maximum=model.get("max"),
            elements=tuple(str(e) for e in model.get("elements") or ()),
        )

    def arrow_type(self) -> pa.DataType:
        """The Arrow type a valid value of this column converts to."""
        scalar = _ARROW_KIND.get(self.kind, pa.string())
        if self.kind in SPATIAL_COLUMN_TYPES:
            return pa.null()  # geometries pass as they are
        return pa.list_(scalar) if self.array else scalar


_ARROW_KIND: dict[str, pa.DataType] = {
    "string": pa.string(),
    "integer": pa.int64(),
    "float": pa.float64(),
    "boolean": pa.bool_(),
    "datetime": pa.timestamp("ms", tz="UTC"),
}


@dataclass
class CheckedBatch:
    """`rows`: the valid rows, converted to the columns' types; `kept`: their positions in
    the source batch; `rejected`: one row per rejected row (`REJECTED_SCHEMA`)."""

    rows: pa.RecordBatch
    kept: npt.NDArray[np.int64]
    rejected: pa.Table


@dataclass
class _Findings:
    """Rows found breaking a rule, in the order the rules were checked; a row breaking
    several is one rejection naming each."""

    length: int
    bad: npt.NDArray[np.bool_] = field(init=False)
    rows: list[npt.NDArray[np.int64]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.bad = np.zeros(self.length, dtype=bool)

    def add(self, mask: ArrowValues, column: str, rule: str, message: str) -> None:
        found = _as_numpy_mask(mask)
        rows = np.flatnonzero(found)
        if len(rows):
            self.bad |= found
            self.rows.append(rows.astype(np.int64))
            self.columns.append(column)
            self.rules.append(rule)
            self.messages.append(message)
            self.counts.append(len(rows))

    def table(self) -> pa.Table:
        """One rejection per row: a row breaking several rules lists their columns, rules
        and messages (each message after its column), in order, separated by ``; ``."""
        if not self.rows:
            return REJECTED_SCHEMA.empty_table()
        rows = np.concatenate(self.rows)
        order = np.argsort(rows, kind="stable")  # stable: a row's findings stay in order
        rows = rows[order]

        def repeated(values: list[str]) -> npt.NDArray[np.object_]:
            return np.repeat(np.array(values, dtype=object), self.counts)[order]

        columns, rules, messages = (
            repeated(self.columns),
            repeated(self.rules),
            repeated(self.messages),
        )
        starts = np.flatnonzero(np.diff(rows, prepend=-1))
        sizes = np.diff(np.append(starts, len(rows)))
        joined = [columns[starts], rules[starts], messages[starts]]
        for group in np.flatnonzero(sizes > 1):
            at = slice(starts[group], starts[group] + sizes[group])
            joined[0][group] = "; ".join(columns[at])
            joined[1][group] = "; ".join(rules[at])
            joined[2][group] = "; ".join(
                f"{column}: {message}"
                for column, message in zip(columns[at], messages[at], strict=True)
            )
        return pa.table(
            [pa.array(rows[starts]), *(pa.array(values, pa.string()) for values in joined)],
            schema=REJECTED_SCHEMA,
        )


def _as_numpy_mask(mask: ArrowValues) -> npt.NDArray[np.bool_]:
    if isinstance(mask, np.ndarray):
        return mask.astype(bool)
    filled = pc.fill_null(mask, False)
    return cast("npt.NDArray[np.bool_]", filled.to_numpy(zero_copy_only=False))


def validate_batch(batch: pa.RecordBatch, rules: Mapping[str, ColumnRules]) -> CheckedBatch:
    """Convert `batch` to the columns' types and find the rows breaking a rule (see the module
    docstring). Columns without rules pass unchanged; a required column missing from `batch`
    is the caller's to refuse."""
    findings = _Findings(batch.num_rows)
    arrays: list[ArrowValues] = []
    for name, values in zip(batch.schema.names, batch.columns, strict=True):
        column = rules.get(name)
        arrays.append(values if column is None else _checked_column(values, column, findings))
    bad = findings.bad
    kept = np.flatnonzero(~bad).astype(np.int64)
    converted = pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)
    rows = converted.filter(pa.array(~bad)) if bad.any() else converted
    return CheckedBatch(rows=rows, kept=kept, rejected=findings.table())


def _checked_column(values: ArrowValues, column: ColumnRules, findings: _Findings) -> ArrowValues:
    if pa.types.is_dictionary(values.type):
        values = cast("pa.DictionaryArray[Any, Any]", values).dictionary_decode()
    if column.required:
        findings.add(values.is_null(), column.key, "required", "the column is required")
    if column.kind == "relationship":
        return values
    if column.kind in SPATIAL_COLUMN_TYPES:
        _check_geometries(values, column, findings)
        return values
    if not column.array:
        converted, found = _checked_values(values, column)
        for mask, rule, message in found:
            findings.add(mask, column.key, rule, message)
        return converted
    if pa.types.is_null(values.type):
        return _nulls(len(values), column.arrow_type())
    if not (pa.types.is_list(values.type) or pa.types.is_large_list(values.type)):
        findings.add(values.is_valid(), column.key, "type", "the column holds lists")
        return _nulls(len(values), column.arrow_type())
    lists = cast("pa.ListArray[Any]", values)
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    converted, found = _checked_values(lists.flatten(), column)
    for mask, rule, message in found:
        per_row = np.zeros(len(values), dtype=bool)
        per_row[parents[_as_numpy_mask(mask)]] = True
        findings.add(per_row, column.key, rule, f"an element: {message}")
    offsets = pc.subtract(lists.offsets, lists.offsets[0])
    return pa.ListArray.from_arrays(offsets, converted, mask=lists.is_null())


_TYPE_MESSAGES = {
    "string": "the column holds text (numbers and other values are not converted to text)",
    "integer": "the column holds whole numbers (64-bit)",
    "float": "the column holds finite numbers",
    "boolean": "the column holds true or false",
    "datetime": "the column holds dates (ISO 8601 text, or a date or timestamp type)",
}


def _checked_values(
    values: ArrowValues, column: ColumnRules
) -> tuple[ArrowValues, list[tuple[ArrowValues, str, str]]]:
    """`values` as the column's scalar type, and the masks of the values that break a rule
    (first those that could not be converted), with the rule's name and message."""
    if pa.types.is_large_string(values.type):
        values = values.cast(pa.string())
    converted = None if pa.types.is_null(values.type) else _CONVERTERS[column.kind](values)
    if converted is None:
        converted = _nulls(len(values), _ARROW_KIND[column.kind]), values.is_valid()
    result, wrong = converted
    found = [(mask, "type", message) for mask, message in _type_findings(wrong, column.kind)]
    return result, [*found, *_constraints(result, column)]


def _type_findings(wrong: ArrowValues | TypeFindings, kind: str) -> TypeFindings:
    """A converter's values that are not the column's type, with their messages: one mask
    (the kind's message), or masks with their own."""
    return wrong if isinstance(wrong, list) else [(wrong, _TYPE_MESSAGES[kind])]


def _nulls(count: int, kind: Any) -> ArrowValues:
    """`pa.nulls`, whose stubs take no plain `DataType`."""
    return pa.nulls(count, kind)


TypeFindings: TypeAlias = list[tuple[ArrowValues, str]]
Converted: TypeAlias = tuple[ArrowValues, ArrowValues | TypeFindings] | None
"""The values converted, and the mask of those that cannot be (or masks with messages)."""
_FRACTION = "a number with a fraction, where the column holds whole numbers (64-bit)"


def _to_string(values: ArrowValues) -> Converted:
    if pa.types.is_string(values.type):
        return values, pa.nulls(len(values), pa.bool_())
    return None


def _to_integer(values: ArrowValues) -> Converted:
    kind = values.type
    if pa.types.is_integer(kind):
        if pa.types.is_uint64(kind):
            wrong = pc.greater(values, pa.scalar(INT64_MAX, pa.uint64()))
            kept = pc.if_else(wrong, pa.scalar(None, kind), values)
            return kept.cast(pa.int64()), wrong
        return values.cast(pa.int64()), pa.nulls(len(values), pa.bool_())
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return _whole_numbers(values.cast(pa.float64()))
    if not pa.types.is_string(kind):
        return None
    # integral text (``19``, ``19.0``) converts exactly; other numbers as a frame's floats
    trimmed = pc.utf8_trim_whitespace(values)
    integral = pc.match_substring_regex(trimmed, _INTEGRAL_TEXT)
    digits = pc.replace_substring_regex(pc.if_else(integral, trimmed, None), r"\.0*$", "")
    exact = digits.cast(_WHOLE_DECIMAL)
    fits = pc.and_(
        pc.greater_equal(exact, pa.scalar(INT64_MIN).cast(_WHOLE_DECIMAL)),
        pc.less_equal(exact, pa.scalar(INT64_MAX).cast(_WHOLE_DECIMAL)),
    )
    numbers = _float_text(pc.if_else(integral, None, values))
    whole, (fraction, (wrong, message)) = _whole_numbers(numbers)
    result = pc.coalesce(pc.if_else(fits, exact, None).cast(pa.int64()), whole)
    too_large = pc.fill_null(pc.invert(fits), False)
    not_number = pc.and_(values.is_valid(), pc.invert(pc.or_(integral, numbers.is_valid())))
    wrong = pc.or_kleene(pc.or_kleene(too_large, wrong), not_number)
    return result, [fraction, (wrong, message)]


def _whole_numbers(numbers: ArrowValues) -> tuple[ArrowValues, TypeFindings]:
    """Float `numbers` as 64-bit integers: those with a fraction, and those that are not
    finite or do not fit, are not."""
    finite = pc.is_finite(numbers)
    whole = pc.and_(finite, pc.equal(pc.floor(numbers), numbers))
    fits = pc.and_(whole, pc.less(pc.abs(numbers), pa.scalar(2.0**63)))
    fraction = pc.and_(finite, pc.invert(whole))
    wrong = pc.and_(pc.invert(fits), pc.invert(fraction))
    result = pc.if_else(fits, numbers, None).cast(pa.int64())
    return result, [(fraction, _FRACTION), (wrong, _TYPE_MESSAGES["integer"])]


def _float_text(values: ArrowValues) -> ArrowValues:
    """Text that writes a number, as float64 (null for the other text)."""
    text = pc.match_substring_regex(values, _FLOAT_TEXT)
    return pc.if_else(text, pc.utf8_trim_whitespace(values), None).cast(pa.float64())


def _to_float(values: ArrowValues) -> Converted:
    kind = values.type
    if pa.types.is_string(kind):
        numbers = _float_text(values)
    elif pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        numbers = values.cast(pa.float64())
    else:
        return None
    # text that writes no number is null in `numbers`: wrong, not a null
    finite: ArrowValues = pc.fill_null(pc.is_finite(numbers), pa.scalar(False))
    return pc.if_else(finite, numbers, None), pc.and_(values.is_valid(), pc.invert(finite))


def _to_boolean(values: ArrowValues) -> Converted:
    kind = values.type
    if pa.types.is_boolean(kind):
        return values, pa.nulls(len(values), pa.bool_())
    if pa.types.is_string(kind):
        lowered = pc.utf8_lower(pc.utf8_trim_whitespace(values))
        true, false = pc.equal(lowered, pa.scalar("true")), pc.equal(lowered, pa.scalar("false"))
        return pc.if_else(true, True, pc.if_else(false, False, None)), pc.invert(
            pc.or_(true, false)
        )
    return None


def _to_datetime(values: ArrowValues) -> Converted:
    kind = values.type
    if pa.types.is_date(kind):
        values = values.cast(pa.timestamp("ms"))
        kind = values.type
    if pa.types.is_timestamp(kind):
        stamps = cast("pa.TimestampArray[Any, Any]", values)
        if stamps.type.tz is None:
            stamps = pc.assume_timezone(stamps, "UTC")
        years = pc.year(stamps)
        inside = pc.and_(
            pc.greater_equal(years, pa.scalar(0)), pc.less_equal(years, pa.scalar(9999))
        )
        floored = pc.floor_temporal(stamps, unit="millisecond").cast(pa.timestamp("ms", tz="UTC"))
        return pc.if_else(inside, floored, None), pc.invert(inside)
    if pa.types.is_string(kind):
        return _text_dates(values)
    return None


def _text_dates(values: ArrowValues) -> Converted:
    target = pa.timestamp("ms", tz="UTC")
    looks = pc.match_substring_regex(values, _ISO_DATE)
    if pc.all(pc.fill_null(looks, pa.scalar(True))).as_py():
        try:
            return values.cast(target), pa.nulls(len(values), pa.bool_())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    parsed = [_parsed_date(text) for text in values.to_pylist()]
    wrong = pa.array(
        [
            text is not None and moment is None
            for text, moment in zip(values.to_pylist(), parsed, strict=True)
        ]
    )
    return pa.array(parsed, target), wrong


def _parsed_date(text: str | None) -> datetime | None:
    if text is None or text[:10].count("-") != 2:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


_CONVERTERS: dict[str, Callable[[ArrowValues], Converted]] = {
    "string": _to_string,
    "integer": _to_integer,
    "float": _to_float,
    "boolean": _to_boolean,
    "datetime": _to_datetime,
}


def _constraints(values: ArrowValues, column: ColumnRules) -> list[tuple[ArrowValues, str, str]]:
    """The masks of converted `values` that break the column's size, range, element and
    format rules, with the rule's name and message."""
    found: list[tuple[ArrowValues, str, str]] = []
    if column.kind in ("integer", "float"):
        if column.minimum is not None:
            below = pc.less(values, pa.scalar(column.minimum))
            found.append((below, "min", f"below the minimum, {column.minimum:,}"))
        if column.maximum is not None:
            above = pc.greater(values, pa.scalar(column.maximum))
            found.append((above, "max", f"above the maximum, {column.maximum:,}"))
    if column.kind != "string":
        return found
    if column.size:
        too_long = pc.greater(pc.utf8_length(values), pa.scalar(column.size))
        found.append((too_long, "size", f"longer than {column.size:,} characters"))
    if column.format == "enum":
        unlisted = pc.invert(pc.is_in(values, pa.array(column.elements, pa.string())))
        message = f"not one of ({', '.join(column.elements)})"
        found.append((pc.and_(values.is_valid(), unlisted), "enum", message))
    elif column.format in _FORMATS:
        pattern, message = _FORMATS[column.format]
        found.append((pc.invert(pc.match_substring_regex(values, pattern)), column.format, message))
    elif column.format == "ip":
        found.append((_not_ip(values), "ip", "not an IPv4 or IPv6 address"))
    return found


def _not_ip(values: ArrowValues) -> ArrowValues:
    distinct = pc.unique(values.drop_null())
    bad = [text for text in distinct.to_pylist() if not _is_ip(str(text))]
    return pc.is_in(values, pa.array(bad, pa.string()))


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


_GEOMETRY_MESSAGES = {
    "point": "not a point [x, y] of two finite numbers",
    "line": "not a line: a list of at least two points [x, y]",
    "polygon": "not a polygon: rings, each a closed list of at least four points [x, y]",
}


def _check_geometries(values: ArrowValues, column: ColumnRules, findings: _Findings) -> None:
    wrong = [
        value is not None and not is_geometry(column.kind, value) for value in values.to_pylist()
    ]
    findings.add(
        np.array(wrong, dtype=bool), column.key, "geometry", _GEOMETRY_MESSAGES[column.kind]
    )


def is_geometry(kind: str, value: object) -> bool:
    """Whether `value` (lists of numbers) is a `kind` geometry: ``point``, ``line`` or
    ``polygon``."""
    if kind == "point":
        return _is_point(value)
    if kind == "line":
        return isinstance(value, Sequence) and len(value) >= 2 and all(map(_is_point, value))
    return isinstance(value, Sequence) and len(value) >= 1 and all(map(_is_ring, value))


def _is_point(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == 2
        and all(
            isinstance(n, int | float) and not isinstance(n, bool) and math.isfinite(n)
            for n in value
        )
    )


def _is_ring(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and len(value) >= 4
        and all(map(_is_point, value))
        and list(value[0]) == list(value[-1])
    )


def converts_to(values: ArrowValues, kind: str) -> bool:
    """Whether every value of `values` converts to a column of type `kind` (``"integer"``,
    ``"datetime"`` ...) as a write converts it; nulls do.

    >>> converts_to(pa.array([19.0, None]), "integer"), converts_to(pa.array([1.5]), "integer")
    (True, False)
    """
    if pa.types.is_large_string(values.type):
        values = values.cast(pa.string())
    converted = _CONVERTERS[kind](values)
    if converted is None:
        return False
    wrong = converted[1]
    masks = [mask for mask, _ in wrong] if isinstance(wrong, list) else [wrong]
    return not any(pc.any(pc.fill_null(mask, pa.scalar(False))).as_py() for mask in masks)
