"""Writing a stream of Arrow batches into a table, with a rule for rows whose ``$id`` is
already there (`on_conflict`), counting what happened to every row.

Each batch keeps the rows' ``$id``, ``$permissions``, ``$createdAt`` and ``$updatedAt`` (the
service keeps the two times from API keys); ``$sequence`` and the table's place are the
service's own. Rows go in bulk creates of at most 100, several at once. A create that finds
some of its IDs taken asks which ones, writes the others, and applies `on_conflict` to the
taken ones: ``"skip"`` leaves them as they are, ``"overwrite"`` replaces them (bulk upsert),
``"fail"`` raises `ConflictError` naming them. A bulk create the service refuses for what a
row holds (a bad value, a clash with a unique index) is sent again row by row, so that each
refused row is named (`WriteCounts.rejected`) and the others are written.

>>> counts = await write_batches(requester, location, batches, on_conflict="skip")
... # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

import pyarrow as pa

from ..._core._queries import equal_query, limit_query, select_query
from ..._core._transport import queries_param
from ..._exceptions import BadRequestError, ConflictError
from ..._schema import SERVICE_FIELDS, batch_to_rows
from ._rows import DEFAULT_CONCURRENCY, MAX_ROWS_PER_REQUEST, run_bounded, send_rows

if TYPE_CHECKING:
    from ..._core import Requester
    from .._location import TableLocation

OnConflict = Literal["fail", "skip", "overwrite"]
ON_CONFLICT: tuple[str, ...] = get_args(OnConflict)

_NOT_WRITTEN = SERVICE_FIELDS - {"$id", "$permissions", "$createdAt", "$updatedAt"}
_ROW_EXISTS = frozenset({"row_already_exists", "document_already_exists"})
_UNIQUE_CLASH = "row_unique_constraint_violation"


@dataclass
class WriteCounts:
    """What a write did with each row: `written` new, `overwritten`, `skipped` (taken IDs
    left as they were), and `rejected`: ``($id, the service's reason)`` of each row refused."""

    written: int = 0
    overwritten: int = 0
    skipped: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)

    def add(self, other: WriteCounts) -> None:
        self.written += other.written
        self.overwritten += other.overwritten
        self.skipped += other.skipped
        self.rejected.extend(other.rejected)


def check_on_conflict(on_conflict: str) -> OnConflict:
    """`on_conflict`, or ValueError naming the choices."""
    if on_conflict not in ON_CONFLICT:
        raise ValueError(
            f"on_conflict must be one of {', '.join(map(repr, ON_CONFLICT))} (got {on_conflict!r})"
        )
    return on_conflict  # type: ignore[return-value]


async def write_batches(
    requester: Requester,
    location: TableLocation,
    batches: AsyncIterable[pa.RecordBatch],
    *,
    on_conflict: OnConflict,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_batch: Callable[[int], None] | None = None,
) -> WriteCounts:
    """Write every row of `batches` (each with an ``$id`` column) into the table at
    `location`; see the module docstring. The bulk requests of one batch and the next follow
    each other without a pause, `concurrency` at a time; `on_batch(index)` is called once a
    batch and every batch before it are completely written (a resumed write starts after
    the last one it was told of)."""
    check_on_conflict(on_conflict)
    counts = WriteCounts()
    left: list[int] = []  # bulk requests still unwritten, per batch
    sealed: list[bool] = []  # whether each batch's requests are all made
    told = 0  # batches reported to on_batch

    def finished(index: int) -> None:
        nonlocal told
        left[index] -= 1
        while told < len(left) and left[told] == 0 and sealed[told]:
            if on_batch is not None:
                on_batch(told)
            told += 1

    async def write(index: int, rows: list[dict[str, Any]]) -> None:
        await _write_chunk(requester, location, rows, on_conflict, counts)
        finished(index)

    async def jobs() -> AsyncIterator[Awaitable[None]]:
        index = 0
        async for batch in batches:
            kept = batch.drop_columns([name for name in batch.schema.names if name in _NOT_WRITTEN])
            rows = batch_to_rows(kept)
            left.append(0)
            sealed.append(False)
            for first in range(0, len(rows), MAX_ROWS_PER_REQUEST):
                left[index] += 1
                yield write(index, rows[first : first + MAX_ROWS_PER_REQUEST])
            sealed[index] = True
            left[index] += 1
            finished(index)  # an empty batch is written at once
            index += 1

    await run_bounded(jobs(), concurrency)
    return counts


async def _write_chunk(
    requester: Requester,
    location: TableLocation,
    rows: list[dict[str, Any]],
    on_conflict: OnConflict,
    counts: WriteCounts,
) -> None:
    try:
        await send_rows(requester, location, rows, upsert=False)
        counts.written += len(rows)
        return
    except (BadRequestError, ConflictError) as exc:
        if not (_refused(exc) or exc.type in _ROW_EXISTS):
            raise
    taken = await existing_ids(requester, location, [str(row["$id"]) for row in rows])
    fresh = [row for row in rows if row["$id"] not in taken]
    present = [row for row in rows if row["$id"] in taken]
    if present and on_conflict == "fail":
        raise ConflictError(
            f"{len(present)} row(s) of {location} already exist, e.g. {present[0]['$id']!r}; "
            'pass on_conflict="skip" to keep them or "overwrite" to replace them.',
            status=409,
            type="row_already_exists",
            method="POST",
            url=location.rows_path,
        )
    if fresh:
        await _create(requester, location, fresh, counts)
    if on_conflict == "skip":
        counts.skipped += len(present)
    elif present:
        await send_rows(requester, location, present, upsert=True)
        counts.overwritten += len(present)


async def _create(
    requester: Requester, location: TableLocation, rows: list[dict[str, Any]], counts: WriteCounts
) -> None:
    """Create `rows`; a bulk create refused as bad is sent row by row, naming each refusal."""
    try:
        await send_rows(requester, location, rows, upsert=False)
        counts.written += len(rows)
        return
    except (BadRequestError, ConflictError) as exc:
        if not _refused(exc):
            raise
        if len(rows) == 1:
            counts.rejected.append((str(rows[0]["$id"]), str(exc)))
            return
    for row in rows:
        try:
            await send_rows(requester, location, [row], upsert=False)
            counts.written += 1
        except (BadRequestError, ConflictError) as exc:
            if not _refused(exc):
                raise
            counts.rejected.append((str(row["$id"]), str(exc)))


def _refused(error: BadRequestError | ConflictError) -> bool:
    """Whether `error` refuses a row for what it holds (bad values, a unique index's clash)."""
    return isinstance(error, BadRequestError) or error.type == _UNIQUE_CLASH


async def existing_ids(requester: Requester, location: TableLocation, ids: list[str]) -> set[str]:
    """Which of `ids` (at most 100) are rows of the table at `location`."""
    member = requester.query_member_for(location.rows_path)
    queries = [
        equal_query("$id", ids, member),
        select_query(["$id"], member),
        limit_query(len(ids)),
    ]
    params = {**queries_param(queries), "total": "false"}
    answer = await requester.request_json("GET", location.rows_path, params=params)
    return {str(item["$id"]) for item in answer.get(location.items_key, [])}
