"""Reading the start of a stored file with HTTP Range requests, as a seekable binary file.

Parquet keeps its metadata at the end and its first rows at the start, and a CSV's first rows
are its first lines: neither needs the whole file. `RangedReader` fetches only the spans that
pyarrow or pandas ask for (in blocks of `BLOCK_SIZE`), and counts the bytes it fetched.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._storage import Bucket, File

#: Bytes asked for per request at least (reads are rounded up to this).
BLOCK_SIZE = 256 * 1024

#: ``fetch(start, end)`` returns bytes ``start..end`` of the file, both ends included.
FetchRange = Callable[[int, int], bytes]


class RangedReader(io.RawIOBase):
    """A read-only, seekable file of `size` bytes whose bytes come from `fetch`."""

    def __init__(self, fetch: FetchRange, size: int) -> None:
        super().__init__()
        self._fetch = fetch
        self._size = size
        self._position = 0
        self._block_start = 0
        self._block = b""
        self.bytes_fetched = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        origin = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, origin + offset)
        return self._position

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        wanted = min(len(buffer), self._size - self._position)
        if wanted <= 0:
            return 0
        block_end = self._block_start + len(self._block)
        if not self._block_start <= self._position < block_end:
            self._load(self._position, max(wanted, BLOCK_SIZE))
        offset = self._position - self._block_start
        chunk = self._block[offset : offset + wanted]
        buffer[: len(chunk)] = chunk
        self._position += len(chunk)
        return len(chunk)

    def _load(self, start: int, length: int) -> None:
        end = min(start + length, self._size) - 1
        data = self._fetch(start, end)
        self.bytes_fetched += len(data)
        self._block_start, self._block = start, data


def bucket_reader(bucket: Bucket, file: File) -> RangedReader:
    """A `RangedReader` over the bytes of `file` in `bucket`, fetched by `Bucket.read_range`."""

    def fetch(start: int, end: int) -> bytes:
        return bucket.read_range(file.id, start, end + 1, size=file.size)

    return RangedReader(fetch, file.size)
