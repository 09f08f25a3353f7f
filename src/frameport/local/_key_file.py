"""The file `frameport serve` keeps its generated API key in: `<data>/api-key`, readable and
writable by its owner only (mode 0600 from the moment it exists), so that the key can be found
again (`frameport serve --print-key`) without ever being printed or logged.
"""

from __future__ import annotations

import os
from pathlib import Path

KEY_FILE = "api-key"
_OWNER_ONLY = 0o600


class NoKeyYet(FileNotFoundError):
    """The data directory holds no key file: no service has generated a key there yet."""


def key_path(data_dir: Path) -> Path:
    return data_dir / KEY_FILE


def keep_key(data_dir: Path, key: str) -> Path:
    """Keep `key` in the data directory's key file and return its path. The file is written
    under another name, created owner-only, and then renamed into place: it is never
    readable by others, not even for an instant."""
    path = key_path(data_dir)
    try:
        kept = path.read_text().strip()
    except FileNotFoundError:
        kept = None
    if kept == key:
        path.chmod(_OWNER_ONLY)
        return path
    partial = path.with_name(f".{KEY_FILE}.{os.getpid()}")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _OWNER_ONLY)
    try:
        os.fchmod(descriptor, _OWNER_ONLY)  # whatever the umask
        os.write(descriptor, f"{key}\n".encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(partial, path)
    return path


def drop_other_key(data_dir: Path, key: str) -> None:
    """Remove a key file that holds a key other than `key` (the one given now replaces it)."""
    path = key_path(data_dir)
    try:
        if path.read_text().strip() != key:
            path.unlink()
    except FileNotFoundError:
        pass


def read_key(data_dir: Path) -> str:
    """The key kept in the data directory; NoKeyYet when there is none."""
    path = key_path(data_dir)
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = ""
    if not key:
        raise NoKeyYet(
            f"no API key kept in {data_dir} yet: start `frameport serve --data {data_dir}` once "
            f"(it generates one into {path}), or choose one with --key or FRAMEPORT_KEY"
        )
    return key
