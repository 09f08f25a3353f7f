"""Whole projects: backups into an archive (a folder or any fsspec URL), checked, resumable
and incremental; their verification; restores from them; and copies from one project into
another. `_snapshot` writes a snapshot, `_verify` checks an archive, `_apply` puts a project
into a destination from an archive (`_sources.ArchiveSource`) or a live project
(`_sources.ServiceSource`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._tables.writes import OnConflict, check_on_conflict
from ._apply import Checkpoint, apply_project
from ._archive import Archive
from ._project import Selection
from ._report import BackupReport, RestoreReport, TableOutcome, VerifyReport
from ._snapshot import DEFAULT_LAG, run_backup
from ._sources import ArchiveSource, ServiceSource
from ._verify import checked_snapshot, verify_archive

if TYPE_CHECKING:
    from .._core import Requester

__all__ = [
    "BackupReport",
    "RestoreReport",
    "TableOutcome",
    "VerifyReport",
    "backup",
    "copy_project",
    "restore",
    "verify",
]


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
    selection = Selection(databases, buckets, functions)
    return await run_backup(requester, os.fspath(target), selection, lag=lag, progress=progress)


def verify(target: str | os.PathLike[str], snapshot: str | None = None) -> VerifyReport:
    """Check every file the snapshots of the archive at `target` need (or one snapshot's)."""
    return verify_archive(Archive.open(target), snapshot)


async def restore(
    requester: Requester,
    source: str | os.PathLike[str],
    *,
    snapshot: str | None = None,
    dry_run: bool = False,
    on_conflict: OnConflict = "fail",
    progress: bool | None = None,
) -> RestoreReport:
    """Restore a snapshot of the archive at `source` (default: its newest) into the project:
    checked first (see `_verify`), and not again once a run finished it (see `Checkpoint`)."""
    rule = check_on_conflict(on_conflict)
    archive = Archive.open(source)
    checked = checked_snapshot(archive, snapshot)
    checkpoint = Checkpoint(None)
    if not dry_run:
        checkpoint = Checkpoint.for_restore(
            requester, archive.label, checked.snapshot, checked.digest, rule
        )
    return await apply_project(
        requester, ArchiveSource(archive, checked), on_conflict=rule, dry_run=dry_run,
        checkpoint=checkpoint, progress=progress,
    )  # fmt: skip


async def copy_project(
    source: Requester,
    destination: Requester,
    *,
    databases: Sequence[str] | None = None,
    buckets: Sequence[str] | None = None,
    functions: Sequence[str] | None = None,
    dry_run: bool = False,
    on_conflict: OnConflict = "fail",
    progress: bool | None = None,
) -> RestoreReport:
    """Copy the project of `source` (or the chosen parts) into `destination`."""
    rule = check_on_conflict(on_conflict)
    live = await ServiceSource.make(source, Selection(databases, buckets, functions))
    return await apply_project(
        destination, live, on_conflict=rule, dry_run=dry_run, checkpoint=Checkpoint(None),
        progress=progress,
    )  # fmt: skip
