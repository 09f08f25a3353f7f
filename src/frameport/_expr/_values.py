"""Literal values of the filter DSL.

Every value a filter holds is a plain `str`, `int`, `float` or `bool` (a `Scalar`), so that
trees compare and hash simply and print back as Python literals. Values from numpy and pandas
are converted on the way in; date-times become ISO-8601 strings in UTC:

>>> normalize_scalar(datetime.datetime(2020, 10, 15, 6, 38))
'2020-10-15T06:38:00.000+00:00'
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from frameport._core._json import python_number
from frameport._core._timefmt import format_service_datetime
from frameport._exceptions import FilterError

Scalar = str | int | float | bool

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_ISO_DATE_START = re.compile(r"\d{4}-\d{2}-\d{2}")


def normalize_scalar(value: object) -> Scalar:
    """Return `value` as the plain literal a filter stores, or raise `FilterError`.

    Accepted: str, int, float (finite), bool, numpy scalars of those kinds, and date-times
    (`datetime`, `date`, `pd.Timestamp`, `np.datetime64`; naive ones are taken as UTC).
    """
    if value is None or value is pd.NaT or value is pd.NA:
        raise FilterError(
            "A filter value is null; test for missing values with .isna() or .notna() instead."
        )
    number = python_number(value)
    if isinstance(number, float) and not math.isfinite(number):
        raise FilterError(
            f"The value {number!r} cannot be sent to the service; use a finite number, "
            "or .isna()/.notna() to test for missing values."
        )
    if number is not None:
        return number
    if isinstance(value, str):
        return _checked_text(str(value))
    if isinstance(value, datetime.date | np.datetime64):
        return format_datetime_literal(_to_utc_timestamp(value))
    raise FilterError(
        f"Values of type {type(value).__name__} cannot be used in a filter; use a str, int, "
        "float, bool or date-time."
    )


def normalize_scalars(values: object) -> tuple[Scalar, ...]:
    """Return the items of a list-like (list, tuple, set, array, Series, Index) as literals."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise FilterError(
            f"Expected a list of values, got {type(values).__name__}; write e.g. .isin(['a', 'b'])."
        )
    try:
        items = list(values)
    except TypeError as exc:  # e.g. a 0-d numpy array
        raise FilterError(f"Expected a list of values, got {values!r}.") from exc
    if isinstance(values, set | frozenset):
        items = sorted(items, key=lambda item: (type(item).__name__, repr(item)))
    return tuple(normalize_scalar(item) for item in items)


def format_datetime_literal(stamp: pd.Timestamp) -> str:
    """ISO-8601 text in UTC: milliseconds as the service writes them, finer digits when present.

    >>> format_datetime_literal(pd.Timestamp("2020-10-15 06:38", tz="UTC"))
    '2020-10-15T06:38:00.000+00:00'
    """
    stamp = stamp.tz_convert("UTC")
    if stamp.nanosecond or stamp.microsecond % 1000:
        return stamp.isoformat()
    return format_service_datetime(stamp)


def parse_datetime_literal(text: str) -> pd.Timestamp:
    """Read an ISO-8601 date or date-time into a UTC timestamp (naive text is taken as UTC)."""
    if not _ISO_DATE_START.match(text):
        raise FilterError(
            f"{text!r} is not an ISO-8601 date-time; write e.g. '2024-01-31' or "
            "'2024-01-31T12:00:00.000+00:00'."
        )
    try:
        stamp = pd.Timestamp(text)
    except (ValueError, TypeError, OverflowError) as exc:
        raise FilterError(
            f"{text!r} is not a date-time the filter can compare with ({exc}); write e.g. "
            "'2024-01-31T12:00:00.000+00:00'."
        ) from exc
    return _as_utc(stamp)


def _to_utc_timestamp(value: datetime.date | np.datetime64) -> pd.Timestamp:
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError, OverflowError) as exc:
        raise FilterError(f"The date-time {value!r} cannot be used in a filter: {exc}") from exc
    if pd.isna(stamp):  # the stubs leave out that Timestamp(None) gives NaT
        raise FilterError(
            "A filter value is NaT; test for missing values with .isna() or .notna() instead."
        )
    return _as_utc(stamp)


def _as_utc(stamp: pd.Timestamp) -> pd.Timestamp:
    if stamp.tzinfo is None:
        return stamp.tz_localize("UTC")
    return stamp.tz_convert("UTC")


def _checked_text(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FilterError(
            f"The text {text!r} is not valid Unicode (it holds a lone surrogate) and cannot be "
            "sent to the service."
        ) from exc
    return text
