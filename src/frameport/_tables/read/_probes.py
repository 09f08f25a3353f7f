"""One-row requests (``$id`` selected, decoded off the loop through `json.loads`): the service's
count of a plan's rows (up to 5,000), and the ``$sequence`` of the row at either end or at a
position.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ..._core._queries import offset_query, order_query, select_query
from ..._schema import SYSTEM_SCHEMA
from ._cursor import decoded, fetch_page
from ._decode import decode_small_page
from ._plan import Plan
from ._ranges import SEQUENCE

if TYPE_CHECKING:
    from ..._core import Requester


@dataclass(frozen=True)
class SequenceBounds:
    """The ``$sequence`` of the first and the last row under a filter."""

    first: int
    last: int


async def one_row(
    requester: Requester,
    plan: Plan,
    filters: Sequence[str],
    *,
    ascending: bool | None = None,
    counted: bool = True,
) -> tuple[int, int | None]:
    """The service's count of the rows `filters` keep (when `counted`; else 0), and the
    ``$sequence`` of the first of them (`ascending`), the last (not `ascending`) or any (None),
    or None when there is no row."""
    queries = [*filters, select_query(["$id"])]
    if ascending is not None:
        queries.append(order_query(SEQUENCE, ascending, plan.member))
    path, items_key = plan.location.rows_path, plan.location.items_key
    body = await fetch_page(requester, path, queries, 1, with_total=counted)
    total, batch = await decoded(
        partial(decode_small_page, schema=SYSTEM_SCHEMA, items_key=items_key), body
    )
    return total, batch.column(SEQUENCE)[0].as_py() if batch.num_rows else None


async def service_count(requester: Requester, plan: Plan) -> int:
    """The service's count of the rows of `plan`'s first request (capped at `TOTAL_CAP`)."""
    total, _ = await one_row(requester, plan, plan.filters[0])
    return total


async def sequence_at(requester: Requester, plan: Plan, position: int) -> int | None:
    """The ``$sequence`` of the row at `position` (from 0, in ``$sequence`` order) of the rows
    of `plan`'s first request, or None when it has no more rows than that."""
    filters = [*plan.filters[0], offset_query(position)]
    _, sequence = await one_row(requester, plan, filters, ascending=True, counted=False)
    return sequence


async def sequence_bounds(requester: Requester, plan: Plan) -> SequenceBounds | None:
    """The bounds of the rows the service returns for `plan` (over all its requests), or
    None when it returns none: two one-row requests per request, sent together."""
    edges = await asyncio.gather(
        *(
            one_row(requester, plan, filters, ascending=ascending, counted=False)
            for filters in plan.filters
            for ascending in (True, False)
        )
    )
    found = [sequence for _, sequence in edges if sequence is not None]
    return SequenceBounds(min(found), max(found)) if found else None


async def last_sequence(requester: Requester, plan: Plan) -> int | None:
    """The ``$sequence`` of the last row the service returns for `plan` (over all its
    requests), or None when it returns none: one one-row request per request, sent
    together."""
    ends = await asyncio.gather(
        *(one_row(requester, plan, filters, ascending=False, counted=False)
          for filters in plan.filters)
    )  # fmt: skip
    found = [sequence for _, sequence in ends if sequence is not None]
    return max(found) if found else None
