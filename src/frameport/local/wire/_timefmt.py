"""The service's date-time format: ISO-8601 with milliseconds and offset, in UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime

SERVICE_FORM = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}\+00:00")
"""Text in the form `format_time` writes (whether it names an instant is not checked)."""


def format_time(moment: datetime) -> str:
    """`2020-10-15T06:38:00.000+00:00`."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def now_text() -> str:
    """The current instant in the service's format."""
    return format_time(datetime.now(UTC))


def from_timestamp(seconds: float) -> str:
    return format_time(datetime.fromtimestamp(seconds, UTC))


def stamps(item_id: str, created_at: str, updated_at: str) -> dict[str, str]:
    """What every model begins with: `$id`, `$createdAt` and `$updatedAt`."""
    return {"$id": item_id, "$createdAt": created_at, "$updatedAt": updated_at}
