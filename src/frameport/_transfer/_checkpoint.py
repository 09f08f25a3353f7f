"""Resume state of chunked uploads, one small JSON file per upload in the user's cache.

The service counts the parts it holds (``chunksUploaded``) but does not say which ones, so the
client writes down every part the service acknowledged; a resumed upload sends the others.

Checkpoints live in ``$FRAMEPORT_CACHE_DIR/uploads/`` if that variable is set, else in
``$XDG_CACHE_HOME/frameport/uploads/`` (``~/.cache/frameport/uploads/``; on Windows
``%LOCALAPPDATA%\\frameport\\uploads``). They hold no secret: the endpoint, project, target,
source path, size, modification time, upload ID, name and acknowledged part numbers.

>>> store = CheckpointStore(Path("/tmp/frameport-doctest"))
>>> checkpoint = UploadCheckpoint(
...     endpoint="http://127.0.0.1:8080/v1", project="demo", target="bucket:reports",
...     source="/data/big.csv", size=12_000_000, mtime_ns=1, upload_id="abc", name="big.csv",
... )
>>> store.save(checkpoint)
>>> store.load(checkpoint.endpoint, "demo", "bucket:reports", Path("/data/big.csv")).upload_id
'abc'
>>> store.remove(checkpoint)
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from .._core._checkpoint import checkpoint_path, read_checkpoint, save_checkpoint
from .._core._config import default_cache_dir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UploadCheckpoint:
    """What a later process needs to continue an upload of `source` to `target`."""

    endpoint: str
    project: str
    target: str
    source: str
    size: int
    mtime_ns: int
    upload_id: str
    name: str
    parts: tuple[int, ...] = field(default=())

    def describes(self, stat: os.stat_result, name: str, upload_id: str | None) -> bool:
        """Whether the source is unchanged (size and modification time) and the upload asked
        for now is the same (file name, and the ID when one is given)."""
        return (
            self.size == stat.st_size
            and self.mtime_ns == stat.st_mtime_ns
            and self.name == name
            and upload_id in (None, self.upload_id)
        )

    def with_parts(self, parts: set[int] | frozenset[int]) -> UploadCheckpoint:
        return replace(self, parts=tuple(sorted(parts)))


class CheckpointStore:
    """Checkpoint files in `directory` (default: ``<cache dir>/uploads``), written atomically
    (`_core._checkpoint`): a killed process never leaves a torn file."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else default_cache_dir() / "uploads"

    def path_of(self, endpoint: str, project: str, target: str, source: Path) -> Path:
        """The checkpoint file of one (endpoint, project, target, source) combination."""
        identity = json.dumps([endpoint, project, target, str(source.resolve())])
        return checkpoint_path(self.directory, identity)

    def load(
        self, endpoint: str, project: str, target: str, source: Path
    ) -> UploadCheckpoint | None:
        """The checkpoint for uploading `source` to `target`, or None (also when unreadable)."""
        path = self.path_of(endpoint, project, target, source)
        try:
            data = read_checkpoint(path, "it is ignored")
            if data is None:
                return None
            data["parts"] = tuple(int(part) for part in data.get("parts", ()))
            return UploadCheckpoint(**data)
        except (OSError, ValueError, TypeError) as exc:
            log.warning("ignoring unreadable upload checkpoint %s: %s", path, exc)
            return None

    def save(self, checkpoint: UploadCheckpoint) -> None:
        """Write `checkpoint`, replacing the previous one for the same upload."""
        save_checkpoint(self._path(checkpoint), asdict(checkpoint))

    def remove(self, checkpoint: UploadCheckpoint) -> None:
        """Forget `checkpoint` (nothing happens if it is already gone)."""
        self._path(checkpoint).unlink(missing_ok=True)

    def _path(self, checkpoint: UploadCheckpoint) -> Path:
        return self.path_of(
            checkpoint.endpoint, checkpoint.project, checkpoint.target, Path(checkpoint.source)
        )
