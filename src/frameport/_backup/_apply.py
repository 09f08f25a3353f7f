"""Putting a project into a destination: the one engine of `restore` (from an archive) and
`copy` (from another project), in the service's order (a table's indexes once its columns
are available).

IDs, permissions, row security and the enabled flags are kept; rows keep ``$createdAt`` and
``$updatedAt`` (the service takes them from API keys), while the service numbers rows itself
(``$sequence``) and sets the times of everything else. What already exists is kept (a table
gets the columns and indexes it lacks). A resumed restore writes again the batch it was
writing when it stopped, its rows already there skipped when `on_conflict` is ``"fail"``:
they are the same rows.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from .._core._ids import ID
from .._core._json import JsonObject
from .._exceptions import APIError, ConflictError, FrameportError
from .._functions import AsyncFunction, create_function
from .._storage import AsyncBucket, create_bucket
from .._tables import TableLocation, create_database
from .._tables._admin import wait_for_columns
from .._tables.writes import OnConflict, check_on_conflict, write_batches
from ._archive import Archive
from ._destination import Checkpoint, Destination
from ._entries import BucketEntry, FunctionEntry, ProjectRecords, Record
from ._project import Selection
from ._report import RestoreReport, TableOutcome, conflict_advice
from ._sources import ArchiveSource, ServiceSource
from ._unchanged import RowsThere
from ._verify import checked_snapshot

if TYPE_CHECKING:
    from .._core import Requester

COLUMN_WAIT_SECONDS = 300.0

_MODEL_ONLY = frozenset({"status", "error", "$createdAt", "$updatedAt"})

NOT_KEPT = [
    "$sequence of rows: the destination numbers its rows itself",
    "$createdAt/$updatedAt of databases, tables, columns, indexes, buckets, files, functions "
    "and deployments: the destination sets them when it creates them",
]


class ProjectSource(Protocol):
    """What a restore or a copy reads from: the project's records (as `describe_project`
    gives them), each table's rows, and the files' and functions' contents; `check` raises
    what reading them would, before anything is written."""

    label: str
    action: str  # "restore" or "copy"
    snapshot: str | None
    project: ProjectRecords

    async def check(self) -> None: ...
    def rows(self, database_id: str, table_id: str) -> AsyncGenerator[pa.RecordBatch]: ...
    async def row_ids(self, database_id: str, table_id: str) -> pa.Array[Any]: ...
    def content(self, bucket_id: str, file_id: str) -> AbstractAsyncContextManager[Path]: ...
    def code(self, function_id: str) -> AbstractAsyncContextManager[Path]: ...


def column_definition(model: Record) -> JsonObject:
    """The create body of a column from its model (what the service says of it)."""
    return {
        key: value
        for key, value in model.items()
        if key not in _MODEL_ONLY and not (key == "default" and value is None)
    }


def index_definition(model: Record, columns_key: str) -> JsonObject:
    """The create body of an index from its model."""
    columns = model.get(columns_key) or model.get("columns") or model.get("attributes") or []
    return {
        "key": model["key"],
        "type": model["type"],
        columns_key: list(columns),
        "orders": list(model.get("orders") or []),
        "lengths": list(model.get("lengths") or []),
    }


async def restore(
    requester: Requester,
    source: str | os.PathLike[str],
    snapshot: str | None = None,
    dry_run: bool = False,
    on_conflict: OnConflict = "fail",
    *,
    databases: Sequence[str] | None = None,
    tables: Sequence[str] | None = None,
    progress: bool | None = None,
) -> RestoreReport:
    """Restore a snapshot of the archive at `source` (default: its newest) into this
    project: databases, tables, columns, indexes, rows, buckets, files and functions,
    with their IDs and permissions; or only the `databases` and `tables` named (a table as
    ``"database/table"``: table IDs are unique within their database only), without the
    snapshot's buckets and functions. The archive is verified first: a missing or altered
    file refuses the restore (`ArchiveError` names it).

    A row or file the project holds as the snapshot does is left alone (counted as
    unchanged), so that restoring after one table was dropped writes that table back and
    rewrites nothing else. One the project holds otherwise follows `on_conflict`:
    ``"fail"`` stops the restore (`ConflictError`, saying where), ``"skip"`` keeps the
    project's, ``"replace"`` puts the snapshot's in its place; the report counts each case
    and lists every item the service rejected. `dry_run` writes nothing and says what the
    run would do, and where it would stop (`RestoreReport.summary`'s first line, the plan
    after it). Run again after a crash, a restore goes on where it stopped.

    >>> print(other.restore("backups/crm", tables=["crm/orders"], dry_run=True).summary())
    ... # doctest: +SKIP
    """
    rule = check_on_conflict(on_conflict)
    part = Selection.of_part(databases, tables)
    archive = Archive.open(source)
    checked = checked_snapshot(archive, snapshot)
    archived = ArchiveSource(archive, checked, part)
    checkpoint = Checkpoint(None)  # a dry run keeps none, nor does a copy
    if not dry_run:
        checkpoint = Checkpoint.for_restore(
            requester, archive.label, checked.snapshot, checked.digest, part
        )
    return await RestoreRun(requester, archived, rule, checkpoint, progress).run(dry_run)


async def copy_project(
    source: Requester,
    destination: Requester,
    selection: Selection,
    *,
    dry_run: bool = False,
    on_conflict: OnConflict = "fail",
    progress: bool | None = None,
) -> RestoreReport:
    """Copy the chosen part of the project of `source` into `destination`."""
    rule = check_on_conflict(on_conflict)
    live = await ServiceSource.make(source, selection)
    return await RestoreRun(destination, live, rule, Checkpoint(None), progress).run(dry_run)


_BUCKET_SETTINGS = {
    "fileSecurity": "file_security",
    "enabled": "enabled",
    "maximumFileSize": "maximum_file_size",
    "allowedFileExtensions": "allowed_file_extensions",
    "compression": "compression",
    "encryption": "encryption",
    "antivirus": "antivirus",
    "transformations": "transformations",
}


async def _same_file(bucket: AsyncBucket, record: Record) -> bool:
    try:
        there = await bucket.get(record["$id"])
    except APIError:
        return False
    return there.complete and there.signature == record.get("signature")


@dataclass
class RestoreRun:
    """One restore or copy putting `source`'s project into the destination (`requester`,
    which held `existing` before), following `on_conflict`, recording each step in
    `checkpoint` and what it did in `report`."""

    requester: Requester
    source: ProjectSource
    on_conflict: OnConflict
    checkpoint: Checkpoint
    progress: bool | None
    existing: Destination = field(init=False)
    report: RestoreReport = field(init=False)

    async def run(self, dry_run: bool) -> RestoreReport:
        """Every step; a dry run only says what it would do."""
        started = time.perf_counter()
        source, checkpoint = self.source, self.checkpoint
        self.existing = Destination(self.requester)
        await self.existing.read(source.project)
        checkpoint.keep_what_exists(self.existing)
        self.report = RestoreReport(
            source.label,
            source.snapshot,
            dry_run,
            source.action,
            self.on_conflict,
            resumed=checkpoint.resumed,
        )
        if dry_run:
            await self.plan()
            return self.report
        await source.check()
        for database in source.project.databases:
            await self.database(database.record)
            for table in database.tables:
                location = TableLocation(database.record["$id"], table["$id"])
                await self.table(location, table)
                await self.rows(location)
        for bucket in source.project.buckets:
            await self.bucket(bucket)
        for function in source.project.functions:
            await self.function(function)
        self.report.not_kept = list(NOT_KEPT)
        self.report.seconds = time.perf_counter() - started
        checkpoint.finish()
        return self.report

    @property
    def _theirs(self) -> str:
        return "snapshot's" if self.source.action == "restore" else "source's"

    @property
    def _differ(self) -> str:
        return f"differ from the {self._theirs}"

    async def plan(self) -> None:
        """What the run would do, as a dry run says it: the plan's lines, and the report's
        counts and `created` up to where the run would stop (`RestoreReport.stop`)."""
        existing, source, report = self.existing, self.source, self.report
        lines, stopped = report.plan, report.created.append

        def would(step: str) -> None:
            if report.stop is None:
                stopped(step)

        for database in source.project.databases:
            database_id = database.record["$id"]
            there = database_id in existing.databases
            lines.append(f"database {database_id}: {'exists' if there else 'create'}")
            if not there:
                would(f"database {database_id}")
            for table in database.tables:
                location = TableLocation(database_id, table["$id"])
                key = f"{database_id}/{table['$id']}"
                current = existing.tables.get(key)
                columns = [c["key"] for c in table.get(location.columns_key, [])]
                indexes = [i["key"] for i in table.get("indexes", [])]
                outcome = TableOutcome(key)
                if report.stop is None:
                    report.tables.append(outcome)
                if current is None:
                    ids = await source.row_ids(database_id, table["$id"])
                    outcome.rows = outcome.written = len(ids)
                    lines.append(
                        f"table {key}: create with {len(columns)} column(s) and "
                        f"{len(indexes)} index(es); {outcome.rows:,} row(s) to write"
                    )
                    would(f"table {key}")
                    continue
                have = {c["key"] for c in current.get(location.columns_key, [])}
                have_indexes = {i["key"] for i in current.get("indexes", [])}
                add = [c for c in columns if c not in have]
                add_indexes = [i for i in indexes if i not in have_indexes]
                for name in add:
                    would(f"column {location}/{name}")
                for name in add_indexes:
                    would(f"index {location}/{name}")
                differ = await self._sort_rows(location, outcome)
                lines.append(
                    f"table {key}: exists; add column(s) {add or 'none'}, index(es) "
                    f"{add_indexes or 'none'}; {outcome.written:,} new row(s), "
                    f"{outcome.unchanged:,} unchanged, {differ:,} differ from the {self._theirs}"
                )
                if differ and self.on_conflict == "fail" and report.stop is None:
                    report.stop = f"table {key}, where {differ:,} row(s) {self._differ}"
                outcome.skipped = differ if self.on_conflict == "skip" else 0
                outcome.replaced = differ if self.on_conflict == "replace" else 0
        for bucket in source.project.buckets:
            self._plan_bucket(bucket, would)
        for function in source.project.functions:
            function_id = function.record["$id"]
            there = function_id in existing.functions
            code = "deploy its active code" if function.deployment else "no code to deploy"
            lines.append(f"function {function_id}: {'exists' if there else 'create'}; {code}")
            if not there:
                would(f"function {function_id}")

    def _plan_bucket(self, bucket: BucketEntry[Record], would: Callable[[str], None]) -> None:
        report = self.report
        bucket_id = bucket.record["$id"]
        there = bucket_id in self.existing.buckets
        fresh = same = differ = 0
        for record in bucket.files:
            current = self.existing.files.get(f"{bucket_id}/{record['$id']}")
            if current is None:
                fresh += 1
            elif current.get("signature") == record.get("signature"):
                same += 1
            else:
                differ += 1
        report.plan.append(
            f"bucket {bucket_id}: {'exists' if there else 'create'}; {fresh} new file(s), "
            f"{same} unchanged, {differ} differ from the {self._theirs}"
        )
        if not there:
            would(f"bucket {bucket_id}")
        if report.stop is not None:
            return
        report.files_uploaded += fresh
        report.files_unchanged += same
        if self.on_conflict == "skip":
            report.files_skipped += differ
        elif self.on_conflict == "replace":
            report.files_replaced += differ
        elif differ:
            report.stop = f"bucket {bucket_id}, where {differ} file(s) {self._differ}"

    async def _sort_rows(self, location: TableLocation, outcome: TableOutcome) -> int:
        """Count the source's rows of the table at `location` into `outcome` (new as
        written, and unchanged); the number that differ."""
        there = await RowsThere.read(self.requester, location)
        differ = 0
        async with aclosing(self.source.rows(location.database_id, location.table_id)) as batches:
            async for batch in batches:
                outcome.rows += batch.num_rows
                sorted_rows = await there.sort(batch)
                outcome.unchanged += sorted_rows.unchanged
                differ += len(sorted_rows.differ)
        outcome.written = outcome.rows - outcome.unchanged - differ
        return differ

    async def database(self, record: Record) -> None:
        step = f"database {record['$id']}"
        if step in self.checkpoint.done:
            return
        if record["$id"] not in self.existing.databases:
            await create_database(self.requester, record["$id"], record.get("name"), exist_ok=True)
            if record.get("enabled") is False:
                await self.requester.request(
                    "PUT",
                    f"/tablesdb/{ID.custom(record['$id'])}",
                    json={"name": record.get("name") or record["$id"], "enabled": False},
                )
            self.report.created.append(step)
        self.checkpoint.mark(step)

    async def table(self, location: TableLocation, record: Record) -> None:
        step = f"table {location.database_id}/{location.table_id}"
        if step in self.checkpoint.done:
            return
        current = self.existing.tables.get(f"{location.database_id}/{location.table_id}")
        columns = record.get(location.columns_key, [])
        if current is None:
            body = {
                location.id_param: location.table_id,
                "name": record.get("name") or location.table_id,
                "permissions": list(record.get("$permissions") or []),
                location.security_param: bool(record.get(location.security_param)),
                "enabled": record.get("enabled", True),
                location.columns_key: [column_definition(column) for column in columns],
            }
            await self.requester.request(
                "POST", location.container_path, json=body, idempotent=True, read_back=location.path
            )
            self.report.created.append(step)
            have: set[str] = {c["key"] for c in columns}
            have_indexes: set[str] = set()
        else:
            have = {c["key"] for c in current.get(location.columns_key, [])}
            have_indexes = {i["key"] for i in current.get("indexes", [])}
            for column in columns:
                if column["key"] in have:
                    continue
                definition = column_definition(column)
                route = (
                    definition.get("format")
                    if definition.get("format") in ("email", "enum", "ip", "url")
                    else definition["type"]
                )
                try:
                    await self.requester.request(
                        "POST", f"{location.path}/{location.columns_key}/{route}", json=definition
                    )
                    have.add(column["key"])
                    self.report.created.append(f"column {location}/{column['key']}")
                except APIError as exc:
                    self.report.rejected.append((f"column {location}/{column['key']}", str(exc)))
        try:
            await wait_for_columns(self.requester, location, have, timeout=COLUMN_WAIT_SECONDS)
        except FrameportError as exc:
            self.report.rejected.append((f"columns of {location}", str(exc)))
        for index in record.get("indexes", []):
            if index["key"] in have_indexes:
                continue
            try:
                body = index_definition(index, location.columns_key)
                await self.requester.request("POST", f"{location.path}/indexes", json=body)
                self.report.created.append(f"index {location}/{index['key']}")
            except ConflictError as exc:
                if exc.type != "index_already_exists":
                    self.report.rejected.append((f"index {location}/{index['key']}", str(exc)))
            except APIError as exc:
                self.report.rejected.append((f"index {location}/{index['key']}", str(exc)))
        self.checkpoint.mark(step)

    async def rows(self, location: TableLocation) -> None:
        key = f"{location.database_id}/{location.table_id}"
        step = f"rows {key}"
        outcome = TableOutcome(key)
        self.report.tables.append(outcome)
        if step in self.checkpoint.done:
            return
        after = self.checkpoint.batches.get(key, -1)
        # The batches a stopped run had sent past its last whole one may be partly there.
        maybe_written = max(0, self.checkpoint.sent.get(key, -1) - after)
        # Rows of a table there before are sorted: those there as the source's are left alone.
        there = None
        if key in self.existing.tables:
            there = await RowsThere.read(self.requester, location)
        differ: list[str] = []

        async def remaining() -> AsyncGenerator[pa.RecordBatch]:
            index = -1
            async with aclosing(
                self.source.rows(location.database_id, location.table_id)
            ) as batches:
                async for batch in batches:
                    index += 1
                    outcome.rows += batch.num_rows
                    if index > after + maybe_written and there is not None:
                        sorted_rows = await there.sort(batch)
                        outcome.unchanged += sorted_rows.unchanged
                        differ.extend(sorted_rows.differ)
                        batch = sorted_rows.rest
                    if index > after:
                        yield batch

        async with aclosing(remaining()) as batches:
            try:
                counts = await write_batches(
                    self.requester,
                    location,
                    batches,
                    on_conflict=self.on_conflict,
                    maybe_written=maybe_written,
                    on_send=lambda index: self.checkpoint.sending(key, after + 1 + index),
                    on_batch=lambda index: self.checkpoint.batch(key, after + 1 + index),
                )
            except ConflictError as exc:
                # The rows found were the destination's own: a run again counts them as such.
                self.checkpoint.sending(key, self.checkpoint.batches.get(key, -1))
                example = f", e.g. {differ[-1]!r}" if differ else ""
                exc.hint = (
                    f"Rows of table {key} differ from the {self._theirs} ({len(differ):,} found "
                    f"so far{example}), so the {self.source.action} stopped there. Run it again: "
                    f"{conflict_advice(self.source.action)}."
                )
                raise
        outcome.written = counts.written
        outcome.replaced = counts.replaced
        outcome.skipped = counts.skipped
        rejected = [(f"row {key}/{row_id}", reason) for row_id, reason in counts.rejected]
        self.report.rejected.extend(rejected)
        self.checkpoint.mark(step)

    async def bucket(self, bucket: BucketEntry[Record]) -> None:
        record = bucket.record
        bucket_id = record["$id"]
        step = f"bucket {bucket_id}"
        if step not in self.checkpoint.done:
            if bucket_id not in self.existing.buckets:
                settings = {
                    name: record[key] for key, name in _BUCKET_SETTINGS.items() if key in record
                }
                permissions = list(record.get("$permissions") or [])
                await create_bucket(
                    self.requester,
                    bucket_id,
                    record.get("name"),
                    exist_ok=True,
                    permissions=permissions,
                    **settings,
                )
                self.report.created.append(step)
            self.checkpoint.mark(step)
        target = AsyncBucket(self.requester, bucket_id)
        for file in bucket.files:
            file_step = f"file {bucket_id}/{file['$id']}"
            if file_step in self.checkpoint.done:
                continue
            current = self.existing.files.get(f"{bucket_id}/{file['$id']}")
            # A file a killed run had started uploading is this restore's.
            if current is not None and f"{file_step} started" not in self.checkpoint.done:
                same = current.get("signature") == file.get("signature")
                if same or self.on_conflict == "skip":
                    self.report.files_unchanged += same
                    self.report.files_skipped += not same
                    self.checkpoint.mark(file_step)
                    continue
                if self.on_conflict == "fail":
                    raise ConflictError(
                        f"file {file['$id']} of bucket {bucket_id} exists with other content "
                        f"than the {self._theirs}, so the {self.source.action} stopped there. "
                        f"Run it again: {conflict_advice(self.source.action)}.",
                        status=409,
                        type="storage_file_already_exists",
                        method="POST",
                        url=f"/storage/buckets/{bucket_id}/files",
                    )
                await target.delete(file["$id"])
                self.report.files_replaced += 1
            else:
                self.report.files_uploaded += 1
            self.checkpoint.mark(f"{file_step} started")
            try:
                async with self.source.content(bucket_id, file["$id"]) as path:
                    await target.upload_file(
                        path,
                        name=file.get("name") or file["$id"],
                        file_id=file["$id"],
                        permissions=list(file.get("$permissions") or []) or None,
                        resume=True,
                        progress=self.progress,
                    )
            except ConflictError as exc:
                if not await _same_file(target, file):
                    self.report.rejected.append((file_step, str(exc)))
            except APIError as exc:
                self.report.rejected.append((file_step, str(exc)))
            self.checkpoint.mark(file_step)

    async def function(self, function: FunctionEntry) -> None:
        record = function.record
        function_id = record["$id"]
        step = f"function {function_id}"
        if step in self.checkpoint.done:
            return
        if function_id not in self.existing.functions:
            await create_function(
                self.requester,
                function_id,
                record.get("name") or function_id,
                record["runtime"],
                entrypoint=record.get("entrypoint") or None,
                commands=record.get("commands") or None,
                exist_ok=True,
            )
            self.report.created.append(step)
        deployment = function.deployment
        if deployment is not None:
            target = AsyncFunction(self.requester, function_id)
            async with self.source.code(function_id) as path:
                made = await target.deploy(
                    path,
                    entrypoint=deployment.get("entrypoint") or None,
                    commands=deployment.get("commands") or None,
                    activate=True,
                    progress=self.progress,
                )
            try:
                await target.wait(made.id)
            except FrameportError as exc:
                self.report.rejected.append((f"deployment of function {function_id}", str(exc)))
        self.checkpoint.mark(step)
