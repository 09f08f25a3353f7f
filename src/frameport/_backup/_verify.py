"""Checking an archive again: each snapshot's manifest and plan have the SHA-256 its
``hashes.json`` recorded, and every file its manifest lists, and every file a restore of it
would open (which must be listed), is a file inside the archive with the size and SHA-256
listed. The hashes find a file damaged or edited by mistake; whoever edits an archive on
purpose can write its hashes again.

>>> report = verify("backups/crm")                                   # doctest: +SKIP
>>> report.ok, report.problems                                         # doctest: +SKIP
(False, ['snapshots/.../tables/crm/people/rows.parquet: altered'])
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from .._exceptions import ArchiveError
from ._archive import LEADS_OUT, Archive, name_problem, refusal
from ._entries import FileHash, Hashes, Manifest, Misshapen
from ._manifest import (
    chosen_snapshot,
    hashes_name,
    manifest_name,
    parse_manifest,
    plan_name,
    snapshot_ids,
)
from ._report import VerifyReport

NOT_LISTED = "not listed with its hash in the manifest"


@dataclass(frozen=True)
class CheckedSnapshot:
    """The `snapshot` found intact: its `manifest`, the SHA-256 of the manifest's file
    (`digest`), and the files hashed as earlier versions hashed them (`as_written_before`:
    read them as those versions did, see `Archive.fetched`)."""

    snapshot: str
    manifest: Manifest
    digest: str
    as_written_before: frozenset[str]


@dataclass
class _Findings:
    archive: Archive
    listed: dict[str, FileHash] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    altered: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # name: what is wrong with it
    unhashed: list[str] = field(default_factory=list)
    as_written_before: set[str] = field(default_factory=set)
    checked: set[str] = field(default_factory=set)

    def refuse(self, error: ArchiveError, name: str) -> None:
        for line in error.problems or [f"{name}: {error}"]:
            refused_name, _, problem = line.partition(": ")
            self.refused.setdefault(refused_name, problem)

    def intact(self, name: str, entry: FileHash) -> bool:
        """Whether the file `name` is inside the archive with the size and SHA-256 of
        `entry` (else it is noted missing, altered or refused)."""
        archive = self.archive
        self.checked.add(name)
        if archive.leads_out(name):
            self.refused.setdefault(name, LEADS_OUT)
            return False
        size = archive.size(name)
        if size is None:
            self.missing.append(name)
            return False
        if size == entry.bytes and archive.sha256(name) == entry.sha256:
            return True
        if (
            size == entry.bytes
            and name.endswith(".gz")
            and archive.sha256(name, as_written_before=True) == entry.sha256
        ):
            self.as_written_before.add(name)
            return True
        self.altered.append(name)
        return False

    def report(self, snapshots: list[str]) -> VerifyReport:
        refused = [f"{name}: {problem}" for name, problem in sorted(self.refused.items())]
        return VerifyReport(
            self.archive.label,
            snapshots,
            len(self.listed),
            sorted(self.missing),
            sorted(self.altered),
            refused,
            self.unhashed,
        )


def _snapshot_hashes(findings: _Findings, snapshot: str) -> dict[str, FileHash] | None:
    """The hashes of the manifest and plan of `snapshot`: ``{}`` when the archive holds none
    (written before they were), None when they cannot be read."""
    archive = findings.archive
    name = hashes_name(snapshot)
    if not archive.exists(name):
        findings.unhashed.append(snapshot)
        return {}
    wanted = (manifest_name(snapshot), plan_name(snapshot))
    try:
        try:
            hashes = Hashes.from_json(archive.read_json(name)).files
            if not all(item in hashes for item in wanted):
                raise Misshapen(f"it lacks the hash of {' or '.join(wanted)}")
        except Misshapen as exc:
            raise refusal(name, archive.label, f"not the hashes of a snapshot ({exc})") from exc
    except ArchiveError as exc:
        findings.refuse(exc, name)
        return None
    return {item: hashes[item] for item in wanted}


def _check_snapshot(findings: _Findings, snapshot: str) -> tuple[Manifest, str] | None:
    """The manifest of `snapshot` and its SHA-256, the files it lists and those a restore
    would open noted in `findings`; None when the manifest cannot be trusted or read."""
    archive = findings.archive
    hashes = _snapshot_hashes(findings, snapshot)
    if hashes is None:
        return None
    findings.listed.update(hashes)
    name = manifest_name(snapshot)
    if hashes and not all([findings.intact(item, entry) for item, entry in hashes.items()]):
        return None
    try:
        data = archive.read_bytes(name)
        manifest = parse_manifest(archive, snapshot, data)
    except ArchiveError as exc:
        findings.refuse(exc, name)
        return None
    for item, entry in manifest.files.items():
        problem = name_problem(item)
        if problem is None:
            findings.listed[item] = entry
        else:
            findings.refused.setdefault(item, problem)
    for item in manifest.opened_names():
        problem = name_problem(item) or (None if item in manifest.files else NOT_LISTED)
        if problem is not None:
            findings.refused.setdefault(item, problem)
    return manifest, hashlib.sha256(data).hexdigest()


def _check(
    archive: Archive, snapshots: list[str]
) -> tuple[_Findings, dict[str, tuple[Manifest, str]]]:
    """What checking `snapshots` finds, and the manifest and its SHA-256 of each snapshot
    whose manifest could be read."""
    findings = _Findings(archive)
    manifests = {}
    for snapshot in snapshots:
        checked = _check_snapshot(findings, snapshot)
        if checked is not None:
            manifests[snapshot] = checked
    for name, entry in sorted(findings.listed.items()):
        if name not in findings.refused and name not in findings.checked:
            findings.intact(name, entry)
    return findings, manifests


def verify(target: str | os.PathLike[str], snapshot: str | None = None) -> VerifyReport:
    """Check the files of `snapshot` (default: of every complete snapshot) of the archive at
    `target`."""
    archive = Archive.open(target)
    one = chosen_snapshot(archive, snapshot)  # raises when there is none
    chosen = snapshot_ids(archive) if snapshot is None else [one]
    findings, _ = _check(archive, chosen)
    return findings.report(chosen)


def checked_snapshot(archive: Archive, snapshot: str | None = None) -> CheckedSnapshot:
    """The snapshot `snapshot` (default: the newest) checked; `ArchiveError` naming each
    file missing, altered or refused."""
    chosen = chosen_snapshot(archive, snapshot)
    findings, manifests = _check(archive, [chosen])
    report = findings.report([chosen])
    if not report.ok:
        raise ArchiveError(
            f"snapshot {chosen} of {archive.label} cannot be restored: "
            f"{'; '.join(report.problems)}. Restore another snapshot, or back up again.",
            problems=report.problems,
        )
    manifest, digest = manifests[chosen]
    return CheckedSnapshot(chosen, manifest, digest, frozenset(findings.as_written_before))
