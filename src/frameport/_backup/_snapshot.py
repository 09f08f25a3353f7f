"""One backup: a snapshot of the project written into an archive, checked as it is written,
resumable after a crash, and incremental when the archive already holds a snapshot.

1. The plan is fixed first (``plan.json``): the service's time, the records of the chosen
   databases, tables, buckets, files and functions, and each table's last ``$sequence``.
   Each table is read up to that bound, so rows created during the backup wait for the next.
2. Each table's rows go to Parquet through the resumable export (``$sequence`` segments,
   every ``$`` field kept). With an earlier snapshot of the same table (same columns), only
   the rows updated since its time (less `lag` seconds) are read, and the rows gone since
   are found by probed ranges (`changes.gone_sequences`) of the ``$sequence``s the earlier
   snapshot held (its ``held`` file); the table's layers then refer to the earlier
   snapshot's files.
3. Files (their content, checked against the service's size and MD5) and the code of each
   function's active deployment are downloaded once: a file whose signature an earlier
   snapshot holds is not read again.
4. Every file written is read back from the archive for its SHA-256 and, for rows, its row
   count, which must equal the rows the export listed; the manifest is written last, with
   those figures. A run killed at any point continues where it stopped when run again.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._core._ids import ID
from .._core._queries import limit_query
from .._core._together import cancel_and_wait, together
from .._exceptions import ArchiveError, FrameportError
from .._tables import TableLocation
from .._tables.changes import (
    gone_sequences,
    minus_seconds,
    service_now,
    service_text,
    sorted_sequences,
    updated_since,
)
from .._tables.export import column_encodings, export_resumable
from .._tables.read import (
    ALL_SYSTEM,
    QuerySpec,
    SequenceRange,
    TableRead,
    table_last_sequence,
)
from .._transfer._download import ResumableDownload
from ._archive import Archive
from ._manifest import (
    FORMAT,
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
    tables_of,
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
    *,
    databases: Sequence[str] | None = None,
    buckets: Sequence[str] | None = None,
    functions: Sequence[str] | None = None,
    lag: float = DEFAULT_LAG,
    progress: bool | None = None,
) -> BackupReport:
    """Back up the project (or the chosen databases, buckets and functions) into `target`."""
    started = time.perf_counter()
    selection = Selection(databases, buckets, functions)
    archive = Archive.open(target)
    plan, reads = await _plan(requester, archive, selection)
    base = None if plan["base"] is None else load_manifest(archive, plan["base"])
    snapshot = plan["snapshot"]
    files: dict[str, dict[str, Any]] = {}
    # The full layers' rows are read one table at a time (see `INCREMENTAL_RANGES`).
    exporting = asyncio.Semaphore(1)
    database_entries = []
    rows_read = 0
    for database in plan["project"]["databases"]:
        backed_up = await together(
            _back_up_table(requester, archive, plan, base, database["record"], record, files,
                           lag, progress, exporting, reads)
            for record in database["tables"]
        )  # fmt: skip
        rows_read += sum(read for _, read in backed_up)
        database_entries.append({"record": database["record"], "tables": [e for e, _ in backed_up]})
    bucket_entries, downloaded = await _back_up_files(
        requester, archive, plan, base, files, progress
    )
    function_entries = await _back_up_code(requester, archive, plan, base, files, progress)
    manifest = {
        "format": FORMAT,
        "snapshot": snapshot,
        "base": plan["base"],
        "time": plan["time"],
        "service": plan["service"],
        "selection": plan["selection"],
        "databases": database_entries,
        "buckets": bucket_entries,
        "functions": function_entries,
        "files": files,
    }
    write_manifest(archive, manifest)
    entries = [table for _, table in tables_of(manifest)]
    return BackupReport(
        target=archive.label,
        snapshot=snapshot,
        base=plan["base"],
        resumed=reads is None,
        tables=len(entries),
        rows=sum(int(table["rows"]) for table in entries),
        rows_read=rows_read,
        files=sum(len(bucket["files"]) for bucket in bucket_entries),
        files_downloaded=downloaded,
        seconds=time.perf_counter() - started,
    )


# ---------------------------------------------------------------------------------------------
# The plan


async def _plan(
    requester: Requester, archive: Archive, selection: Selection
) -> tuple[dict[str, Any], dict[TableLocation, TableRead] | None]:
    """The plan of the unfinished backup in the archive (same selection; None), or a new one
    with the reads of its tables (made for their bounds)."""
    unfinished = unfinished_snapshot(archive)
    if unfinished is not None:
        plan: dict[str, Any] = archive.read_json(plan_name(unfinished))
        if plan.get("format") == FORMAT and plan["selection"] == selection.to_json():
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
        databases = project["databases"]
        tables = [(TableLocation(database["record"]["$id"], table["$id"]), table)
                  for database in databases for table in database["tables"]]  # fmt: skip
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
    bounds = {f"{location.database_id}/{location.table_id}": upper
              for location, upper in zip(locations, uppers, strict=True)}  # fmt: skip
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    plan = {
        "format": FORMAT,
        # Numbered first, so that names sort in the order the snapshots were taken.
        "snapshot": f"{len(archive.folders(SNAPSHOTS)) + 1:05d}-{stamp}",
        "base": complete[-1] if complete else None,
        "time": moment,
        "service": {
            "endpoint": requester.endpoint,
            "project": requester.project,
            "response_format": requester.response_format,
            "version": version,
        },
        "selection": selection.to_json(),
        "project": project,
        "bounds": bounds,
    }
    archive.write_json(plan_name(plan["snapshot"]), plan)
    return plan, dict(zip(locations, made, strict=True))


async def _service_version(requester: Requester) -> str | None:
    """The service's version (``GET /health/version``), or None where it is not told."""
    try:
        answer = await requester.request_json("GET", "/health/version")
    except FrameportError:  # a service without the route still gets its backup
        return None
    version = answer.get("version") if isinstance(answer, dict) else None
    return str(version) if version else None


# ---------------------------------------------------------------------------------------------
# Tables


def _column_shape(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c.get("key"), c.get("type"), c.get("format"), bool(c.get("array")))
            for c in record.get("columns", [])]  # fmt: skip


def _base_entry(
    base: dict[str, Any] | None, database_id: str, record: dict[str, Any]
) -> dict[str, Any] | None:
    """The earlier snapshot's entry of the same table, if its columns are the same."""
    if base is None:
        return None
    for database, table in tables_of(base):
        if database["$id"] == database_id and table["record"]["$id"] == record["$id"]:
            same = _column_shape(table["record"]) == _column_shape(record)
            return table if same and table.get("time") else None
    return None


async def _back_up_table(
    requester: Requester,
    archive: Archive,
    plan: dict[str, Any],
    base: dict[str, Any] | None,
    database: dict[str, Any],
    record: dict[str, Any],
    files: dict[str, dict[str, Any]],
    lag: float,
    progress: bool | None,
    exporting: asyncio.Semaphore,
    reads: dict[TableLocation, TableRead] | None,
) -> tuple[dict[str, Any], int]:
    """The table's manifest entry (its rows written and checked first), and the rows read."""
    location = TableLocation(database["$id"], record["$id"])
    folder = table_folder(plan["snapshot"], location.database_id, location.table_id)
    bound = plan["bounds"][f"{location.database_id}/{location.table_id}"]
    earlier = _base_entry(base, location.database_id, record)
    done_name = f"{folder}/layer.json"
    if archive.exists(done_name):
        done: dict[str, Any] = archive.read_json(done_name)
    else:
        read = None if reads is None else reads.get(location)
        if read is None:
            read = await TableRead.make(requester, location, QuerySpec(system=ALL_SYSTEM))
        done = await _write_layer(archive, plan, read, folder, bound, earlier, lag, progress,
                                  exporting)  # fmt: skip
        archive.write_json(done_name, done)
    layer = done["layer"]
    layers = [*(earlier["layers"] if earlier else []), layer]
    for part in ("rows", "gone", "held"):
        if layer.get(part):
            files[layer[part]["path"]] = {"sha256": layer[part]["sha256"],
                                          "bytes": layer[part]["bytes"]}  # fmt: skip
    for older in layers[:-1]:
        for part in ("rows", "gone"):
            if older.get(part):
                files[older[part]["path"]] = base["files"][older[part]["path"]]  # type: ignore[index]
    content = hashlib.sha256()
    for item in layers:
        for part in ("rows", "gone"):
            content.update((item.get(part) or {}).get("sha256", "-").encode())
    entry = {
        "record": record,
        "rows": done["rows"],
        "bound": bound,
        "time": plan["time"],
        "layers": layers,
        "content_hash": content.hexdigest(),
    }
    return entry, int(layer["rows"]["rows"])


async def _write_layer(
    archive: Archive,
    plan: dict[str, Any],
    read: TableRead,
    folder: str,
    bound: int | None,
    earlier: dict[str, Any] | None,
    lag: float,
    progress: bool | None,
    exporting: asyncio.Semaphore,
) -> dict[str, Any]:
    """Read the table's rows (`read`: all of them, with every ``$`` field) for this
    snapshot into Parquet; its layer and row count."""
    whole = SequenceRange(0, bound or 0)
    bounded = read.narrowed(*whole.queries(read.member))
    changed = (
        bounded
        if earlier is None
        else updated_since(bounded, minus_seconds(earlier["time"], lag)).at_most(INCREMENTAL_RANGES)
    )
    name = f"{folder}/rows.parquet"
    earlier_held = early_gone = None
    try:
        # The earlier snapshot's rows are read from the archive, and those gone from the
        # service are looked for, while the changed rows come (see `_gone_among`).
        if earlier is not None:
            earlier_held = asyncio.ensure_future(held_sequences(archive, earlier["layers"]))
            early_gone = asyncio.ensure_future(_gone_among(read, earlier_held))
        # The read stops at the snapshot's bound: the rows past it are the next backup's.
        report = await export_resumable(
            changed,
            archive.staging(name),
            progress=progress,
            count_rows_left=False,
            # An incremental layer's few changed rows lie anywhere in the table; a full
            # layer's segments start at its first row.
            within=None if earlier is None else whole,
            # Full layers are read one at a time (see `INCREMENTAL_RANGES`); one's rows are
            # joined while the next's come.
            reading=exporting if earlier is None else None,
        )
        if not report.ok:
            raise ArchiveError(
                f"the rows of {read.location} did not pass the export's checks "
                f"({report.summary()}); back up again.",
            )
        archive.commit(name)
        layer: dict[str, Any] = {
            "snapshot": plan["snapshot"],
            "rows": await _checked_part(archive, name, report.rows),
            "gone": None,
        }
        if earlier is None or earlier_held is None or early_gone is None:  # a full layer's: all
            return {"layer": layer, "rows": report.rows}
        new = await asyncio.to_thread(read_columns, archive, name, ["$id", "$sequence"])
        earlier_sequences = await earlier_held
        read_now = sorted_sequences(new.column("$sequence").to_numpy())
        # The rows as they are now: the earlier ones and the ones read now, less the gone.
        candidates = _union(earlier_sequences, read_now)
        if _among_held(earlier_sequences, read_now):
            gone_at = await early_gone
        else:  # Probed on `read`, not `bounded`: the probed ranges lie under the bound already.
            gone_at, _ = await gone_sequences(read.ids_only(), candidates)
        held = np.delete(candidates, np.searchsorted(candidates, gone_at))
        gone = await _gone_ids(archive, earlier["layers"], new, gone_at)
        if len(gone):
            layer["gone"] = await _written(archive, f"{folder}/gone.parquet",
                                           pa.table({"$id": gone}))  # fmt: skip
        sequences = pa.table({"$sequence": pa.array(held, pa.int64())})
        # Rising numbers, delta-encoded: a few bits each (3 KB for 500,000).
        layer["held"] = await _written(archive, f"{folder}/held.parquet", sequences,
                                       **column_encodings(sequences.schema))  # fmt: skip
        return {"layer": layer, "rows": len(held)}
    finally:
        if earlier_held is not None and early_gone is not None:
            await cancel_and_wait(earlier_held, early_gone)


async def _gone_among(
    read: TableRead, held: asyncio.Future[np.ndarray[Any, Any]]
) -> np.ndarray[Any, Any]:
    """The ``$sequence``s of the earlier snapshot's rows (`held`) that the table no longer
    has. The service's rows up to the last of them are those rows and the changed rows
    among them, so where the changed rows read are all among them (`_among_held`: rows are
    numbered as they are made), this is every row gone, found without waiting for the
    changed rows; the rows after them were read now."""
    gone_at, _ = await gone_sequences(read.ids_only(), await held)
    return gone_at


def _among_held(held: np.ndarray[Any, Any], read_now: np.ndarray[Any, Any]) -> bool:
    """Whether each of the sorted `read_now` no greater than the last of the sorted `held` is
    one of `held`."""
    if not len(held):
        return True
    below = read_now[read_now <= held[-1]]
    return bool(np.array_equal(held[np.searchsorted(held, below)], below))


def _union(held: np.ndarray[Any, Any], more: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The ``$sequence``s of `held` and `more` (each sorted, each value once), sorted, each
    once (`numpy.union1d`, through `numpy.unique`, took 300 ms for 500,000; this 2 ms)."""
    if not len(held):
        return more
    at = np.searchsorted(held, more)
    new = more[(at == len(held)) | (held[np.minimum(at, len(held) - 1)] != more)]
    return np.insert(held, np.searchsorted(held, new), new)


async def _gone_ids(
    archive: Archive, layers: list[dict[str, Any]], new: pa.Table, gone_at: np.ndarray[Any, Any]
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


async def _written(archive: Archive, name: str, table: pa.Table, **options: Any) -> dict[str, Any]:
    """`table` written to `name` in the archive (`options` for `pyarrow.parquet.write_table`),
    read back and checked (see `_checked_part`)."""
    await asyncio.to_thread(lambda: pq.write_table(table, archive.staging(name), **options))
    archive.commit(name)
    return await _checked_part(archive, name, table.num_rows)


async def _checked_part(archive: Archive, name: str, rows: int) -> dict[str, Any]:
    """The archive's copy of `name` read back: its SHA-256 and size, and its row count, which
    must be `rows`."""

    def check() -> dict[str, Any]:
        with archive.fetched(name) as path:
            counted = pq.ParquetFile(path).metadata.num_rows
        if counted != rows:
            raise ArchiveError(
                f"{name} in {archive.label} holds {counted} rows, not the {rows} written; "
                "back up again.",
                problems=[f"{name}: altered"],
            )
        return {"path": name, "rows": rows, "sha256": archive.sha256(name),
                "bytes": archive.size(name)}  # fmt: skip

    return await asyncio.to_thread(check)


# ---------------------------------------------------------------------------------------------
# Files and code


async def _stored(
    requester: Requester,
    archive: Archive,
    base: dict[str, Any] | None,
    name: str,
    source_path: str,
    size: int,
    md5: str | None,
    label: str,
    progress: bool | None,
) -> tuple[dict[str, Any], bool]:
    """The archive's entry of the content `name`, downloaded from `source_path` unless an
    earlier snapshot or a killed run already stored it; whether it was downloaded."""
    if base is not None and name in base["files"] and archive.size(name) == size:
        return base["files"][name], False
    downloaded = False
    if archive.size(name) != size:
        download = ResumableDownload(
            requester, source_path, archive.staging(name), size=size, md5=md5 or None,
            label=label, progress=progress,
        )  # fmt: skip
        await download.run()
        archive.commit(name)
        downloaded = True
    digest = await asyncio.to_thread(archive.sha256, name)
    return {"sha256": digest, "bytes": archive.size(name)}, downloaded


async def _back_up_files(
    requester: Requester,
    archive: Archive,
    plan: dict[str, Any],
    base: dict[str, Any] | None,
    files: dict[str, dict[str, Any]],
    progress: bool | None,
) -> tuple[list[dict[str, Any]], int]:
    """Every bucket with its files' entries (contents stored); the files downloaded."""
    limit = asyncio.Semaphore(CONCURRENT_DOWNLOADS)
    buckets = []
    downloads = 0

    async def one(bucket_id: str, record: dict[str, Any]) -> dict[str, Any]:
        nonlocal downloads
        name = file_name(bucket_id, record["$id"], str(record.get("signature") or ""))
        path = f"/storage/buckets/{ID.custom(bucket_id)}/files/{ID.custom(record['$id'])}/download"
        async with limit:
            entry, downloaded = await _stored(
                requester, archive, base, name, path, int(record.get("sizeOriginal") or 0),
                record.get("signature"), str(record.get("name") or record["$id"]), progress,
            )  # fmt: skip
        files[name] = entry
        downloads += downloaded
        return {"record": record, "path": name}

    for bucket in plan["project"]["buckets"]:
        bucket_id = bucket["record"]["$id"]
        entries = await together(one(bucket_id, record) for record in bucket["files"])
        buckets.append({"record": bucket["record"], "files": list(entries)})
    return buckets, downloads


async def _back_up_code(
    requester: Requester,
    archive: Archive,
    plan: dict[str, Any],
    base: dict[str, Any] | None,
    files: dict[str, dict[str, Any]],
    progress: bool | None,
) -> list[dict[str, Any]]:
    """Every function with the code of its active deployment stored."""
    functions = []
    for function in plan["project"]["functions"]:
        record, deployment = function["record"], function["deployment"]
        path = None
        if deployment is not None:
            path = code_name(record["$id"], deployment["$id"])
            source = (f"/functions/{ID.custom(record['$id'])}/deployments/"
                      f"{ID.custom(deployment['$id'])}/download")  # fmt: skip
            size = int(deployment.get("sourceSize") or 0)
            files[path], _ = await _stored(
                requester, archive, base, path, source, size, None,
                f"deployment {deployment['$id']}", progress,
            )  # fmt: skip
        functions.append({"record": record, "deployment": deployment, "path": path})
    return functions
