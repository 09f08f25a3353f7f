"""Checking an archive again: every file its snapshots need is there, with the size and the
SHA-256 its manifest recorded.

>>> report = verify_archive(Archive.open("backups/crm"))              # doctest: +SKIP
>>> report.ok, report.problems                                         # doctest: +SKIP
(False, ['snapshots/.../tables/crm/people/rows.parquet: altered'])
"""

from __future__ import annotations

from typing import Any

from .._exceptions import ArchiveError
from ._archive import Archive
from ._manifest import load_manifest, snapshot_ids
from ._report import VerifyReport


def verify_archive(archive: Archive, snapshot: str | None = None) -> VerifyReport:
    """Check the files of `snapshot` (default: of every complete snapshot)."""
    chosen = snapshot_ids(archive) if snapshot is None else [snapshot]
    if not chosen:
        raise ArchiveError(f"{archive.label} holds no complete snapshot; back up into it first.")
    needed: dict[str, dict[str, Any]] = {}
    for snapshot_id in chosen:
        needed.update(load_manifest(archive, snapshot_id)["files"])
    missing, altered = [], []
    for name, expected in sorted(needed.items()):
        size = archive.size(name)
        if size is None:
            missing.append(name)
        elif size != expected["bytes"] or archive.sha256(name) != expected["sha256"]:
            altered.append(name)
    return VerifyReport(archive.label, chosen, len(needed), missing, altered)


def refuse_damaged(archive: Archive, snapshot: str) -> None:
    """Raise `ArchiveError` naming each missing or altered file of `snapshot`."""
    report = verify_archive(archive, snapshot)
    if not report.ok:
        raise ArchiveError(
            f"snapshot {snapshot} of {archive.label} cannot be restored: "
            f"{'; '.join(report.problems)}. Restore another snapshot, or back up again.",
            problems=report.problems,
        )
