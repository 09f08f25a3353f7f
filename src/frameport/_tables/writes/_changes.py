"""Changes by filter: the rows a query selects, updated or deleted over the bulk routes.

A query whose filter the service applies whole (one request, nothing left for the client,
no `head`) becomes one bulk request — ``PATCH …/rows`` with ``{"data", "queries"}``, or
``DELETE …/rows`` with ``{"queries"}`` — and the service changes every matching row in it.
Any other query is read first (only the rows' IDs), then changed by ID, 100 at a time. The
service sends realtime events for the first 100 rows of each bulk change only.

>>> report = await people.where(col("age") < 0).delete(dry_run=True)   # doctest: +SKIP
>>> report.matched, report.changed
(3, 0)
"""

from __future__ import annotations

import time
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..._core._queries import equal_query

if TYPE_CHECKING:
    from ..read import TableRead

Action = Literal["update", "delete"]
_IDS_PER_REQUEST = 100
_METHODS = {"update": "PATCH", "delete": "DELETE"}


@dataclass(frozen=True)
class ChangeReport:
    """What `update` or `delete` did: `matched` rows selected by the query, `changed` rows
    updated or deleted (0 with `dry_run`), `requests` sent, `seconds` taken."""

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
    read: TableRead, action: Action, data: dict[str, Any] | None, *, dry_run: bool
) -> ChangeReport:
    """Update (with `data`) or delete the rows `read` selects (see the module docstring)."""
    started = time.perf_counter()
    if dry_run:
        matched = await read.count()
        return ChangeReport(matched, 0, 0, time.perf_counter() - started, dry_run=True)
    plan = read.plan
    if not plan.filters or plan.head == 0:
        return ChangeReport(0, 0, 0, time.perf_counter() - started)
    if plan.every_row_kept and plan.head is None:
        changed = await _bulk(read, action, data, list(plan.filters[0]))
        return ChangeReport(changed, changed, 1, time.perf_counter() - started)
    ids: list[str] = []
    async with aclosing(read.ids_only().pages(collect=False)) as batches:
        async for batch in batches:
            ids.extend(str(row_id) for row_id in batch.column("$id").to_pylist())
    changed = requests = 0
    for start in range(0, len(ids), _IDS_PER_REQUEST):
        chosen = ids[start : start + _IDS_PER_REQUEST]
        changed += await _bulk(read, action, data, [equal_query("$id", chosen, plan.member)])
        requests += 1
    return ChangeReport(len(ids), changed, requests, time.perf_counter() - started)


async def _bulk(
    read: TableRead, action: Action, data: dict[str, Any] | None, queries: list[str]
) -> int:
    body: dict[str, Any] = {"queries": queries}
    if data is not None:
        body["data"] = data
    answer = await read.requester.request_json(
        _METHODS[action], read.plan.location.rows_path, json=body
    )
    return int(answer.get("total", 0))
