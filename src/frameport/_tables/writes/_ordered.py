"""The one sender loop of every write: `load`, `insert`, `upsert`, restores and copies
(`write_batches`), atomic loads and dry runs.

A write hands the loop its batches in source order (`SendLoop.send`); the loop sends each
through its `Sender` as a task, as many at once as the write's concurrency controller says,
and tells the write of each batch once it and every batch before it are finished
(`finished`): the ordered finished prefix that a checkpoint records. A batch without rows
(its part of the source all rejected, or empty) is finished as it comes. The senders:
`RowSender` (bulk requests), `AtomicLoad` (operations staged in one transaction) and
`DRY_RUN` (nothing sent, every row counted as written).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ..._core._adaptive import AdaptiveConcurrency, TaskWindow
from ._sending import EncodedRows, Outcome

Mark = TypeVar("Mark")


class Sender(Protocol):
    """Sends one batch of rows and says what became of them."""

    async def send(self, rows: EncodedRows, *, maybe_written: bool) -> Outcome: ...


class _DryRun:
    async def send(self, rows: EncodedRows, *, maybe_written: bool) -> Outcome:
        return Outcome(written=len(rows))


DRY_RUN: Sender = _DryRun()
"""The sender of a dry run: sends nothing, and counts every row as written."""


@dataclass
class Sending(Generic[Mark]):
    """A batch of a write: its rows, whether an earlier run may have written them, what the
    write knows it by (`mark`), and its outcome once sent."""

    rows: EncodedRows
    maybe_written: bool
    mark: Mark
    outcome: Outcome | None = None


class SendLoop(Generic[Mark]):
    """Sends a write's batches (see the module docstring); use it as ``async with``, and
    `drain` it at the end."""

    def __init__(
        self,
        sender: Sender,
        concurrency: AdaptiveConcurrency,
        finished: Callable[[Sending[Mark]], None],
    ) -> None:
        self._sender = sender
        self._concurrency = concurrency
        self._finished = finished
        self._pending: deque[Sending[Mark]] = deque()
        self._jobs = TaskWindow(concurrency)

    async def __aenter__(self) -> SendLoop[Mark]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._jobs.__aexit__(*exc)

    async def send(self, batches: list[Sending[Mark]], worked: float) -> None:
        """Send the write's next `batches`, made in `worked` seconds (which the concurrency
        controller weighs against the requests' waits)."""
        for batch in batches:
            self._pending.append(batch)
            if not batch.rows:
                batch.outcome = Outcome()
            else:
                self._concurrency.worked(worked / len(batches))
                await self._jobs.start(self._send(batch))
        self._advance()

    async def drain(self) -> None:
        """Wait until every batch is finished (raising the first failure)."""
        await self._jobs.drain()

    async def _send(self, batch: Sending[Mark]) -> None:
        batch.outcome = await self._sender.send(batch.rows, maybe_written=batch.maybe_written)
        self._advance()

    def _advance(self) -> None:
        while self._pending and self._pending[0].outcome is not None:
            self._finished(self._pending.popleft())
