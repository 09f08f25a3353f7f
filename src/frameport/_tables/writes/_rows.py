"""Writing DataFrames' rows to the service in bulk (creating tables: `_admin`).

`write_rows` sends a DataFrame's rows in bulk requests of at most 100 rows, several in flight
at once:

* Every row carries its ``$id``: the frame's ``$id`` column, or (where that is missing or
  null) an ID made on the client with `ID.unique()`. A bulk create is therefore safe to
  retry: it is marked idempotent, and when a retry finds its rows already there (409
  ``row_already_exists`` after an attempt whose answer was lost) the batch is sent again as
  a bulk upsert of the same rows, which completes it without duplicates. A 409 on a first
  attempt is a real conflict and is raised.
* NaN, None, ``pd.NA`` and ``NaT`` are written as null; tz-aware datetimes are converted to
  UTC and naive datetimes are taken as UTC (`frame_to_rows`). The index is not written.
* The service's own fields in a frame that was read back (``$sequence``, ``$createdAt``,
  ``$updatedAt``, ``$tableId``, ``$databaseId``, ``$collectionId``) are not written;
  ``$id`` and ``$permissions`` are.
* Writes are not atomic: when a batch fails for good, the batches written before stay
  written; writing the same frame again with `upsert` completes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Iterable
from typing import TYPE_CHECKING, Any

import httpx
import pandas as pd

from ..._core._ids import ID
from ..._core._progress import progress_bar
from ..._exceptions import ConflictError
from ..._schema import SERVICE_FIELDS, STR_DTYPE, check_column_keys, frame_to_rows

if TYPE_CHECKING:
    from ..._core import Requester
    from .._location import TableLocation

MAX_ROWS_PER_REQUEST = 100
"""The service's limit of rows in one bulk request."""

DEFAULT_CONCURRENCY = 4
"""Bulk requests in flight at once."""

_CONVERT_ROWS = 10_000  # rows turned into JSON values at a time, so memory stays flat
_ID = "$id"
_SERVER_FIELDS = SERVICE_FIELDS - {_ID, "$permissions"}  # not written: the service sets them
_ROW_EXISTS = frozenset({"row_already_exists", "document_already_exists"})
_UPSERT_HINT = (
    "To update rows that already exist, write the frame with table.upsert(df); to add them "
    "as new rows, drop its $id column."
)


# ---------------------------------------------------------------------------------------------
# Rows


async def write_rows(
    requester: Requester,
    location: TableLocation,
    frame: pd.DataFrame,
    *,
    upsert: bool,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool | None = None,
) -> list[str]:
    """Write the rows of `frame` in bulk requests; return their IDs in the frame's order.

    Inserting (``upsert=False``) fails with `ConflictError` on an ID that already exists
    (its hint points to upsert); upserting replaces such rows. A column name that cannot be
    a column key raises ValueError before any request.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"write a pandas DataFrame, not {type(frame).__name__}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number >= 1 (got {concurrency!r})")
    check_column_keys(frame.columns)
    frame = _with_ids(frame.drop(columns=[c for c in _SERVER_FIELDS if c in frame.columns]))
    verb = "upserting" if upsert else "inserting"
    bar = progress_bar(total=len(frame), unit="rows", desc=f"{verb} {location}", enabled=progress)
    with bar:

        async def send(rows: list[dict[str, Any]]) -> None:
            await send_rows(requester, location, rows, upsert=upsert)
            bar.update(len(rows))

        await run_bounded((send(rows) for rows in _row_batches(frame)), concurrency)
    return [str(row_id) for row_id in frame[_ID]]


def _with_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with an ``$id`` for every row: its own, or one made with `ID.unique()` where the
    column is missing or null."""
    given = frame[_ID] if _ID in frame.columns else pd.Series(pd.NA, index=frame.index)
    missing = given.isna().to_numpy()
    ids = [
        ID.unique() if absent else str(row_id)
        for row_id, absent in zip(given, missing, strict=True)
    ]
    column = pd.Series(ids, index=frame.index, dtype=STR_DTYPE)
    duplicated = column[column.duplicated()]
    if len(duplicated):
        raise ValueError(f"the $id column repeats IDs, e.g. {duplicated.iloc[0]!r}")
    return frame.assign(**{_ID: column})


def _row_batches(frame: pd.DataFrame) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(frame), _CONVERT_ROWS):
        rows = frame_to_rows(frame.iloc[start : start + _CONVERT_ROWS])
        for first in range(0, len(rows), MAX_ROWS_PER_REQUEST):
            yield rows[first : first + MAX_ROWS_PER_REQUEST]


async def send_rows(
    requester: Requester, location: TableLocation, rows: list[dict[str, Any]], *, upsert: bool
) -> None:
    """One bulk create (or upsert) of `rows`, each with its ``$id``; a create retried after
    a lost answer completes as an upsert of the same rows."""
    body = {location.items_key: rows}

    async def upsert_rows() -> httpx.Response:
        return await requester.request("PUT", location.rows_path, json=body)

    if upsert:
        await upsert_rows()
        return
    try:
        # A retry that finds the rows already created completes the batch as an upsert.
        await requester.request(
            "POST", location.rows_path, json=body, idempotent=True, read_back=upsert_rows
        )
    except ConflictError as exc:
        if exc.type in _ROW_EXISTS:
            exc.hint = _joined(exc.hint, _UPSERT_HINT)
        raise


def _joined(hint: str | None, advice: str) -> str:
    return advice if hint is None else f"{hint} {advice}"


async def run_bounded(
    jobs: Iterable[Awaitable[None]] | AsyncIterator[Awaitable[None]], concurrency: int
) -> None:
    """Run `jobs` (made one at a time, only once there is room for them) with at most
    `concurrency` at once; the first failure cancels the rest and is raised as it is."""
    pending: set[asyncio.Task[None]] = set()

    async def settle(until: int) -> None:
        nonlocal pending
        while len(pending) > until:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()

    remaining = jobs if isinstance(jobs, AsyncIterator) else _one_by_one(jobs)
    try:
        while True:
            await settle(concurrency - 1)
            job = await anext(remaining, None)
            if job is None:
                break
            pending.add(asyncio.ensure_future(job))
        await settle(0)
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if isinstance(remaining, AsyncGenerator):
            await remaining.aclose()


async def _one_by_one(jobs: Iterable[Awaitable[None]]) -> AsyncGenerator[Awaitable[None]]:
    for job in jobs:
        yield job
