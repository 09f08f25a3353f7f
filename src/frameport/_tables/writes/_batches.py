"""A stream of Arrow batches written into a table as a restore or a copy writes them: the
rows keep their ``$id``, ``$permissions``, ``$createdAt`` and ``$updatedAt`` (the service
takes the two times from API keys), and every row is counted.

Each batch is cut into bulk requests (`cut_requests`: by count and by size) sent by the
load's `RowSender` (`_sending`: conflicts
settled by `on_conflict`, refused rows split off and named, lost answers read back), as many
at once as the shared controller says, the requests of one batch following those of the
one before without a pause. `on_batch(index)` is told when a batch and every batch before
it are wholly written, so that a resumed write can start after the last batch it was told
of, with the batches the stopped run had sent (`on_send`) as `maybe_written`: the rows
found there are its own, counted as written whatever `on_conflict` says.

>>> counts = await write_batches(requester, location, batches, on_conflict="skip")
... # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..._core._adaptive import TaskWindow
from ..._schema import SERVICE_FIELDS, batch_to_rows
from ._sending import (
    ID,
    EncodedRows,
    OnConflict,
    Outcome,
    RowSender,
    check_on_conflict,
    cut_requests,
    write_concurrency,
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
    check_on_conflict(on_conflict)
    concurrency = write_concurrency()
    sender = RowSender(requester, location, on_conflict, concurrency)
    counts = WriteCounts()
    left: list[int] = []  # per batch: its requests not yet answered, plus one until it is cut
    told = 0

    def finished(index: int) -> None:
        nonlocal told
        left[index] -= 1
        while told < len(left) and left[told] == 0:
            if on_batch is not None:
                on_batch(told)
            told += 1

    async def send(index: int, rows: EncodedRows) -> None:
        outcome = await sender.send(rows, maybe_written=index < maybe_written)
        _count(counts, outcome, rows.rows)
        finished(index)

    async with TaskWindow(concurrency) as jobs:
        index = 0
        async for batch in batches:
            worked = time.perf_counter()
            names = [name for name in batch.schema.names if name in _NOT_WRITTEN]
            rows = batch_to_rows(batch.drop_columns(names))
            left.append(1)
            if on_send is not None and rows:
                on_send(index)
            requests = cut_requests(rows)
            per_request = (time.perf_counter() - worked) / max(1, len(requests))
            for _, part in requests:
                left[index] += 1
                concurrency.worked(per_request)
                await jobs.start(send(index, part))
            finished(index)  # cut: an empty batch is written at once
            index += 1
        await jobs.drain()
    return counts


def _count(counts: WriteCounts, outcome: Outcome, rows: list[dict[str, Any]]) -> None:
    counts.written += outcome.written
    counts.replaced += outcome.replaced
    counts.skipped += outcome.skipped
    counts.rejected += [(str(rows[r.index][ID]), r.message) for r in outcome.refused]
