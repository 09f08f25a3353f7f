"""One backup: a snapshot of the project written into an archive, checked as it is written,
resumable after a crash, and incremental when the archive already holds a snapshot.

Each table is read up to the ``$sequence`` bound the plan fixed first, so rows created during
the backup wait for the next. With an earlier snapshot of the same table (same columns), only
the rows updated since its time (less `lag` seconds) are read, and the rows gone since are
found by probing the ``$sequence``s the earlier snapshot held. A file or function code whose
signature an earlier snapshot holds is not downloaded again. Every file written is read back
for its SHA-256 (and a row count, which must equal the rows the export listed); the manifest
is written last, with those figures.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._core._ids import ID
from .._core._queries import limit_query
from .._core._together import cancel_and_wait, together
from .._exceptions import ArchiveError, FrameportError
from .._tables import TableLocation
from .._tables._system import ALL_SYSTEM
from .._tables.changes import (
    gone_sequences,
    minus_seconds,
    service_now,
    service_text,
    sorted_sequences,
    updated_since,
)
from .._tables.export import column_encodings, export_resumable
from .._tables.read import QuerySpec, SequenceRange, TableRead, table_last_sequence
from .._transfer._download import ResumableDownload
from ._archive import Archive, refusal
from ._entries import (
    FORMAT,
    BucketEntry,
    DatabaseEntry,
    FileEntry,
    FileHash,
    FilePart,
    FunctionEntry,
    Layer,
    Manifest,
    Misshapen,
    Plan,
    Record,
    TableEntry,
    WrittenLayer,
)
from ._manifest import (
    SNAPSHOTS,
    code_name,
    file_name,
    held_sequences,
    ids_at,
    load_manifest,
    plan_name,
    read_columns,
    snapshot_ids,
    table_folder,
    unfinished_snapshot,
    write_manifest,
)
from ._project import Selection, describe_project
from ._report import BackupReport

if TYPE_CHECKING:
    from .._core import Requester

DEFAULT_LAG = 5.0
"""Seconds before the earlier snapshot's time an incremental backup starts reading (writes
the service had begun but not finished then)."""

CONCURRENT_DOWNLOADS = 4

INCREMENTAL_RANGES = 2
"""Ranges an incremental layer's read runs at once. A full layer reads its table alone, as
many ranges at once as the machine keeps up with; incremental layers, few rows as a rule,
are read all at once (the service builds one table's pages while the client writes
another's), so each is held to a few ranges, which bounds their memory together."""


async def backup(
    requester: Requester,
    target: str | os.PathLike[str],
    selection: Selection,
    *,
    lag: float = DEFAULT_LAG,
    progress: bool | None = None,
) -> BackupReport:
    """Back up the chosen part of the project into `target`."""
    started = time.perf_counter()
    archive = Archive.open(target)
    plan, reads = await _plan(requester, archive, selection)
    base = None if plan.base is None else load_manifest(archive, plan.base)
    run = BackupRun(requester, archive, plan, base, lag, progress, reads)
    manifest, rows_read, downloaded = await run.write()
    entries = [table for _, table in manifest.tables()]
    return BackupReport(
        target=archive.label,
        snapshot=plan.snapshot,
        base=plan.base,
        resumed=reads is None,
        tables=len(entries),
        rows=sum(table.rows for table in entries),
        rows_read=rows_read,
        files=sum(len(bucket.files) for bucket in manifest.buckets),
        files_downloaded=downloaded,
        seconds=time.perf_counter() - started,
    )


async def _plan(
    requester: Requester, archive: Archive, selection: Selection
) -> tuple[Plan, dict[TableLocation, TableRead] | None]:
    """The plan of the unfinished backup in the archive (same selection; None), or a new one
    with the reads of its tables (made for their bounds)."""
    unfinished = unfinished_snapshot(archive)
    if unfinished is not None:
        name = plan_name(unfinished)
        found = archive.read_json(name)
        if isinstance(found, dict) and found.get("format") == FORMAT:
            try:
                plan = Plan.from_json(found)
            except Misshapen as exc:
                raise refusal(name, archive.label, f"not a plan ({exc})") from exc
            if plan.selection == selection.to_json():
                return plan, None
        raise ArchiveError(
            f"{archive.label} holds an unfinished backup ({unfinished}) of other databases, "
            "buckets or functions; finish it with the same choices, or delete "
            f"snapshots/{unfinished} from the archive."
        )
    complete = snapshot_ids(archive)
    # The service's time arrives before any row is read: rows changed after it are read by the
    # next backup.
    now_asked = asyncio.ensure_future(service_now(requester, "/tablesdb", [limit_query(1)]))
    version_asked = asyncio.ensure_future(_service_version(requester))
    try:
        project = await describe_project(requester, selection)
        tables = [
            (TableLocation(database.record["$id"], table["$id"]), table)
            for database in project.databases
            for table in database.tables
        ]
        locations = [location for location, _ in tables]
        made, uppers = await asyncio.gather(
            # Made with the columns the listing gave: the models a table's own record holds.
            together(
                TableRead.make(
                    requester,
                    location,
                    QuerySpec(system=ALL_SYSTEM),
                    columns=record.get(location.columns_key),
                )
                for location, record in tables
            ),
            together(table_last_sequence(requester, location) for location in locations),
        )
        now, version = await now_asked, await version_asked
    finally:
        await cancel_and_wait(now_asked, version_asked)
    moment = service_text(now) if now is not None else None
    bounds = {
        f"{location.database_id}/{location.table_id}": upper
        for location, upper in zip(locations, uppers, strict=True)
    }
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    plan = Plan(
        # Numbered first, so that names sort in the order the snapshots were taken.
        snapshot=f"{len(archive.folders(SNAPSHOTS)) + 1:05d}-{stamp}",
        base=complete[-1] if complete else None,
        time=moment,
        service={
            "endpoint": requester.endpoint,
            "project": requester.project,
            "response_format": requester.response_format,
            "version": version,
        },
        selection=selection.to_json(),
        project=project,
        bounds=bounds,
    )
    archive.write_json(plan_name(plan.snapshot), plan.to_json())
    return plan, dict(zip(locations, made, strict=True))


async def _service_version(requester: Requester) -> str | None:
    """The service's version (``GET /health/version``), or None where it is not told."""
    try:
        answer = await requester.request_json("GET", "/health/version")
    except FrameportError:  # a service without the route still gets its backup
        return None
    version = answer.get("version") if isinstance(answer, dict) else None
    return str(version) if version else None


def _column_shape(record: Record) -> list[tuple[Any, ...]]:
    return [
        (c.get("key"), c.get("type"), c.get("format"), bool(c.get("array")))
        for c in record.get("columns", [])
    ]


def _content_hash(layers: Sequence[Layer]) -> str:
    content = hashlib.sha256()
    for layer in layers:
        for part in (layer.rows, layer.gone):
            content.update(("-" if part is None or part.sha256 is None else part.sha256).encode())
    return content.hexdigest()


@dataclass
class BackupRun:
    """One backup writing the snapshot its `plan` fixed into `archive`, incremental on the
    `base` snapshot's manifest (None: full); `reads`: its tables' reads, made with the plan
    (None: a run resumed, which makes them again). `files` gathers the hash of every file
    the manifest lists."""

    requester: Requester
    archive: Archive
    plan: Plan
    base: Manifest | None
    lag: float
    progress: bool | None
    reads: dict[TableLocation, TableRead] | None
    files: dict[str, FileHash] = field(default_factory=dict)
    # The full layers' rows are read one table at a time (see `INCREMENTAL_RANGES`).
    exporting: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))

    async def write(self) -> tuple[Manifest, int, int]:
        """Write the snapshot: its manifest, the rows read and the files downloaded."""
        plan = self.plan
        databases = []
        rows_read = 0
        for database in plan.project.databases:
            database_id = database.record["$id"]
            backed_up = await together(self.table(database_id, table) for table in database.tables)
            rows_read += sum(read for _, read in backed_up)
            databases.append(DatabaseEntry(database.record, tuple(e for e, _ in backed_up)))
        buckets, downloaded = await self.bucket_files()
        manifest = Manifest(
            snapshot=plan.snapshot,
            databases=tuple(databases),
            buckets=tuple(buckets),
            functions=tuple(await self.code()),
            files=self.files,
            base=plan.base,
            time=plan.time,
            service=plan.service,
            selection=plan.selection,
        )
        write_manifest(self.archive, manifest)
        return manifest, rows_read, downloaded

    def _base_entry(self, database_id: str, record: Record) -> TableEntry | None:
        """The earlier snapshot's entry of the same table, if its columns are the same."""
        table = None if self.base is None else self.base.table(database_id, record["$id"])
        if table is None or _column_shape(table.record) != _column_shape(record):
            return None
        return table if table.time else None

    async def table(self, database_id: str, record: Record) -> tuple[TableEntry, int]:
        """The table's manifest entry (its rows written and checked first), and the rows
        read."""
        location = TableLocation(database_id, record["$id"])
        folder = table_folder(self.plan.snapshot, database_id, location.table_id)
        bound = self.plan.bounds[f"{database_id}/{location.table_id}"]
        earlier = self._base_entry(database_id, record)
        done_name = f"{folder}/layer.json"
        if self.archive.exists(done_name):
            done = WrittenLayer.from_json(self.archive.read_json(done_name))
        else:
            read = None if self.reads is None else self.reads.get(location)
            if read is None:
                read = await TableRead.make(self.requester, location, QuerySpec(system=ALL_SYSTEM))
            done = await self._layer(read, folder, bound, earlier)
            self.archive.write_json(done_name, done.to_json())
        layer = done.layer
        layers = (*(earlier.layers if earlier else ()), layer)
        for part in (layer.rows, layer.gone, layer.held):
            if part is not None:
                self.files[part.path] = part.hash
        for older in layers[:-1]:
            for part in older.parts:
                self.files[part.path] = self.base.files[part.path]  # type: ignore[union-attr]
        entry = TableEntry(record, layers, done.rows, bound, self.plan.time, _content_hash(layers))
        return entry, layer.rows.rows or 0

    async def _layer(
        self, read: TableRead, folder: str, bound: int | None, earlier: TableEntry | None
    ) -> WrittenLayer:
        """Read the table's rows (`read`: all of them, with every ``$`` field) for this
        snapshot into Parquet; its layer and row count."""
        archive = self.archive
        whole = SequenceRange(0, bound or 0)
        bounded = read.narrowed(*whole.queries(read.plan.member))
        changed = (
            bounded
            if earlier is None or earlier.time is None
            else updated_since(bounded, minus_seconds(earlier.time, self.lag)).at_most(
                INCREMENTAL_RANGES
            )
        )
        name = f"{folder}/rows.parquet"
        earlier_held = early_gone = None
        try:
            # The earlier snapshot's rows are read from the archive, and those gone from the
            # service are looked for, while the changed rows come (see `_gone_among`).
            if earlier is not None:
                earlier_held = asyncio.ensure_future(held_sequences(archive, earlier.layers))
                early_gone = asyncio.ensure_future(_gone_among(read, earlier_held))
            # The read stops at the snapshot's bound: the rows past it are the next backup's.
            report = await export_resumable(
                changed,
                archive.staging(name),
                progress=self.progress,
                count_rows_left=False,
                # An incremental layer's few changed rows lie anywhere in the table; a full
                # layer's segments start at its first row.
                within=None if earlier is None else whole,
                # Full layers are read one at a time (see `INCREMENTAL_RANGES`); one's rows
                # are joined while the next's come.
                reading=self.exporting if earlier is None else None,
            )
            if not report.ok:
                raise ArchiveError(
                    f"the rows of {read.plan.location} did not pass the export's checks "
                    f"({report.summary()}); back up again.",
                )
            archive.commit(name)
            rows = await _checked_part(archive, name, report.rows)
            if earlier is None or earlier_held is None or early_gone is None:  # a full layer
                return WrittenLayer(Layer(rows, snapshot=self.plan.snapshot), report.rows)
            new = await asyncio.to_thread(read_columns, archive, name, ["$id", "$sequence"])
            earlier_sequences = await earlier_held
            read_now = sorted_sequences(new.column("$sequence").to_numpy())
            # The rows as they are now: the earlier ones and the ones read now, less the gone.
            candidates = _union(earlier_sequences, read_now)
            if _among_held(earlier_sequences, read_now):
                gone_at = await early_gone
            else:  # Probed on `read`, not `bounded`: the probed ranges lie under the bound.
                gone_at, _ = await gone_sequences(read.ids_only(), candidates)
            held = np.delete(candidates, np.searchsorted(candidates, gone_at))
            gone_ids = await _gone_ids(archive, earlier.layers, new, gone_at)
            gone = None
            if len(gone_ids):
                gone = await _written(
                    archive, f"{folder}/gone.parquet", pa.table({"$id": gone_ids})
                )
            sequences = pa.table({"$sequence": pa.array(held, pa.int64())})
            # Rising numbers, delta-encoded: a few bits each (3 KB for 500,000).
            held_part = await _written(
                archive, f"{folder}/held.parquet", sequences, **column_encodings(sequences.schema)
            )
            return WrittenLayer(Layer(rows, gone, held_part, self.plan.snapshot), len(held))
        finally:
            if earlier_held is not None and early_gone is not None:
                await cancel_and_wait(earlier_held, early_gone)

    async def _stored(
        self, name: str, source_path: str, size: int, md5: str | None, label: str
    ) -> tuple[FileHash, bool]:
        """The archive's hash of the content `name`, downloaded from `source_path` unless an
        earlier snapshot or a killed run already stored it; whether it was downloaded."""
        archive = self.archive
        if self.base is not None and name in self.base.files and archive.size(name) == size:
            return self.base.files[name], False
        downloaded = False
        if archive.size(name) != size:
            download = ResumableDownload(
                self.requester,
                source_path,
                archive.staging(name),
                size=size,
                md5=md5 or None,
                label=label,
                progress=self.progress,
            )
            await download.run()
            archive.commit(name)
            downloaded = True
        digest = await asyncio.to_thread(archive.sha256, name)
        return FileHash(digest, archive.size(name) or 0), downloaded

    async def bucket_files(self) -> tuple[list[BucketEntry[FileEntry]], int]:
        """Every bucket with its files' entries (contents stored); the files downloaded."""
        limit = asyncio.Semaphore(CONCURRENT_DOWNLOADS)
        buckets = []
        downloads = 0

        async def one(bucket_id: str, record: Record) -> FileEntry:
            nonlocal downloads
            name = file_name(bucket_id, record["$id"], str(record.get("signature") or ""))
            path = (
                f"/storage/buckets/{ID.custom(bucket_id)}/files/{ID.custom(record['$id'])}/download"
            )
            async with limit:
                self.files[name], downloaded = await self._stored(
                    name,
                    path,
                    int(record.get("sizeOriginal") or 0),
                    record.get("signature"),
                    str(record.get("name") or record["$id"]),
                )
            downloads += downloaded
            return FileEntry(record, name)

        for bucket in self.plan.project.buckets:
            bucket_id = bucket.record["$id"]
            entries = await together(one(bucket_id, record) for record in bucket.files)
            buckets.append(BucketEntry(bucket.record, tuple(entries)))
        return buckets, downloads

    async def code(self) -> list[FunctionEntry]:
        """Every function with the code of its active deployment stored."""
        functions = []
        for function in self.plan.project.functions:
            record, deployment = function.record, function.deployment
            path = None
            if deployment is not None:
                path = code_name(record["$id"], deployment["$id"])
                source = (
                    f"/functions/{ID.custom(record['$id'])}/deployments/"
                    f"{ID.custom(deployment['$id'])}/download"
                )
                size = int(deployment.get("sourceSize") or 0)
                self.files[path], _ = await self._stored(
                    path, source, size, None, f"deployment {deployment['$id']}"
                )
            functions.append(FunctionEntry(record, deployment, path))
        return functions


async def _gone_among(
    read: TableRead, held: asyncio.Future[npt.NDArray[np.int64]]
) -> npt.NDArray[np.int64]:
    """The ``$sequence``s of the earlier snapshot's rows (`held`) that the table no longer
    has. The service's rows up to the last of them are those rows and the changed rows
    among them, so where the changed rows read are all among them (`_among_held`: rows are
    numbered as they are made), this is every row gone, found without waiting for the
    changed rows; the rows after them were read now."""
    gone_at, _ = await gone_sequences(read.ids_only(), await held)
    return gone_at


def _among_held(held: npt.NDArray[np.int64], read_now: npt.NDArray[np.int64]) -> bool:
    """Whether each of the sorted `read_now` no greater than the last of the sorted `held` is
    one of `held`."""
    if not len(held):
        return True
    below = read_now[read_now <= held[-1]]
    return bool(np.array_equal(held[np.searchsorted(held, below)], below))


def _union(held: npt.NDArray[np.int64], more: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The ``$sequence``s of `held` and `more` (each sorted, each value once), sorted, each
    once, merged by position (`numpy.union1d` sorts everything again, through `numpy.unique`)."""
    if not len(held):
        return more
    at = np.searchsorted(held, more)
    new = more[(at == len(held)) | (held[np.minimum(at, len(held) - 1)] != more)]
    return np.insert(held, np.searchsorted(held, new), new)


async def _gone_ids(
    archive: Archive, layers: Sequence[Layer], new: pa.Table, gone_at: npt.NDArray[np.int64]
) -> pa.Array[Any]:
    """The ``$id``s of the rows gone at the ``$sequence``s `gone_at` (rows read now, `new`, or
    the earlier snapshot's on `layers`), less those read now at another ``$sequence``: a row
    deleted and made again under its ``$id`` is not gone."""
    if not len(gone_at):
        return pa.array([], pa.string())
    at = pa.array(gone_at, pa.int64())
    read_gone = pc.is_in(new.column("$sequence"), value_set=at)
    earlier = await ids_at(archive, layers, at)
    ids = pc.unique(
        pa.concat_arrays([new.filter(read_gone).column("$id").combine_chunks(), earlier])
    )
    alive = new.filter(pc.invert(read_gone)).column("$id").combine_chunks()
    return ids.filter(pc.invert(pc.is_in(ids, value_set=alive)))


async def _written(archive: Archive, name: str, table: pa.Table, **options: Any) -> FilePart:
    """`table` written to `name` in the archive (`options` for `pyarrow.parquet.write_table`),
    read back and checked (see `_checked_part`)."""
    await asyncio.to_thread(lambda: pq.write_table(table, archive.staging(name), **options))
    archive.commit(name)
    return await _checked_part(archive, name, table.num_rows)


async def _checked_part(archive: Archive, name: str, rows: int) -> FilePart:
    """The archive's copy of `name` read back: its SHA-256 and size, and its row count, which
    must be `rows`."""

    def check() -> FilePart:
        with archive.fetched(name) as path:
            counted = pq.ParquetFile(path).metadata.num_rows
        if counted != rows:
            raise ArchiveError(
                f"{name} in {archive.label} holds {counted} rows, not the {rows} written; "
                "back up again.",
                problems=[f"{name}: altered"],
            )
        return FilePart(name, rows, archive.sha256(name), archive.size(name))

    return await asyncio.to_thread(check)
