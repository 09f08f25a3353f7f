"""Checkpoints: the JSON files that say how far a long job (a load, an export, an upload, a
restore) came, so that it goes on from there when run again. Each is named by a hash of what
identifies the job, holds its format's version and no secret, and is replaced atomically.

>>> path = checkpoint_path(Path("loads"), "endpoint|project|table")  # doctest: +SKIP
>>> save_checkpoint(path, {"done": 3})                                  # doctest: +SKIP
>>> read_checkpoint(path, "delete it to start over")                     # doctest: +SKIP
{'done': 3}
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .._exceptions import ResumeError
from ._atomic import replace_json
from ._json import JsonObject

VERSION = 1
"""The version of every checkpoint format frameport writes now."""


def checkpoint_path(directory: Path, key: str) -> Path:
    """The checkpoint file in `directory` of the job that `key` names."""
    return directory / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def read_checkpoint(path: Path, remedy: str, *, unversioned: bool = False) -> JsonObject | None:
    """The state saved at `path` (its version taken out), or None when there is none. A file
    of another version raises `ResumeError`, its message ending with `remedy` (what to do);
    with `unversioned`, a file without a version (from before versions were kept) is read."""
    try:
        data: JsonObject = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    if data.pop("version", VERSION if unversioned else None) != VERSION:
        raise ResumeError(
            f"the checkpoint {path} was written by another version of frameport; {remedy}."
        )
    return data


def save_checkpoint(path: Path, state: JsonObject) -> None:
    """Write `state` to `path` with the format's version, replacing the file atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    replace_json(path, {"version": VERSION, **state})
