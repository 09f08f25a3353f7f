"""The service's date-time format: ISO-8601 with milliseconds and offset, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(moment: datetime) -> str:
    """`2020-10-15T06:38:00.000+00:00`."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def now_text() -> str:
    """The current instant in the service's format."""
    return format_time(datetime.now(UTC))


def from_timestamp(seconds: float) -> str:
    return format_time(datetime.fromtimestamp(seconds, UTC))
