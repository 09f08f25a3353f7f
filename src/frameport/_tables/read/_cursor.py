"""The cursor loop of every list of the service (table rows; files and deployments through
`frameport._records` and the fsspec filesystem), and pages fetched ahead of their decoding.

* Each page asks for `page_size` rows and the next starts after the previous page's last
  ``$id`` (``cursorAfter``), read from the raw body (`last_row_id`): `prefetched_pages`
  fetches in a task of its own, at most `PREFETCH_PAGES` bodies ahead, while the reader
  decodes on the decoding thread (`decoded`; Arrow's JSON reader releases the GIL).
* A request ends with a page shorter than the limit (counted on the raw body), never at a
  row count: nothing is cut off; or, read up ``$sequence`` in a range whose last row is
  known, with the page that ends with that row. A cursor the service refuses (its row has
  null in a sort column, ``database_query_order_null``) is replaced by ``offset`` for that
  page.
* `SeenIds` drops rows of several requests seen before; `up_to_head` stops at `head` rows.

>>> async for body in iter_pages(requester, "/storage/buckets/b/files", (), 100):
...     ...                                                       # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..._core._adaptive import AdaptiveConcurrency
from ..._core._fan_in import Slot
from ..._core._progress import set_total
from ..._core._queries import cursor_after_query, limit_query, offset_query
from ..._core._together import cancel_and_wait
from ..._core._transport import queries_param
from ..._exceptions import BadRequestError
from ._decode import last_row_id, last_row_value

if TYPE_CHECKING:
    from tqdm import tqdm

    from ..._core import Requester

DEFAULT_PAGE_SIZE = 5000
"""Rows asked for per page unless the table handle (`client.table(..., page_size=)`) or the
call (`to_pandas(page_size=)`) says otherwise."""

TOTAL_CAP = 5000
"""The service counts matching rows up to this number: a `total` of 5000 means "5000 or more"."""

PREFETCH_PAGES = 2
"""Page bodies fetched ahead of the decoder; bounds the memory of a read."""

_ORDER_NULL = "database_query_order_null"

READ_POOL = pa.system_memory_pool()
"""The Arrow memory pool reads pass to decoding and to ``to_pandas``, and that the batches a
read keeps whole are copied into (`in_read_pool`): the system allocator gives freed memory
back at once, where mimalloc (Arrow's default in the wheels) keeps it. Arrow's JSON reader
builds a page's columns in the default pool whatever pool it is given."""


def in_read_pool(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` copied into `READ_POOL` (0.3–0.5 ms for a 5000-row page), for a read that
    keeps every batch: the default pool's memory is free again for the next page, where the
    pages' columns left there kept mimalloc's pages partly used (``to_arrow`` of 400,000
    rows, a 39 MiB table: 54 MiB of RSS growth with the copy, 71–86 MiB without). A read
    that hands its batches on reuses that memory as it goes, and does not copy: the
    copies' memory, spread over the decoding threads, raised a backup's peak."""
    if not batch.num_columns:  # nothing to copy, and no arrays to say how many rows
        return batch
    columns = [pa.concat_arrays([column], memory_pool=READ_POOL) for column in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


Decode = Callable[[bytes], tuple[int, pa.RecordBatch]]
"""Turns one page body into (the service's total, the rows kept as a batch); runs in a thread."""


@dataclass(frozen=True)
class PagedRead:
    """What to fetch: the list endpoint `path` and, per request, its query strings (filters,
    select, order: everything but limit and cursor). `head` stops after that many kept rows;
    `every_row_kept` says no client-side filter drops rows, so the last page may ask for just
    the rows still missing; `counted` asks the service to count the rows on the first page
    (work for the service, which a range of a larger read does not need); `last_sequence`,
    the ``$sequence`` of the last row a read up ``$sequence`` can hold, ends it at the page
    that ends with that row. `first_page` is the body of the first page, when it was asked
    for already (`EarlyPage`)."""

    path: str
    requests: tuple[tuple[str, ...], ...]
    page_size: int = DEFAULT_PAGE_SIZE
    head: int | None = None
    every_row_kept: bool = False
    counted: bool = True
    last_sequence: int | None = None
    first_page: asyncio.Task[bytes] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_page_size(self.page_size)
        if not self.requests:
            raise ValueError("a read needs at least one request")

    @property
    def row_limit(self) -> int | None:
        """The most rows its pages ask for in all: the head, when no row is dropped."""
        return self.head if self.every_row_kept else None

    @property
    def first_limit(self) -> int:
        """The rows its first page asks for."""
        return self.page_size if self.row_limit is None else min(self.page_size, self.row_limit)


def check_page_size(page_size: int) -> int:
    """`page_size` if it is a whole number of rows of at least 1."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page_size must be a whole number of rows >= 1 (got {page_size!r}).")
    return page_size


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
    batches: AsyncIterator[pa.RecordBatch], head: int | None, bar: tqdm[Any] | None
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
                requester, read.path, queries, read.page_size, row_limit=read.row_limit,
                with_total=read.counted and number == 0, last_sequence=read.last_sequence,
                first_page=read.first_page if number == 0 else None,
            )  # fmt: skip
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


async def iter_pages(
    requester: Requester,
    path: str,
    queries: Sequence[str],
    page_size: int,
    *,
    row_limit: int | None = None,
    with_total: bool = True,
    after: str | None = None,
    skipped: int = 0,
    last_sequence: int | None = None,
    first_page: Awaitable[bytes] | None = None,
) -> AsyncGenerator[bytes, None]:
    """Every page body of one list request (`queries`: everything but limit and cursor), in
    the service's order: the one cursor loop of the package.

    Each page asks for `page_size` rows after the previous page's last ``$id``; the loop ends
    with a page shorter than asked (counted on the raw body), never at a row count, so nothing
    is cut off. With `row_limit`, the pages ask for no more rows than that in all. Only the
    first page asks the service to count the rows (`with_total`). A read that continues an
    earlier one starts after the row `after`, `skipped` rows into the request. A request up
    ``$sequence`` whose rows end at `last_sequence` ends with the page that ends there: an
    empty page after it would say so a round trip later. `first_page` is the first page's
    body when it was asked for already, with the same queries, limit and count.
    """
    last = None if last_sequence is None else str(last_sequence)
    delivered = 0
    cursor = after
    while True:
        limit = page_size if row_limit is None else min(page_size, row_limit - delivered)
        if limit < 1:
            return
        if first_page is not None:
            body, first_page = await first_page, None
        else:
            body = await fetch_page(
                requester, path, queries, limit, cursor=cursor, delivered=skipped + delivered,
                with_total=with_total and delivered == 0,
            )  # fmt: skip
        cursor = last_row_id(body)
        yield body
        delivered += limit
        if cursor is None or rows_at_most(body) < limit:
            return
        if last is not None and last_row_value(body, b"$sequence") == last:
            return


async def fetch_page(
    requester: Requester,
    path: str,
    queries: Sequence[str],
    limit: int,
    *,
    cursor: str | None = None,
    delivered: int = 0,
    with_total: bool = True,
) -> bytes:
    """One page body of at most `limit` rows of the request `queries`, after the row `cursor`
    (None: from the start). `delivered` is how many rows of the request came before it, so
    that the page can be asked for by offset when the service refuses the cursor."""
    paging = [limit_query(limit)]
    if cursor is not None:
        paging.append(cursor_after_query(cursor))
    params: dict[str, Any] = queries_param([*queries, *paging])
    if not with_total:
        params["total"] = "false"  # counting is work for the service; only page one's is used
    try:
        return await requester.request_bytes("GET", path, params=params)
    except BadRequestError as exc:
        if cursor is None or exc.type != _ORDER_NULL:
            raise
    # The cursor row has null in a sort column: the service cannot continue after it.
    params.update(queries_param([*queries, limit_query(limit), offset_query(delivered)]))
    return await requester.request_bytes("GET", path, params=params)


async def decoded(
    decode: Decode, body: bytes, concurrency: AdaptiveConcurrency | None = None
) -> tuple[int, pa.RecordBatch]:
    """`decode(body)` run on the decoding thread, its time told to `concurrency` (the work
    of a page)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_decoder(), _timed_decode, decode, body, concurrency)


def _timed_decode(
    decode: Decode, body: bytes, concurrency: AdaptiveConcurrency | None
) -> tuple[int, pa.RecordBatch]:
    started = time.perf_counter()
    try:
        return decode(body)
    finally:
        if concurrency is not None:
            concurrency.worked(time.perf_counter() - started)


def _decoder() -> ThreadPoolExecutor:
    """The thread decoding pages: one, beside the event loop fetching the next page. (A second
    thread decoding the next page at once gained nothing measurable on 2 cores, and raised a
    read's peak memory by half the final frame: more temporaries, another malloc arena.)"""
    global _decoder_pool
    with _decoder_pool_lock:
        if _decoder_pool is None:
            _decoder_pool = ThreadPoolExecutor(1, thread_name_prefix="frameport-decode")
        return _decoder_pool


def _forget_decoder_after_fork() -> None:
    global _decoder_pool
    _decoder_pool = None


_decoder_pool: ThreadPoolExecutor | None = None
_decoder_pool_lock = threading.Lock()
os.register_at_fork(after_in_child=_forget_decoder_after_fork)


def rows_at_most(body: bytes) -> int:
    """An upper bound of the rows in a page body: every row has an ``"$id"`` key, and that
    quoted text occurs unescaped nowhere else except as a string value or in a nested row.
    (``bytes.count`` takes 1.1 ms for a 1.6 MB page, on the event loop's thread; counting
    with numpy took 1.6 ms.)"""
    return body.count(b'"$id"')


class SeenIds:
    """The ``$id``s of rows already yielded, to drop repeats when requests overlap."""

    def __init__(self) -> None:
        self._ids: set[str | None] = set()

    def new_rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        ids = batch.column("$id").to_pylist()
        fresh = []
        for row_id in ids:
            fresh.append(row_id not in self._ids)
            self._ids.add(row_id)
        if all(fresh):
            return batch
        return batch.filter(pa.array(fresh, pa.bool_()))


def show_total(
    bar: tqdm[Any], total: int, *, exact: bool, head: int | None, span: int | None = None
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


def describe_total(total: int, *, exact: bool = True) -> str | None:
    """The service's `total` for people: a capped count is "≥ 5,000"; a count the client
    narrows afterwards (`exact=False`) is an upper bound, or None once capped.

    >>> describe_total(120), describe_total(5000), describe_total(120, exact=False)
    ('120', '≥ 5,000', '≤ 120')
    """
    if total >= TOTAL_CAP:
        return f"≥ {total:,}" if exact else None
    return f"{total:,}" if exact else f"≤ {total:,}"
