"""Chunked uploads on disk: the Content-Range rule, part files, the streaming join, MD5, mime.

The service assumes 5 MiB chunks (service interface, "Chunked uploads"): chunk index =
floor(start / 5 MiB) + 1 and chunksTotal = ceil(size / 5 MiB). Each part is copied to
`<parts dir>/<index>` as it arrives and never rewritten; the join streams the parts into the
final file while hashing them, so the memory an upload needs does not grow with the file.

>>> plan_chunk("bytes 5242880-10485759/12000000", 5242880).index
2
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
import shutil
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from starlette.datastructures import UploadFile

from ...wire._errors import ServiceError
from ...wire._params import UNIQUE, Params, header_integer, is_uid, unique_id
from .._crash_points import crash_point
from ._durability import durable_write, sync_directory

CHUNK_SIZE = 5 * 1024 * 1024
COPY_BUFFER = 1024 * 1024
#: How long a chunk waits for another chunk of the same upload before answering 429.
LOCK_WAIT_SECONDS = 30.0
_SNIFF_BYTES = 512
INCOMING = ".incoming"
JOINING_PREFIX = ".joining-"
_CONTENT_RANGE = re.compile(r"(\S+) ([0-9]+)-([0-9]+)/([0-9]+)")

#: Leading bytes of the formats the service recognises by content, before the file name.
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"\x1f\x8b", "application/gzip"),
    (b"PK\x03\x04", "application/zip"),
    (b"PAR1", "application/vnd.apache.parquet"),
)
_ISO_BRANDS = {b"avif": "image/avif", b"heic": "image/heic", b"heix": "image/heic"}


@dataclass(frozen=True)
class ChunkPlan:
    """Where one request's bytes belong: part `index` of `total_chunks` of a `total_size`
    file, `length` bytes from byte `start`."""

    index: int
    total_chunks: int
    total_size: int
    ranged: bool
    start: int
    length: int

    @property
    def whole_chunk(self) -> bool:
        """Whether the part is one whole 5 MiB chunk from byte 0 (the last one shorter)."""
        if not self.ranged:
            return True
        if self.start % CHUNK_SIZE or (self.start >= self.total_size > 0):
            return False
        return self.length == min(CHUNK_SIZE, self.total_size - self.start)


@dataclass(frozen=True)
class FileTarget:
    """Where an upload's file part goes as the body is read: the form field `field`,
    streamed to a file in `directory`, at most `limit` bytes; `too_long()` is the error for
    a longer part."""

    field: str
    limit: int
    directory: Path
    too_long: Callable[[], ServiceError]


def _invalid_range(header: str) -> ServiceError:
    return ServiceError(
        "storage_invalid_content_range",
        f"Invalid Content-Range header {header!r}: send `bytes <first>-<last>/<total size>`.",
    )


def plan_chunk(content_range: str | None, part_size: int) -> ChunkPlan:
    """The chunk a request carries: `ranged_chunk` of its Content-Range header, whose part
    must hold exactly the span's bytes (else 400 `storage_invalid_content_range`); without
    the header the request is the whole file, chunk 1 of 1.
    """
    if not content_range:
        return ChunkPlan(1, 1, part_size, False, 0, part_size)
    plan = ranged_chunk(content_range)
    if part_size != plan.length:
        raise ServiceError(
            "storage_invalid_content_range",
            f"The part is {part_size} bytes but Content-Range {content_range!r} spans "
            f"{plan.length}: send exactly the bytes the header names.",
        )
    return plan


def ranged_chunk(content_range: str) -> ChunkPlan:
    """The chunk a Content-Range header names (service interface, "Chunked uploads").

    The header must read `<unit> <start>-<end>/<size>` with `start <= end <= size` (the unit
    is not checked), else 400 `storage_invalid_content_range`. The span is `end - start + 1`
    bytes, or `end - start` when `end` is the size (the service's leniency).

    >>> plan = ranged_chunk("bytes 5242880-5999999/6000000")
    >>> plan.index, plan.total_chunks, plan.length
    (2, 2, 757120)
    """
    start, end, size = _span(content_range)
    length = end - start if end == size else end - start + 1
    return ChunkPlan(start // CHUNK_SIZE + 1, _total_chunks(size), size, True, start, length)


def part_too_long(content_range: str | None, plan: ChunkPlan) -> ServiceError:
    """400 `storage_invalid_content_range` for a part longer than its Content-Range span."""
    return ServiceError(
        "storage_invalid_content_range",
        f"The part is longer than the {plan.length} bytes Content-Range {content_range!r} "
        "spans: send exactly the bytes the header names.",
    )


def require_whole_chunk(plan: ChunkPlan, content_range: str | None) -> None:
    """400 `storage_invalid_content_range` unless the part is a whole chunk: chunks are
    5 MiB from byte 0, the last one shorter, so that every byte is sent exactly once and no
    part is longer than 5 MiB (the upload rules; the service itself does not check)."""
    if not plan.whole_chunk:
        raise ServiceError(
            "storage_invalid_content_range",
            f"Content-Range {content_range!r} is not a chunk of a {plan.total_size}-byte "
            f"file: chunks are {CHUNK_SIZE:,} bytes from byte 0 (the last one shorter), each "
            "sent as `bytes <start>-<start + chunk length - 1>/<size>`.",
        )


def chunk_index(content_range: str | None) -> int:
    """The chunk index a Content-Range header names (1 without one or when it is invalid)."""
    if not content_range:
        return 1
    try:
        return _span(content_range)[0] // CHUNK_SIZE + 1
    except ServiceError:
        return 1


def _total_chunks(size: int) -> int:
    return max(1, -(-size // CHUNK_SIZE))


def _span(content_range: str) -> tuple[int, int, int]:
    """(start, end, size) of a header that reads `<unit> <start>-<end>/<size>` with
    `start <= end <= size`; 400 `storage_invalid_content_range` otherwise."""
    match = _CONTENT_RANGE.fullmatch(content_range)
    if match is None:
        raise _invalid_range(content_range)
    start, end, size = (header_integer(group) for group in match.group(2, 3, 4))
    if not start <= end <= size:
        raise _invalid_range(content_range)
    return start, end, size


def require_same_size(upload: str, recorded_size: int, plan: ChunkPlan) -> None:
    """400 `storage_invalid_content_range` when a chunk names another total than the first."""
    if plan.total_size != recorded_size:
        raise ServiceError(
            "storage_invalid_content_range",
            f"The upload {upload!r} is {recorded_size} bytes: send every chunk with "
            "Content-Range `bytes <first>-<last>/<that size>`.",
        )


def upload_id(header: str | None, form_value: object = None) -> str:
    """The upload's ID: `X-Service-ID`, else the form's ID (`unique()` → generated), else new.

    400 `storage_invalid_service_id` when the chosen value is not a valid ID
    (service interface, "Chunked uploads"); the header is taken literally, so `unique()`
    there is invalid.
    """
    if header:
        candidate: object = header
    elif form_value in (None, "", UNIQUE):
        return unique_id()
    else:
        candidate = form_value
    if not is_uid(candidate):
        raise ServiceError(
            "storage_invalid_service_id",
            f"The upload ID {candidate!r} is invalid: send the same valid ID (not unique()) in "
            "X-Service-ID or the fileId field of every chunk.",
        )
    return str(candidate)


def uploaded_part(params: Params, field: str) -> UploadFile:
    """The file part `field` of a multipart form; 400 `storage_file_empty` when it is absent.

    A part with no bytes is a 0-byte file, which is valid.
    """
    value = params.raw(field)
    if isinstance(value, UploadFile):
        return value
    raise ServiceError(
        "storage_file_empty", f"No file sent: the form has no `{field}` part. Send the bytes in it."
    )


def part_size(part: UploadFile) -> int:
    """The number of bytes in an uploaded part."""
    if part.size is not None:
        return part.size
    position = part.file.seek(0, os.SEEK_END)
    part.file.seek(0)
    return position


def file_extension(name: str) -> str:
    """The lower-cased extension of a file name, without the dot (`"a.TAR.GZ"` → `"gz"`)."""
    suffix = Path(name).suffix
    return suffix[1:].lower() if suffix else ""


class NamedLocks(Protocol):
    """What hands out one lock per name (the service's state)."""

    def lock(self, name: str) -> threading.Lock: ...


@contextmanager
def upload_lock(state: NamedLocks, name: str) -> Iterator[None]:
    """Serialise the chunks of one upload; 429 with `Retry-After: 5` if the wait is too long."""
    lock = state.lock(name)
    if not lock.acquire(timeout=LOCK_WAIT_SECONDS):
        raise ServiceError(
            "general_rate_limit_exceeded",
            "File upload is busy. Try again.",
            headers={"Retry-After": "5"},
        )
    try:
        yield
    finally:
        lock.release()


class JoinedSizeMismatch(ServiceError):
    """400 `storage_invalid_content_range`: the joined parts are not the declared size, so
    the upload can never be the file its client sent; the caller forgets the upload."""

    def __init__(self, joined: int, declared: int) -> None:
        super().__init__(
            "storage_invalid_content_range",
            f"The parts sent hold {joined} bytes, not the {declared} bytes Content-Range "
            "declared: upload the file again, in 5 MiB chunks.",
        )


@dataclass(frozen=True)
class JoinedFile:
    """What the join learned while writing the final file."""

    md5: str
    size: int
    head: bytes


class UploadPaths:
    """Where an area keeps its uploads: `<root>/<id>` when complete, `<root>/.parts/<id>/`.

    Incoming chunks are first written to `<root>/.incoming/`, outside any lock; the last chunk
    joins the parts into `<root>/.joining-<id>`, which `place` moves to `<root>/<id>` once the
    completion is recorded. IDs cannot start with a dot, so these never collide with an upload.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def final(self, upload: str) -> Path:
        return self.root / upload

    def joining(self, upload: str) -> Path:
        return self.root / f"{JOINING_PREFIX}{upload}"

    def parts(self, upload: str) -> PartStore:
        return PartStore(self.root / ".parts" / upload)

    @property
    def incoming(self) -> Path:
        """Where request bodies stream the parts of this area's uploads (`FileTarget`)."""
        return self.root / INCOMING

    def stage(self, part: UploadFile) -> Path:
        """The file the body reader wrote `part` to in `incoming`, made durable, to be
        committed as a part."""
        durable_write(part.file)
        crash_point("chunk.staged")
        return Path(part.file.name)

    def place(self, upload: str) -> None:
        """Move the joined file into place and drop its parts (after the completion is
        recorded: a crash in between is finished by `recover` at the next start)."""
        os.replace(self.joining(upload), self.final(upload))
        sync_directory(self.root)
        crash_point("upload.placed")
        self.parts(upload).discard()

    def remove(self, upload: str) -> None:
        """Delete an upload's bytes, complete or partial."""
        self.final(upload).unlink(missing_ok=True)
        self.joining(upload).unlink(missing_ok=True)
        self.parts(upload).discard()

    def recover(self, complete: Collection[str], known: Collection[str]) -> None:
        """Finish or drop what a crash left behind (run at start-up, before any request).

        Staged chunks are dropped; a joined file whose completion was recorded is moved into
        place, any other is dropped (its parts are still there); parts of complete or unknown
        uploads are dropped.
        """
        shutil.rmtree(self.incoming, ignore_errors=True)
        for joined in self.root.glob(f"{JOINING_PREFIX}*"):
            upload = joined.name.removeprefix(JOINING_PREFIX)
            if upload in complete:
                os.replace(joined, self.final(upload))
            else:
                joined.unlink(missing_ok=True)
        parts_root = self.root / ".parts"
        if parts_root.is_dir():
            for directory in parts_root.iterdir():
                if directory.name in complete or directory.name not in known:
                    shutil.rmtree(directory, ignore_errors=True)


class PartStore:
    """The parts of one chunked upload, `<directory>/<index>`, each written once.

    Every method but `discard` expects the upload's lock to be held.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def commit(self, staged: Path, index: int) -> bool:
        """Keep `staged` as part `index` unless that part is stored already."""
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / str(index)
        if target.exists():
            staged.unlink(missing_ok=True)
            return False
        os.replace(staged, target)
        sync_directory(self.directory)
        return True

    def count(self) -> int:
        """The number of distinct parts stored."""
        return len(self._parts())

    def _parts(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return [entry for entry in self.directory.iterdir() if entry.name.isdigit()]

    def join(self, target: Path, total_chunks: int, total_size: int) -> JoinedFile:
        """Stream parts 1..total into `target`, hashing as they go; the parts stay.

        JoinedSizeMismatch (and no `target`) when the parts do not hold the `total_size`
        bytes the upload declared.
        """
        digest = _StreamingDigest()
        with open(target, "wb") as out:
            for index in range(1, total_chunks + 1):
                digest.feed(self.directory / str(index), out)
            durable_write(out)
        if digest.size != total_size:
            target.unlink()
            raise JoinedSizeMismatch(digest.size, total_size)
        crash_point("upload.joined")
        return JoinedFile(digest.md5.hexdigest(), digest.size, digest.head)

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


class _StreamingDigest:
    """MD5, byte count and first bytes of files read block by block."""

    def __init__(self) -> None:
        self.md5 = hashlib.md5()
        self.size = 0
        self.head = b""

    def feed(self, source: Path, out: BinaryIO | None) -> None:
        """Hash `source`, copying it to `out` when given."""
        with open(source, "rb") as part:
            for block in iter(lambda: part.read(COPY_BUFFER), b""):
                if len(self.head) < _SNIFF_BYTES:
                    self.head += block[: _SNIFF_BYTES - len(self.head)]
                self.md5.update(block)
                self.size += len(block)
                if out is not None:
                    out.write(block)


def sniff_mime(head: bytes, name: str) -> str:
    """The mime type of a file from its first bytes, else its name, else text or binary."""
    for signature, mime in _SIGNATURES:
        if head.startswith(signature):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[4:8] == b"ftyp" and head[8:12] in _ISO_BRANDS:
        return _ISO_BRANDS[head[8:12]]
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed:
        return guessed
    return "text/plain" if _looks_like_text(head) else "application/octet-stream"


def _looks_like_text(head: bytes) -> bool:
    """UTF-8 without NUL bytes; a character cut at the end of the sample is allowed."""
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True
