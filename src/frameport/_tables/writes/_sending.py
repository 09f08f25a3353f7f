"""One batch of rows to the service: created, with conflicts settled and refused rows split off.

`RowSender.send` sends a batch (at most the bulk limit of rows, each with its ``$id``) as a
bulk create, the one request a batch costs when its IDs are new:

* **Conflicts.** When the service answers 409 (an ID exists), the batch's IDs are looked up
  (one list request) and the rows not there are created; the rows there follow
  ``on_conflict``: ``fail`` raises `ConflictError`, ``skip`` leaves them (counted as
  skipped), ``replace`` sends them as a bulk upsert (counted as replaced).
* **Rows this load may have written already** — after an answer lost on the way (the
  transport's retry finds the IDs there), or in the window of a resumed load between the
  checkpoint's finished prefix and the rows it had sent — are counted as written when they
  are found, not as conflicts (under ``replace`` they are upserted again, which leaves them
  equal to the source). A bulk create is all or nothing, so a batch is either wholly there
  or not at all.
* **Refusals.** The service fails a whole bulk request on one bad row (400, or 409 for a
  value a unique index already holds: the batch's IDs are looked up first, as that is also
  what a row already there gives). The batch is
  then split in halves, each sent on its own, down to the single rows the service refuses,
  which are returned with its message; the others are written.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx

from ..._core import queries_param
from ..._core._adaptive import AdaptiveConcurrency
from ..._core._queries import equal_query, limit_query, select_query
from ..._exceptions import BadRequestError, ConflictError

if TYPE_CHECKING:
    from ..._core import Requester
    from .._location import TableLocation

OnConflict = Literal["fail", "skip", "replace"]
ON_CONFLICT: tuple[OnConflict, ...] = ("fail", "skip", "replace")


def check_on_conflict(on_conflict: str) -> OnConflict:
    """`on_conflict`, or ValueError naming the choices."""
    if on_conflict not in ON_CONFLICT:
        raise ValueError(
            f"on_conflict must be one of {', '.join(map(repr, ON_CONFLICT))} (got {on_conflict!r})"
        )
    return on_conflict


MAX_ROWS_PER_REQUEST = 100
"""The service's limit of rows in one bulk request (plans may raise it: `batch_size`)."""

MAX_CONCURRENCY = 8
"""Bulk requests in flight at most, for one write."""


def write_concurrency() -> AdaptiveConcurrency:
    """The controller of a write's requests in flight: two at first, up to `MAX_CONCURRENCY`
    while the service keeps up, and no more than 64 MiB of bodies out at once."""
    return AdaptiveConcurrency(cap=MAX_CONCURRENCY, budget=64 << 20, start=2)


ID = "$id"
ROW_EXISTS = frozenset({"row_already_exists", "document_already_exists"})
UNIQUE_CLASH = "row_unique_constraint_violation"
JSON_HEADERS = {"Content-Type": "application/json"}
_COLUMN_IN_MESSAGE = re.compile(r'(?:[Aa]ttribute|[Cc]olumn) "([^"]+)"')


class _PossiblyWritten(Exception):
    """A retried create found IDs there after an attempt whose answer was lost."""


@dataclass
class Refusal:
    """A row the service refused: its place in the batch, the message and the column it
    names (when it names one)."""

    index: int
    message: str
    column: str | None


@dataclass
class Outcome:
    """What sending one batch did."""

    written: int = 0
    skipped: int = 0
    replaced: int = 0
    retries: int = 0
    refused: list[Refusal] = field(default_factory=list)

    def add(self, other: Outcome, places: Sequence[int]) -> None:
        """Add the outcome of a part of the batch, whose rows are at `places` in it."""
        self.written += other.written
        self.skipped += other.skipped
        self.replaced += other.replaced
        self.retries += other.retries
        self.refused += [Refusal(places[r.index], r.message, r.column) for r in other.refused]


def encoded(rows: Sequence[dict[str, Any]], key: str) -> bytes:
    """The JSON body ``{key: rows}``."""
    return json.dumps({key: rows}, separators=(",", ":"), ensure_ascii=False).encode()


class RowSender:
    """Sends batches of rows to one table (see the module docstring); reports each request's
    wait to `concurrency`."""

    def __init__(
        self,
        requester: Requester,
        location: TableLocation,
        on_conflict: OnConflict,
        concurrency: AdaptiveConcurrency,
    ) -> None:
        self._requester = requester
        self._location = location
        self._on_conflict = on_conflict
        self._concurrency = concurrency

    async def send(self, rows: list[dict[str, Any]], *, maybe_written: bool) -> Outcome:
        """Create `rows`; `maybe_written`: an earlier run of this load may have written them."""
        outcome = Outcome()
        with contextlib.suppress(_Refused, _Split):  # the parts' outcomes are in `outcome`
            await self._create(rows, outcome, maybe_written=maybe_written)
        return outcome

    async def _create(
        self,
        rows: list[dict[str, Any]],
        outcome: Outcome,
        *,
        maybe_written: bool,
        absent: bool = False,
    ) -> None:
        """Create `rows`; `absent`: their IDs were looked up and are not there, so a clash
        with a unique index refuses a row (before, it may be the row itself, there)."""
        try:
            await self._bulk("POST", rows, outcome, absent=absent)
        except _PossiblyWritten:
            await self._settle(rows, outcome, ours=True)
        except ConflictError as exc:
            if exc.type not in ROW_EXISTS and exc.type != UNIQUE_CLASH:
                raise
            await self._settle(rows, outcome, ours=maybe_written, conflict=exc)
        else:
            outcome.written += len(rows)

    async def _bulk(
        self, method: str, rows: list[dict[str, Any]], outcome: Outcome, *, absent: bool = True
    ) -> None:
        """Send `rows` in one bulk request; on a refusal (400), in halves, down to the rows
        refused (added to `outcome`, which the caller counts as not written)."""
        try:
            await self._request(method, rows)
        except (BadRequestError, ConflictError) as exc:
            if isinstance(exc, ConflictError) and (exc.type != UNIQUE_CLASH or not absent):
                raise
            if len(rows) == 1:
                outcome.refused.append(Refusal(0, exc.message, _named_column(exc.message)))
                raise _Refused from exc
            outcome.retries += 1
            middle = len(rows) // 2
            for places in (range(middle), range(middle, len(rows))):
                half = rows[places.start : places.stop]
                part = Outcome()
                try:
                    if method == "POST":
                        await self._create(half, part, maybe_written=False, absent=absent)
                    else:
                        await self._bulk(method, half, part)
                        part.replaced += len(half)
                except (_Refused, _Split):
                    pass
                outcome.add(part, places)
            raise _Split from exc

    async def _request(self, method: str, rows: list[dict[str, Any]]) -> None:
        location = self._location
        body = encoded(rows, location.items_key)

        async def lost_answer() -> httpx.Response:
            raise _PossiblyWritten

        started = time.perf_counter()
        await self._requester.request(
            method,
            location.rows_path,
            content=body,
            headers=JSON_HEADERS,
            idempotent=True,
            read_back=lost_answer if method == "POST" else None,
        )
        self._concurrency.waited(time.perf_counter() - started, nbytes=len(body))

    async def _settle(
        self,
        rows: list[dict[str, Any]],
        outcome: Outcome,
        *,
        ours: bool,
        conflict: ConflictError | None = None,
    ) -> None:
        outcome.retries += 1 if ours else 0
        there = await existing_ids(self._requester, self._location, [row[ID] for row in rows])
        missing = [place for place, row in enumerate(rows) if row[ID] not in there]
        found = [place for place, row in enumerate(rows) if row[ID] in there]
        if found and self._on_conflict == "fail" and not ours and conflict is not None:
            conflict.hint = (
                f"{len(found)} of the batch's IDs exist already, e.g. {rows[found[0]][ID]!r}. "
                "To replace those rows, write with table.upsert(df) (or table.load(df, "
                'on_conflict="replace")); to keep them, table.load(df, on_conflict="skip").'
            )
            raise conflict
        if missing:
            part = Outcome()
            with contextlib.suppress(_Refused, _Split):
                await self._create([rows[p] for p in missing], part, maybe_written=False,
                                   absent=True)  # fmt: skip
            outcome.add(part, missing)
        if not found:
            return
        if self._on_conflict == "replace":
            part = Outcome()
            with contextlib.suppress(_Refused, _Split):
                await self._bulk("PUT", [rows[p] for p in found], part)
                part.replaced += len(found)
            if ours:
                part.written, part.replaced = part.replaced, 0
            outcome.add(part, found)
        elif ours:
            outcome.written += len(found)
        else:
            outcome.skipped += len(found)


class _Refused(Exception):
    """The single row sent was refused (its refusal is in the outcome)."""


class _Split(Exception):
    """The batch was split; its halves' outcomes are in the outcome already."""


async def existing_ids(
    requester: Requester, location: TableLocation, ids: Sequence[str]
) -> set[str]:
    """Which of `ids` (at most 100) are rows of the table."""
    queries = [equal_query(ID, list(ids)), select_query([ID]), limit_query(len(ids))]
    page = await requester.request_json(
        "GET", location.rows_path, params={**queries_param(queries), "total": "false"}
    )
    return {str(row[ID]) for row in page.get(location.items_key) or ()}


def _named_column(message: str) -> str | None:
    match = _COLUMN_IN_MESSAGE.search(message)
    return match.group(1) if match else None
