"""The serial read of a plan: its pages one after the other, decoded off the loop, types
settled when inferred, rows sorted on the client as the service sorts them when it cannot
(the results of several requests: `sort_table`), output
columns projected, the first page taken from the read's `Opening`. Each range of a ranged
read is read this way.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from ..._core._adaptive import AdaptiveConcurrency
from ..._core._fan_in import Slot
from ..._core._pages import TOTAL_CAP
from ..._core._together import cancel_and_wait
from ..._exceptions import RowDecodeError
from ..._schema import SYSTEM_SCHEMA, InferredSchema
from .._decode import Decode, decoded, holds
from ._plan import Plan
from ._prefetch import (
    PREFETCH_PAGES,
    PagedRead,
    SeenIds,
    prefetched_pages,
    show_total,
    up_to_head,
)
from ._probes import Opening, sequence_bounds

if TYPE_CHECKING:
    from tqdm import tqdm

    from ..._core import Requester

HOLD_BACK_ROWS = 100_000
"""Rows a streaming read with inferred types holds back while a column has shown no value."""


async def serial_batches(
    requester: Requester,
    plan: Plan,
    inferred: InferredSchema | None,
    bar: tqdm[object] | None,
    *,
    collect: bool,
    concurrency: AdaptiveConcurrency | None = None,
    slot: Slot | None = None,
    last_sequence: int | None = None,
    opening: Opening | None = None,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The result batches of `plan`; `inferred` takes the types seen when the table's own
    cannot be read. `collect` says the caller keeps every batch anyway, so inferred types
    may be settled over all rows. With a `slot` the plan is one of many concurrent ranges:
    it fetches no page ahead of the decoder (the ranges overlap fetching among themselves),
    tells `concurrency` how each page went, and gives up the slot once its last page is in;
    `last_sequence` is the last ``$sequence`` its rows can have when they come up it.
    `opening` is the read's first requests (`Opening.send`), whose first page it takes."""
    if not plan.reads_rows:
        if inferred is not None:
            await learn_columns(requester, plan, inferred)
        return
    read = plan.paged(counted=slot is None, last_sequence=last_sequence)
    if opening is not None:
        read = replace(read, first_page=opening.take())
    decode = plan.decoder(inferred, kept=collect)
    pages = _decoded_pages(requester, plan, read, decode, bar, concurrency, slot)
    async with aclosing(pages):
        batches: AsyncIterator[pa.RecordBatch] = up_to_head(pages, read.head, bar)
        if inferred is not None:
            hold = math.inf if collect or plan.client_order else HOLD_BACK_ROWS
            batches = _settled(batches, requester, plan, inferred, hold)
        if plan.client_order:
            batches = _sorted(batches, plan)
        async for batch in batches:
            yield plan.project(batch)


async def _decoded_pages(
    requester: Requester,
    plan: Plan,
    read: PagedRead,
    decode: Decode,
    bar: tqdm[object] | None,
    concurrency: AdaptiveConcurrency | None,
    slot: Slot | None,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """Every page of `read` (of `plan`) decoded (while the next ones are fetched), without
    duplicate rows when there are several requests; the first page's count shown on `bar`,
    and when the service's count is capped, an upper bound from the rows' ``$sequence``
    bounds (asked for beside the pages)."""
    ahead = 0 if slot is not None else PREFETCH_PAGES
    pages = prefetched_pages(requester, read, concurrency=concurrency, ahead=ahead, slot=slot)
    seen = SeenIds() if len(read.requests) > 1 else None
    bounded: asyncio.Task[None] | None = None
    try:
        async with aclosing(pages):
            async for page in pages:
                total, batch = await decoded(decode, page.body, concurrency)
                if page.first and bar is not None:
                    exact = len(read.requests) == 1 and read.every_row_kept
                    show_total(bar, total, exact=exact, head=read.head)
                    if total >= TOTAL_CAP and not bar.disable:
                        shown = _show_bound(requester, plan, bar, total, exact, read.head)
                        bounded = asyncio.create_task(shown)
                yield batch if seen is None else seen.new_rows(batch)
    finally:
        if bounded is not None:
            await cancel_and_wait(bounded)


async def _show_bound(
    requester: Requester, plan: Plan, bar: tqdm[object], total: int, exact: bool, head: int | None
) -> None:
    """Show on `bar` the upper bound the ``$sequence`` of the first and the last row give."""
    bounds = await sequence_bounds(requester, plan)
    if bounds is not None:
        show_total(bar, total, exact=exact, head=head, span=bounds.span)


async def learn_columns(requester: Requester, plan: Plan, inferred: InferredSchema) -> None:
    """For types inferred from the rows and a result without any: learn the columns from
    the table's rows read without the filter (one row; then, while a column has shown no
    value, pages of up to `HOLD_BACK_ROWS` rows), so that an empty result has the columns
    and dtypes of a read that has rows. A table without rows teaches nothing."""
    if len(inferred.schema) > len(SYSTEM_SCHEMA) and not _has_untyped(inferred.schema):
        return
    await _read_unfiltered(requester, plan, inferred, page_size=1, rows=1)
    if _has_untyped(inferred.schema):
        await _read_unfiltered(
            requester, plan, inferred, page_size=plan.page_size, rows=HOLD_BACK_ROWS
        )


async def _read_unfiltered(
    requester: Requester, plan: Plan, inferred: InferredSchema, *, page_size: int, rows: int
) -> None:
    """Read up to `rows` rows without the filter (their types go into `inferred`), stopping
    once every column has a type."""
    read = PagedRead(
        plan.location.rows_path,
        (plan.select_queries,),
        page_size=page_size,
        head=rows,
        every_row_kept=True,
    )
    decode = plan.decoder(inferred, filtered=False)
    async with aclosing(prefetched_pages(requester, read)) as pages:
        async for page in pages:
            await decoded(decode, page.body)
            if not _has_untyped(inferred.schema):
                return


async def _settled(
    batches: AsyncIterator[pa.RecordBatch],
    requester: Requester,
    plan: Plan,
    inferred: InferredSchema,
    hold: float,
) -> AsyncIterator[pa.RecordBatch]:
    """Batches of inferred types, all conformed to one schema: held back until every column
    has a type (or `hold` rows are held), then passed on; a later change of a type raises.
    When no row comes at all, the columns are learned elsewhere (`learn_columns`)."""
    held: list[pa.RecordBatch] = []
    held_rows = 0
    released: pa.Schema | None = None
    async for batch in batches:
        if released is not None:
            if inferred.schema != released:
                changed = [f.name for f in inferred.schema if f not in released]
                raise RowDecodeError(
                    f"column types changed after rows were handed out ({', '.join(changed)}); "
                    "read with to_pandas()/to_arrow(), or with an API key that can read the "
                    "table's columns",
                    column=changed[0] if changed else None,
                )
            yield batch
            continue
        held.append(batch)
        held_rows += batch.num_rows
        if held_rows >= hold or not _has_untyped(inferred.schema):
            released = inferred.schema
            for waiting in held:
                yield inferred.conform(waiting)
            held = []
    if released is None and not held_rows:
        await learn_columns(requester, plan, inferred)
    for waiting in held:
        yield inferred.conform(waiting)


def _has_untyped(schema: pa.Schema) -> bool:
    return any(holds(item.type, pa.types.is_null) for item in schema)


async def _sorted(
    batches: AsyncIterator[pa.RecordBatch], plan: Plan
) -> AsyncIterator[pa.RecordBatch]:
    collected = [batch async for batch in batches]
    if not collected:
        return
    table = sort_table(pa.Table.from_batches(collected), plan.client_order)
    if plan.head is not None:
        table = table.slice(0, plan.head)
    for batch in table.to_batches(max_chunksize=plan.page_size):
        yield batch


def sort_table(table: pa.Table, order: Sequence[tuple[str, bool]]) -> pa.Table:
    """`table` ordered as the service orders rows for `order` ((column, ascending) pairs):
    nulls first when ascending and last when descending, text compared case- and
    accent-insensitively (the service's collation), ties by ``$sequence``.
    """
    keys: list[tuple[str, Literal["ascending", "descending"]]] = []
    columns: dict[str, pa.Array[Any]] = {}
    for position, (name, ascending) in enumerate(order):
        values = table.column(name).combine_chunks()
        direction: Literal["ascending", "descending"] = "ascending" if ascending else "descending"
        present = f"__present{position}"
        columns[present] = pc.is_valid(values)
        keys.append((present, direction))  # false (null) first when ascending
        sortable = f"__value{position}"
        columns[sortable] = _collation_key(values)
        keys.append((sortable, direction))
    # The service's tie-breaker: $sequence ascending, or in the direction of a leading
    # $createdAt/$updatedAt key.
    leading, leading_ascending = order[0] if order else ("", True)
    tie_ascending = leading_ascending if leading in ("$createdAt", "$updatedAt") else True
    keys.append(("$sequence", "ascending" if tie_ascending else "descending"))
    columns["$sequence"] = table.column("$sequence").combine_chunks()
    indices = pc.sort_indices(pa.table(columns), sort_keys=keys)
    return table.take(indices)


def _collation_key(values: pa.Array[Any]) -> pa.Array[Any]:
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return values
    decomposed: pa.Array[Any] = pc.utf8_normalize(values, form="NFKD")  # type: ignore[attr-defined]
    bare = pc.replace_substring_regex(decomposed, pattern=r"\p{Mn}", replacement="")
    return pc.utf8_lower(bare)
