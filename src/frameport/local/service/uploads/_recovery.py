"""At start-up, finish or drop what a crash left of chunked uploads (files and deployments).

A completion is recorded before its joined file is moved into place, so each upload is in
one of a few states after a crash; `UploadPaths.recover` settles each from its record:
complete uploads get their joined file and lose their parts, unfinished ones keep their parts
(a client resumes them), and staged chunks, stray joins and parts of deleted uploads go.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path

from ...store._store import Store
from ._chunks import UploadPaths

#: Each area: its directory of per-owner directories, and its uploads as (owner, id, complete).
_AREAS = (
    ("files", "SELECT bucket_id, id, chunks_uploaded >= chunks_total FROM files"),
    ("functions", "SELECT function_id, id, chunks_uploaded >= chunks_total FROM deployments"),
)


def recover_uploads(store: Store, area_dirs: dict[str, Path]) -> None:
    """Settle every upload directory under `area_dirs` (`files`, `functions`)."""
    with store.read() as conn:
        for area, query in _AREAS:
            _recover_area(area_dirs[area], _uploads(conn, query))


def _uploads(conn: sqlite3.Connection, query: str) -> dict[str, dict[str, bool]]:
    by_owner: dict[str, dict[str, bool]] = defaultdict(dict)
    for owner, upload, complete in conn.execute(query):
        by_owner[owner][upload] = bool(complete)
    return by_owner


def _recover_area(root: Path, uploads: dict[str, dict[str, bool]]) -> None:
    if not root.is_dir():
        return
    for directory in root.iterdir():
        if directory.is_dir() and not directory.name.startswith("."):
            known = uploads.get(directory.name, {})
            complete = {upload for upload, done in known.items() if done}
            UploadPaths(directory).recover(complete, known)
