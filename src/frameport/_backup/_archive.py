"""Where an archive's files live: a local folder, or any URL fsspec (or, without it, pyarrow)
can open, seen through one pyarrow file system.

Every file of an archive is written whole under a temporary name and then moved into place
(object stores write an object whole anyway), so a run killed at any moment leaves a file
complete or absent. Files are made on the local disk first (Parquet exports, downloads):
for a local archive in place, for a remote one in a staging folder of frameport's cache that
survives a crash, from which they are copied up (`commit`). Files are read and written as
they are (no compression guessed from a name's extension).

An archive is closed: a name is a relative ``/``-separated path without ``.`` or ``..``
(`name_problem`), and a file of a local archive is read only where it resolves, links
followed, inside the archive.

>>> archive = Archive.open("backups/crm")                             # doctest: +SKIP
>>> archive.write_json("snapshots/x/plan.json", {"format": 1})        # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pyarrow.fs as pafs

from .._core._atomic import replace_bytes
from .._core._config import default_cache_dir
from .._exceptions import ArchiveError

COPY_BLOCK = 4 * 1024 * 1024

NOT_INSIDE = "not a relative path inside the archive"
LEADS_OUT = "a link that leads out of the archive"


def name_problem(name: object) -> str | None:
    """What makes `name` no name of a file inside an archive (None: nothing)."""
    if not isinstance(name, str) or not name or name.startswith("/"):
        return NOT_INSIDE
    if any(character in name for character in "\\:\x00"):
        return NOT_INSIDE
    if any(part in ("", ".", "..") for part in name.split("/")):
        return NOT_INSIDE
    return None


def encode_json(data: object) -> bytes:
    """`data` as the JSON files of an archive hold it."""
    return json.dumps(data, indent=1, sort_keys=True).encode("utf-8")


def refusal(name: str, label: str, problem: str) -> ArchiveError:
    """The error of a file `name` of the archive `label` that cannot be used as it is."""
    return ArchiveError(
        f"{name} in {label} is {problem}; restore another snapshot, or back up again.",
        problems=[f"{name}: {problem}"],
    )


def parse_json(data: bytes, name: str, label: str) -> Any:
    """The JSON document `data`, the file `name` of the archive `label`; `ArchiveError`
    when it is not JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise refusal(name, label, f"not JSON ({exc})") from exc


def _without_secret(url: str) -> str:
    """`url` as it may be shown: a user and password in it are masked."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=f"***@{parts.netloc.rsplit('@', 1)[1]}"))


class Archive:
    """The files of one archive: names are ``/``-separated paths inside it."""

    def __init__(self, filesystem: pafs.FileSystem, base: str, label: str, local: bool) -> None:
        self.filesystem = filesystem
        self.base = base.rstrip("/")
        self.label = label
        self.local = local

    @classmethod
    def open(cls, target: str | os.PathLike[str]) -> Archive:
        """The archive at `target`: a folder path, or a URL (``s3://...``, ``memory://...``)."""
        text = os.fspath(target)
        if "://" not in text or text.startswith("file://"):
            folder = Path(text.removeprefix("file://")).expanduser().resolve()
            return cls(pafs.LocalFileSystem(), folder.as_posix(), text, local=True)
        try:
            import fsspec
        except ImportError:
            try:
                filesystem, base = pafs.FileSystem.from_uri(text)
            except (ValueError, OSError) as exc:
                raise ArchiveError(
                    f"cannot open {text!r} ({exc}); install fsspec (and its package for this "
                    "kind of URL) or give a local folder."
                ) from exc
            return cls(filesystem, base, _without_secret(text), local=False)
        fs, base = fsspec.core.url_to_fs(text)
        handler = pafs.FSSpecHandler(fs)  # type: ignore[abstract]  # the stubs miss its methods
        return cls(pafs.PyFileSystem(handler), base, _without_secret(text), local=False)

    def path(self, name: str) -> str:
        """Where the file `name` is; `ArchiveError` when `name` is no name inside the
        archive."""
        problem = name_problem(name)
        if problem is not None:
            raise refusal(str(name), self.label, problem)
        return f"{self.base}/{name}"

    def leads_out(self, name: str) -> bool:
        """Whether the file `name` of a local archive resolves, links followed, outside the
        archive."""
        if not self.local:
            return False
        return not Path(self.path(name)).resolve().is_relative_to(self.base)

    def _readable(self, name: str) -> str:
        """The path of `name`, to read it; `ArchiveError` when it leads out of the archive."""
        if self.leads_out(name):
            raise refusal(name, self.label, LEADS_OUT)
        return self.path(name)

    def size(self, name: str) -> int | None:
        """The size of the file `name` in bytes, or None when it is missing."""
        info = self.filesystem.get_file_info(self.path(name))
        return info.size if info.type == pafs.FileType.File else None

    def exists(self, name: str) -> bool:
        return self.size(name) is not None

    def folders(self, name: str) -> list[str]:
        """The names of the folders directly inside the folder `name` (none if it is missing)."""
        selector = pafs.FileSelector(self.path(name), allow_not_found=True)
        infos = self.filesystem.get_file_info(selector)
        return sorted(info.base_name for info in infos if info.type == pafs.FileType.Directory)

    def read_bytes(self, name: str) -> bytes:
        with self.filesystem.open_input_stream(self._readable(name), compression=None) as stream:
            return stream.read()

    def read_json(self, name: str) -> Any:
        """The JSON file `name`; `ArchiveError` when it is not JSON."""
        return parse_json(self.read_bytes(name), name, self.label)

    def sha256(self, name: str, *, as_written_before: bool = False) -> str:
        """The SHA-256 of the file `name`, read into one buffer over and over (a new block
        for each read left a backup's 200 MiB of files holding 70 MB more at its peak).
        `as_written_before`: read as earlier versions read and hashed a file they wrote, a
        ``.gz`` file decompressed."""
        compression = "detect" if as_written_before else None
        with self.filesystem.open_input_stream(self._readable(name), compression) as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()

    @contextmanager
    def fetched(self, name: str, *, as_written_before: bool = False) -> Iterator[Path]:
        """The file `name` as a local path: itself in a local archive, else a temporary copy
        (`as_written_before`: of a ``.gz`` file, decompressed, as earlier versions compressed
        it once more into a remote archive)."""
        if self.local:
            yield Path(self._readable(name))
            return
        compression = "detect" if as_written_before else None
        with tempfile.TemporaryDirectory(prefix="frameport-archive-") as folder:
            copy = Path(folder) / Path(name).name
            with (
                self.filesystem.open_input_stream(self._readable(name), compression) as source,
                copy.open("wb") as out,
            ):
                shutil.copyfileobj(source, out, COPY_BLOCK)
            yield copy

    def write_json(self, name: str, data: object) -> None:
        """Write `data` as the JSON file `name` (`encode_json`), whole or not at all."""
        self.write_bytes(name, encode_json(data))

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write `data` as the file `name`, whole or not at all."""
        if not self.local:
            self.filesystem.create_dir(self.path(name).rsplit("/", 1)[0], recursive=True)
            with self.filesystem.open_output_stream(self.path(name), compression=None) as stream:
                stream.write(data)
            return
        target = Path(self.path(name))
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_bytes(target, data)

    def staging(self, name: str) -> Path:
        """Where the file `name` is made on the local disk before `commit` (its folder
        exists)."""
        if self.local:
            path = Path(self.path(name))
        else:
            key = hashlib.sha256(self.label.encode()).hexdigest()[:24]
            path = default_cache_dir() / "backup-staging" / key / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def commit(self, name: str) -> None:
        """Put the file made at `staging(name)` into the archive (a remote one gets a copy,
        and the staged file goes)."""
        if self.local:
            return
        staged = self.staging(name)
        self.filesystem.create_dir(self.path(name).rsplit("/", 1)[0], recursive=True)
        with (
            staged.open("rb") as source,
            self.filesystem.open_output_stream(self.path(name), compression=None) as out,
        ):
            shutil.copyfileobj(source, out, COPY_BLOCK)
        staged.unlink()

    def delete(self, name: str) -> None:
        """Remove the file `name` (nothing when it is missing)."""
        if self.exists(name):
            self.filesystem.delete_file(self.path(name))
