"""The service's clock, read from the ``Date`` header of a small request, so that a sync's
watermark never depends on the client's clock. The header counts whole seconds and is
rounded down, so the time it gives is never later than the service's; and the rows of a read
updated since a moment of that clock."""

from __future__ import annotations

import email.utils
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ..._core._queries import ServiceQuery, check_member, limit_query, render_query, select_query
from ..._core._transport import queries_param
from ..read import TableRead

if TYPE_CHECKING:
    from ..._core import Requester


async def service_now(
    requester: Requester, path: str, queries: Sequence[str] | None = None
) -> datetime | None:
    """The service's time now (UTC), from its answer to a one-item list at `path`: a table's
    rows (`queries` default to a select of ``$id`` and a limit of 1), or another list with
    its own `queries` (the databases: a limit of 1). None when the answer has no valid
    ``Date`` header."""
    params = queries_param(queries or [select_query(["$id"]), limit_query(1)])
    response = await requester.request("GET", path, params={**params, "total": "false"})
    header = response.headers.get("date")
    if header is None:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def service_text(moment: datetime) -> str:
    """`moment` in the service's datetime form, e.g. ``2026-01-02T03:04:05.000+00:00``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def minus_seconds(text: str, seconds: float) -> str:
    """The service datetime `text` moved `seconds` earlier."""
    return service_text(datetime.fromisoformat(text) - timedelta(seconds=seconds))


def updated_since(read: TableRead, since: str) -> TableRead:
    """`read` restricted to the rows with ``$updatedAt >= since`` (service datetime text)."""
    recent = ServiceQuery("greaterThanEqual", "$updatedAt", (since,))
    return read.narrowed(render_query(recent, check_member(read.plan.member)))
