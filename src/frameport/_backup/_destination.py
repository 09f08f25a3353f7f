"""What a destination holds before a restore or copy starts, and the steps a restore
completed there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .._core._checkpoint import checkpoint_path, read_checkpoint, save_checkpoint
from .._core._config import default_cache_dir
from .._core._ids import ID
from ._entries import ProjectRecords, Record
from ._project import Selection, list_records

if TYPE_CHECKING:
    from .._core import Requester

_REMEDY = "delete it to restore from the start"


class Checkpoint:
    """The steps a restore completed, kept in a file that is replaced atomically (None: a
    copy, which keeps none). The file is the restore's of one snapshot (its manifest's
    SHA-256, `manifest`) into one destination; once the restore finishes, it says so
    (`finished`), and the next run starts from the beginning."""

    def __init__(self, path: Path | None, manifest: str | None = None) -> None:
        self.path = path
        self.manifest = manifest
        self.done: set[str] = set()
        self.batches: dict[str, int] = {}  # per table: the last batch wholly written
        self.sent: dict[str, int] = {}  # per table: the last batch whose rows were sent
        self.resumed = self.finished = False
        data = None if path is None else read_checkpoint(path, _REMEDY, unversioned=True)
        # A checkpoint without a manifest was written before it was kept.
        if data is not None and data.get("manifest", manifest) == manifest:
            self.done, self.batches, self.resumed = set(data["done"]), data["batches"], True
            self.sent = data.get("sent", {})
            self.finished = bool(data.get("finished"))

    @classmethod
    def for_restore(
        cls,
        destination: Requester,
        source: str,
        snapshot: str,
        manifest: str,
        part: Selection,
    ) -> Checkpoint:
        """The checkpoint of restoring `snapshot` of the archive `source` (its manifest's
        SHA-256: `manifest`), or the `part` of it chosen, into `destination`. A finished
        restore run again writes only what was lost or changed (the rest is unchanged)."""
        whole = [destination.endpoint, destination.project, source, snapshot]
        chosen = [] if part == Selection() else [part.database_ids(), part.tables]
        identity = json.dumps([*whole, *chosen])
        checkpoint = cls(checkpoint_path(default_cache_dir() / "restores", identity), manifest)
        if checkpoint.finished:
            checkpoint.done, checkpoint.batches, checkpoint.sent = set(), {}, {}
            checkpoint.resumed = checkpoint.finished = False
        return checkpoint

    def keep_what_exists(self, existing: Destination) -> None:
        """Forget the steps whose database, table, bucket, file or function the destination
        no longer holds (dropped, or the destination made anew): they are done again, and a
        finished restore is not any more. Resumed only when something is left."""
        held = {
            "database": existing.databases,
            "table": existing.tables.keys(),
            "rows": existing.tables.keys(),
            "bucket": existing.buckets,
            "file": existing.files.keys(),
            "function": existing.functions,
        }

        def holds(step: str) -> bool:
            kind, _, name = step.removesuffix(" started").partition(" ")
            return kind not in held or name in held[kind]

        kept = {step for step in self.done if holds(step)}
        self.finished = self.finished and kept == self.done
        self.done = kept
        self.batches = {key: n for key, n in self.batches.items() if key in existing.tables}
        self.sent = {key: n for key, n in self.sent.items() if key in existing.tables}
        self.resumed = self.resumed and bool(self.done or self.batches or self.sent)

    def mark(self, step: str) -> None:
        self.done.add(step)
        self._save()

    def batch(self, table: str, index: int) -> None:
        self.batches[table] = index
        self._save()

    def sending(self, table: str, index: int) -> None:
        self.sent[table] = index
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        state = {
            "manifest": self.manifest,
            "finished": self.finished,
            "done": sorted(self.done),
            "batches": self.batches,
            "sent": self.sent,
        }
        save_checkpoint(self.path, state)

    def finish(self) -> None:
        """Mark the restore finished: the file is replaced by its mark in one step, so a
        run killed at any moment leaves the one or the other."""
        self.finished = True
        self._save()


class Destination:
    """The destination's catalog as it was before the restore (what exists)."""

    def __init__(self, requester: Requester) -> None:
        self.requester = requester
        self.databases: set[str] = set()
        self.tables: dict[str, Record] = {}
        self.buckets: set[str] = set()
        self.files: dict[str, Record] = {}
        self.functions: set[str] = set()

    async def read(self, project: ProjectRecords) -> None:
        requester = self.requester
        self.databases = await _ids(requester, "/tablesdb", "databases")
        databases = [database.record["$id"] for database in project.databases]
        self.tables = await _children(
            requester, databases, self.databases, "/tablesdb/{}/tables", "tables"
        )
        self.buckets = await _ids(requester, "/storage/buckets", "buckets")
        buckets = [bucket.record["$id"] for bucket in project.buckets]
        self.files = await _children(
            requester, buckets, self.buckets, "/storage/buckets/{}/files", "files"
        )
        self.functions = await _ids(requester, "/functions", "functions")


async def _ids(requester: Requester, path: str, key: str) -> set[str]:
    return {str(record["$id"]) for record in await list_records(requester, path, key)}


async def _children(
    requester: Requester, parents: list[str], existing: set[str], path: str, key: str
) -> dict[str, Record]:
    """The records listed at `path` (``{}``: the parent's ID) of each of `parents` that
    exists, by ``parent/child`` ID."""
    found = {}
    for parent in parents:
        if parent in existing:
            for record in await list_records(requester, path.format(ID.custom(parent)), key):
                found[f"{parent}/{record['$id']}"] = record
    return found
