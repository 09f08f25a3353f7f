"""A table query browsed a page at a time (the table widget). A page is the query's read
(`TableRead`) asking its one request for at most `size` rows after the previous page's last
row, through the cursor loop (`iter_pages`), without reading ahead. When the client applies
part of the filter, the service may send rows the page does not show: the page reads on
until it holds `size` rows or the rows end (at most `MAX_REQUESTS_PER_PAGE` requests).
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from .._core import run_sync
from .._core._pages import TOTAL_CAP, iter_pages
from .._schema import SYSTEM_SCHEMA, to_pandas
from ._decode import decode_page, decoded

if TYPE_CHECKING:
    from ._location import TableLocation
    from ._query import AsyncTableQuery, TableQuery

MAX_REQUESTS_PER_PAGE = 10


@dataclass(frozen=True)
class PagePosition:
    """Where a page starts: `shown` rows of the result before it, `read` rows the service
    sent before it (its offset, for the fallback), and the ``$id`` of the last of those."""

    shown: int = 0
    read: int = 0
    after: str | None = None


@dataclass(frozen=True)
class TablePage:
    """The rows of one page, and where the next one starts.

    `start` is the number of result rows before the page; `rows_fetched` the number of rows
    the service sent for it (the query's client-side part of a filter may keep fewer);
    `total` is the service's count of the rows matching the part of the filter it applies:
    the result's size when `total_exact`, else (capped at 5000, or with rows the client
    drops) a bound. `next_position` is where the next page starts, None at the end.
    """

    frame: pd.DataFrame
    start: int
    rows_fetched: int
    total: int
    total_exact: bool
    next_position: PagePosition | None


class TableBrowser:
    """Reads pages of `size` rows of `query`; see the module docstring."""

    def __init__(self, query: TableQuery, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"page_size must be a whole number of rows >= 1 (got {size!r}).")
        self.query: AsyncTableQuery = query._async
        self.size = size

    def page(self, position: PagePosition) -> TablePage:
        """The page that starts at `position`."""
        return run_sync(self._page(position))

    async def _page(self, position: PagePosition) -> TablePage:
        table_read = await self.query._read(self.size)
        plan = table_read.plan
        if len(plan.filters) != 1 or plan.client_order:
            raise ValueError(
                "This filter needs several requests, so it cannot be shown a page at a time; "
                "read it with to_pandas() instead."
            )
        wanted = self.size if plan.head is None else min(self.size, plan.head - position.shown)
        if wanted < 1:
            return TablePage(_empty(plan.output), position.shown, 0, position.shown, True, None)
        batches: list[pa.RecordBatch] = []
        kept = read = total = 0
        after: str | None = position.after
        inferred = table_read.inferred
        decode = plan.decoder(inferred)
        pages = iter_pages(
            table_read.requester,
            plan.location.rows_path,
            plan.requests[0],
            wanted,
            after=position.after,
            skipped=position.read,
        )
        async with aclosing(pages):
            number = -1
            async for body in pages:
                number += 1
                page_total, batch = await decoded(decode, body)
                total = page_total if number == 0 else total
                if inferred is not None:
                    batch = inferred.conform(batch)
                ids = await _sent_ids(body, batch, plan.location, plan.every_row_kept)
                fetched = len(ids)
                if kept + batch.num_rows > wanted:  # more than the page shows: stop at its last
                    batch = batch.slice(0, wanted - kept)
                    fetched = ids.index(batch.column("$id")[-1].as_py()) + 1
                batches.append(plan.project(batch))
                kept, read = kept + batch.num_rows, read + fetched
                rows_follow = fetched < len(ids) or len(ids) == wanted  # else the rows ended
                after = ids[fetched - 1] if rows_follow else None
                if after is None or kept >= wanted or number + 1 == MAX_REQUESTS_PER_PAGE:
                    break
        shown = position.shown + kept
        exact = plan.every_row_kept and total < TOTAL_CAP
        more = after is not None and (plan.head is None or shown < plan.head)
        more = more and not (exact and shown >= total)
        if not more and not plan.every_row_kept:  # the end: every result row has been seen
            total, exact = shown, True
        elif plan.head is not None:
            total = min(total, plan.head)
        return TablePage(
            frame=_frame(batches),
            start=position.shown,
            rows_fetched=read,
            total=total,
            total_exact=exact,
            next_position=PagePosition(shown, position.read + read, after) if more else None,
        )


def _frame(batches: list[pa.RecordBatch]) -> pd.DataFrame:
    """The page's rows as one frame (the batches of inferred types may differ in columns)."""
    if len(batches) == 1:
        return to_pandas(batches[0])
    tables = [pa.Table.from_batches([batch]) for batch in batches]
    return to_pandas(pa.concat_tables(tables, promote_options="default"))


async def _sent_ids(
    body: bytes, batch: pa.RecordBatch, location: TableLocation, every_row_kept: bool
) -> list[str]:
    """The IDs of the rows the service sent: the decoded batch's when the client keeps every
    row, else read again from the body (the query's client-side filter dropped some)."""
    if not every_row_kept:
        ids = partial(decode_page, schema=SYSTEM_SCHEMA, items_key=location.items_key)
        batch = (await decoded(ids, body))[1]
    return [str(row_id) for row_id in batch.column("$id").to_pylist()]


def _empty(schema: pa.Schema | None) -> pd.DataFrame:
    return pd.DataFrame() if schema is None else to_pandas(schema.empty_table())
