"""Changes by filter: the rows a query selects, updated or deleted over the bulk routes.

A query whose filter the service applies whole (one request, nothing left for the client,
no `head`) becomes one bulk request — ``PATCH …/rows`` with ``{"data", "queries"}``, or
``DELETE …/rows`` with ``{"queries"}`` — and the service changes every matching row in it.
Any other query is read first (the rows' IDs and ``$updatedAt``), then changed by ID, 100
at a time. The service sends realtime events for the first 100 rows of each bulk change
only.

`ChangeReport.changed` counts only the rows whose values changed (the service leaves a row
that already holds the values as it is, ``$updatedAt`` included), found the cheapest exact
way:

* changed by ID: the service's answer lists every row of the request (at most 100), and a
  row counts when its ``$updatedAt`` differs from the one read before — no extra request;
* in one bulk request, with plain values: before it, the rows that hold every value already
  are counted (the query and ``column == value`` for each, compared exactly as filters
  compare; one count request, its rows read only where the client must compare text), and
  subtracted from the service's total;
* in one bulk request, with operators that always change a value (``toggle``, ``now``,
  ``append``, an unbounded ``increment`` ...): nothing to count, every row changed;
* any other update (a bounded or multiplying operator, ``remove``, an array value) is
  changed by ID, as above, to know which rows changed.

>>> report = await people.where(col("age") < 0).delete(dry_run=True)   # doctest: +SKIP
>>> report.matched, report.changed
(3, 0)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from ..._core._progress import progress_bar
from ..._core._queries import equal_query
from ..._exceptions import unknown_column
from ..._expr import Expr, col
from ._operators import UpdateOperator, update_data

if TYPE_CHECKING:
    from ..read import QuerySpec, TableRead

Action = Literal["update", "delete"]
_IDS_PER_REQUEST = 100
_METHODS = {"update": "PATCH", "delete": "DELETE"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


@dataclass(frozen=True)
class ChangeReport:
    """What `update` or `delete` did: `matched` rows selected by the query, `changed` rows
    whose values were updated, or deleted (a row that held the values already is not
    changed; 0 with `dry_run`), `requests` sent, `seconds` taken."""

    matched: int
    changed: int
    requests: int
    seconds: float
    dry_run: bool = False

    def summary(self) -> str:
        """One line, e.g. ``matched 12 · changed 12 · 1 request · 0.1 s``."""
        word = "request" if self.requests == 1 else "requests"
        prefix = "dry run: " if self.dry_run else ""
        return (
            f"{prefix}matched {self.matched:,} · changed {self.changed:,} · "
            f"{self.requests} {word} · {self.seconds:.1f} s"
        )


async def change_rows(
    read: TableRead,
    action: Action,
    changes: Mapping[str, Any] | None,
    *,
    dry_run: bool,
    progress: bool | None = None,
) -> ChangeReport:
    """Update (with `changes`, the ``set=`` of `update`) or delete the rows `read` selects
    (see the module docstring)."""
    started = time.perf_counter()
    data = None if changes is None else update_data(dict(changes))
    if data is not None:
        check_set_columns(read, data)
    if dry_run:
        matched = await read.count()
        return ChangeReport(matched, 0, 0, time.perf_counter() - started, dry_run=True)
    plan = read.plan
    if not plan.filters or plan.head == 0:
        return ChangeReport(0, 0, 0, time.perf_counter() - started)
    verb = "updating" if action == "update" else "deleting"
    bar = progress_bar(
        total=None, unit="rows", desc=f"{verb} {read.plan.location}", enabled=progress
    )
    with bar:
        if plan.every_row_kept and plan.head is None:
            try:
                holding = await _holding_read(read, changes)
            except _ById:
                pass
            else:
                unchanged = 0 if holding is None else await holding.count()
                total = (await _bulk(read, action, data, list(plan.filters[0])))["total"]
                bar.update(total)
                return ChangeReport(total, total - unchanged, 1, time.perf_counter() - started)
        versions = await _selected_versions(read)
        bar.total = len(versions)
        changed = requests = 0
        for queries in by_id(list(versions), plan.member):
            answer = await _bulk(read, action, data, queries)
            changed += answer["total"] if data is None else _changed(answer, versions)
            requests += 1
            bar.update(min(_IDS_PER_REQUEST, len(versions) - bar.n))
    return ChangeReport(len(versions), changed, requests, time.perf_counter() - started)


def check_set_columns(read: TableRead, data: Mapping[str, Any]) -> None:
    """A `FilterError` listing the table's columns, as a filter's, for a column of
    ``set=`` the table does not have (not checked when its columns cannot be read)."""
    fetched = read.plan.fetched
    if fetched is None:
        return
    known = [name for name in fetched.names if not name.startswith("$")]
    for column in data:
        if not column.startswith("$") and column not in known:
            message = f"set= names the column {column!r}, which the table does not have"
            raise unknown_column(message, column, known)


async def selected_ids(read: TableRead) -> list[str]:
    """The IDs of the rows `read` selects (only their ``$`` fields are read)."""
    return list(await _selected_versions(read))


async def _selected_versions(read: TableRead) -> dict[str, int]:
    """The ``$updatedAt`` (milliseconds) of each row `read` selects, by ID."""
    versions: dict[str, int] = {}
    async with aclosing(read.ids_only().pages(collect=False)) as batches:
        async for batch in batches:
            ids = (str(row_id) for row_id in batch.column("$id").to_pylist())
            moments = batch.column("$updatedAt").cast(pa.int64()).to_pylist()
            versions.update(zip(ids, (int(moment or 0) for moment in moments), strict=True))
    return versions


def by_id(ids: list[str], member: str) -> list[list[str]]:
    """The queries of bulk changes of the rows `ids`: 100 IDs each."""
    cut = range(0, len(ids), _IDS_PER_REQUEST)
    return [[equal_query("$id", ids[start : start + _IDS_PER_REQUEST], member)] for start in cut]


def _changed(answer: dict[str, Any], versions: Mapping[str, int]) -> int:
    """The rows of a bulk update's `answer` whose ``$updatedAt`` moved."""
    rows = answer.get("rows") or ()
    if len(rows) < int(answer.get("total", 0)):
        return int(answer.get("total", 0))  # a service listing fewer rows: all counted
    moved = (row for row in rows if _moment(row["$updatedAt"]) != versions.get(row["$id"]))
    return sum(1 for _ in moved)


def _moment(text: str) -> int:
    return (datetime.fromisoformat(text) - _EPOCH) // _MILLISECOND


async def _holding_read(read: TableRead, changes: Mapping[str, Any] | None) -> TableRead | None:
    """The read of the rows an update by `changes` leaves as they are (`_holding_rows`), or
    None when there are none; raises `_ById` when no filter can tell them."""
    from ..read import TableRead

    try:
        spec = _holding_rows(read, changes)
        return (
            None if spec is None else await TableRead.make(read.requester, read.plan.location, spec)
        )
    except (TypeError, ValueError):  # a value no filter compares (FilterError is one)
        raise _ById from None


def _holding_rows(read: TableRead, changes: Mapping[str, Any] | None) -> QuerySpec | None:
    """The query of the rows `read` selects that an update by `changes` leaves as they are
    (they hold every plain value already; None when an operator changes every row).
    Raises `_ById` when no filter can tell them."""
    if changes is None or any(
        isinstance(value, UpdateOperator) and _always_changes(value) for value in changes.values()
    ):
        return None
    condition: Expr | None = None
    for column, value in changes.items():
        if isinstance(value, UpdateOperator | list | tuple | dict):
            raise _ById
        holds = col(column).isna() if value is None else col(column) == value
        condition = holds if condition is None else condition & holds
    assert condition is not None
    return read.plan.spec.where(condition)


class _ById(Exception):
    """Which rows an update changes is known only by changing them by ID."""


def _always_changes(operator: UpdateOperator) -> bool:
    """Whether `operator` changes every value it is applied to."""
    method, values = operator.method, operator.values
    if method in ("increment", "decrement"):
        return len(values) == 1 and values[0] != 0
    if method in ("arrayAppend", "arrayPrepend"):
        return bool(values)
    if method == "stringConcat":
        return values[0] != ""
    return method in ("toggle", "dateSetNow")


async def _bulk(
    read: TableRead, action: Action, data: dict[str, Any] | None, queries: list[str]
) -> dict[str, Any]:
    body: dict[str, Any] = {"queries": queries}
    if data is not None:
        body["data"] = data
    answer = await read.requester.request_json(
        _METHODS[action], read.plan.location.rows_path, json=body
    )
    return {"total": int(answer.get("total", 0)), "rows": answer.get("rows") or []}
