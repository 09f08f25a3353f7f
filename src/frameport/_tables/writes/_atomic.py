"""An atomic load: every row in one transaction, committed only when all of them are good.

The service counts a bulk operation once against a transaction's cap of 100 operations,
whatever its rows; only the request body limit bounds the rows of one operation. So
`AtomicLoad` packs rows into ``bulkCreate`` operations (``bulkUpsert`` for the rows
``on_conflict="replace"`` finds there) of up to `OPERATION_ROWS` rows and
`OPERATION_BYTES` of JSON each, and stages each operation through
``POST /tablesdb/transactions/{id}/operations`` as soon as it is full, so memory holds one
operation. It is the sender of the writes' one loop (`_ordered`), which hands it the
load's batches one at a time; ``on_conflict="skip"`` and ``"replace"`` look each batch's
IDs up first (one list request per batch).

* **Refused up front.** When the source's size is known (a frame, a Parquet file), the
  first chunk's encoded size per row gives the operations the whole load needs; more than
  `MAX_OPERATIONS` is a `LoadError` giving the rows, the bytes per row and the operations,
  before the transaction is made. A source of unknown size that turns out too large is
  refused the same way when its 101st operation would be staged (the transaction is
  rolled back).
* **Rejected rows.** A row that breaks a column's rule rolls the transaction back once the
  whole source has been checked; `RowsRejectedError` carries the report with every bad row.
* **Lost answers.** Staging is not idempotent, so the transport retries it with a probe
  (``settle``) of the transaction's ``operations`` count, which says whether the operation
  was staged; a lost commit answer is settled by the transaction's status, waiting while it
  is ``committing`` (a commit that outlasts the client's timeout): ``committed`` is a
  success. Only a ``pending`` transaction is ever rolled back.
"""

from __future__ import annotations

import contextlib
import json
import math
from typing import TYPE_CHECKING

import httpx

from ..._core._polling import poll_until
from ..._exceptions import LoadError, RowsRejectedError, ServerError, TransportError
from ._sending import ID, JSON_HEADERS, EncodedRows, OnConflict, Outcome, existing_ids

if TYPE_CHECKING:
    from ..._core import Requester
    from .._location import TableLocation
    from ._report import WriteReport

MAX_OPERATIONS = 100
"""Operations one transaction holds (bulk operations count once)."""

OPERATION_BYTES = 8 << 20
"""JSON bytes of rows in one staged operation: below the service's request body limit."""

OPERATION_ROWS = 9_000
"""Rows in one staged operation: a request body decodes into at most 10,000 JSON objects
(the local service's bound), each row one of them."""

TRANSACTION_TTL = 3600
"""Seconds the transaction stays open (the service's maximum)."""

COMMIT_WAIT = 3600.0
"""Seconds to wait for the outcome of a commit whose answer was lost (still ``committing``)."""
_POLL_DELAY, _POLL_MAX_DELAY = 0.2, 5.0
_TRANSACTIONS = "/tablesdb/transactions"


def _operations(rows: int, per_row: float) -> int:
    """The bulk operations `rows` rows of `per_row` JSON bytes each take."""
    per_operation = max(1, min(OPERATION_ROWS, int(OPERATION_BYTES / per_row)))
    return math.ceil(rows / per_operation)


class AtomicLoad:
    """The transaction of one atomic load (see the module docstring)."""

    def __init__(
        self,
        requester: Requester,
        location: TableLocation,
        on_conflict: OnConflict,
        source_rows: int | None,
    ) -> None:
        self._requester = requester
        self._location = location
        self._on_conflict = on_conflict
        self._source_rows = source_rows  # None: not known before the source is read
        self._transaction: str | None = None
        self._staged = 0
        self._rows = 0
        self._creates: list[bytes] = []
        self._upserts: list[bytes] = []
        self._bytes = 0
        self._skipped = 0
        self._replaced = 0
        self._commit_sent = False

    async def send(self, rows: EncodedRows, *, maybe_written: bool) -> Outcome:
        """Add a batch of rows (`_ordered.Sender`); they are counted when committed."""
        encoded = rows.texts
        if self._transaction is None:
            self._refuse_if_too_large(encoded)
            answer = await self._requester.request_json(
                "POST", _TRANSACTIONS, json={"ttl": TRANSACTION_TTL}, idempotent=True
            )
            self._transaction = str(answer["$id"])
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
                self._upserts.append(text)
            else:
                self._creates.append(text)
            self._rows += 1
            self._bytes += len(text) + 1
            pending = len(self._creates) + len(self._upserts)
            if self._bytes >= OPERATION_BYTES or pending >= OPERATION_ROWS:
                await self._flush()
        return Outcome()

    def _refuse_if_too_large(self, encoded: list[bytes]) -> None:
        source_rows = self._source_rows
        if source_rows is None or not encoded:
            return
        per_row = sum(len(text) + 1 for text in encoded) / len(encoded)
        needed = _operations(source_rows, per_row)
        if needed > MAX_OPERATIONS:
            raise LoadError(self._too_large(source_rows, per_row, needed))

    @staticmethod
    def _too_large(rows: int, per_row: float, needed: int) -> str:
        per_operation = min(OPERATION_ROWS, int(OPERATION_BYTES / per_row))
        return (
            f"atomic=True cannot fit this load in one transaction: {rows:,} rows of about "
            f"{per_row:,.0f} bytes of JSON need {needed:,} bulk operations of at most "
            f"{per_operation:,} such rows ({OPERATION_ROWS:,} rows or "
            f"{OPERATION_BYTES / 2**20:.0f} MiB each), and a transaction holds "
            f"{MAX_OPERATIONS} operations, {MAX_OPERATIONS * per_operation:,} rows. Load "
            "without atomic=True (resume=True makes it safe to rerun), or split the source "
            "into atomic parts"
        )

    async def _flush(self) -> None:
        for action, rows in (("bulkCreate", self._creates), ("bulkUpsert", self._upserts)):
            if not rows:
                continue
            if self._staged == MAX_OPERATIONS:
                await self._rollback()
                per_row = max(1, self._bytes) / max(1, len(rows))
                raise LoadError(
                    self._too_large(
                        max(self._rows, self._source_rows or 0), per_row, self._staged + 1
                    )
                )
            body = self._operation(action, rows)
            await self._stage_once(body)
            rows.clear()
        self._bytes = 0

    def _operation(self, action: str, rows: list[bytes]) -> bytes:
        location = self._location
        head = json.dumps(
            {
                "action": action,
                "databaseId": location.database_id,
                location.id_param: location.table_id,
            }
        )
        return b'{"operations":[' + head[:-1].encode() + b',"data":[' + b",".join(rows) + b"]}]}"

    async def _stage_once(self, body: bytes) -> None:
        """Stage one operation; a lost answer is settled by the transaction's count of
        operations (the transport asks before it sends the operation again)."""

        async def staged() -> httpx.Response | None:
            answer = await self._status()
            return answer if int(answer.json()["operations"]) > self._staged else None

        path = f"{_TRANSACTIONS}/{self._transaction}/operations"
        try:
            await self._requester.request(
                "POST", path, content=body, headers=JSON_HEADERS, settle=staged
            )
        except BaseException:
            await self._rollback()
            raise
        self._staged += 1

    async def _status(self) -> httpx.Response:
        return await self._requester.request("GET", f"{_TRANSACTIONS}/{self._transaction}")

    async def finish(self, report: WriteReport) -> None:
        """Commit (or, with rejected rows, roll back and raise `RowsRejectedError`); fill in
        the report's counts."""
        if len(report.rejected):
            await self._rollback()
            report.written = 0
            raise RowsRejectedError(
                f"{len(report.rejected):,} rows break the table's rules, so nothing was "
                "written (atomic=True); the error's report.rejected lists them",
                report=report,
            )
        if self._transaction is None:
            return
        try:
            await self._flush()
            await self._commit()
        except BaseException:
            await self._rollback()
            raise
        report.written = self._rows - self._replaced
        report.replaced = self._replaced
        report.skipped = self._skipped
        report.batches = self._staged

    async def _commit(self) -> None:
        """Commit; a lost answer is settled by the transaction's status (`_committed`), by
        the transport before it sends the commit again and here after its last attempt."""
        self._commit_sent = True
        path = f"{_TRANSACTIONS}/{self._transaction}"
        try:
            await self._requester.request(
                "PATCH", path, json={"commit": True}, settle=self._committed
            )
        except (TransportError, ServerError):
            if await self._committed() is None:
                raise

    async def _committed(self) -> httpx.Response | None:
        """The transaction once its commit is no longer running: None while ``pending``
        (to commit again), a `LoadError` if it ``failed``."""

        async def settled() -> httpx.Response | None:
            answer = await self._status()
            return None if answer.json()["status"] == "committing" else answer

        def still_running() -> LoadError:
            return LoadError(
                f"the commit of transaction {self._transaction} was still running after "
                f"{COMMIT_WAIT:,.0f} s: its rows may yet be written. Read the transaction's "
                "status before loading again"
            )

        answer = await poll_until(
            settled,
            timeout=COMMIT_WAIT,
            delay=_POLL_DELAY,
            max_delay=_POLL_MAX_DELAY,
            timed_out=still_running,
        )
        status = answer.json()["status"]
        if status == "failed":
            raise LoadError(
                f"the commit of transaction {self._transaction} failed on the service (its "
                "answer was lost): nothing of this load was written; run it again"
            )
        return answer if status == "committed" else None

    async def _rollback(self) -> None:
        if self._transaction is None:
            return
        path = f"{_TRANSACTIONS}/{self._transaction}"
        try:
            # On failure the transaction expires by itself; nothing of it was committed.
            with contextlib.suppress(TransportError, ServerError):
                # Once a commit was sent, only a transaction still pending is rolled back.
                if not self._commit_sent or (await self._status()).json()["status"] == "pending":
                    await self._requester.request("PATCH", path, json={"rollback": True})
        finally:
            self._transaction = None
