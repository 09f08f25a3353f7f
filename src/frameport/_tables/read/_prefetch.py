"""A table read's pages fetched ahead of their decoding, through the cursor loop of
`_core._pages`: `prefetched_pages` fetches in a task of its own, at most `PREFETCH_PAGES`
bodies ahead, while the reader decodes on the decoding thread (`decoded`; Arrow's JSON reader
releases the GIL). `SeenIds` drops rows of several requests seen before; `up_to_head` stops
at `head` rows; `show_total` puts what the service counted on the progress bar.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from ..._core._adaptive import AdaptiveConcurrency
from ..._core._fan_in import Slot
from ..._core._pages import TOTAL_CAP, describe_total, iter_pages
from ..._core._progress import set_total
from ..._core._together import cancel_and_wait

if TYPE_CHECKING:
    from tqdm import tqdm

    from ..._core import Requester

DEFAULT_PAGE_SIZE = 5000
"""Rows asked for per page unless the table handle (`client.table(..., page_size=)`) or the
call (`to_pandas(page_size=)`) says otherwise."""

PREFETCH_PAGES = 2
"""Page bodies fetched ahead of the decoder; bounds the memory of a read."""

READ_POOL = pa.system_memory_pool()
"""The Arrow memory pool reads pass to decoding and to ``to_pandas``, and that the batches a
read keeps whole are copied into (`in_read_pool`): the system allocator gives freed memory
back at once, where mimalloc (Arrow's default in the wheels) keeps it. Arrow's JSON reader
builds a page's columns in the default pool whatever pool it is given."""


def in_read_pool(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` copied into `READ_POOL`, for a read that keeps every batch: the default pool's
    memory is free again for the next page, where the pages' columns left there kept
    mimalloc's pages partly used, and a read's memory grew by more than its table (figures:
    benchmarks/README.md). A read that hands its batches on reuses that memory as it goes,
    and does not copy: the copies' memory, spread over the decoding threads, raised a
    backup's peak."""
    if not batch.num_columns:  # nothing to copy, and no arrays to say how many rows
        return batch
    columns = [pa.concat_arrays([column], memory_pool=READ_POOL) for column in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


@dataclass(frozen=True)
class PagedRead:
    """What to fetch: the list endpoint `path` and, per request, its query strings (filters,
    select, order: everything but limit and cursor). `head` stops after that many kept rows;
    `every_row_kept` says no client-side filter drops rows, so the last page may ask for just
    the rows still missing; `counted` asks the service to count the rows on the first page
    (work for the service, which a range of a larger read does not need); `last_sequence`,
    the ``$sequence`` of the last row a read up ``$sequence`` can hold, ends it at the page
    that ends with that row. `first_page` is the body of the first page, asked for already
    (by the read's `Opening`)."""

    path: str
    requests: tuple[tuple[str, ...], ...]
    page_size: int = DEFAULT_PAGE_SIZE
    head: int | None = None
    every_row_kept: bool = False
    counted: bool = True
    last_sequence: int | None = None
    first_page: asyncio.Task[bytes] | None = field(default=None, compare=False, repr=False)

    @property
    def row_limit(self) -> int | None:
        """The most rows its pages ask for in all: the head, when no row is dropped."""
        return self.head if self.every_row_kept else None

    @property
    def first_limit(self) -> int:
        """The rows its first page asks for."""
        return self.page_size if self.row_limit is None else min(self.page_size, self.row_limit)


@dataclass(frozen=True)
class Page:
    """A page body, and whether it is the first of the read (its total describes the read)."""

    body: bytes
    first: bool


async def prefetched_pages(
    requester: Requester,
    read: PagedRead,
    *,
    concurrency: AdaptiveConcurrency | None = None,
    ahead: int = PREFETCH_PAGES,
    slot: Slot | None = None,
) -> AsyncGenerator[Page, None]:
    """Every page of `read`, in the service's order, fetched in a task of its own while the
    reader decodes: `ahead` bodies wait at most; with 0, the next page is asked for once the
    reader took the last one (one of many concurrent ranges, which overlap fetching among
    themselves). `concurrency` is told how long each page waited on the network; `slot` is
    given up once the last page is in, while it may still be decoding."""
    queue: asyncio.Queue[Page | BaseException | None] = asyncio.Queue(maxsize=max(1, ahead))
    producer = asyncio.create_task(_fetch_pages(requester, read, queue, concurrency, ahead, slot))
    try:
        while True:
            item = await queue.get()
            queue.task_done()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        await cancel_and_wait(producer)


async def up_to_head(
    batches: AsyncIterator[pa.RecordBatch], head: int | None, bar: tqdm[object] | None
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The non-empty batches of `batches`, cut off once `head` rows (None: all) went by,
    each counted on `bar`. Leaves `batches` unread after the head: the caller closes it."""
    kept = 0
    async for batch in batches:
        if head is not None and kept + batch.num_rows >= head:
            batch = batch.slice(0, head - kept)
        kept += batch.num_rows
        if bar is not None:
            bar.update(batch.num_rows)
        if batch.num_rows:
            yield batch
        if head is not None and kept >= head:
            return


async def _fetch_pages(
    requester: Requester,
    read: PagedRead,
    queue: asyncio.Queue[Page | BaseException | None],
    concurrency: AdaptiveConcurrency | None,
    ahead: int,
    slot: Slot | None,
) -> None:
    try:
        for number, queries in enumerate(read.requests):
            pages = iter_pages(
                requester,
                read.path,
                queries,
                read.page_size,
                row_limit=read.row_limit,
                with_total=read.counted and number == 0,
                last_sequence=read.last_sequence,
                first_page=read.first_page if number == 0 else None,
            )
            first = number == 0
            asked = time.perf_counter()
            async for body in pages:
                if concurrency is not None:
                    concurrency.waited(time.perf_counter() - asked, nbytes=len(body))
                await queue.put(Page(body, first))
                if ahead == 0:
                    await queue.join()  # the reader took it
                first = False
                asked = time.perf_counter()
    except Exception as exc:  # handed to the reader, which raises it in the caller's task
        await queue.put(exc)
        return
    if slot is not None:
        slot.release()
    await queue.put(None)


class SeenIds:
    """The ``$id``s of rows already yielded, to drop repeats when requests overlap."""

    def __init__(self) -> None:
        self._ids: set[str | None] = set()

    def new_rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        ids = batch.column("$id").to_pylist()  # a request sends a row once
        fresh = [row_id not in self._ids for row_id in ids]
        self._ids.update(ids)
        if all(fresh):
            return batch
        return batch.filter(pa.array(fresh, pa.bool_()))


def show_total(
    bar: tqdm[object], total: int, *, exact: bool, head: int | None, span: int | None = None
) -> None:
    """Show on `bar` what is known of a read's rows: the service's count `total` when `exact`
    (the count is the result's) and below `TOTAL_CAP`; else an upper bound, labelled as one:
    the least of that count (the client keeps fewer), `span` (the ``$sequence`` values from
    the first row to the last) and `head`; else, with nothing to bound it, the capped count
    beside the bar."""
    if exact and total < TOTAL_CAP:
        set_total(bar, total if head is None else min(total, head))
        return
    bounds = [bound for bound in (span, head) if bound is not None]
    if total < TOTAL_CAP:
        bounds.append(total)
    if bounds:
        set_total(bar, min(bounds), upper_bound=True)
        return
    described = describe_total(total, exact=exact)
    if described is not None:
        bar.set_postfix_str(f"of {described}", refresh=True)
