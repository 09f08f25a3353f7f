"""What a load reads: any frame, Arrow stream or file, as Arrow record batches in bounded memory.

`open_source` takes

* a pandas DataFrame (sliced, `CHUNK_ROWS` rows at a time);
* a polars DataFrame or LazyFrame (a lazy frame runs on polars' streaming engine, batch by
  batch);
* a pyarrow Table, RecordBatch or RecordBatchReader;
* anything with ``__arrow_c_stream__`` (a DuckDB relation, for example), read as a stream;
* other frames narwhals knows (Modin, cuDF, ...; the ``narwhals`` extra);
* a path or URL (any fsspec URL: ``s3://``, ``gs://``, ``https://``, ...) of a Parquet
  (``.parquet``, ``.pq``), CSV (``.csv``, ``.tsv``; also compressed, ``.csv.gz``) or JSON
  lines file (``.ndjson``, ``.jsonl``, ``.json``): Parquet by row groups, CSV and JSON in
  blocks, so memory stays flat whatever the file's size.

CSV columns that the table has are read as text and converted by the table's rules
(`_schema.validate_batch`), so a value is judged as the same text in a frame would be, and
one that does not parse is one rejected row, not a failed read. CSV and JSON files are read
in blocks of whole records (`_text_files`): a record that is not UTF-8 or does not parse is
one rejected row too.

>>> source = open_source(pd.DataFrame({"n": [1, 2]}), reading=TextReading(()))
>>> [batch.num_rows for batch in source.batches()]
[2]
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from ..._exceptions import LoadError
from ..._schema import to_json_value
from ._text_files import (
    UNREADABLE,
    TextReading,
    csv_format,
    json_format,
    record_batches,
    record_blocks,
    split_header,
)

if TYPE_CHECKING:
    import pyarrow.dataset as ds
    from pyarrow.fs import FileSystem

CHUNK_ROWS = 10_000
"""Rows read, checked and converted at a time."""
_HASHED_ROWS = 100_000  # rows of a frame hashed at a time for its identity

_PARQUET = (".parquet", ".pq")
_CSV = (".csv", ".tsv")
_JSON = (".ndjson", ".jsonl", ".json")
_COMPRESSION = (".gz", ".bz2", ".zst", ".lz4")


@dataclass(frozen=True)
class Source:
    """A readable source: `batches()` reads it from the start (again, for the sources that
    can be re-read); `rows` is its number of rows when known before reading; `identity()`
    names it for a checkpoint: a file's path, size and modification time; a frame's kind,
    columns, rows and a hash of its values (`content_identity`); None for a stream, which
    cannot be known before it is read."""

    description: str
    schema: pa.Schema
    rows: int | None
    identity: Callable[[], str | None]
    read: Callable[[], Iterator[pa.RecordBatch]]
    null_values: tuple[str, ...] | None = None
    """The fields read as null: a CSV file's (`TextReading.null_values`); None for others."""

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The source's rows, in order, at most `CHUNK_ROWS` per batch."""
        for batch in self.read():
            for start in range(0, batch.num_rows, CHUNK_ROWS):
                yield batch.slice(start, CHUNK_ROWS)


def open_source(source: object, *, reading: TextReading) -> Source:
    """The `Source` for `source` (see the module docstring); `reading` says how CSV and JSON
    files are read. Anything else, or null values named for a source other than a CSV file,
    raises `LoadError` naming what is accepted."""
    opened = _opened(source, reading)
    if reading.null_values is not None and opened.null_values is None:
        raise LoadError(
            f"null_values applies to CSV files, whose fields are text; {opened.description} "
            "holds its nulls as nulls: drop null_values"
        )
    return opened


def _opened(source: object, reading: TextReading) -> Source:
    if isinstance(source, str | os.PathLike):
        return _file_source(os.fspath(source), reading)
    if isinstance(source, pd.DataFrame):
        return _pandas_source(source)
    if isinstance(source, pa.Table):
        return _table_source(source, "a pyarrow Table")
    if isinstance(source, pa.RecordBatch):
        return _table_source(pa.Table.from_batches([source]), "a pyarrow RecordBatch")
    if isinstance(source, pa.RecordBatchReader):
        return _reader_source(source, "a pyarrow RecordBatchReader")
    polars_source = _polars_source(source)
    if polars_source is not None:
        return polars_source
    if hasattr(source, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(source)
        return _reader_source(reader, f"an Arrow stream ({type(source).__name__})")
    narwhals_source = _narwhals_source(source)
    if narwhals_source is not None:
        return narwhals_source
    raise LoadError(
        f"cannot load from a {type(source).__name__}: give a pandas or polars frame, a pyarrow "
        "Table or RecordBatchReader, an object with __arrow_c_stream__ (e.g. a DuckDB "
        "relation), or the path or URL of a Parquet, CSV or NDJSON file"
    )


def _pandas_source(frame: pd.DataFrame) -> Source:
    schema = pa.Schema.from_pandas(frame.head(0), preserve_index=False)

    def read() -> Iterator[pa.RecordBatch]:
        for start in range(0, len(frame), CHUNK_ROWS):
            yield from _arrow_of(frame.iloc[start : start + CHUNK_ROWS]).to_batches()

    identity = content_identity("pandas", schema, len(frame), lambda at: frame.iloc[at])
    return Source("a pandas DataFrame", schema, len(frame), identity, read)


def _arrow_of(part: pd.DataFrame) -> pa.Table:
    """A slice of a frame as Arrow. An object column of mixed values becomes text (JSON for
    lists and mappings), which the table's rules then convert or reject value by value."""
    try:
        return pa.Table.from_pandas(part, preserve_index=False).combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    columns = {}
    for i, name in enumerate(part.columns):
        series = part.iloc[:, i]
        try:
            columns[str(name)] = pa.array(series, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            columns[str(name)] = pa.array([_as_text(v) for v in series], pa.string())
    return pa.table(columns)


def _as_text(value: object) -> str | None:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, list | tuple | dict):
        return json.dumps(to_json_value(value))
    return str(value)


def _table_source(table: pa.Table, description: str) -> Source:
    def read() -> Iterator[pa.RecordBatch]:
        yield from table.to_batches(max_chunksize=CHUNK_ROWS)

    def part(at: slice) -> pd.DataFrame:
        return table.slice(at.start, at.stop - at.start).to_pandas()

    identity = content_identity("arrow", table.schema, table.num_rows, part)
    return Source(description, table.schema, table.num_rows, identity, read)


def _reader_source(reader: pa.RecordBatchReader, description: str) -> Source:
    used = False

    def read() -> Iterator[pa.RecordBatch]:
        nonlocal used
        if used:
            raise LoadError(f"{description} can be read only once; give a new one")
        used = True
        yield from reader

    return Source(description, reader.schema, None, lambda: None, read)


def _polars_source(source: object) -> Source | None:
    module = type(source).__module__
    if not module.startswith("polars"):
        return None
    import polars as pl

    if isinstance(source, pl.DataFrame):
        return _table_source(source.to_arrow(), "a polars DataFrame")
    if isinstance(source, pl.LazyFrame):
        lazy = source
        schema = pl.DataFrame(schema=lazy.collect_schema()).to_arrow().schema

        def read() -> Iterator[pa.RecordBatch]:
            for frame in lazy.collect_batches(chunk_size=CHUNK_ROWS):
                yield from frame.to_arrow().to_batches()

        return Source("a polars LazyFrame", schema, None, lambda: None, read)
    return None


def _narwhals_source(source: object) -> Source | None:
    try:
        import narwhals as nw
    except ImportError:
        return None
    try:
        frame = nw.from_native(cast(Any, source), eager_only=True)
    except TypeError:
        return None
    return _table_source(frame.to_arrow(), f"a {type(source).__name__} frame")


def content_identity(
    kind: str, schema: pa.Schema, rows: int, part: Callable[[slice], pd.DataFrame]
) -> Callable[[], str]:
    """A frame's identity for a checkpoint (`part`: its rows in a slice, as pandas): its kind,
    columns and rows, and a SHA-256 of its values in order (pandas' hash of each row's values,
    `_row_hashes`), so that two frames of one shape never share a checkpoint and the same
    values built again find theirs."""

    def identity() -> str:
        columns = ",".join(f"{field.name}:{field.type}" for field in schema)
        digest = hashlib.sha256()
        for start in range(0, rows, _HASHED_ROWS):
            at = slice(start, min(start + _HASHED_ROWS, rows))
            digest.update(_row_hashes(part(at)).tobytes())
        return f"{kind}|{columns}|{rows}|{digest.hexdigest()}"

    return identity


def _row_hashes(part: pd.DataFrame) -> npt.NDArray[np.integer]:
    """A hash of each row's values; a column of values pandas cannot hash (lists, arrays,
    mappings) is hashed by their full text."""
    try:
        return pd.util.hash_pandas_object(part, index=False).to_numpy()
    except TypeError:
        pass
    with np.printoptions(threshold=sys.maxsize):
        as_text = part.apply(
            lambda column: column.map(_full_text) if column.dtype == object else column
        )
    return pd.util.hash_pandas_object(as_text, index=False).to_numpy()


def _full_text(value: object) -> str:
    return repr(value.tolist() if isinstance(value, np.ndarray) else value)


# ---------------------------------------------------------------------------------------------
# Files


def _file_source(location: str, reading: TextReading) -> Source:
    name = location.lower()
    for suffix in _COMPRESSION:
        name = name.removesuffix(suffix)
    if name.endswith(_PARQUET):
        return _parquet_source(location)
    if name.endswith(_CSV):
        return _text_source(location, reading, delimiter="\t" if name.endswith(".tsv") else ",")
    if name.endswith(_JSON):
        return _text_source(location, reading, delimiter=None)
    raise LoadError(
        f"cannot tell the format of {location!r} from its name: load a file ending in "
        ".parquet, .csv, .tsv, .ndjson, .jsonl or .json (optionally compressed, e.g. .csv.gz)"
    )


def _filesystem(location: str) -> tuple[FileSystem | None, str]:
    """The pyarrow file system and path of a local path or an fsspec URL."""
    if "://" not in location or location.startswith("file://"):
        path = Path(location.removeprefix("file://")).expanduser()
        if not path.is_file():
            raise LoadError(f"there is no file {str(path)!r}; check the path")
        return None, str(path)
    import fsspec
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    filesystem, path = fsspec.core.url_to_fs(location)
    handler: Any = FSSpecHandler  # its stubs leave the handler's methods abstract
    return PyFileSystem(handler(filesystem)), path


def _identity(kind: str, location: str, filesystem: FileSystem | None, path: str) -> str:
    if filesystem is None:
        stat = os.stat(path)
        return f"{kind}|{os.path.abspath(path)}|{stat.st_size}|{stat.st_mtime_ns}"
    info = filesystem.get_file_info(path)
    return f"{kind}|{location}|{info.size}|{info.mtime_ns}"


def _parquet_source(location: str) -> Source:
    import pyarrow.dataset as ds

    filesystem, path = _filesystem(location)
    dataset: ds.Dataset = ds.dataset(path, format="parquet", filesystem=filesystem)

    def read() -> Iterator[pa.RecordBatch]:
        yield from dataset.to_batches(
            batch_size=CHUNK_ROWS, batch_readahead=1, fragment_readahead=0
        )

    identity = _identity("parquet", location, filesystem, path)
    return Source(
        f"the Parquet file {location}", dataset.schema, dataset.count_rows(), lambda: identity, read
    )


def _text_source(location: str, reading: TextReading, *, delimiter: str | None) -> Source:
    """A CSV file's source (`delimiter`), or a JSON lines file's (None); its columns are those
    of its first rows."""
    import pyarrow.fs as pafs

    filesystem, path = _filesystem(location)

    def read() -> Iterator[pa.RecordBatch]:
        # a compressed file (by its suffix) is decompressed
        stream = (filesystem or pafs.LocalFileSystem()).open_input_stream(path)
        if delimiter is None:
            blocks = record_blocks(stream, quoted=False)
            yield from record_batches(blocks, json_format(reading), None)
            return
        header, blocks = split_header(stream)
        text_format, names = csv_format(header, reading, delimiter)
        yield from record_batches(blocks, text_format, names)

    kind = "json" if delimiter is None else "csv"
    identity = _identity(kind, location, filesystem, path)
    first = next(read(), None)
    names = [] if first is None else [n for n in first.schema.names if n != UNREADABLE]
    schema = pa.schema([] if first is None else [first.schema.field(n) for n in names])
    description = (
        f"the JSON lines file {location}" if kind == "json" else f"the CSV file {location}"
    )
    nulls = None if kind == "json" else reading.csv_nulls
    return Source(description, schema, None, lambda: identity, read, nulls)
