"""Downloads to disk: streamed in blocks, resumed with Range requests, checked, then renamed.

The bytes go to ``<destination>.part``; only a complete, checked download is renamed to the
destination, so the destination never holds a torn file. A download that is interrupted (a
dropped connection, a killed process) continues from the bytes already in the ``.part`` file.

The service answers a Range request with at most 10 MiB (20 MB when an end is given) and
refuses a one-byte range, so a resumed download is a series of ranges that each start one
byte before the bytes still missing.

>>> download = ResumableDownload(client, "/storage/buckets/b/files/f/download", Path("f.bin"),
...                              size=123, md5="...", label="f", progress=None)  # doctest: +SKIP
>>> await download.run()                                                        # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from .._exceptions import DownloadVerificationError, FrameportError, TransportError
from ._progress import ProgressCallback, TransferProgress

if TYPE_CHECKING:
    from .._core import Requester

#: Bytes asked for per Range request: below the 20 MB at which the service shortens a range.
RANGE_SPAN = 16 * 1024 * 1024
#: Bytes read from the response and written to disk at a time.
BLOCK_SIZE = 1024 * 1024


def partial_path(destination: Path) -> Path:
    """Where the bytes of `destination` gather until the download is complete."""
    return destination.with_name(destination.name + ".part")


def _md5_of(path: Path, length: int) -> hashlib._Hash:
    """The MD5 state after the first `length` bytes of `path` (no file is read for 0)."""
    digest = hashlib.md5(usedforsecurity=False)
    if length:
        with path.open("rb") as handle:
            while block := handle.read(min(BLOCK_SIZE, length)):
                digest.update(block)
                length -= len(block)
    return digest


@dataclass(eq=False, repr=False)
class ResumableDownload:
    """Download `path` (relative to the endpoint) to `destination`, checked against `size`
    and `md5` (the service's record; `md5` None: not known)."""

    requester: Requester
    path: str
    destination: Path
    _: KW_ONLY
    size: int
    md5: str | None
    label: str
    progress: bool | None
    on_progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        self._partial = partial_path(self.destination)

    async def run(self) -> Path:
        """Download, check and rename; returns the destination."""
        self._partial.parent.mkdir(parents=True, exist_ok=True)
        offset = self._partial.stat().st_size if self._partial.exists() else 0
        if offset > self.size:
            offset = 0
        digest = await asyncio.to_thread(_md5_of, self._partial, offset)
        with (
            self._partial.open("r+b" if offset else "wb") as out,
            TransferProgress(
                self.size,
                desc=self.label,
                progress=self.progress,
                on_progress=self.on_progress,
                done=offset,
            ) as progress,
        ):
            out.truncate(offset)
            out.seek(offset)
            await self._receive(out, offset, digest, progress)
        self._check(digest.hexdigest())
        os.replace(self._partial, self.destination)
        return self.destination

    async def _receive(
        self, out: BinaryIO, offset: int, digest: hashlib._Hash, progress: TransferProgress
    ) -> None:
        """Request ranges until every byte is on disk, resuming responses cut short."""
        policy = self.requester.retry
        stalled = 0
        answered = 0 < offset == self.size  # a complete .part needs no request
        while not answered or offset < self.size:
            before = offset
            offset, failure = await self._fetch(out, offset, digest, progress)
            answered = True
            stalled = 0 if offset > before else stalled + 1
            if stalled > policy.retries:
                raise TransportError(
                    f"Download of {self.label!r} stopped at byte {offset} "
                    f"({failure or 'no bytes came'}); call download() again to continue.",
                    method="GET",
                    url=self.requester.endpoint + self.path,
                ) from failure
            if failure is not None:
                await asyncio.sleep(policy.backoff_delay(stalled))

    async def _fetch(
        self, out: BinaryIO, offset: int, digest: hashlib._Hash, progress: TransferProgress
    ) -> tuple[int, TransportError | None]:
        """One request for the bytes from `offset`; returns the offset reached, and the error
        that cut the body short, if one did. (The request itself was retried by the transport;
        a body cut short is continued from where it stopped, with the transport's policy.)"""
        headers: dict[str, str] = {}
        start = max(0, offset - 1)  # a range covers at least two bytes
        if offset:
            end = min(start + RANGE_SPAN, self.size) - 1
            headers["Range"] = f"bytes={start}-{end}"
        async with self.requester.stream("GET", self.path, headers=headers) as response:
            if response.status_code == 206:
                sent_range = response.headers.get("content-range", "")
                if not sent_range.startswith(f"bytes {start}-"):
                    raise FrameportError(
                        f"Asked for bytes from {start} of {self.label!r}, the service sent "
                        f"{sent_range!r}."
                    )
                skip = offset - start
            else:
                skip = offset  # a 200 carries the whole file
            try:
                async for block in response.aiter_bytes(BLOCK_SIZE):
                    if skip:
                        dropped = min(skip, len(block))
                        block, skip = block[dropped:], skip - dropped
                    if not block:
                        continue
                    out.write(block)
                    digest.update(block)
                    offset += len(block)
                    progress.advance(len(block))
            except TransportError as exc:
                return offset, exc
        return offset, None

    def _check(self, md5: str) -> None:
        received = self._partial.stat().st_size
        checks = [("size", self.size, received), ("signature", self.md5, md5)]
        for check, expected, actual in checks:
            if expected is not None and expected != actual:
                with contextlib.suppress(OSError):
                    self._partial.unlink()
                raise DownloadVerificationError(
                    f"Download of {self.label!r} failed the {check} check: received "
                    f"{actual!r}, the service's record says {expected!r}.",
                    check=check,
                    expected=expected,
                    actual=actual,
                    file_id=self.label,
                )
