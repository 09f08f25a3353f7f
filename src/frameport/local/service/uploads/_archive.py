"""The check a complete deployment archive gets in place of a build: is it a sound .tar.gz?

The gzip stream is read to its end (so its CRC and length are verified), then the tar
listing is read. Functions are not executed, so this is all the "build" the local service
does: a sound archive makes the deployment `ready`, anything else `failed`, and the log says
why.

>>> check_archive(Path("code.tar.gz"), "main.py")  # doctest: +SKIP
ArchiveCheck(ok=True, log='Archive checked: 3 entries.')
"""

from __future__ import annotations

import gzip
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_BLOCK = 1024 * 1024


@dataclass(frozen=True)
class ArchiveCheck:
    """The verdict on one archive and the build log that explains it."""

    ok: bool
    log: str


def check_archive(path: Path, entrypoint: str) -> ArchiveCheck:
    """Verify the gzip stream and list the tar entries of the archive at `path`."""
    try:
        with gzip.open(path, "rb") as stream:
            while stream.read(_BLOCK):
                pass
        with tarfile.open(path, "r:gz") as archive:
            names = [member.name for member in archive]
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        return ArchiveCheck(False, f"The archive is not a readable .tar.gz file: {exc}")
    if not names:
        return ArchiveCheck(False, "The archive holds no files.")
    unsafe = [name for name in names if name.startswith("/") or ".." in PurePosixPath(name).parts]
    if unsafe:
        return ArchiveCheck(False, f"The archive has entries outside its root: {unsafe[:5]}")
    lines = [f"Archive checked: {len(names)} entries."]
    listed = {str(PurePosixPath(name)) for name in names}
    if str(PurePosixPath(entrypoint)) not in listed:
        lines.append(f"Warning: the entrypoint {entrypoint!r} is not in the archive.")
    return ArchiveCheck(True, "\n".join(lines))
