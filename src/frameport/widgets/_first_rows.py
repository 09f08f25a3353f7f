"""The first rows of a Parquet or CSV file in a bucket, reading as little of it as it can."""

from __future__ import annotations

import io
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

import pandas as pd
import pyarrow.parquet as pq

from ._ranged import bucket_reader

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
    reader = bucket_reader(bucket, file)
    buffered = io.BufferedReader(reader)
    if tabular_format(file) == "parquet":
        parquet = pq.ParquetFile(buffered, pre_buffer=False)
        batches = parquet.iter_batches(batch_size=rows, use_threads=False)
        batch = next(batches, None)
        frame = (batch or parquet.schema_arrow.empty_table()).to_pandas()
    else:
        frame = pd.read_csv(buffered, nrows=rows)
    return frame, reader.bytes_fetched
