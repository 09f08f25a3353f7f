"""The rows of a read updated at or after a moment of the service's clock."""

from __future__ import annotations

from ..._core._queries import ServiceQuery, check_member, render_query
from ..read import TableRead


def updated_since(read: TableRead, since: str) -> TableRead:
    """`read` restricted to the rows with ``$updatedAt >= since`` (service datetime text)."""
    recent = ServiceQuery("greaterThanEqual", "$updatedAt", (since,))
    return read.narrowed(render_query(recent, check_member(read.plan.member)))
