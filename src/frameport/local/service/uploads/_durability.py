"""Making written bytes survive a power cut, not only a process crash: fsync the file, and
the directory after a rename, before the write is acknowledged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO


def durable_write(handle: BinaryIO) -> None:
    """Flush `handle` and force its bytes to the disk."""
    handle.flush()
    os.fsync(handle.fileno())


def sync_directory(directory: Path) -> None:
    """Force a directory's entries (a rename, a new file) to the disk."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
