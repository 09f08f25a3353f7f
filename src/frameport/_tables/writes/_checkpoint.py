"""The checkpoint of a resumable load, one small JSON file per load in frameport's cache.

A load numbers its source rows. Batches finish out of order, so the checkpoint keeps the
length of the longest finished prefix (`done`): every row before it is written, skipped,
replaced or rejected. `sent` is where the rows sent so far end; the rows between `done` and
`sent` may have been written before the process died, so a resumed load sends them again
as rows that may be there already (`_sending`: found there, they count as written). The
counts so far, the rows the service refused and the run ID of the IDs made for the load
(`_row_ids`) are kept too: a resumed load reports every rejected row of the source, those of
the finished prefix checked again and the service's refusals from the checkpoint.

Checkpoints (`_core._checkpoint`) live in ``<cache>/loads/`` (``$FRAMEPORT_CACHE_DIR``,
else the user's cache folder), named by a hash of the endpoint, project, table, source and
options. They hold no secret. The file is replaced atomically, so a process killed at any
point leaves the old or the new one; a finished load removes it.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..._core._checkpoint import checkpoint_path, read_checkpoint, save_checkpoint
from ..._core._config import default_cache_dir

_FILES = ("parquet|", "csv|", "json|")  # the identities of files, the same in every version


@dataclass
class LoadCheckpoint:
    """How far a load came (see the module docstring)."""

    run_id: str
    source: str = ""
    """The source's identity (`_sources.Source.identity`): a checkpoint is used only for its
    own source."""
    done: int = 0
    sent: int = 0
    written: int = 0
    skipped: int = 0
    replaced: int = 0
    rejected: int = 0
    batches: int = 0
    refused: list[tuple[int, str, str]] = field(default_factory=list)
    """The rows the service refused: (place in the source, column, message)."""


def load_path(*identity: str) -> Path:
    """The checkpoint file of the load named by `identity` (endpoint, project, table, source,
    options)."""
    return checkpoint_path(default_cache_dir() / "loads", "\n".join(identity))


def load_checkpoint(path: Path, source: str) -> LoadCheckpoint | None:
    """The checkpoint at `path` of the source named `source`, or None when there is none.
    One of another source (or of a frame, from a version that kept no identity) is not
    used: the load starts from the start, and its checkpoint replaces that one."""
    data = read_checkpoint(path, "delete it to load from the start")
    if data is None:
        return None
    checkpoint = LoadCheckpoint(**data)
    if checkpoint.source != source and (checkpoint.source or not source.startswith(_FILES)):
        return None
    return checkpoint


def save_load(path: Path, checkpoint: LoadCheckpoint) -> None:
    """Write `checkpoint` to `path`, replacing the previous one atomically."""
    save_checkpoint(path, asdict(checkpoint))


def new_run_id() -> str:
    """The run ID of a new load: 16 hex digits."""
    return secrets.token_hex(8)
