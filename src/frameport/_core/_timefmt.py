"""The service's date-time text: ISO-8601 in UTC with milliseconds and the offset written out."""

from __future__ import annotations

from datetime import UTC, datetime


def format_service_datetime(moment: datetime) -> str:
    """`2020-10-15T06:38:00.123+00:00`; sub-millisecond digits are dropped, naive means UTC.

    >>> format_service_datetime(datetime(2020, 10, 15, 8, 38, 0, 123456))
    '2020-10-15T08:38:00.123+00:00'
    """
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.isoformat(timespec="milliseconds")
