"""The chunked uploader: plan the parts, send them in parallel, check the service's answer.

A source of at most 5 MiB goes in one request without Content-Range. A larger one goes in
parts of exactly 5 MiB (the last one shorter), each a multipart form with
``Content-Range: bytes <start>-<end>/<size>`` and the upload's client-made ID in
``X-Service-ID`` (and in ``fileId`` for files): the first part alone, so that the service
creates the record once, then the others with at most `concurrency` requests under way
(``"auto"``: adaptive, within `PARTS_CAP` and `PARTS_BUDGET`). The service stores a part it
already holds only once, so every part is idempotent: the transport retries it after a
failure, and a resumed upload may send a part a second time. The part that completes the
file can be any of them; its answer carries the finished record.

For files the final record is checked: every part arrived, ``sizeOriginal`` is the source's
size and ``signature`` its MD5, computed while the parts are read, in order.

>>> [(part.index, part.start, part.end) for part in plan_parts(CHUNK_SIZE + 1)]
[(1, 0, 5242880), (2, 5242880, 5242881)]
>>> plan_parts(CHUNK_SIZE + 1)[1].content_range(CHUNK_SIZE + 1)
'bytes 5242880-5242880/5242881'
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import io
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, BinaryIO

import httpx

from .._core._adaptive import (
    AUTO,
    AdaptiveConcurrency,
    AdaptiveSlots,
    Auto,
    check_concurrency,
)
from .._core._json import JsonObject
from .._exceptions import ConflictError, FrameportError, UploadVerificationError
from ._progress import ProgressCallback, TransferProgress

if TYPE_CHECKING:
    from .._core import Requester

log = logging.getLogger(__name__)

#: The service's part size: 5 MiB. Every part but the last has exactly this many bytes.
CHUNK_SIZE = 5 * 1024 * 1024

PARTS_CAP = 12
"""The most parts ``concurrency="auto"`` keeps in flight."""

PARTS_BUDGET = 48 * 2**20
"""Bytes of parts ``concurrency="auto"`` keeps in flight at most."""


def _read_timed(reader: HashingReader, concurrency: AdaptiveConcurrency, part: Part) -> bytes:
    """`reader.read(part)`, its time told to `concurrency` (the work of a part)."""
    started = time.perf_counter()
    try:
        return reader.read(part)
    finally:
        concurrency.worked(time.perf_counter() - started)


@dataclass(frozen=True)
class Part:
    """Bytes ``[start, end)`` of a source: the service's part number `index` (from 1)."""

    index: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    def content_range(self, total: int) -> str:
        """The Content-Range header of this part (the end is inclusive)."""
        return f"bytes {self.start}-{self.end - 1}/{total}"


def plan_parts(size: int) -> list[Part]:
    """The parts of a `size`-byte source: one for at most 5 MiB, else 5 MiB each."""
    if size <= CHUNK_SIZE:
        return [Part(1, 0, size)]
    starts = range(0, size, CHUNK_SIZE)
    return [Part(n + 1, start, min(start + CHUNK_SIZE, size)) for n, start in enumerate(starts)]


@dataclass(frozen=True)
class UploadTarget:
    """Where the parts of an upload go and what each form carries besides the bytes.

    `path` is the collection the parts are posted to, the record being ``<path>/<upload ID>``;
    `fields` are the other form fields (``permissions[]``, ``activate``, ...); `id_field`
    names the form field repeating the upload ID (None: only the header carries it). When
    `verified`, answers are File models, checked against the source.
    """

    path: str
    part_field: str
    part_name: str
    fields: Mapping[str, str | list[str]]
    id_field: str | None
    verified: bool

    def record_of(self, upload_id: str) -> str:
        """The path of the uploaded record."""
        return f"{self.path}/{upload_id}"

    def form(self, upload_id: str) -> dict[str, str | list[str]]:
        form = dict(self.fields)
        if self.id_field is not None:
            form[self.id_field] = upload_id
        return form


class HashingReader:
    """Reads a binary source part by part, in order, feeding every byte to an MD5."""

    def __init__(self, source: BinaryIO) -> None:
        self._source = source
        self._md5 = hashlib.md5(usedforsecurity=False)
        self._next_start = 0

    def read(self, part: Part) -> bytes:
        """The bytes of `part` (the part after the one read last)."""
        if part.start != self._next_start:
            raise ValueError(f"parts are read in order; expected byte {self._next_start} next")
        self._source.seek(part.start)
        data = self._source.read(part.size)
        if len(data) != part.size:
            raise FrameportError(
                f"The source shrank while it was uploaded: part {part.index} has "
                f"{len(data)} of {part.size} bytes. Upload it again once it is written."
            )
        self._md5.update(data)
        self._next_start = part.end
        return data

    def hexdigest(self) -> str:
        return self._md5.hexdigest()


class PartBody(io.BytesIO):
    """A part's bytes as httpx sends them: in one read (not 64 KiB at a time), and freed by
    `close` once the request is over. (httpx keeps each response in a reference cycle with
    its request, so bytes passed directly would wait for the garbage collector.)"""

    def read(self, size: int | None = -1, /) -> bytes:
        return super().read()


def verify_file_record(record: JsonObject, size: int, md5: str) -> None:
    """Raise `UploadVerificationError` unless `record` is the complete upload of a source of
    `size` bytes whose MD5 is `md5`."""
    file_id = str(record.get("$id"))
    checks = (
        ("chunks", "parts received", record.get("chunksTotal"), record.get("chunksUploaded")),
        ("size", "size in bytes", size, record.get("sizeOriginal")),
        ("signature", "MD5 signature", md5, record.get("signature")),
    )
    for check, what, expected, actual in checks:
        if expected != actual:
            raise UploadVerificationError(
                f"Upload of file {file_id!r} failed the {check} check: the service reports "
                f"{what} {actual!r}, expected {expected!r}.",
                check=check,
                expected=expected,
                actual=actual,
                file_id=file_id,
            )


def _unwrap(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first error of a task group that is not a cancellation."""
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            return _unwrap(error)
        if not isinstance(error, asyncio.CancelledError):
            return error
    return group.exceptions[0]


@dataclass(eq=False, repr=False)
class ChunkedUpload:
    """One upload of `size` bytes from `source` to `target` under the ID `upload_id`.

    `acknowledged` holds the parts the service already confirmed (a resumed upload); they are
    read for the MD5 but not sent. `record_exists` says the service already has the record
    (so no part must go alone first). `on_acknowledged` gets the set of confirmed parts after
    each confirmation, before the progress advances.

    >>> upload = ChunkedUpload(client, target, open("big.csv", "rb"), size, ID.unique(),
    ...                        label="big.csv", progress=None)    # doctest: +SKIP
    >>> record = await upload.run()                               # doctest: +SKIP
    """

    requester: Requester
    target: UploadTarget
    source: BinaryIO
    size: int
    upload_id: str
    _: KW_ONLY
    label: str
    progress: bool | None = None
    on_progress: ProgressCallback | None = None
    concurrency: int | Auto = AUTO
    acknowledged: set[int] = field(default_factory=set)
    record_exists: bool = False
    on_acknowledged: Callable[[frozenset[int]], None] | None = None
    _final: JsonObject | None = field(default=None, init=False)
    _adaptive: AdaptiveConcurrency | None = field(default=None, init=False)  # for "auto"

    def __post_init__(self) -> None:
        check_concurrency(self.concurrency)
        self._moved: TransferProgress  # made by run()

    async def run(self) -> JsonObject:
        """Send the parts not yet acknowledged; return the final record (checked for files).

        A file failing the check is deleted and `UploadVerificationError` raised.
        """
        reader = HashingReader(self.source)
        parts = plan_parts(self.size)
        done = sum(part.size for part in parts if part.index in self.acknowledged)
        self._moved = TransferProgress(
            self.size,
            desc=self.label,
            progress=self.progress,
            on_progress=self.on_progress,
            done=done,
        )
        with self._moved:
            if self.size <= CHUNK_SIZE:
                data = await asyncio.to_thread(reader.read, parts[0])
                await self._send(parts[0], data, ranged=False)
            else:
                try:
                    await self._send_parts(reader, parts)
                except BaseExceptionGroup as group:
                    raise _unwrap(group) from None
        record = self._final
        if record is None:
            record = await self.requester.request_json("GET", self.target.record_of(self.upload_id))
        if self.target.verified:
            await self._verify(record, reader.hexdigest())
        return dict(record)

    async def _send_parts(self, reader: HashingReader, parts: list[Part]) -> None:
        slots: asyncio.Semaphore | AdaptiveSlots
        read: Callable[[Part], bytes] = reader.read
        if isinstance(self.concurrency, int):
            slots = asyncio.Semaphore(self.concurrency)
        else:
            self._adaptive = AdaptiveConcurrency(cap=PARTS_CAP, budget=PARTS_BUDGET, start=2)
            slots = AdaptiveSlots(self._adaptive)
            read = functools.partial(_read_timed, reader, self._adaptive)
        alone = not self.record_exists
        async with asyncio.TaskGroup() as group:
            for part in parts:
                # Read (and hash) the next part while `concurrency` others are under way.
                data = await asyncio.to_thread(read, part)
                if part.index in self.acknowledged:
                    continue  # read for the MD5 only
                await slots.acquire()
                sending = self._send(part, data, ranged=True, first=alone, slots=slots)
                if alone:
                    await sending
                    alone = False
                else:
                    group.create_task(sending)
                del data, sending

    async def _send(
        self,
        part: Part,
        data: bytes,
        *,
        ranged: bool,
        first: bool = False,
        slots: asyncio.Semaphore | AdaptiveSlots | None = None,
    ) -> None:
        headers = {self.requester.header("ID"): self.upload_id}
        if ranged:
            headers["Content-Range"] = part.content_range(self.size)
        body = PartBody(data)
        del data
        started = time.perf_counter()
        try:
            response = await self.requester.request(
                "POST",
                self.target.path,
                data=self.target.form(self.upload_id),
                files={self.target.part_field: (self.target.part_name, body, _OCTETS)},
                headers=headers,
                idempotent=True,
                # Only a whole-file create answers 409 when an earlier attempt created it.
                read_back=None if ranged else self.target.record_of(self.upload_id),
            )
        finally:
            body.close()
            if slots is not None:
                slots.release()
        if self._adaptive is not None:
            self._adaptive.waited(time.perf_counter() - started, nbytes=part.size)
        self._accept(part, response, first=first)

    def _accept(self, part: Part, response: httpx.Response, *, first: bool) -> None:
        record: JsonObject = response.json()
        if self.target.verified:
            if first and response.status_code == 200:
                raise ConflictError(
                    f"A complete file with the ID {self.upload_id!r} is already in the bucket; "
                    "delete it first or upload under another ID.",
                    status=409,
                    type="storage_file_already_exists",
                    method="POST",
                    url=self.requester.endpoint + self.target.path,
                )
            if record.get("chunksUploaded") == record.get("chunksTotal"):
                self._final = record
        else:
            self._final = record
        self.acknowledged.add(part.index)
        if self.on_acknowledged is not None:
            self.on_acknowledged(frozenset(self.acknowledged))
        self._moved.advance(part.size)

    async def _verify(self, record: JsonObject, md5: str) -> None:
        try:
            verify_file_record(record, self.size, md5)
        except UploadVerificationError:
            log.warning("deleting file %r: it does not match its source", self.upload_id)
            with contextlib.suppress(FrameportError):
                await self.requester.request("DELETE", self.target.record_of(self.upload_id))
            raise


_OCTETS = "application/octet-stream"
