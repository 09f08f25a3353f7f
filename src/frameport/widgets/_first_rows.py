"""The first rows of a Parquet or CSV file in a bucket, fetching only the byte ranges pyarrow
or pandas ask for: neither format needs the whole file for its first rows."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

import pandas as pd
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from .._storage import Bucket, File

TabularFormat = Literal["parquet", "csv"]

_BY_MIME: dict[str, TabularFormat] = {
    "application/vnd.apache.parquet": "parquet",
    "application/x-parquet": "parquet",
    "text/csv": "csv",
    "application/csv": "csv",
}
_BY_SUFFIX: dict[str, TabularFormat] = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def tabular_format(file: File) -> TabularFormat | None:
    """``"parquet"`` or ``"csv"`` when the file holds a table (by type, then name), else None."""
    by_mime = _BY_MIME.get(file.mime_type.split(";")[0].strip().lower())
    return by_mime or _BY_SUFFIX.get(PurePosixPath(file.name).suffix.lower())


def first_rows(bucket: Bucket, file: File, rows: int) -> tuple[pd.DataFrame, int]:
    """The first `rows` rows of `file` and the number of bytes fetched to read them.

    Parquet: the footer, then the first row group(s) that hold `rows` rows. CSV: the first
    lines, read until `rows` rows are parsed.
    """
    if file.size == 0:
        return pd.DataFrame(), 0
    reader = RangedReader(
        lambda start, end: bucket.read_range(file.id, start, end + 1, size=file.size), file.size
    )
    buffered = io.BufferedReader(reader)
    if tabular_format(file) == "parquet":
        parquet = pq.ParquetFile(buffered, pre_buffer=False)
        batches = parquet.iter_batches(batch_size=rows, use_threads=False)
        batch = next(batches, None)
        frame = (batch or parquet.schema_arrow.empty_table()).to_pandas()
    else:
        frame = pd.read_csv(buffered, nrows=rows)
    return frame, reader.bytes_fetched


#: Bytes asked for per request at least (reads are rounded up to this).
BLOCK_SIZE = 256 * 1024


class RangedReader(io.RawIOBase):
    """A read-only, seekable file of `size` bytes; ``fetch(start, end)`` returns its bytes
    ``start..end``, both ends included."""

    def __init__(self, fetch: Callable[[int, int], bytes], size: int) -> None:
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
