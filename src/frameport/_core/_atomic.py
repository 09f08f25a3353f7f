"""Files written whole or not at all: checkpoints, manifests and saved sessions.

>>> replace_json(Path("checkpoint.json"), {"done": 3})                 # doctest: +SKIP
>>> replace_bytes(Path("manifest.json"), b"{}")                         # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path


def replace_json(
    path: Path,
    data: object,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    durable: bool = False,
) -> None:
    """Write `data` as JSON (UTF-8) to `path` as `replace_bytes` does."""
    text = json.dumps(data, indent=indent, sort_keys=sort_keys)
    replace_bytes(path, text.encode("utf-8"), durable=durable)


def replace_bytes(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write `data` to `path`, replacing what was there in one step: into a temporary file
    beside it (readable by its owner alone), then renamed onto it, so a reader or a crash
    sees the old file or the new one. `durable`: on disk before the rename."""
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
