"""The Delta table a sync keeps: what the last sync recorded in its commit, and how the
table's columns compare with the view's.

Each sync commits once, with ``frameport.*`` keys in the commit's metadata: the view it
syncs (`view`), the watermark (the service's time when that run started) and the run's
figures. `last_sync` reads them back from the newest commit that has them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from ..._exceptions import SchemaChangeError

PREFIX = "frameport."
HISTORY_DEPTH = 100
"""How many commits back `last_sync` looks for the last sync's (others may commit too)."""


@dataclass(frozen=True)
class LastSync:
    """The Delta table at `path` as the last sync left it."""

    table: DeltaTable
    schema: pa.Schema
    view: str
    watermark: str | None


def last_sync(path: str | Path) -> LastSync | None:
    """The state of the Delta table at `path`, or None when there is no Delta table there."""
    try:
        table = DeltaTable(str(path))
    except TableNotFoundError:
        return None
    schema = pa.schema(cast(Any, table.schema().to_arrow()))  # an Arrow C schema
    for commit in table.history(HISTORY_DEPTH):
        if f"{PREFIX}view" in commit:
            watermark = commit.get(f"{PREFIX}watermark") or None
            return LastSync(table, schema, str(commit[f"{PREFIX}view"]), watermark)
    return LastSync(table, schema, "", None)


def commit_metadata(
    view: str, watermark: str | None, figures: Mapping[str, object]
) -> dict[str, str]:
    """The metadata of a sync's commit."""
    metadata = {f"{PREFIX}view": view, f"{PREFIX}watermark": watermark or ""}
    metadata.update({f"{PREFIX}{key}": json.dumps(value) for key, value in figures.items()})
    return metadata


def delta_type(kind: pa.DataType) -> pa.DataType:
    """`kind` as a Delta table stores it (timestamps in microseconds, UTC)."""
    if pa.types.is_timestamp(kind):
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(delta_type(kind.value_type))
    if pa.types.is_large_string(kind):
        return pa.string()
    return kind


def changed_columns(synced: pa.Schema, current: pa.Schema) -> list[str]:
    """The columns of `current` that `synced` lacks (or lacked: `current` lost some), after
    refusing any column whose type changed (`SchemaChangeError`)."""
    for field in current:
        if field.name not in synced.names:
            continue
        before = delta_type(synced.field(field.name).type)
        now = delta_type(field.type)
        if before != now:
            raise SchemaChangeError(
                f"column {field.name!r} changed type at the service: it was synced as "
                f"{before} and is now {now}. Sync into a new target to start over with the "
                "new type.",
                column=field.name,
                synced=str(before),
                current=str(now),
            )
    added = [name for name in current.names if name not in synced.names]
    removed = [name for name in synced.names if name not in current.names]
    return added + removed
