"""The layout of an archive and what its manifests say.

An archive holds snapshots, each in ``snapshots/<id>/``: its ``plan.json`` (what the backup
fixed when it started: the time, the ``$sequence`` bound of each table, the records of the
project) and, once it is complete and checked, its ``manifest.json``. File contents live in
``files/<bucket>/<file>/<signature>`` and the code of functions in
``functions/<function>/<deployment>.tar.gz``, shared by the snapshots that hold them.

A table of a snapshot is a list of *layers*, oldest first: each layer is the Parquet file of
the rows one snapshot read (a full snapshot: every row up to its bound; an incremental one: the
rows updated since the snapshot before it) and, for an incremental one, the ``$id``s of the
rows gone since and the ``$sequence``s of every row the snapshot holds (which the next
incremental probes for gone rows; after a full layer, its rows' own). A row's latest layer
holds it, unless a later layer names it gone; `table_batches` reads the rows a snapshot holds
that way, so every snapshot can be restored on its own. The manifest's ``files`` maps every
file a snapshot needs (its own and the ones it shares with earlier snapshots) to its SHA-256
and size, which `verify` checks.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._exceptions import ArchiveError
from .._tables.changes import sorted_sequences
from ._archive import Archive

FORMAT = 1
"""The archive format this version of frameport writes and reads."""

SNAPSHOTS = "snapshots"

BATCH_ROWS = 5_000
"""Rows per batch read back from a layer (a restore records its progress batch by batch)."""

_ID_SEQUENCE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("$id", pa.string()),
    ("$sequence", pa.int64()),
]
ID_SEQUENCE = pa.schema(_ID_SEQUENCE_FIELDS)


def plan_name(snapshot: str) -> str:
    return f"{SNAPSHOTS}/{snapshot}/plan.json"


def manifest_name(snapshot: str) -> str:
    return f"{SNAPSHOTS}/{snapshot}/manifest.json"


def table_folder(snapshot: str, database_id: str, table_id: str) -> str:
    return f"{SNAPSHOTS}/{snapshot}/tables/{database_id}/{table_id}"


def file_name(bucket_id: str, file_id: str, signature: str) -> str:
    return f"files/{bucket_id}/{file_id}/{signature or 'unsigned'}"


def code_name(function_id: str, deployment_id: str) -> str:
    return f"functions/{function_id}/{deployment_id}.tar.gz"


def snapshot_ids(archive: Archive) -> list[str]:
    """The IDs of the archive's complete snapshots, oldest first."""
    return [s for s in archive.folders(SNAPSHOTS) if archive.exists(manifest_name(s))]


def unfinished_snapshot(archive: Archive) -> str | None:
    """The ID of the newest snapshot that was started but not completed, if it is the newest
    of all."""
    started = archive.folders(SNAPSHOTS)
    if started and not archive.exists(manifest_name(started[-1])):
        return started[-1] if archive.exists(plan_name(started[-1])) else None
    return None


def load_manifest(archive: Archive, snapshot: str | None = None) -> dict[str, Any]:
    """The manifest of `snapshot` (default: the newest complete one)."""
    complete = snapshot_ids(archive)
    if not complete:
        raise ArchiveError(f"{archive.label} holds no complete snapshot; back up into it first.")
    chosen = complete[-1] if snapshot is None else snapshot
    if chosen not in complete:
        raise ArchiveError(
            f"{archive.label} has no complete snapshot {chosen!r}; "
            f"its snapshots: {', '.join(complete)}."
        )
    manifest: dict[str, Any] = archive.read_json(manifest_name(chosen))
    if manifest.get("format") != FORMAT:
        raise ArchiveError(
            f"snapshot {chosen} of {archive.label} has archive format {manifest.get('format')!r}; "
            f"this version of frameport reads format {FORMAT}."
        )
    return manifest


def tables_of(manifest: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(database record, table entry) of every table in `manifest`."""
    return [(db["record"], table) for db in manifest["databases"] for table in db["tables"]]


# ---------------------------------------------------------------------------------------------
# The rows of a table, from its layers


def read_columns(archive: Archive, name: str, columns: list[str]) -> pa.Table:
    """The `columns` of the Parquet file `name`."""
    with archive.fetched(name) as path, pq.ParquetFile(path, pre_buffer=False) as parquet:
        # Not pre-buffered: that reads the neighbouring columns' bytes as well (19 MB more at
        # the peak for the `$sequence` of 500,000 rows, against 3). One file, so not through
        # `pq.read_table`, whose datasets cost an incremental backup 13-23 ms to import.
        return parquet.read(columns=columns)


async def _column(archive: Archive, name: str, column: str) -> pa.Array[Any]:
    def read() -> pa.Array[Any]:
        values = read_columns(archive, name, [column]).column(0)
        return values.combine_chunks() if values.num_chunks else pa.array([], values.type)

    return await asyncio.to_thread(read)


async def replaced_ids(archive: Archive, layers: Sequence[dict[str, Any]]) -> list[pa.Array[Any]]:
    """For each layer, the ``$id``s later layers hold or name gone (its rows with one of
    those IDs are not the snapshot's)."""
    later: list[pa.Array[Any]] = []
    result: list[pa.Array[Any]] = []
    for layer in reversed(layers):
        result.append(pa.concat_arrays(later) if later else pa.array([], pa.string()))
        if layer is layers[0]:  # no layer lies under the first
            break
        later.append(await _column(archive, layer["rows"]["path"], "$id"))
        if layer.get("gone"):
            later.append(await _column(archive, layer["gone"]["path"], "$id"))
    return list(reversed(result))


async def table_batches(
    archive: Archive, layers: Sequence[dict[str, Any]], columns: Sequence[str] | None = None
) -> AsyncGenerator[pa.RecordBatch]:
    """The rows the snapshot holds, layer after layer, one row group at a time."""
    replaced = await replaced_ids(archive, layers)
    for layer, hidden in zip(layers, replaced, strict=True):
        with archive.fetched(layer["rows"]["path"]) as path:
            reader = pq.ParquetFile(path)
            for group in range(reader.num_row_groups):
                chosen = None if columns is None else list(columns)
                table = await asyncio.to_thread(reader.read_row_group, group, columns=chosen)
                if len(hidden):
                    table = table.filter(pc.invert(pc.is_in(table.column("$id"), value_set=hidden)))
                for batch in table.to_batches(max_chunksize=BATCH_ROWS):
                    if batch.num_rows:
                        yield batch


async def table_ids(archive: Archive, layers: Sequence[dict[str, Any]]) -> pa.Table:
    """``$id`` and ``$sequence`` of the rows the snapshot holds."""
    parts = [batch async for batch in table_batches(archive, layers, ["$id", "$sequence"])]
    schema = ID_SEQUENCE
    return pa.Table.from_batches(parts, schema=schema) if parts else schema.empty_table()


async def held_sequences(
    archive: Archive, layers: Sequence[dict[str, Any]]
) -> np.ndarray[Any, Any]:
    """The ``$sequence``s of the rows the snapshot holds, sorted: its last layer's ``held``
    file, those of its one full layer's rows, or, in an archive an earlier version wrote,
    those the layers' rows read back leave."""
    if layers[-1].get("held"):
        return (await _column(archive, layers[-1]["held"]["path"], "$sequence")).to_numpy()
    if len(layers) == 1:
        full = await _column(archive, layers[0]["rows"]["path"], "$sequence")
        return sorted_sequences(full.to_numpy())
    rows = await table_ids(archive, layers)
    return sorted_sequences(rows.column("$sequence").to_numpy())


async def ids_at(
    archive: Archive, layers: Sequence[dict[str, Any]], sequences: pa.Array[Any]
) -> pa.Array[Any]:
    """The ``$id``s of the snapshot's rows at `sequences`."""
    found = [
        batch.filter(pc.is_in(batch.column("$sequence"), value_set=sequences)).column("$id")
        async for batch in table_batches(archive, layers, ["$id", "$sequence"])
    ]
    return pa.concat_arrays(found) if found else pa.array([], pa.string())
