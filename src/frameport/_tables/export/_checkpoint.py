"""The checkpoint of a resumable export, kept in a folder beside the target.

``.<target name>.resume/checkpoint.json`` holds what the export reads (table, requests,
columns: its *fingerprint*), the ``$sequence`` segments it was cut into when it started and
how many of them are complete; each complete segment is an Arrow IPC file in the same folder
(Parquet in checkpoints of earlier versions, which resume as well). The checkpoint
(`_core._checkpoint`) is replaced atomically after each segment, so a run killed at any
point finds either the old or the new one. It holds no credentials.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..._core._checkpoint import read_checkpoint, save_checkpoint
from ..._exceptions import ResumeError


@dataclass(frozen=True)
class Fingerprint:
    """What an export reads; a checkpoint only serves an export with the same one."""

    table: str
    requests: list[list[str]]
    columns: list[str]  # "name: type" of each output column


@dataclass
class Checkpoint:
    """Segments ``(after, upto]`` of ``$sequence``, the first `done` of them written."""

    fingerprint: Fingerprint
    segments: list[tuple[int, int]]
    done: int = 0
    rows: list[int] = field(default_factory=list)  # rows of each written segment
    pages: list[int] = field(default_factory=list)
    in_order: bool = True

    def resumed_after(self) -> int | None:
        """The ``$sequence`` after which the next segment starts, or None at the start."""
        return self.segments[self.done][0] if 0 < self.done < len(self.segments) else None


def folder_for(target: Path) -> Path:
    """The checkpoint folder of the export to `target`."""
    return target.with_name(f".{target.name}.resume")


def segment_path(folder: Path, index: int) -> Path:
    return folder / f"segment-{index:06d}.arrow"


def written_segment_path(folder: Path, index: int) -> Path:
    """The file of the complete segment `index`: Arrow IPC, or Parquet where an earlier
    version wrote it."""
    path = segment_path(folder, index)
    legacy = path.with_suffix(".parquet")
    return legacy if not path.exists() and legacy.exists() else path


def load(folder: Path) -> Checkpoint | None:
    """The checkpoint in `folder`, or None when there is none."""
    data = read_checkpoint(folder / "checkpoint.json", "delete its folder to export anew")
    if data is None:
        return None
    fingerprint = Fingerprint(**data.pop("fingerprint"))
    segments = [(int(a), int(b)) for a, b in data.pop("segments")]
    return Checkpoint(fingerprint, segments, **data)


def save(folder: Path, checkpoint: Checkpoint) -> None:
    """Write `checkpoint` into `folder`, replacing the previous one atomically."""
    save_checkpoint(folder / "checkpoint.json", asdict(checkpoint))


def refuse_mismatch(folder: Path, saved: Fingerprint, current: Fingerprint) -> None:
    """Raise `ResumeError` saying what changed when `current` is not `saved`."""
    if saved == current:
        return
    if saved.table != current.table:
        what = f"the table changed ({saved.table} then, {current.table} now)"
    elif saved.requests != current.requests:
        what = "the filter changed"
    else:
        what = "the columns or their types changed"
    raise ResumeError(
        f"cannot resume: {what} since the checkpoint in {folder} was written. "
        "Export with the same query to finish it, or delete that folder to start over."
    )
