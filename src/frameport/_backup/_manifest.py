"""The layout of an archive and what its manifests say.

An archive holds snapshots, each in ``snapshots/<id>/``: its ``plan.json`` (what the backup
fixed when it started: the time, the ``$sequence`` bound of each table, the records of the
project) and, once it is complete and checked, its ``manifest.json``. File contents live in
``files/<bucket>/<file>/<signature>`` and the code of functions in
``functions/<function>/<deployment>.tar.gz``, shared by the snapshots that hold them.

Beside its manifest, a snapshot has ``hashes.json``: the SHA-256 and size of its manifest and
plan (written first), which `verify` checks too; archives written before it have none.

A table of a snapshot is a list of *layers*, oldest first: each layer is the Parquet file of
the rows one snapshot read (a full snapshot: every row up to its bound; an incremental one: the
rows updated since the snapshot before it) and, for an incremental one, the ``$id``s of the
rows gone since and the ``$sequence``s of every row the snapshot holds (which the next
incremental probes for gone rows; after a full layer, its rows' own). A row's latest layer
holds it, unless a later layer names it gone, so every snapshot can be restored on its own.
The manifest's ``files`` maps every
file a snapshot needs (its own and the ones it shares with earlier snapshots) to its SHA-256
and size, which `verify` checks: a restore opens no file that is not listed there (see
`Manifest.opened_names`). A layer is read in batches of `BATCH_ROWS` rows, never a whole row group.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncGenerator, Generator, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._exceptions import ArchiveError
from .._tables.changes import sorted_sequences
from ._archive import Archive, encode_json, parse_json, refusal
from ._entries import FORMAT, FileHash, Hashes, Layer, Manifest, Misshapen

SNAPSHOTS = "snapshots"

BATCH_ROWS = 5_000
"""Rows per batch read back from a layer (a restore records its progress batch by batch)."""

READ_BUFFER = 1 << 20
"""Bytes of a layer's column read at a time, not the whole column of a row group, which
raised a restore's peak for a large row group (figures: benchmarks/README.md)."""

_ID_SEQUENCE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("$id", pa.string()),
    ("$sequence", pa.int64()),
]
ID_SEQUENCE = pa.schema(_ID_SEQUENCE_FIELDS)


def plan_name(snapshot: str) -> str:
    return f"{SNAPSHOTS}/{snapshot}/plan.json"


def manifest_name(snapshot: str) -> str:
    return f"{SNAPSHOTS}/{snapshot}/manifest.json"


def hashes_name(snapshot: str) -> str:
    return f"{SNAPSHOTS}/{snapshot}/hashes.json"


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


def chosen_snapshot(archive: Archive, snapshot: str | None = None) -> str:
    """`snapshot` if it is a complete snapshot of the archive; None: the newest one."""
    complete = snapshot_ids(archive)
    if not complete:
        raise ArchiveError(f"{archive.label} holds no complete snapshot; back up into it first.")
    chosen = complete[-1] if snapshot is None else snapshot
    if chosen not in complete:
        raise ArchiveError(
            f"{archive.label} has no complete snapshot {chosen!r}; "
            f"its snapshots: {', '.join(complete)}."
        )
    return chosen


def parse_manifest(archive: Archive, snapshot: str, data: bytes) -> Manifest:
    """The manifest of `snapshot`, the bytes `data`, if it is one this version reads."""
    name = manifest_name(snapshot)
    manifest = parse_json(data, name, archive.label)
    if isinstance(manifest, dict) and manifest.get("format") != FORMAT:
        raise ArchiveError(
            f"snapshot {snapshot} of {archive.label} has archive format "
            f"{manifest.get('format')!r}; this version of frameport reads format {FORMAT}."
        )
    try:
        return Manifest.from_json(manifest)
    except Misshapen as exc:
        raise refusal(name, archive.label, f"not a manifest ({exc})") from exc


def write_manifest(archive: Archive, manifest: Manifest) -> None:
    """Write the manifest of a snapshot, its hashes and those of its plan first: the
    manifest, written last, completes the snapshot."""
    snapshot = manifest.snapshot
    encoded = encode_json(manifest.to_json())
    plan = plan_name(snapshot)
    hashes = Hashes(
        {
            manifest_name(snapshot): FileHash(hashlib.sha256(encoded).hexdigest(), len(encoded)),
            plan: FileHash(archive.sha256(plan), archive.size(plan) or 0),
        }
    )
    archive.write_json(hashes_name(snapshot), hashes.to_json())
    archive.write_bytes(manifest_name(snapshot), encoded)


def load_manifest(archive: Archive, snapshot: str | None = None) -> Manifest:
    """The manifest of `snapshot` (default: the newest complete one)."""
    chosen = chosen_snapshot(archive, snapshot)
    return parse_manifest(archive, chosen, archive.read_bytes(manifest_name(chosen)))


@contextmanager
def _reading_rows(archive: Archive, name: str) -> Iterator[None]:
    """Reading the Parquet file `name` (fetched already): what goes wrong is an
    `ArchiveError` naming it."""
    try:
        yield
    except ArchiveError:
        raise
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise refusal(name, archive.label, f"not a Parquet file of rows ({exc})") from exc


def _require(parquet: pq.ParquetFile, columns: list[str]) -> None:
    """ValueError when the file `parquet` lacks one of `columns` (reading them would give
    the others alone)."""
    missing = [name for name in columns if name not in parquet.schema_arrow.names]
    if missing:
        raise ValueError(f"it has no column {', '.join(missing)}")


def read_columns(archive: Archive, name: str, columns: list[str]) -> pa.Table:
    # Not pre-buffered: that reads the neighbouring columns' bytes as well. One file, so not
    # through `pq.read_table`, whose datasets an incremental backup would import.
    with (
        archive.fetched(name) as path,
        _reading_rows(archive, name),
        pq.ParquetFile(path, pre_buffer=False) as parquet,
    ):
        _require(parquet, columns)
        return parquet.read(columns=columns)


async def _column(archive: Archive, name: str, column: str) -> pa.Array[Any]:
    def read() -> pa.Array[Any]:
        values = read_columns(archive, name, [column]).column(0)
        return values.combine_chunks() if values.num_chunks else pa.array([], values.type)

    return await asyncio.to_thread(read)


async def replaced_ids(archive: Archive, layers: Sequence[Layer]) -> list[pa.Array[Any]]:
    """For each layer, the ``$id``s later layers hold or name gone (its rows with one of
    those IDs are not the snapshot's)."""
    later: list[pa.Array[Any]] = []
    result: list[pa.Array[Any]] = []
    for layer in reversed(layers):
        result.append(pa.concat_arrays(later) if later else pa.array([], pa.string()))
        if layer is layers[0]:  # no layer lies under the first
            break
        later.extend([await _column(archive, part.path, "$id") for part in layer.parts])
    return list(reversed(result))


def _joined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    """`batches` (one at least) as one batch."""
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _layer_batches(
    path: Path, columns: list[str] | None, hidden: pa.Array[Any]
) -> Generator[pa.RecordBatch]:
    """The rows of the Parquet file at `path` whose ``$id`` is not one of `hidden`, each row
    group's in batches of `BATCH_ROWS` (its last one fewer), read `BATCH_ROWS` rows at a
    time: a row group is never read whole (one of 3,000,000 rows, 5 MB of Parquet, is
    gigabytes read whole)."""
    with pq.ParquetFile(path, pre_buffer=False, buffer_size=READ_BUFFER) as parquet:
        _require(parquet, ["$id", *(column for column in columns or [] if column != "$id")])
        for group in range(parquet.num_row_groups):
            kept: list[pa.RecordBatch] = []
            count = 0
            for batch in parquet.iter_batches(BATCH_ROWS, row_groups=[group], columns=columns):
                if len(hidden):
                    batch = batch.filter(pc.invert(pc.is_in(batch.column("$id"), value_set=hidden)))
                kept.append(batch)
                count += batch.num_rows
                if count >= BATCH_ROWS:
                    whole = _joined(kept)
                    yield whole.slice(0, BATCH_ROWS)
                    kept, count = [whole.slice(BATCH_ROWS)], count - BATCH_ROWS
            if count:
                yield _joined(kept)


def _next_batch(
    archive: Archive, name: str, batches: Generator[pa.RecordBatch]
) -> pa.RecordBatch | None:
    """The next of `batches`, read from the Parquet file `name` (None: no more)."""
    with _reading_rows(archive, name):
        return next(batches, None)


async def table_batches(
    archive: Archive, layers: Sequence[Layer], columns: Sequence[str] | None = None
) -> AsyncGenerator[pa.RecordBatch]:
    """The rows the snapshot holds, layer after layer, in batches of at most `BATCH_ROWS`
    rows (see `_layer_batches`)."""
    replaced = await replaced_ids(archive, layers)
    chosen = None if columns is None else list(columns)
    for layer, hidden in zip(layers, replaced, strict=True):
        name = layer.rows.path
        with archive.fetched(name) as path, closing(_layer_batches(path, chosen, hidden)) as rows:
            while (batch := await asyncio.to_thread(_next_batch, archive, name, rows)) is not None:
                yield batch


async def table_ids(archive: Archive, layers: Sequence[Layer]) -> pa.Table:
    """``$id`` and ``$sequence`` of the rows the snapshot holds."""
    parts = [batch async for batch in table_batches(archive, layers, ["$id", "$sequence"])]
    schema = ID_SEQUENCE
    return pa.Table.from_batches(parts, schema=schema) if parts else schema.empty_table()


async def held_sequences(archive: Archive, layers: Sequence[Layer]) -> npt.NDArray[np.int64]:
    """The ``$sequence``s of the rows the snapshot holds, sorted: its last layer's ``held``
    file, those of its one full layer's rows, or, in an archive an earlier version wrote,
    those the layers' rows read back leave."""
    held = layers[-1].held
    if held is not None:
        return (await _column(archive, held.path, "$sequence")).to_numpy()
    if len(layers) == 1:
        full = await _column(archive, layers[0].rows.path, "$sequence")
        return sorted_sequences(full.to_numpy())
    rows = await table_ids(archive, layers)
    return sorted_sequences(rows.column("$sequence").to_numpy())


async def ids_at(
    archive: Archive, layers: Sequence[Layer], sequences: pa.Array[Any]
) -> pa.Array[Any]:
    """The ``$id``s of the snapshot's rows at `sequences`."""
    found = [
        batch.filter(pc.is_in(batch.column("$sequence"), value_set=sequences)).column("$id")
        async for batch in table_batches(archive, layers, ["$id", "$sequence"])
    ]
    return pa.concat_arrays(found) if found else pa.array([], pa.string())
