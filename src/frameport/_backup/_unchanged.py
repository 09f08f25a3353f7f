"""The rows of a table a restore (or copy) writes into that the destination holds already:
those it holds as the source does are unchanged (left alone: not written, not conflicts),
the others differ (`on_conflict` decides for them).

A row's content is its columns and its ``$permissions``; the times the service keeps
(``$createdAt``, ``$updatedAt``) and its number (``$sequence``) are not content. Both sides
are compared as the rows they write (`batch_to_rows`).

>>> there = await RowsThere.read(requester, location)             # doctest: +SKIP
>>> sorted_rows = await there.sort(batch)                         # doctest: +SKIP
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .._core._queries import equal_query
from .._schema import SERVICE_FIELDS, batch_to_rows
from .._tables._system import ALL_SYSTEM
from .._tables.read import QuerySpec, TableRead

if TYPE_CHECKING:
    from .._core import Requester
    from .._tables import TableLocation

ID = "$id"
PERMISSIONS = "$permissions"
IDS_PER_REQUEST = 100


@dataclass
class SortedRows:
    """A batch of the source's rows sorted: `rest` (the rows new or differing, to write),
    how many are `unchanged` and the IDs of those that `differ`."""

    rest: pa.RecordBatch
    unchanged: int = 0
    differ: list[str] = field(default_factory=list)


def _content(row: dict[str, Any], keys: list[str]) -> list[Any]:
    return [sorted(row.get(k) or []) if k == PERMISSIONS else row.get(k) for k in keys]


class RowsThere:
    """The rows a table of the destination holds: their IDs (read once) and, for the
    source's rows among them, their content (read by ID)."""

    def __init__(self, read: TableRead, ids: set[str]) -> None:
        self._read = read
        self._ids = ids

    @classmethod
    async def read(cls, requester: Requester, location: TableLocation) -> RowsThere:
        read = await TableRead.make(requester, location, QuerySpec(system=ALL_SYSTEM))
        ids: set[str] = set()
        async with aclosing(read.ids_only().pages(collect=False)) as pages:
            async for batch in pages:
                ids.update(str(row_id) for row_id in batch.column(ID).to_pylist())
        return cls(read, ids)

    async def _rows(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for first in range(0, len(ids), IDS_PER_REQUEST):
            chunk = ids[first : first + IDS_PER_REQUEST]
            read = self._read.narrowed(equal_query(ID, chunk, self._read.plan.member))
            async with aclosing(read.pages(collect=True)) as pages:
                async for page in pages:
                    found.update((row[ID], row) for row in batch_to_rows(page))
        return found

    async def sort(self, batch: pa.RecordBatch) -> SortedRows:
        """`batch` (the source's rows, each with its ``$id``) sorted."""
        ids = batch.column(ID).to_pylist()
        taken = [row_id for row_id in ids if row_id in self._ids]
        if not taken:
            return SortedRows(batch)
        keys = [k for k in batch.schema.names if k not in SERVICE_FIELDS or k == PERMISSIONS]
        there = await self._rows(taken)
        mask = pa.array([row_id in there for row_id in ids])
        rows = batch_to_rows(batch.filter(mask).select([*keys, ID]))
        same = {row[ID] for row in rows if _content(row, keys) == _content(there[row[ID]], keys)}
        differ = [row[ID] for row in rows if row[ID] not in same]
        rest = batch.filter(pa.array([row_id not in same for row_id in ids]))
        return SortedRows(rest, len(same), differ)
