"""The rows a feed of changes knows the view to hold, and the change batches it hands on.

A change batch has an ``op`` column (``insert``, ``update``, ``delete``), then ``$id``,
``$updatedAt`` and the view's columns. A row changed so that it no longer matches the view's
filter is a ``delete`` for the view; a delete carries ``$id`` and ``$updatedAt`` (the row's
last one, or the service's time of the catch-up that found it gone) and nulls elsewhere.

`ViewRows` keeps the view's ``$id``s with their ``$sequence`` (what `gone_sequences` probes) and,
for the rows changed lately, the ``$updatedAt`` last handed on: a row met again with no later
``$updatedAt`` (the overlap of a catch-up and the events) is dropped. Events are filtered on
the client with the whole filter, by the decoder reads use (`Plan.decoder`, whose client-side
part is the filter's evaluation), so a row leaving the view is seen.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..._core._json import JsonObject
from ..._schema import SYSTEM_SCHEMA, ArrowArray
from ..read import TableRead
from ._gone_rows import sorted_sequences

OP = "op"
"""The column naming what happened to each row: ``insert``, ``update`` or ``delete``."""

_TIMESTAMP = SYSTEM_SCHEMA.field("$updatedAt").type
_SHOWN = ("$id", "$updatedAt")


def milliseconds(text: str) -> int:
    """A service datetime text as milliseconds since the epoch."""
    return int(datetime.fromisoformat(text).timestamp() * 1000)


class ViewRows:
    """The ``$id``s of the view `read` reads (every ``$`` field shown) and what was handed on
    lately; `events` reads the view's whole rows as the realtime events carry them."""

    def __init__(self, read: TableRead, events: TableRead) -> None:
        self.keys: dict[str, int] = {}  # $id → $sequence of the view's rows
        self._ids_at: dict[int, str] = {}  # $sequence → $id of those rows (and of some gone)
        self._seen: dict[str, tuple[int, bool]] = {}  # $id → ($updatedAt ms, present)
        self.use(read, events)

    def use(self, read: TableRead, events: TableRead) -> None:
        """Read the view with `read`, and decode events with `events`, from now on (the
        table's columns changed)."""
        self.read = read
        plan = replace(events.plan, residual=read.plan.spec.condition)
        self._decode = plan.decoder(read.inferred)
        self._items_key = read.plan.location.items_key
        columns = read.plan.spec.columns
        self._select = None if columns is None or "*" in columns else columns

    def learn(self, ids: pa.RecordBatch) -> None:
        """Take in rows of the view (their ``$id`` and ``$sequence``) known to be there."""
        keys = _keys(ids)
        self.keys.update(keys)
        self._ids_at.update(zip(keys.values(), keys, strict=True))

    def held(self, changed: Sequence[pa.RecordBatch] = ()) -> npt.NDArray[np.int64]:
        """The ``$sequence``s of the view's rows as far as known, with the rows read as
        `changed` (not yet handed on) in place of the rows of their ``$id``s: sorted, each
        once (what `gone_sequences` probes)."""
        known = np.fromiter(self.keys.values(), np.int64, count=len(self.keys))
        news: list[int] = []
        replaced: list[int] = []
        for rows in changed:
            for row_id, sequence in _keys(rows).items():
                earlier = self.keys.get(row_id)
                if earlier != sequence:
                    news.append(sequence)
                    if earlier is not None:  # deleted and made again: its old row is gone
                        replaced.append(earlier)
        if replaced:
            known = known[np.isin(known, replaced, invert=True)]
        held = sorted_sequences(np.concatenate([known, np.array(news, np.int64)]))
        return held[np.concatenate([[True], held[1:] != held[:-1]])] if news else held

    def ids_at(self, sequences: npt.NDArray[np.int64]) -> ArrowArray:
        """The ``$id``s of the known rows at `sequences`."""
        ids_at = self._ids_at
        return pa.array(
            [ids_at[int(value)] for value in sequences if int(value) in ids_at], pa.string()
        )

    def forget_before(self, stamp: int) -> None:
        """Forget what was handed on for rows last changed before `stamp` (ms): no catch-up
        reads back that far any more."""
        self._seen = {key: seen for key, seen in self._seen.items() if seen[0] >= stamp}

    # -- change batches ------------------------------------------------------------------------

    def from_rows(self, rows: pa.RecordBatch, created_since: int | None = None) -> pa.RecordBatch:
        """The changes of `rows` read from the view: ``insert`` for a row new to it (with
        `created_since`, ms: for a row created since then), else ``update``."""
        ids = _values(rows.column("$id"))
        stamps = _ms(rows.column("$updatedAt"))
        sequences = _values(rows.column("$sequence"))
        created = _ms(rows.column("$createdAt")) if created_since is not None else None
        ops: list[str | None] = []
        for index, row_id in enumerate(ids):
            new = None if created is None else created[index] >= (created_since or 0)
            ops.append(self._present(row_id, stamps[index], sequences[index], new=new))
        return self._batch(rows, ops, [])

    def from_events(self, events: Sequence[JsonObject]) -> list[pa.RecordBatch]:
        """The changes of realtime `events` (their data), in order; those of one row again
        go into the next batch."""
        batches, chunk, ids = [], list[JsonObject](), set[str]()
        for event in events:
            payload = event.get("payload")
            if not isinstance(payload, dict) or not isinstance(payload.get("$id"), str):
                continue
            if payload["$id"] in ids:
                batches.append(self._from_chunk(chunk))
                chunk, ids = [], set()
            chunk.append(event)
            ids.add(payload["$id"])
        if chunk:
            batches.append(self._from_chunk(chunk))
        return [batch for batch in batches if batch.num_rows]

    def gone(self, ids: ArrowArray, at: int) -> pa.RecordBatch:
        """The ``delete``s of the rows `ids`, found gone at `at` (ms)."""
        deletes = [(row_id, at) for row_id in _values(ids) if self._absent(row_id, at)]
        return self._batch(self._empty(), [], deletes)

    def gone_from_copy(self, ids: ArrowArray, at: int) -> pa.RecordBatch:
        """The ``delete``s of the rows `ids` that a copy holds and the view does not (found
        gone at `at`, ms): rows the feed never held."""
        deletes = [(row_id, at) for row_id in _values(ids) if row_id not in self.keys]
        self._seen.update((row_id, (at, False)) for row_id, _ in deletes)
        return self._batch(self._empty(), [], deletes)

    def _from_chunk(self, events: Sequence[JsonObject]) -> pa.RecordBatch:
        """The changes of events of distinct rows."""
        payloads = [event["payload"] for event in events]
        body = json.dumps({"total": len(payloads), self._items_key: payloads}).encode()
        matching = self._decode(body)[1]
        ids = _values(matching.column("$id"))
        position = {row_id: index for index, row_id in enumerate(ids)}
        sequences = _values(matching.column("$sequence"))
        ops: list[str | None] = [None] * matching.num_rows
        deletes: list[tuple[str, int]] = []
        for event, payload in zip(events, payloads, strict=True):
            row_id, stamp = payload["$id"], milliseconds(str(payload.get("$updatedAt")))
            index = position.get(row_id)
            if index is not None and _action(event) != "delete":
                new = True if _action(event) == "create" else None
                ops[index] = self._present(row_id, stamp, sequences[index], new=new)
            elif self._absent(row_id, stamp):
                deletes.append((row_id, stamp))
        return self._batch(matching, ops, deletes)

    def _present(self, row_id: str, stamp: int, sequence: int, *, new: bool | None) -> str | None:
        """The op of a row of the view changed at `stamp` (None: handed on already); `new`
        says whether it is new to the view (None: whether its ID is unknown)."""
        seen = self._seen.get(row_id)
        if seen is not None and seen[0] >= stamp:
            return None
        known = row_id in self.keys
        self.keys[row_id] = sequence
        self._ids_at[sequence] = row_id
        self._seen[row_id] = (stamp, True)
        return "insert" if (not known if new is None else new) else "update"

    def _absent(self, row_id: str, stamp: int) -> bool:
        """Take in that the row left the view at `stamp`; whether that is news (a delete)."""
        seen = self._seen.get(row_id)
        if seen is not None and seen[0] > stamp:
            return False
        self._seen[row_id] = (stamp, False)
        sequence = self.keys.pop(row_id, None)
        if sequence is not None:
            self._ids_at.pop(sequence, None)
        return sequence is not None

    # -- shaping -------------------------------------------------------------------------------

    def _empty(self) -> pa.RecordBatch:
        """No rows, with the view's columns as known now."""
        fetched, inferred = self.read.plan.fetched, self.read.inferred
        schema = fetched if fetched is not None or inferred is None else inferred.schema
        return pa.RecordBatch.from_pylist([], schema=schema or SYSTEM_SCHEMA)

    def _shaped(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """`rows` with ``$id``, ``$updatedAt`` and the view's columns."""
        names = rows.schema.names
        wanted = self._select or [name for name in names if not name.startswith("$")]
        columns = [name for name in wanted if name in names and name not in _SHOWN]
        return rows.select([*_SHOWN, *columns])

    def _batch(
        self, rows: pa.RecordBatch, ops: Sequence[str | None], deletes: Sequence[tuple[str, int]]
    ) -> pa.RecordBatch:
        """One change batch: the rows of `rows` whose op is not None, then `deletes`."""
        kept = [index for index, op in enumerate(ops) if op is not None]
        present = self._shaped(rows.take(pa.array(kept, pa.int64())))
        present = present.add_column(0, OP, pa.array([ops[i] for i in kept], pa.string()))
        if not deletes:
            return present
        schema = present.schema
        gone = {
            OP: pa.array(["delete"] * len(deletes), pa.string()),
            "$id": pa.array([row_id for row_id, _ in deletes], pa.string()),
            "$updatedAt": pa.array([stamp for _, stamp in deletes], pa.int64()).cast(_TIMESTAMP),
        }
        arrays = [gone.get(field.name, pa.nulls(len(deletes), field.type)) for field in schema]
        removed = pa.RecordBatch.from_arrays(arrays, schema=schema)
        joined = pa.Table.from_batches([present, removed]).combine_chunks()
        return joined.to_batches()[0]


def _action(event: JsonObject) -> str | None:
    """The action of a row event: ``create``, ``update``, ``upsert`` or ``delete``."""
    names = event.get("events")
    if isinstance(names, list) and names and isinstance(names[0], str):
        return names[0].rsplit(".", 1)[-1]
    return None


def _keys(rows: pa.RecordBatch) -> dict[str, int]:
    """The ``$sequence`` of each ``$id`` of `rows`."""
    sequences = _values(rows.column("$sequence"))
    return dict(zip(_values(rows.column("$id")), sequences, strict=True))


def _values(column: ArrowArray) -> list[Any]:
    """The values of `column` as Python objects."""
    values: list[Any] = column.to_pylist()  # type: ignore[misc]  # any Arrow type
    return values


def _ms(column: ArrowArray) -> list[int]:
    """The timestamps of `column` as milliseconds since the epoch."""
    return _values(column.cast(pa.int64()))
