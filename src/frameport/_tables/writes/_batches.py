"""A stream of Arrow batches written into a table as a restore or a copy writes them: the
rows keep their ``$id``, ``$permissions``, ``$createdAt`` and ``$updatedAt`` (the service
takes the two times from API keys), and every row is counted.

Each batch is cut into bulk requests (`cut_requests`) sent by `RowSender` through the
writes' one loop (`_ordered.SendLoop`), one batch's requests right after the one before's.
`on_batch(index)` is told when a batch and every batch before it are wholly written, so
that a resumed write can start after the last batch it was told of, with the batches the
stopped run had sent (`on_send`) as `maybe_written`: the rows found there are its own,
counted as written whatever `on_conflict` says.

>>> counts = await write_batches(requester, location, batches, on_conflict="skip")
... # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from ..._schema import SERVICE_FIELDS, batch_to_rows
from ._ordered import Sending, SendLoop
from ._sending import (
    ID,
    OnConflict,
    RowSender,
    cut_requests,
)

if TYPE_CHECKING:
    from ..._core import Requester
    from .._location import TableLocation

_KEPT_FIELDS = frozenset({"$id", "$permissions", "$createdAt", "$updatedAt"})
_NOT_WRITTEN = SERVICE_FIELDS - _KEPT_FIELDS


@dataclass
class WriteCounts:
    """What a write did with each row: `written` new, `replaced`, `skipped` (taken IDs left as
    they were), and `rejected`: ``($id, the service's reason)`` of each row refused."""

    written: int = 0
    replaced: int = 0
    skipped: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)


async def write_batches(
    requester: Requester,
    location: TableLocation,
    batches: AsyncIterable[pa.RecordBatch],
    *,
    on_conflict: OnConflict,
    maybe_written: int = 0,
    on_send: Callable[[int], None] | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> WriteCounts:
    """Write every row of `batches` (each with an ``$id`` column) into the table at
    `location`; the first `maybe_written` batches may be there already. `on_send(index)` is
    told before a batch's first request goes out, `on_batch` as the module docstring says."""
    sender = RowSender(requester, location, on_conflict)
    counts = WriteCounts()

    def finished(request: Sending[tuple[int, bool]]) -> None:
        outcome, rows = request.outcome, request.rows.rows
        assert outcome is not None
        counts.written += outcome.written
        counts.replaced += outcome.replaced
        counts.skipped += outcome.skipped
        counts.rejected += [(str(rows[r.index][ID]), r.message) for r in outcome.refused]
        index, last = request.mark
        if last and on_batch is not None:
            on_batch(index)

    async with SendLoop(sender, sender.concurrency, finished) as loop:
        index = 0
        async for batch in batches:
            worked = time.perf_counter()
            names = [name for name in batch.schema.names if name in _NOT_WRITTEN]
            rows = batch_to_rows(batch.drop_columns(names))
            if on_send is not None and rows:
                on_send(index)
            requests = [part for _, part in cut_requests(rows)]
            sendings = [
                Sending(part, index < maybe_written, (index, n == len(requests) - 1))
                for n, part in enumerate(requests)
            ]
            await loop.send(sendings, time.perf_counter() - worked)
            index += 1
        await loop.drain()
    return counts
