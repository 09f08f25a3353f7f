"""One batch of rows to the service: created, with conflicts settled and refused rows split off.

Every bulk write cuts its rows into batches with `cut_requests`: at most the bulk limit of
rows and at most `MAX_REQUEST_BYTES` of JSON each, under the service's body limit (the rows
are encoded there and sent as encoded). `RowSender.send` sends a batch (each row with
its ``$id``) as a bulk create, the one request a batch costs when its IDs are new:

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
  what a row already there gives), and a body over its limit (413). The batch is
  then split in halves, each sent on its own, down to the single rows the service refuses,
  which are returned with its message; the others are written. A row longer than
  `MAX_REQUEST_BYTES` on its own is refused without being sent, its size in the message.
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
from ..._core._adaptive import AUTO, AdaptiveConcurrency, Auto
from ..._core._queries import equal_query, limit_query, select_query
from ..._exceptions import APIError, BadRequestError, ConflictError

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

SERVICE_BODY_LIMIT = 12_000_000
"""The longest request body the service takes: its 12 MB request body limit (service
interface, "Bulk writes"), read as 12,000,000 bytes, the smaller of the two readings; a
longer body is refused with 413. (The local service takes up to 16 MiB.)"""

ENVELOPE_HEADROOM = 64 << 10
"""Bytes of the body limit kept for what a bulk request carries besides its rows' JSON: the
object around them, and headers where the service's proxy counts them."""

MAX_REQUEST_BYTES = SERVICE_BODY_LIMIT - ENVELOPE_HEADROOM
"""The most bytes of rows (the JSON array of them) one bulk request carries."""

MAX_CONCURRENCY = 8
"""Bulk requests in flight at most, for one write."""


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


_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def row_json(row: object) -> bytes:
    """Rows (a row, or a list of them) as the bulk routes take them: compact JSON, UTF-8."""
    return _JSON.encode(row).encode()


class EncodedRows:
    """Rows and their JSON, in the same order: what one bulk request (or a part of it)
    sends. `array` is the JSON array of them all, `texts` each row's (made when asked for)."""

    def __init__(
        self,
        rows: list[dict[str, Any]],
        *,
        array: bytes | None = None,
        texts: list[bytes] | None = None,
    ) -> None:
        self.rows = rows
        self._array = array
        self._texts = texts

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def texts(self) -> list[bytes]:
        """Each row's JSON."""
        if self._texts is None:
            self._texts = [row_json(row) for row in self.rows]
        return self._texts

    @property
    def size(self) -> int:
        """The bytes of the JSON array of these rows."""
        if self._array is not None:
            return len(self._array)
        return sum(len(text) + 1 for text in self.texts) + 1

    def pick(self, places: Sequence[int]) -> EncodedRows:
        """The rows at `places`."""
        texts = self.texts
        return EncodedRows([self.rows[p] for p in places], texts=[texts[p] for p in places])

    def body(self, key: str) -> bytes:
        """The JSON body ``{key: rows}``."""
        array = self._array
        if array is None:
            array = b"[%s]" % b",".join(self.texts)
        return b'{"%s":%s}' % (key.encode(), array)


def cut_requests(
    rows: list[dict[str, Any]], max_rows: int = MAX_ROWS_PER_REQUEST
) -> list[tuple[int, EncodedRows]]:
    """`rows` in bulk requests, each as ``(where it starts in rows, its rows)``: in order, at
    most `max_rows` rows and `MAX_REQUEST_BYTES` each; a row longer than that alone, so that
    it is refused on its own (`RowSender`); no rows, one empty request (`SendLoop` finishes it
    unsent). Each run of `max_rows` rows is encoded at once; only a run over the bytes is
    encoded row by row, to be cut by size."""
    if not rows:
        return [(0, EncodedRows([]))]
    cuts: list[tuple[int, EncodedRows]] = []
    for first in range(0, len(rows), max_rows):
        run = rows[first : first + max_rows]
        array = row_json(run)
        if len(array) <= MAX_REQUEST_BYTES:
            cuts.append((first, EncodedRows(run, array=array)))
        else:
            cuts += [(first + start, part) for start, part in _cut_by_size(run)]
    return cuts


def _cut_by_size(rows: list[dict[str, Any]]) -> list[tuple[int, EncodedRows]]:
    """`rows` in consecutive parts of at most `MAX_REQUEST_BYTES` of JSON (a longer row
    alone), each with where it starts."""
    texts = [row_json(row) for row in rows]
    cuts: list[tuple[int, EncodedRows]] = []
    start, size = 0, 1  # the array's brackets, and a comma or bracket per row
    for end, text in enumerate(texts):
        if end > start and size + len(text) + 1 > MAX_REQUEST_BYTES:
            cuts.append((start, EncodedRows(rows[start:end], texts=texts[start:end])))
            start, size = end, 1
        size += len(text) + 1
    cuts.append((start, EncodedRows(rows[start:], texts=texts[start:])))
    return cuts


class RowSender:
    """Sends batches of rows to one table (see the module docstring). `concurrency` is the
    controller of the write's requests in flight, which hears each request's wait: `units`
    of them, or with ``"auto"`` two at first, up to `MAX_CONCURRENCY` while the service
    keeps up, and no more than 64 MiB of bodies out at once."""

    def __init__(
        self,
        requester: Requester,
        location: TableLocation,
        on_conflict: OnConflict,
        units: int | Auto = AUTO,
    ) -> None:
        self._requester = requester
        self._location = location
        self._on_conflict = check_on_conflict(on_conflict)
        self.concurrency = (
            AdaptiveConcurrency(cap=MAX_CONCURRENCY, budget=64 << 20, start=2)
            if units == AUTO
            else AdaptiveConcurrency.pinned_at(units)
        )

    async def send(self, rows: EncodedRows, *, maybe_written: bool) -> Outcome:
        """Create `rows` (one of `cut_requests`); `maybe_written`: an earlier run of this
        load may have written them."""
        outcome = Outcome()
        with contextlib.suppress(_PartlyRefused):  # the parts' outcomes are in `outcome`
            await self._create(rows, outcome, maybe_written=maybe_written)
        return outcome

    async def _create(
        self, rows: EncodedRows, outcome: Outcome, *, maybe_written: bool, absent: bool = False
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
        self, method: str, rows: EncodedRows, outcome: Outcome, *, absent: bool = True
    ) -> None:
        """Send `rows` in one bulk request; on a refusal (400, 413), in halves, down to the
        rows refused (added to `outcome`, which the caller counts as not written). A row
        too long for any request is refused here, unsent."""
        if len(rows) == 1 and rows.size > MAX_REQUEST_BYTES:
            outcome.refused.append(_refusal(rows, None))
            raise _PartlyRefused
        try:
            await self._request(method, rows)
        except APIError as exc:
            if not _refused_whole(exc, absent=absent):
                raise
            if len(rows) == 1:
                outcome.refused.append(_refusal(rows, exc))
                raise _PartlyRefused from exc
            outcome.retries += 1
            middle = len(rows) // 2
            for places in (range(middle), range(middle, len(rows))):
                outcome.add(await self._part(method, rows, places, absent=absent), places)
            raise _PartlyRefused from exc

    async def _part(
        self, method: str, rows: EncodedRows, places: Sequence[int], *, absent: bool
    ) -> Outcome:
        """The outcome of the rows at `places` of `rows` sent on their own: created
        (``POST``), or upserted (counted as replaced)."""
        part, picked = Outcome(), rows.pick(places)
        with contextlib.suppress(_PartlyRefused):
            if method == "POST":
                await self._create(picked, part, maybe_written=False, absent=absent)
            else:
                await self._bulk(method, picked, part)
                part.replaced += len(picked)
        return part

    async def _request(self, method: str, rows: EncodedRows) -> None:
        location = self._location
        body = rows.body(location.items_key)

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
        self.concurrency.waited(time.perf_counter() - started, nbytes=len(body))

    async def _settle(
        self,
        rows: EncodedRows,
        outcome: Outcome,
        *,
        ours: bool,
        conflict: ConflictError | None = None,
    ) -> None:
        outcome.retries += 1 if ours else 0
        ids = [row[ID] for row in rows.rows]
        there = await existing_ids(self._requester, self._location, ids)
        missing = [place for place, row_id in enumerate(ids) if row_id not in there]
        found = [place for place, row_id in enumerate(ids) if row_id in there]
        if found and self._on_conflict == "fail" and not ours and conflict is not None:
            conflict.hint = (
                f"{len(found)} of the batch's IDs exist already, e.g. {ids[found[0]]!r}. "
                "To replace those rows, write with table.upsert(df) (or table.load(df, "
                'on_conflict="replace")); to keep them, table.load(df, on_conflict="skip").'
            )
            raise conflict
        if missing:
            outcome.add(await self._part("POST", rows, missing, absent=True), missing)
        if not found:
            return
        if self._on_conflict == "replace":
            part = await self._part("PUT", rows, found, absent=True)
            if ours:
                part.written, part.replaced = part.replaced, 0
            outcome.add(part, found)
        elif ours:
            outcome.written += len(found)
        else:
            outcome.skipped += len(found)


class _PartlyRefused(Exception):
    """Rows sent were refused: the single row sent, or some of a batch split in halves (the
    refusals and the halves' outcomes are in the outcome already)."""


async def existing_ids(
    requester: Requester, location: TableLocation, ids: Sequence[str]
) -> set[str]:
    """Which of `ids` (at most 100) are rows of the table."""
    queries = [equal_query(ID, list(ids)), select_query([ID]), limit_query(len(ids))]
    page = await requester.request_json(
        "GET", location.rows_path, params={**queries_param(queries), "total": "false"}
    )
    return {str(row[ID]) for row in page.get(location.items_key) or ()}


def _refused_whole(error: APIError, *, absent: bool) -> bool:
    """Whether `error` refuses a bulk request for some of its rows, so that its halves may
    go through: a bad row (400), a body too large (413), a unique index's value already held
    (409) by a row of a batch whose IDs are `absent` (else it may be the row itself)."""
    if isinstance(error, ConflictError):
        return error.type == UNIQUE_CLASH and absent
    return isinstance(error, BadRequestError) or error.status == 413  # body too large


def _refusal(rows: EncodedRows, error: APIError | None) -> Refusal:
    """The refusal of the one row of `rows`: the service's `error`, or None when the row is
    too long to send. A refusal for its size names the size and the largest value's column."""
    if error is not None and error.status != 413:
        return Refusal(0, error.message, _named_column(error.message))
    row, size = rows.rows[0], len(rows.texts[0])
    column = max(row, key=lambda key: len(row_json({key: row[key]})), default=None)
    said = (
        f"the service refused the row's {size:,} bytes of JSON as too large ({error.message})"
        if error is not None
        else f"the row is {size:,} bytes of JSON, more than one request to the service "
        f"carries ({MAX_REQUEST_BYTES:,})"
    )
    largest = f", its largest value in column {column!r}" if column is not None else ""
    return Refusal(
        0,
        f"{said}{largest}: make it smaller, e.g. keep large content in a bucket's file and its "
        "ID in the row",
        column,
    )


def _named_column(message: str) -> str | None:
    match = _COLUMN_IN_MESSAGE.search(message)
    return match.group(1) if match else None
