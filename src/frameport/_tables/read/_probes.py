"""The requests a read sends before its pages: one-row requests (``$id`` selected, decoded off
the loop through `json.loads`: the service's count of a plan's rows, up to 5,000, and the
``$sequence`` of the row at either end or at a position), and a read's `Opening`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from ..._core._pages import fetch_page, rows_at_most
from ..._core._queries import order_query, select_query
from ..._core._together import cancel_and_wait
from ..._schema import SYSTEM_SCHEMA
from .._decode import decode_small_page, decoded
from ._plan import Plan
from ._ranges import SEQUENCE, SequenceRange

if TYPE_CHECKING:
    from ..._core import Requester


Ends = tuple[tuple[int, int | None], tuple[int, int | None], float]
"""The near end (its count, its ``$sequence``), the far end, and their round trip in seconds."""


@dataclass(eq=False)
class Opening:
    """The first requests of a read, in flight: its first page (of its first request, `limit`
    rows, counted by the service for a serial read) and, for a `ranged` read, the rows at
    either end under its filters (the near one counted). A read without a filter sends them
    before its plan is made, beside the request for the table's columns: its first rows come
    a round trip after the call instead of two. `close_all` cancels what was not taken."""

    requests: tuple[tuple[str, ...], ...]
    limit: int
    ranged: bool
    first_page: asyncio.Task[bytes] | None = field(default=None, repr=False)  # None once taken
    ends: asyncio.Task[Ends] | None = field(default=None, repr=False)
    waited: float = 0.0  # the seconds the first page took to come

    @classmethod
    def send(cls, requester: Requester, plan: Plan, *, ranged: bool) -> Opening | None:
        """Send the opening of a read of `plan` (None: the read sends no request for rows)."""
        if not plan.reads_rows:
            return None
        opening = cls(plan.requests, _first_limit(plan, ranged), ranged)
        opening.first_page = asyncio.create_task(opening._fetch_first(requester, plan))
        if ranged and requester.transport.near():
            opening.ends = asyncio.create_task(
                opening._ends_past(opening.first_page, requester, plan)
            )
        elif ranged:
            opening.ends = asyncio.create_task(_ends(requester, plan))
        return opening

    def serves(self, plan: Plan, *, ranged: bool) -> bool:
        """Whether these are the requests a read of `plan` opens with (and still unused)."""
        return (
            self.first_page is not None
            and plan.reads_rows
            and (self.ranged, self.requests) == (ranged, plan.requests)  # order queries included
            and self.limit == _first_limit(plan, ranged)
        )

    def take(self) -> asyncio.Task[bytes]:
        """The first page's body, once; the opening lets go of it (a body is a megabyte or
        more, and the read goes on for many)."""
        assert self.first_page is not None, "the first page is taken once"
        first_page, self.first_page = self.first_page, None
        return first_page

    @staticmethod
    async def close_all(*openings: Opening | None) -> None:
        """Cancel what has not arrived of each of `openings` (nothing is raised)."""
        tasks = []
        for opening in filter(None, openings):
            tasks += [task for task in (opening.first_page, opening.ends) if task is not None]
            opening.first_page = None
        await cancel_and_wait(*tasks)

    async def _ends_past(
        self, first_page: asyncio.Task[bytes], requester: Requester, plan: Plan
    ) -> Ends:
        """The ends once the first page came full; a short one holds every row, so none are
        asked for (a near service: its round trip costs less than the two requests)."""
        body = await asyncio.shield(first_page)
        rows = rows_at_most(body)
        if rows < self.limit:
            return (rows, None), (0, None), self.waited
        return await _ends(requester, plan)

    async def _fetch_first(self, requester: Requester, plan: Plan) -> bytes:
        asked = time.perf_counter()
        path, queries = plan.location.rows_path, plan.requests[0]
        body = await fetch_page(requester, path, queries, self.limit, with_total=not self.ranged)
        self.waited = time.perf_counter() - asked
        return body


def _first_limit(plan: Plan, ranged: bool) -> int:
    """The rows the first page of a read of `plan` asks for."""
    return plan.page_size if ranged else plan.paged().first_limit


async def _ends(requester: Requester, plan: Plan) -> Ends:
    """The rows at either end of a ranged read of `plan` (one request), the near one counted."""
    asked = time.perf_counter()
    (filters,), ascending = plan.filters, plan.spec.sequence_order is not False
    near, far = await asyncio.gather(
        one_row(requester, plan, filters, ascending=ascending, counted=True),
        one_row(requester, plan, filters, ascending=not ascending, counted=False),
    )
    return near, far, time.perf_counter() - asked


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


async def sequence_bounds(
    requester: Requester, plan: Plan, *, first: bool = True
) -> SequenceRange | None:
    """The ``$sequence`` values from the first row the service returns for `plan` (over all
    its requests) to the last, or None when it returns none: one one-row request per end per
    request, sent together (without `first`, the last row's only: the range holds it alone)."""
    ends = await asyncio.gather(
        *(
            one_row(requester, plan, filters, ascending=ascending, counted=False)
            for filters in plan.filters
            for ascending in ((True, False) if first else (False,))
        )
    )
    found = [sequence for _, sequence in ends if sequence is not None]
    return SequenceRange((min(found) if first else max(found)) - 1, max(found)) if found else None
