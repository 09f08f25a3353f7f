"""One of the service's transactions as frameport uses it: made when its first operation is
staged, operations staged one request at a time, then committed or rolled back. An atomic
load (`_atomic.AtomicLoad`) and a person's transaction (`Client.transaction`) both stage
through `StagedTransaction`.

* **Limits first.** The service holds at most `MAX_OPERATIONS` operations per transaction
  (a bulk operation counts once) and drops a transaction `ttl` seconds after it was made.
  Both are checked before a request goes out (`check_room`, and the time since the
  transaction was made); the service's own refusals (``transaction_limit_exceeded``,
  ``transaction_expired``) become the same `TransactionError`, naming the limit.
* **Lost answers.** Staging is not idempotent, so the transport retries it with a probe
  (``settle``) of the transaction's ``operations`` count, which says whether the operation
  was staged; a lost commit answer is settled by the transaction's status, waiting while it
  is ``committing``: ``committed`` is a success. Only a ``pending`` transaction is ever
  rolled back; one that cannot be reached expires by its time to live.
* **Closed once.** After a commit or a rollback nothing more is staged into it.
* **Bulk for keys, rows for people.** The service takes bulk operations in a transaction
  only from API keys (a signed-in user gets 401 ``user_unauthorized``), so a client that
  signs in with a session or a JWT stages each row as an operation of its own: ``create``,
  ``upsert``, or ``update`` and ``delete`` of the rows chosen by ID (update operators travel
  in the update's data). `StagedTransaction.row_by_row` is that choice, made once from the
  client's credentials; `writes` and `changes` encode the operations by it, each counting
  against `MAX_OPERATIONS`. Rows created without ``$permissions`` get none: the service
  stores a staged create's data as sent, without the creator's default permissions.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import httpx

from ..._core._polling import poll_until
from ..._exceptions import APIError, ServerError, TransactionError, TransportError
from ._changes import by_id
from ._sending import JSON_HEADERS, row_json

if TYPE_CHECKING:
    from ..._core import Requester
    from .._location import TableLocation

MAX_OPERATIONS = 100
"""Operations one transaction holds (bulk operations count once)."""

RowAction = Literal["create", "upsert", "update", "delete"]
_BULK: dict[RowAction, str] = {
    "create": "bulkCreate",
    "upsert": "bulkUpsert",
    "update": "bulkUpdate",
    "delete": "bulkDelete",
}

MIN_TTL, MAX_TTL, DEFAULT_TTL = 60, 3600, 300
"""The time to live the service allows a transaction (seconds), and its default."""

COMMIT_WAIT = 3600.0
"""Seconds to wait for the outcome of a commit whose answer was lost (still ``committing``)."""
_POLL_DELAY, _POLL_MAX_DELAY = 0.2, 5.0
_TRANSACTIONS = "/tablesdb/transactions"
_SPLIT = (
    "split the writes over several transactions (one `with client.transaction()` block "
    "each), or write the largest part outside one"
)


def check_ttl(ttl: object) -> int:
    """`ttl` if the service allows it, else a `TransactionError` naming the range."""
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not MIN_TTL <= ttl <= MAX_TTL:
        raise TransactionError(
            f"ttl= is the transaction's time to live, a whole number of seconds from "
            f"{MIN_TTL} to {MAX_TTL} (got {ttl!r}); for writes that take longer, {_SPLIT}",
            limit="ttl",
        )
    return ttl


def encode_operation(
    location: TableLocation, action: str, data: bytes | None, row_id: str | None = None
) -> bytes:
    """The JSON of one operation: `action` on the table at `location` (on its row `row_id`
    for a single-row action), with `data` (JSON; None for a delete)."""
    head: dict[str, str] = {
        "action": action,
        "databaseId": location.database_id,
        location.id_param: location.table_id,
    }
    if row_id is not None:
        head["documentId" if location.legacy else "rowId"] = row_id
    text = json.dumps(head).encode()
    return text if data is None else text[:-1] + b',"data":' + data + b"}"


class StagedTransaction:
    """One transaction of the service (see the module docstring)."""

    def __init__(self, requester: Requester, ttl: int = DEFAULT_TTL) -> None:
        self._requester = requester
        self.ttl = check_ttl(ttl)
        self.id: str | None = None
        self.operations = 0
        self._made = 0.0
        self._closed: str | None = None  # why nothing more may be staged
        self._commit_sent = False
        self._lock = asyncio.Lock()
        self.row_by_row = requester.credentials.method != "key"
        """Whether each row is an operation of its own (see the module docstring)."""

    @property
    def room(self) -> int:
        """Operations the transaction can still take."""
        return MAX_OPERATIONS - self.operations

    def check_open(self) -> None:
        """A `TransactionError` once the transaction was committed or rolled back."""
        if self._closed is not None:
            raise TransactionError(
                f"this transaction was {self._closed}: nothing more can be staged in it; "
                "open another with client.transaction()"
            )

    @property
    def counting(self) -> str:
        """How writes count against the transaction's operations, said in a refusal."""
        if self.row_by_row:
            return (
                "each row is one: the service takes bulk writes in a transaction only from "
                "an API key, and this client is signed in as a user"
            )
        return "a bulk write counts once"

    def check_room(self, needed: int, what: str) -> None:
        """A `TransactionError` if `what` (`needed` operations) does not fit any more."""
        if needed > self.room:
            raise TransactionError(
                f"a transaction holds at most {MAX_OPERATIONS} operations ({self.counting}); "
                f"{self.operations} are staged and {what} needs {needed:,} more, so it was "
                f"not sent: {_SPLIT}",
                limit="operations",
            )

    def writes(
        self, location: TableLocation, action: RowAction, rows: Sequence[tuple[str, bytes]]
    ) -> list[bytes]:
        """The operations that `action` (``create`` or ``upsert``) the rows given as (ID,
        JSON): one bulk operation, or one a row."""
        if self.row_by_row:
            return [encode_operation(location, action, text, row_id) for row_id, text in rows]
        array = b"[" + b",".join(text for _, text in rows) + b"]"
        return [encode_operation(location, _BULK[action], array)]

    def changes(
        self,
        location: TableLocation,
        action: RowAction,
        ids: Sequence[str],
        member: str,
        data: dict[str, Any] | None,
    ) -> list[bytes]:
        """The operations that `action` (``update`` with `data`, or ``delete``) the rows
        `ids`: a bulk operation per 100 of them, or one a row; `member` is the service's
        query member name."""
        given = None if data is None else row_json(data)
        if self.row_by_row:
            return [encode_operation(location, action, given, row_id) for row_id in ids]
        bulk = _BULK[action]
        changed = b"" if given is None else b',"data":' + given
        return [
            encode_operation(location, bulk, b'{"queries":' + row_json(queries) + changed + b"}")
            for queries in by_id(list(ids), member)
        ]

    async def stage(self, operation: bytes) -> None:
        """Stage one operation (`encode_operation`), making the transaction first."""
        async with self._lock:
            self.check_open()
            self.check_room(1, "this write")
            if self.id is None:
                answer = await self._requester.request_json(
                    "POST", _TRANSACTIONS, json={"ttl": self.ttl}, idempotent=True
                )
                self.id, self._made = str(answer["$id"]), time.monotonic()
            elif time.monotonic() - self._made >= self.ttl:
                raise self._expired()
            staged = self.operations

            async def settle() -> httpx.Response | None:
                answer = await self._status()
                return answer if int(answer.json()["operations"]) > staged else None

            try:
                await self._requester.request(
                    "POST",
                    f"{_TRANSACTIONS}/{self.id}/operations",
                    content=b'{"operations":[' + operation + b"]}",
                    headers=JSON_HEADERS,
                    settle=settle,
                )
            except APIError as exc:
                raise self._refusal(exc) from exc
            self.operations += 1

    async def commit(self) -> None:
        """Commit what was staged; a lost answer is settled by the transaction's status
        (`_committed`), by the transport before it sends the commit again and here after
        its last attempt."""
        async with self._lock:
            self.check_open()
            if self.id is None:
                self._closed = "committed"
                return
            self._commit_sent = True
            try:
                await self._requester.request(
                    "PATCH",
                    f"{_TRANSACTIONS}/{self.id}",
                    json={"commit": True},
                    settle=self._committed,
                )
            except (TransportError, ServerError):
                if await self._committed() is None:
                    raise
            except APIError as exc:
                raise self._refusal(exc) from exc
            self._closed = "committed"

    async def rollback(self) -> None:
        """Roll back what was staged (a transaction that cannot be reached expires by its
        time to live; nothing of it was committed)."""
        if self._closed is not None:
            return
        self._closed = "rolled back"
        if self.id is None:
            return
        # Once a commit was sent, only a transaction still pending is rolled back.
        with contextlib.suppress(TransportError, APIError):
            if not self._commit_sent or (await self._status()).json()["status"] == "pending":
                await self._requester.request(
                    "PATCH", f"{_TRANSACTIONS}/{self.id}", json={"rollback": True}
                )

    async def _status(self) -> httpx.Response:
        return await self._requester.request("GET", f"{_TRANSACTIONS}/{self.id}")

    async def _committed(self) -> httpx.Response | None:
        """The transaction once its commit is no longer running: None while ``pending``
        (to commit again), a `TransactionError` if it ``failed``."""

        async def settled() -> httpx.Response | None:
            answer = await self._status()
            return None if answer.json()["status"] == "committing" else answer

        def still_running() -> TransactionError:
            return TransactionError(
                f"the commit of transaction {self.id} was still running after "
                f"{COMMIT_WAIT:,.0f} s: its writes may yet be applied. Read the "
                "transaction's status before writing them again"
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
            self._closed = "rolled back"
            raise TransactionError(
                f"the commit of transaction {self.id} failed on the service (its answer was "
                "lost): nothing of it was written; run it again"
            )
        return answer if status == "committed" else None

    def _refusal(self, error: APIError) -> Exception:
        """The service's refusal of a limit as the `TransactionError` naming it."""
        if error.type == "transaction_expired":
            return self._expired()
        if error.type == "transaction_limit_exceeded":
            return TransactionError(
                f"the service refused a write ({error.message}), so it was not staged: {_SPLIT}",
                limit="operations",
            )
        return error

    def _expired(self) -> TransactionError:
        return TransactionError(
            f"the transaction's time to live, ttl={self.ttl} s, has passed (the service drops "
            "a transaction it has not committed by then), so nothing of it is written: give "
            f"a longer ttl= (at most {MAX_TTL} s), or {_SPLIT}",
            limit="ttl",
        )
