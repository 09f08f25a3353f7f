"""Buckets: upload files, bytes and DataFrames; list, download, read, preview and delete files.

>>> reports = client.bucket("reports")                                   # doctest: +SKIP
>>> f = reports.upload_dataframe(df, "people.parquet")                   # doctest: +SKIP
>>> reports.read_parquet(f.id).equals(df)                                # doctest: +SKIP
True
>>> reports.upload_file("big.csv", resume=True)   # after a crash: only the missing parts
... # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, get_args

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ._core._adaptive import AUTO, Auto
from ._core._ids import ID
from ._core._json import JsonObject
from ._core._sync import SyncFacade, delegate, forward_property
from ._exceptions import (
    ConflictError,
    FileFormatError,
    FrameportError,
    NotFoundError,
    UploadVerificationError,
)
from ._records import FILE_SCHEMA, FILE_SUMMARY, AsyncResource, list_frame, parse_time
from ._transfer._checkpoint import CheckpointStore, UploadCheckpoint
from ._transfer._download import RANGE_SPAN, ResumableDownload
from ._transfer._progress import ProgressCallback
from ._transfer._upload import CHUNK_SIZE, ChunkedUpload, UploadTarget, plan_parts

if TYPE_CHECKING:
    from ._core import Requester

DataFrameFormat = Literal["parquet", "csv", "feather"]
DATAFRAME_FORMATS: tuple[str, ...] = get_args(DataFrameFormat)

#: Preview options, as the service names them (snake_case spellings are accepted too).
PREVIEW_PARAMS = frozenset(
    {
        "width",
        "height",
        "gravity",
        "quality",
        "borderWidth",
        "borderColor",
        "borderRadius",
        "opacity",
        "rotation",
        "background",
        "output",
        "token",
    }
)


@dataclass(frozen=True)
class File:
    """A file in a bucket, as the service describes it; `record` is the service's whole record.

    >>> File.from_record({"$id": "f1", "name": "a.csv", "sizeOriginal": 3}).id
    'f1'
    """

    id: str
    bucket_id: str
    name: str
    size: int
    mime_type: str
    signature: str
    chunks_total: int
    chunks_uploaded: int
    permissions: tuple[str, ...]
    created_at: datetime | None
    updated_at: datetime | None
    record: JsonObject = field(repr=False, compare=False, hash=False)

    @property
    def complete(self) -> bool:
        """Whether every part of the file has arrived (an interrupted upload is incomplete)."""
        return self.chunks_uploaded == self.chunks_total

    @classmethod
    def from_record(cls, record: JsonObject) -> File:
        """A File from the service's file record (as JSON)."""
        return cls(
            id=str(record["$id"]),
            bucket_id=str(record.get("bucketId", "")),
            name=str(record.get("name", "")),
            size=int(record.get("sizeOriginal") or 0),
            mime_type=str(record.get("mimeType") or ""),
            signature=str(record.get("signature") or ""),
            chunks_total=int(record.get("chunksTotal") or 0),
            chunks_uploaded=int(record.get("chunksUploaded") or 0),
            permissions=tuple(record.get("$permissions") or ()),
            created_at=parse_time(record.get("$createdAt")),
            updated_at=parse_time(record.get("$updatedAt")),
            record=dict(record),
        )


def _preview_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Preview options with the service's names (``border_width`` → ``borderWidth``)."""
    named = {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v for k, v in params.items()}
    unknown = sorted(set(named) - PREVIEW_PARAMS)
    if unknown:
        raise TypeError(
            f"Unknown preview option(s) {', '.join(unknown)}; "
            f"use {', '.join(sorted(PREVIEW_PARAMS))}."
        )
    return {name: value for name, value in named.items() if value is not None}


@dataclass(frozen=True)
class _Options:
    """The arguments every upload method passes through to the uploader."""

    permissions: Sequence[str] | None
    progress: bool | None
    on_progress: ProgressCallback | None
    concurrency: int | Auto


def _read_parquet_bytes(
    data: bytes, file_id: str, columns: list[str] | None, options: dict[str, Any]
) -> pd.DataFrame:
    """`data` read by ``pandas.read_parquet``, after checking it opens as Parquet."""
    try:
        pq.read_metadata(pa.BufferReader(data))
    except pa.ArrowException as exc:
        raise FileFormatError(
            f"File {file_id!r} is not a readable Parquet file ({exc}). Read it with download() "
            "or read_csv() if it holds another format.",
            file_id=file_id,
        ) from exc
    return pd.read_parquet(io.BytesIO(data), columns=columns, **options)


def _write_frame(frame: pd.DataFrame, path: Path, format: str, options: dict[str, Any]) -> None:
    if format == "parquet":
        frame.to_parquet(path, **options)
    elif format == "csv":
        frame.to_csv(path, **{"index": False, **options})
    else:
        frame.to_feather(path, **options)


class AsyncBucket(AsyncResource):
    """One bucket of the project; every I/O method is a coroutine. Get it with
    ``client.bucket(bucket_id)`` or ``await client.create_bucket(...)``."""

    _collection = "/storage/buckets"
    _items = "files"
    _exists_error = "storage_bucket_already_exists"

    async def upload_file(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        file_id: str | None = None,
        permissions: Sequence[str] | None = None,
        resume: bool = False,
        progress: bool | None = None,
        on_progress: ProgressCallback | None = None,
        concurrency: int | Auto = AUTO,
    ) -> File:
        """Upload the file at `path` (as `name`, default its file name); returns the File.

        Files over 5 MiB go in 5 MiB parts, `concurrency` at a time ("auto": as many as keep
        the network busy), and are checked (every part, size and MD5) when complete. Each
        acknowledged part is written down in a checkpoint (in frameport's cache directory;
        see the buckets guide), so after a crash ``resume=True`` sends only the parts
        the service has not acknowledged, unless the source changed (size or modification
        time): then the upload starts over under a new ID. An unfinished upload of the same
        file that is not resumed is deleted from the bucket. (Files up to 5 MiB go in one
        request: there is nothing to resume.) `file_id` defaults to a new
        ``ID.unique()``. `permissions` are permission strings (``fp.Permission.read(...)``);
        None leaves the service's default. `on_progress(done_bytes, total_bytes)` is called
        after each acknowledged part; `progress=False` hides the bar.

        >>> bucket.upload_file("big.csv", permissions=[Permission.read(Role.any())])
        ... # doctest: +SKIP
        """
        source = Path(path)
        name = name or source.name
        upload_id = None if file_id is None else ID.custom(file_id)
        options = _Options(permissions, progress, on_progress, concurrency)
        with source.open("rb") as stream:
            stat = os.fstat(stream.fileno())
            if stat.st_size <= CHUNK_SIZE:
                return await self._send(stream, stat.st_size, name, upload_id, options)
            store = CheckpointStore()
            checkpoint, record_exists = await self._resume_point(
                store, source, stat, name, upload_id, resume
            )
            store.save(checkpoint)
            try:
                uploaded = await self._send(
                    stream,
                    stat.st_size,
                    name,
                    checkpoint.upload_id,
                    options,
                    acknowledged=checkpoint.parts,
                    record_exists=record_exists,
                    on_acknowledged=lambda parts: store.save(checkpoint.with_parts(parts)),
                )
            except (UploadVerificationError, ConflictError):
                store.remove(checkpoint)
                raise
            except FrameportError as exc:
                exc.add_note(
                    f"The parts of {name!r} the service acknowledged are recorded; "
                    "upload_file(..., resume=True) sends the others."
                )
                raise
            store.remove(checkpoint)
            return uploaded

    async def upload_bytes(
        self,
        data: bytes | bytearray | memoryview,
        name: str,
        file_id: str | None = None,
        permissions: Sequence[str] | None = None,
        progress: bool | None = None,
        on_progress: ProgressCallback | None = None,
        concurrency: int | Auto = AUTO,
    ) -> File:
        """Upload `data` as a file called `name`; like `upload_file`, without resuming.

        >>> bucket.upload_bytes(b"a,b\\n1,2\\n", "tiny.csv").size
        8
        """
        stream = io.BytesIO(data)
        options = _Options(permissions, progress, on_progress, concurrency)
        return await self._send(stream, len(stream.getbuffer()), name, file_id, options)

    async def upload_dataframe(
        self,
        /,
        frame: pd.DataFrame,
        name: str,
        format: DataFrameFormat = "parquet",
        *,
        file_id: str | None = None,
        permissions: Sequence[str] | None = None,
        progress: bool | None = None,
        on_progress: ProgressCallback | None = None,
        concurrency: int | Auto = AUTO,
        **writer_options: Any,
    ) -> File:
        """Write `frame` as Parquet, CSV or Feather to a temporary file, upload it as `name`,
        and remove the temporary file. `writer_options` go to ``DataFrame.to_parquet`` /
        ``to_csv`` (which here defaults to ``index=False``) / ``to_feather``.

        >>> f = bucket.upload_dataframe(df, "people.parquet", compression="zstd")
        ... # doctest: +SKIP
        """
        if format not in DATAFRAME_FORMATS:
            raise ValueError(
                f"format must be one of {', '.join(DATAFRAME_FORMATS)} (got {format!r})."
            )
        with tempfile.TemporaryDirectory(prefix="frameport-") as directory:
            temporary = Path(directory) / f"frame.{format}"
            await asyncio.to_thread(_write_frame, frame, temporary, format, writer_options)
            options = _Options(permissions, progress, on_progress, concurrency)
            with temporary.open("rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                return await self._send(stream, size, name, file_id, options)

    async def _send(
        self,
        stream: BinaryIO,
        size: int,
        name: str,
        file_id: str | None,
        options: _Options,
        *,
        acknowledged: Iterable[int] = (),
        record_exists: bool = False,
        on_acknowledged: Callable[[frozenset[int]], None] | None = None,
    ) -> File:
        """Run one `ChunkedUpload` of `stream` as `name` (under `file_id`, default a new ID)."""
        fields: dict[str, str | list[str]] = {}
        if options.permissions:
            fields["permissions[]"] = [str(permission) for permission in options.permissions]
        target = UploadTarget(
            path=self._items_path,
            part_field="file",
            part_name=name,
            fields=fields,
            id_field="fileId",
            verified=True,
        )
        upload = ChunkedUpload(
            self._requester,
            target,
            stream,
            size,
            ID.unique() if file_id is None else ID.custom(file_id),
            label=name,
            progress=options.progress,
            on_progress=options.on_progress,
            concurrency=options.concurrency,
            acknowledged=set(acknowledged),
            record_exists=record_exists,
            on_acknowledged=on_acknowledged,
        )
        return File.from_record(await upload.run())

    async def _resume_point(
        self,
        store: CheckpointStore,
        source: Path,
        stat: os.stat_result,
        name: str,
        upload_id: str | None,
        resume: bool,
    ) -> tuple[UploadCheckpoint, bool]:
        """The checkpoint to continue (or a new one) and whether the service has its record.

        An earlier checkpoint for the same source is continued when `resume` is set and the
        source and request are unchanged; otherwise its unfinished file is deleted.
        """
        requester = self._requester
        target = f"bucket:{self._id}"
        previous = store.load(requester.endpoint, requester.project, target, source)
        if previous is not None and resume and previous.describes(stat, name, upload_id):
            record = await self._record_or_none(previous.upload_id)
            if record is None:
                return previous.with_parts(set()), False
            if record.get("sizeOriginal") == stat.st_size:
                parts = {part.index for part in plan_parts(stat.st_size)}
                if record.get("chunksUploaded") != record.get("chunksTotal"):
                    # A part the service lost (fewer parts than acknowledged) cannot be named.
                    trusted = record.get("chunksUploaded", 0) >= len(previous.parts)
                    parts = set(previous.parts) if trusted else set()
                return previous.with_parts(parts), True
        if previous is not None:
            await self._abandon(previous.upload_id)
        fresh = UploadCheckpoint(
            endpoint=requester.endpoint,
            project=requester.project,
            target=target,
            source=str(source.resolve()),
            size=stat.st_size,
            mtime_ns=stat.st_mtime_ns,
            upload_id=upload_id or ID.unique(),
            name=name,
        )
        return fresh, False

    async def _record_or_none(self, file_id: str) -> JsonObject | None:
        try:
            return (await self.get(file_id)).record
        except NotFoundError:
            return None

    async def _abandon(self, file_id: str) -> None:
        """Delete the unfinished file of an upload that will not be continued."""
        try:
            record = await self._record_or_none(file_id)
            if record is not None and record.get("chunksUploaded") != record.get("chunksTotal"):
                await self._requester.request("DELETE", self._item_path(file_id))
        except FrameportError:
            pass  # the new upload does not depend on it

    async def list_files(self, *, details: bool = False) -> pd.DataFrame:
        """Every file of the bucket (unfinished uploads too), one row each, oldest first.

        Columns, named as the service names them: ``$id``, ``name``, ``mimeType``,
        ``sizeOriginal`` (bytes, ``Int64``); with `details` also ``bucketId``,
        ``sizeActual``, ``signature``, ``chunksTotal``, ``chunksUploaded`` (``Int64``;
        fewer than ``chunksTotal``: an unfinished upload), ``compression``, ``encryption``
        (``boolean``), ``$permissions`` (tuples of strings), ``$createdAt``, ``$updatedAt``
        (``datetime64[ms, UTC]``), in the service's order.
        """
        summary = None if details else FILE_SUMMARY
        return await list_frame(self._requester, self._items_path, "files", FILE_SCHEMA, summary)

    async def get(self, file_id: str) -> File:
        """The service's record of one file."""
        return File.from_record(await self._requester.request_json("GET", self._item_path(file_id)))

    async def download(
        self,
        file_id: str,
        path: str | os.PathLike[str] | None = None,
        *,
        progress: bool | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> bytes | Path:
        """The file's bytes, or, with `path`, the file written to `path` (returns the Path;
        a directory gets the file under its name in the bucket).

        Written to disk, the bytes go to ``<path>.part`` in blocks and are renamed to `path`
        once complete and checked against the service's size and MD5. If the download is
        interrupted, calling it again continues from the bytes already in ``<path>.part``.
        """
        if path is None:
            return await self._bytes(file_id)
        record = await self.get(file_id)
        destination = Path(path)
        if destination.is_dir():
            destination = destination / Path(record.name or record.id).name
        download = ResumableDownload(
            self._requester,
            self._item_path(file_id, "download"),
            destination,
            size=record.size,
            md5=record.signature or None,
            label=record.name or file_id,
            progress=progress,
            on_progress=on_progress,
        )
        return await download.run()

    async def _bytes(self, file_id: str) -> bytes:
        return await self._requester.request_bytes("GET", self._item_path(file_id, "download"))

    async def read_range(
        self, file_id: str, start: int, end: int, *, size: int | None = None
    ) -> bytes:
        """Bytes ``[start, end)`` of a file (`end` past the file is cut to its size), by HTTP
        Range requests within the service's rules: no one-byte range (two are asked for),
        no end beyond the file, at most 20 MB per request. `size` is the file's size, if
        known (else its record is read first).

        `start` and `end` are byte offsets from the start of the file, both >= 0 (a negative
        one raises ValueError); ``end <= start`` gives ``b""``.

        >>> bucket.read_range(f.id, 0, 4)
        b'PAR1'
        """
        for name, value in (("start", start), ("end", end)):
            if value < 0:
                raise ValueError(
                    f"{name} must be a byte offset >= 0 (got {value}); read_range(file_id, "
                    "start, end) reads bytes [start, end) counted from the start of the file."
                )
        if size is None:
            size = (await self.get(file_id)).size
        end = min(end, size)
        parts: list[bytes] = []
        while start < end:
            stop = min(end, start + RANGE_SPAN)
            parts.append(await self._range(file_id, start, stop, size))
            start = stop
        return b"".join(parts)

    async def _range(self, file_id: str, start: int, stop: int, size: int) -> bytes:
        first, last = start, stop - 1
        if first == last:  # the service refuses a one-byte range: ask for two
            first, last = (first - 1, last) if first > 0 else (first, last + 1)
        if last >= size:  # a one-byte file: only a whole download reaches it
            return (await self._bytes(file_id))[start:stop]
        headers = {"Range": f"bytes={first}-{last}"}
        response = await self._requester.request(
            "GET", self._item_path(file_id, "download"), headers=headers
        )
        body = response.content
        if response.status_code != 206:  # the whole file
            return body[start:stop]
        sent = response.headers.get("content-range", "")
        if not sent.startswith(f"bytes {first}-") or len(body) != last - first + 1:
            raise FrameportError(
                f"Asked for bytes {first}-{last} of file {file_id!r}, the service sent "
                f"{sent!r} ({len(body)} bytes)."
            )
        return body[start - first : stop - first]

    async def read_parquet(
        self, /, file_id: str, columns: Sequence[str] | None = None, **reader_options: Any
    ) -> pd.DataFrame:
        """A Parquet file of the bucket as a DataFrame (``pandas.read_parquet``); raises
        `FileFormatError` when the file is not Parquet.

        >>> bucket.read_parquet(f.id, columns=["name", "age"]).columns.tolist()
        ['name', 'age']
        """
        data = await self._bytes(file_id)
        chosen = None if columns is None else list(columns)
        return await asyncio.to_thread(
            _read_parquet_bytes, data, file_id, chosen, dict(reader_options)
        )

    async def read_csv(self, /, file_id: str, **reader_options: Any) -> pd.DataFrame:
        """A CSV file of the bucket as a DataFrame (``pandas.read_csv`` with `reader_options`)."""
        data = io.BytesIO(await self._bytes(file_id))
        return await asyncio.to_thread(lambda: pd.read_csv(data, **reader_options))

    async def preview(self, /, file_id: str, **params: Any) -> bytes:
        """An image of the file (image files scaled/cropped/converted as asked; other files
        get an icon). Options: width, height, gravity, quality, border_width, border_color,
        border_radius, opacity, rotation, background, output.

        >>> png = bucket.preview(f.id, width=256, output="png")
        """
        return await self._requester.request_bytes(
            "GET", self._item_path(file_id, "preview"), params=_preview_params(params)
        )

    def preview_url(self, /, file_id: str, **params: Any) -> str:
        """The preview's URL for a browser (``<img src=...>``), with the project in the query
        string and never a credential: the file must be readable without one (or pass a
        resource ``token``)."""
        return self._requester.browser_url(
            self._item_path(file_id, "preview"), _preview_params(params)
        )

    async def delete(self, file_id: str) -> None:
        """Delete a file (also an unfinished upload)."""
        await self._requester.request("DELETE", self._item_path(file_id))

    async def drop(self) -> None:
        """Delete the bucket with every file in it."""
        await self._requester.request("DELETE", self._path)


async def create_bucket(
    requester: Requester,
    bucket_id: str,
    name: str | None = None,
    *,
    exist_ok: bool = False,
    permissions: Sequence[str] | None = None,
    file_security: bool = False,
    enabled: bool = True,
    maximum_file_size: int | None = None,
    allowed_file_extensions: Sequence[str] | None = None,
    compression: Literal["none", "gzip", "zstd"] = "none",
    encryption: bool = True,
    antivirus: bool = True,
    transformations: bool = True,
) -> AsyncBucket:
    """Create a bucket (`bucket_id` may be ``"unique()"``; `name` defaults to the ID) and
    return it; the service's defaults apply to what is not given (e.g. its own maximum file
    size). With `exist_ok`, a bucket that already exists is returned as it is (its settings
    unchanged) instead of raising `ConflictError`."""
    body: JsonObject = {
        "bucketId": bucket_id,
        "name": name or bucket_id,
        "permissions": list(permissions or []),
        "fileSecurity": file_security,
        "enabled": enabled,
        "compression": compression,
        "encryption": encryption,
        "antivirus": antivirus,
        "transformations": transformations,
    }
    if maximum_file_size is not None:
        body["maximumFileSize"] = maximum_file_size
    if allowed_file_extensions is not None:
        body["allowedFileExtensions"] = list(allowed_file_extensions)
    return await AsyncBucket._create(requester, bucket_id, body, exist_ok=exist_ok)


class Bucket(SyncFacade[AsyncBucket], wraps=AsyncBucket):
    """One bucket of the project, for scripts and notebooks: the methods of `AsyncBucket`,
    each run to completion. Get it with ``client.bucket(bucket_id)``.

    >>> reports = client.bucket("reports")
    >>> f = reports.upload_file("big.csv", resume=True)
    >>> reports.download(f.id, "copy.csv").read_bytes() == Path("big.csv").read_bytes()
    True
    """

    id = forward_property("id")
    info = delegate(AsyncBucket.info)
    upload_file = delegate(AsyncBucket.upload_file)
    upload_bytes = delegate(AsyncBucket.upload_bytes)
    upload_dataframe = delegate(AsyncBucket.upload_dataframe)
    list_files = delegate(AsyncBucket.list_files)
    get = delegate(AsyncBucket.get)
    download = delegate(AsyncBucket.download)
    read_range = delegate(AsyncBucket.read_range)
    read_parquet = delegate(AsyncBucket.read_parquet)
    read_csv = delegate(AsyncBucket.read_csv)
    preview = delegate(AsyncBucket.preview)
    preview_url = delegate(AsyncBucket.preview_url)
    delete = delegate(AsyncBucket.delete)
    drop = delegate(AsyncBucket.drop)
