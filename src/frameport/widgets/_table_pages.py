"""One page of a table query at a time: a single request with ``limit`` and ``cursorAfter``.

The engine behind `TableQuery.to_pandas` fetches ahead; a preview must not, so a page here is
exactly one request for at most `size` rows, starting after the previous page's last row.
Where the service refuses a cursor (its row has null in a sort column) the page is asked for
by ``offset`` instead, as the engine does.

This reaches into the query's plan (the compiled filter, select and sort, and the decoder),
the same way `TableQuery.preview_html` does for its single page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from .._exceptions import BadRequestError
from .._expr._service_query import cursor_after_query, limit_query, offset_query
from .._pages import decode_page, last_row_id
from .._paging import TOTAL_CAP
from .._schema import SYSTEM_SCHEMA, to_pandas
from .._sync import run_sync
from .._tables import _project
from .._transport import queries_param

if TYPE_CHECKING:
    from .._tables import AsyncTableQuery, TableQuery

_ORDER_NULL = "database_query_order_null"


@dataclass(frozen=True)
class TablePage:
    """The rows of one page, and where the next one starts.

    `rows_fetched` is the number of rows the service sent (the query's client-side part of a
    filter may keep fewer); `total` is the service's count of matching rows, exact when
    `total_exact`; `next_cursor` is the ``$id`` after which the next page starts, None at the
    end.
    """

    frame: pd.DataFrame
    start: int
    rows_fetched: int
    total: int
    total_exact: bool
    next_cursor: str | None


class TablePager:
    """Reads pages of `size` rows of `query`; see the module docstring."""

    def __init__(self, query: TableQuery, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"page_size must be a whole number of rows >= 1 (got {size!r}).")
        self.query: AsyncTableQuery = query._async
        self.size = size

    def page(self, start: int, after: str | None) -> TablePage:
        """The page whose first row is row `start` (0-based), just after row ID `after`."""
        return run_sync(self._page(start, after))

    async def _page(self, start: int, after: str | None) -> TablePage:
        query = self.query
        plan = await query._plan(self.size)
        if len(plan.requests) != 1 or plan.client_order:
            raise ValueError(
                "This filter needs several requests, so it cannot be shown a page at a time; "
                "read it with to_pandas() instead."
            )
        limit = self.size if plan.head is None else min(self.size, plan.head - start)
        if limit < 1:
            return TablePage(_empty(plan.output), start, 0, start, True, None)
        queries = [*plan.requests[0], limit_query(limit)]
        path = query.location.rows_path
        try:
            position = [] if after is None else [cursor_after_query(after)]
            body = await query._client._request_bytes(
                "GET", path, params=queries_param([*queries, *position])
            )
        except BadRequestError as exc:
            if exc.type != _ORDER_NULL:
                raise
            body = await query._client._request_bytes(
                "GET", path, params=queries_param([*queries, offset_query(start)])
            )
        total, batch = plan.decode(body)
        if plan.inferred is not None:
            batch = plan.inferred.conform(batch)
        fetched = batch.num_rows if plan.every_row_kept else _row_count(body, query)
        full = fetched == limit and (plan.head is None or start + limit < plan.head)
        return TablePage(
            frame=to_pandas(_project(plan, batch)),
            start=start,
            rows_fetched=fetched,
            total=total if plan.head is None else min(total, plan.head),
            total_exact=plan.every_row_kept and total < TOTAL_CAP,
            next_cursor=last_row_id(body) if full else None,
        )


def _row_count(body: bytes, query: AsyncTableQuery) -> int:
    """Rows in a page body, before the query's client-side filter kept some."""
    return decode_page(body, SYSTEM_SCHEMA, items_key=query.location.items_key)[1].num_rows


def _empty(schema: pa.Schema | None) -> pd.DataFrame:
    return pd.DataFrame() if schema is None else to_pandas(schema.empty_table())
