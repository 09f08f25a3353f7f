"""An atomic load: every row in one transaction, committed only when all of them are good;
and a load staged in a person's transaction (`Client.transaction`) the same way.

The service counts a bulk operation once against a transaction's cap of 100 operations,
whatever its rows; only the request body limit bounds the rows of one operation. So
`AtomicLoad` packs rows into ``bulkCreate`` operations (``bulkUpsert`` for the rows
``on_conflict="replace"`` finds there) of up to `OPERATION_ROWS` rows and
`OPERATION_BYTES` of JSON each, and stages each operation in the transaction
(`_transaction.StagedTransaction`, which settles lost answers) as soon as it is full, so
memory holds one operation. It is the sender of the writes' one loop (`_ordered`), which
hands it the load's batches one at a time; ``on_conflict="skip"`` and ``"replace"`` look
each batch's IDs up first (one list request per batch).

* **Refused up front.** When the source's size is known (a frame, a Parquet file), the
  first chunk's encoded size per row gives the operations the whole load needs; more than
  the transaction has room for is refused before anything of the load is staged: a
  `LoadError` giving the rows, the bytes per row and the operations (a `TransactionError`
  in a person's transaction). A source of unknown size that turns out too large is refused
  the same way when the operation past the limit would be staged (the transaction is rolled
  back).
* **Rejected rows.** A row that breaks a column's rule rolls the transaction back once the
  whole source has been checked; `RowsRejectedError` carries the report with every bad row.
* **Its own transaction or a person's.** An atomic load makes its transaction and commits
  it in `finish`; in a person's transaction `finish` stages the last rows and leaves the
  commit to the end of the block. Any failure rolls the transaction back.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..._exceptions import LoadError, RowsRejectedError
from ._sending import ID, EncodedRows, OnConflict, Outcome, existing_ids
from ._transaction import MAX_OPERATIONS, MAX_TTL, RowAction, StagedTransaction

if TYPE_CHECKING:
    from ..._core import Requester
    from .._location import TableLocation
    from ._report import WriteReport

OPERATION_BYTES = 8 << 20
"""JSON bytes of rows in one staged operation: below the service's request body limit."""

OPERATION_ROWS = 9_000
"""Rows in one staged operation: a request body decodes into at most 10,000 JSON objects
(the local service's bound), each row one of them."""


class AtomicLoad:
    """The transaction of one atomic load (see the module docstring); `transaction` is a
    person's, None to make one and commit it in `finish`."""

    def __init__(
        self,
        requester: Requester,
        location: TableLocation,
        on_conflict: OnConflict,
        source_rows: int | None,
        transaction: StagedTransaction | None = None,
    ) -> None:
        self._requester = requester
        self._location = location
        self._on_conflict = on_conflict
        self._source_rows = source_rows  # None: not known before the source is read
        self._own = transaction is None
        self._transaction = transaction or StagedTransaction(requester, MAX_TTL)
        self._checked = False
        self._staged = 0  # operations of this load
        self._rows = 0
        # Rows one operation takes: each row is one where the service takes no bulk ones.
        self._operation_rows = 1 if self._transaction.row_by_row else OPERATION_ROWS
        self._creates: list[tuple[str, bytes]] = []
        self._upserts: list[tuple[str, bytes]] = []
        self._bytes = 0
        self._skipped = 0
        self._replaced = 0

    async def send(self, rows: EncodedRows, *, maybe_written: bool) -> Outcome:
        """Add a batch of rows (`_ordered.Sender`); they are counted when committed."""
        encoded = rows.texts
        if not self._checked:
            self._checked = True
            self._refuse_if_too_large(encoded)
        there: set[str] = set()
        if self._on_conflict != "fail":
            ids = [str(row[ID]) for row in rows.rows]
            there = await existing_ids(self._requester, self._location, ids)
        for row, text in zip(rows.rows, encoded, strict=True):
            if row[ID] in there:
                if self._on_conflict == "skip":
                    self._skipped += 1
                    continue
                self._replaced += 1
                self._upserts.append((str(row[ID]), text))
            else:
                self._creates.append((str(row[ID]), text))
            self._rows += 1
            self._bytes += len(text) + 1
            pending = len(self._creates) + len(self._upserts)
            if self._bytes >= OPERATION_BYTES or pending >= self._operation_rows:
                await self._flush()
        return Outcome()

    def _refuse_if_too_large(self, encoded: list[bytes]) -> None:
        source_rows = self._source_rows
        if source_rows is None or not encoded:
            return
        per_row = sum(len(text) + 1 for text in encoded) / len(encoded)
        self._refuse(source_rows, per_row, math.ceil(source_rows / self._per_operation(per_row)))

    def _per_operation(self, per_row: float) -> int:
        """Rows of `per_row` JSON bytes each that one operation takes."""
        return max(1, min(self._operation_rows, int(OPERATION_BYTES / per_row)))

    def _refuse(self, rows: int, per_row: float, needed: int) -> None:
        """Refuse a load of `rows` rows that needs `needed` operations if they do not fit."""
        if needed <= self._transaction.room:
            return
        per_operation = self._per_operation(per_row)
        load = (
            f"{rows:,} rows of about {per_row:,.0f} bytes of JSON need {needed:,} bulk "
            f"operations of at most {per_operation:,} such rows ({OPERATION_ROWS:,} rows or "
            f"{OPERATION_BYTES / 2**20:.0f} MiB each)"
        )
        if self._transaction.row_by_row:
            load = f"{rows:,} rows need {needed:,} operations"
        if not self._own:
            self._transaction.check_room(needed, f"this load ({load})")
        fitting = MAX_OPERATIONS * per_operation
        advice = "Load without atomic=True (resume=True makes it safe to rerun), or split"
        if self._transaction.row_by_row:
            advice = "Split"
        raise LoadError(
            f"atomic=True cannot fit this load in one transaction: {load}, and a transaction "
            f"holds {MAX_OPERATIONS} operations ({self._transaction.counting}), {fitting:,} "
            f"rows. {advice} the source into atomic parts of at most {fitting:,} rows"
        )

    async def _flush(self) -> None:
        writes: tuple[tuple[RowAction, list[tuple[str, bytes]]], ...] = (
            ("create", self._creates),
            ("upsert", self._upserts),
        )
        for action, rows in writes:
            if not rows:
                continue
            try:
                for operation in self._transaction.writes(self._location, action, rows):
                    if self._transaction.room < 1:
                        per_row = max(1, self._bytes) / max(1, len(rows))
                        rows_seen = max(self._rows, self._source_rows or 0)
                        self._refuse(rows_seen, per_row, self._staged + 1)
                    await self._transaction.stage(operation)
                    self._staged += 1
            except BaseException:
                await self._transaction.rollback()
                raise
            rows.clear()
        self._bytes = 0

    async def finish(self, report: WriteReport) -> None:
        """Stage the last rows and commit them (in a person's transaction: leave the commit
        to it), or, with rejected rows, roll back and raise `RowsRejectedError`; fill in the
        report's counts."""
        if len(report.rejected):
            await self._transaction.rollback()
            report.written = 0
            raise RowsRejectedError(
                f"{len(report.rejected):,} rows break the table's rules, so nothing was "
                "written (the transaction was rolled back); the error's report.rejected "
                "lists them",
                report=report,
            )
        await self._flush()
        if self._own:
            try:
                await self._transaction.commit()
            except BaseException:
                await self._transaction.rollback()
                raise
        report.written = self._rows - self._replaced
        report.replaced = self._replaced
        report.skipped = self._skipped
        report.batches = self._staged
