"""An fsspec filesystem for the service's buckets: ``frameport://<bucket>/<file name>``.

Registered under the ``fsspec.specs`` entry point as the protocol ``frameport``, so pandas,
pyarrow, dask and polars open bucket files by URL; reads fetch only the byte ranges asked for
(HTTP Range), so a Parquet reader taking a few columns downloads the footer and those column
chunks, not the file.

>>> pd.read_parquet("frameport://reports/people.parquet", columns=["age"],
...                 storage_options={"endpoint": "http://127.0.0.1:8080/v1",
...                                  "project": "demo", "key": "..."})  # doctest: +SKIP
>>> fs = fsspec.filesystem("frameport", client=client)                  # doctest: +SKIP
>>> fs.ls("reports"); fs.put("local.csv", "reports/data/local.csv")     # doctest: +SKIP

Storage options: `endpoint`, `project`, and `key` or `jwt` — each defaulting to
FRAMEPORT_ENDPOINT, FRAMEPORT_PROJECT, FRAMEPORT_KEY, FRAMEPORT_JWT — or `client=` (a
`Client` or `AsyncClient`) to reuse a configured client. fsspec keeps the options on the
filesystem and pickles them with it (that is how dask workers get it), so a `key` given there
travels with the filesystem: prefer FRAMEPORT_KEY in the workers' environment. fsspec also
caches filesystems by their options, so one built from the environment keeps the values it
first saw; one built with `client=` is never cached (two clients may look alike but act as
different users) and cannot be pickled.

Decisions:

* ``<file name>`` is the file's name in the bucket, as users see it; names may contain ``/``,
  which `ls` shows as folders (virtual: they exist while files are named under them). A name
  is found with an ``equal`` query on ``name``, compared exactly by the client (the service
  compares text case-insensitively). When several complete files share a name, the newest
  wins; `put`/`open(..., "wb")` upload the new file first and then delete the older ones of
  the same name, so a name behaves like a path that is overwritten. When no file has the
  name, a file with that ID is used, so ``frameport://reports/<file ID>`` works too.
* Unfinished uploads are not listed and cannot be opened.
* Buckets are the top-level directories; `mkdir`/`makedirs` create nothing (folders are
  virtual, buckets are made with ``client.create_bucket``), and `rm` deletes files, never a
  bucket.
* `received_bytes` counts the file bytes this filesystem downloaded (ranges and whole files).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from fsspec.caching import ReadAheadCache, register_cache
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from ._client import AsyncClient, Client, requester_of
from ._core import (
    ENDPOINT_ENV,
    ID,
    PROJECT_ENV,
    credentials_from_env,
    equal_query,
    is_valid_id,
    order_query,
    run_sync,
)
from ._core._json import JsonObject
from ._core._pages import iter_pages
from ._exceptions import NotFoundError
from ._storage import File

PROTOCOL = "frameport"

BLOCK_SIZE = 4 * 1024 * 1024
"""Bytes fetched ahead of a read that continues the previous one (see `SequentialReadAhead`)."""

LIST_PAGE = 100
"""Records asked for per listing request."""


class _ClientOptionAwareCache(type(AbstractFileSystem)):  # type: ignore[misc]
    """fsspec's instance cache, skipped for filesystems built around a given client."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("client") is not None:
            kwargs["skip_instance_cache"] = True
        return super().__call__(*args, **kwargs)


class FrameportFileSystem(AbstractFileSystem, metaclass=_ClientOptionAwareCache):  # type: ignore[misc]
    """The files of the project's buckets as an fsspec filesystem; see the module docstring.

    >>> fs = FrameportFileSystem(client=client)                     # doctest: +SKIP
    >>> with fs.open("reports/people.parquet") as f: f.read(4)      # doctest: +SKIP
    b'PAR1'
    """

    protocol = PROTOCOL
    root_marker = ""

    def __init__(
        self,
        endpoint: str | None = None,
        project: str | None = None,
        key: str | None = None,
        jwt: str | None = None,
        client: Client | AsyncClient | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        if client is None:
            client = _client_from_options(endpoint, project, key, jwt)
        elif isinstance(client, AsyncClient):
            client = Client._from_async(client)
        elif not isinstance(client, Client):
            raise TypeError(f"client= takes a frameport Client, not {type(client).__name__}.")
        self.client = client
        self.received_bytes = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(endpoint={self.client.endpoint!r}, project=...)"

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        stripped = super()._strip_protocol(path)
        return stripped.lstrip("/") if isinstance(stripped, str) else stripped

    @staticmethod
    def _split(path: str) -> tuple[str, str]:
        """(bucket ID, file name) of a stripped path; the name may be empty."""
        bucket, _, name = path.partition("/")
        return bucket, name.strip("/")

    def ls(self, path: str, detail: bool = True, **kwargs: object) -> list[Any]:
        """The buckets (at the root), or the files and folders under `path`."""
        path = self._strip_protocol(path)
        bucket_id, name = self._split(path)
        if not bucket_id:
            entries = [_directory(record["$id"]) for record in self._records("/storage/buckets")]
        else:
            entries = self._children(bucket_id, name)
        return entries if detail else [entry["name"] for entry in entries]

    def _children(self, bucket_id: str, name: str) -> list[JsonObject]:
        prefix = f"{name}/" if name else ""
        files: dict[str, JsonObject] = {}
        folders: set[str] = set()
        for record in self._bucket_files(bucket_id):
            file_name = record["name"]
            if file_name == name:
                return [_file_entry(bucket_id, record)]
            if file_name.startswith(prefix):
                child, slash, _ = file_name[len(prefix) :].partition("/")
                if slash:
                    folders.add(child)
                else:
                    files.setdefault(file_name, record)  # newest first: the newest wins
        if not files and not folders and name:
            raise FileNotFoundError(f"{PROTOCOL}://{bucket_id}/{name}")
        entries = [_directory(f"{bucket_id}/{prefix}{folder}") for folder in sorted(folders)]
        entries += [_file_entry(bucket_id, files[key]) for key in sorted(files)]
        return entries

    def info(self, path: str, **kwargs: object) -> JsonObject:
        """A file's name, size, type, ID, MIME type, MD5 and times; or a directory."""
        path = self._strip_protocol(path)
        bucket_id, name = self._split(path)
        if not bucket_id:
            return _directory("")
        if not name:
            try:
                self.client.bucket(bucket_id).info()
            except NotFoundError:
                raise FileNotFoundError(f"{PROTOCOL}://{bucket_id}") from None
            return _directory(bucket_id)
        found = self._find(bucket_id, name)
        if found:
            return _file_entry(bucket_id, found[0])
        self._children(bucket_id, name)  # a folder, or FileNotFoundError
        return _directory(f"{bucket_id}/{name}")

    def _find(self, bucket_id: str, name: str) -> list[JsonObject]:
        """The complete files named exactly `name`, newest first; else the file with ID `name`."""
        member = self.client.query_member_for(f"/storage/buckets/{bucket_id}/files")
        files = self._bucket_files(bucket_id, equal_query("name", [name], member))
        named = [record for record in files if record.get("name") == name]
        if named or not is_valid_id(name):
            return named
        try:
            record = self.client.bucket(bucket_id).get(name).record
        except NotFoundError:
            return []
        return [record] if _complete(record) else []

    def _bucket_files(self, bucket_id: str, *filters: str) -> list[JsonObject]:
        """The complete files of a bucket under `filters`, newest first."""
        try:
            records = self._records(f"/storage/buckets/{ID.custom(bucket_id)}/files", filters)
        except NotFoundError:
            raise FileNotFoundError(f"{PROTOCOL}://{bucket_id}") from None
        return [record for record in records if _complete(record)]

    def _records(self, path: str, filters: Sequence[str] = ()) -> list[JsonObject]:
        """Every record of the list at `path` under `filters`, newest first (by cursor)."""
        items_key = path.rstrip("/").rsplit("/", 1)[-1]
        member = self.client.query_member_for(path)
        queries = (*filters, order_query("$sequence", ascending=False, member=member))
        requester = requester_of(self.client)

        async def every_record() -> list[JsonObject]:
            found: list[JsonObject] = []
            async for body in iter_pages(requester, path, queries, LIST_PAGE):
                found.extend(json.loads(body).get(items_key) or [])
            return found

        return run_sync(every_record())

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> FrameportFile:
        path = self._strip_protocol(path)
        details = self.info(path) if mode == "rb" else None
        if details is not None and details["type"] != "file":
            raise IsADirectoryError(f"{PROTOCOL}://{path}")
        kwargs.setdefault("cache_type", SequentialReadAhead.name)
        return FrameportFile(
            self,
            path,
            mode,
            block_size=block_size or BLOCK_SIZE,
            autocommit=autocommit,
            cache_options=cache_options,
            details=details,
            **kwargs,
        )

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kwargs: object
    ) -> bytes:
        """The file's bytes ``[start, end)`` (negative values count from the end): one
        download for the whole file, Range requests for a part."""
        details = self.info(path)
        if details["type"] != "file":
            raise IsADirectoryError(f"{PROTOCOL}://{self._strip_protocol(path)}")
        bucket_id, _ = self._split(self._strip_protocol(path))
        size = int(details["size"])
        if start is None and end is None:
            data = self.client.bucket(bucket_id).download(details["id"])
            assert isinstance(data, bytes)
            self.received_bytes += len(data)
            return data
        first = _position(start, size, default=0)
        stop = _position(end, size, default=size)
        return self.read_range(bucket_id, details["id"], first, stop, size)

    def get_file(self, rpath: str, lpath: str, callback: object = None, **kwargs: object) -> None:
        """Download a file to `lpath` (resumable, checked against the service's size and MD5)."""
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return
        details = self.info(rpath)
        bucket_id, _ = self._split(self._strip_protocol(rpath))
        self.client.bucket(bucket_id).download(details["id"], lpath, progress=False)
        self.received_bytes += int(details["size"])

    def read_range(self, bucket_id: str, file_id: str, start: int, end: int, size: int) -> bytes:
        """Bytes ``[start, end)`` of a file of `size` bytes (`Bucket.read_range`), counted."""
        data = self.client.bucket(bucket_id).read_range(file_id, start, end, size=size)
        self.received_bytes += len(data)
        return data

    def put_file(self, lpath: str, rpath: str, callback: object = None, **kwargs: object) -> None:
        """Upload the local file `lpath` as `rpath` (chunked, parallel, checked), replacing
        files of the same name once it is complete."""
        if os.path.isdir(lpath):
            return  # folders are virtual
        bucket_id, name = self._split(self._strip_protocol(rpath))
        if not name:
            raise ValueError(f"{PROTOCOL}://{bucket_id}: give a file name after the bucket.")
        uploaded = self.client.bucket(bucket_id).upload_file(lpath, name=name, progress=False)
        for record in self._find(bucket_id, name):
            if record["$id"] != uploaded.id:
                self.client.bucket(bucket_id).delete(record["$id"])

    def rm_file(self, path: str) -> None:
        """Delete the file(s) named `path`."""
        self._delete(self._strip_protocol(path), folder_ok=False)

    def rm(
        self, path: str | list[str], recursive: bool = False, maxdepth: int | None = None
    ) -> None:
        """Delete files; with `recursive`, every file under a folder or bucket (buckets stay).
        A path that names neither a file nor a folder raises FileNotFoundError."""
        for expanded in self.expand_path(path, recursive=recursive, maxdepth=maxdepth):
            self._delete(expanded, folder_ok=True)

    def _delete(self, path: str, *, folder_ok: bool) -> None:
        """Delete the files named `path` (stripped); FileNotFoundError when there is none,
        unless `folder_ok` and `path` is a folder."""
        bucket_id, name = self._split(path)
        found = self._find(bucket_id, name) if name else []
        if not found and not (folder_ok and self.isdir(path)):
            raise FileNotFoundError(f"{PROTOCOL}://{path}")
        for record in found:
            self.client.bucket(bucket_id).delete(record["$id"])

    def created(self, path: str) -> datetime:
        return cast(datetime, self.info(path)["created"])

    def modified(self, path: str) -> datetime:
        return cast(datetime, self.info(path)["modified"])


class SequentialReadAhead(ReadAheadCache):  # type: ignore[misc]
    """fsspec's read-ahead cache, reading ahead only while reads follow one another: a read
    elsewhere in the file (a columnar reader seeking to a footer or a column chunk) fetches
    exactly the bytes asked for. The default cache of frameport files (``"frameport"``)."""

    name = "frameport"
    blocksize: int

    def _fetch(self, start: int | None, end: int | None) -> bytes:
        continues = start is None or self.start <= start <= self.end
        blocksize = self.blocksize
        if not continues:
            self.blocksize = 0
        try:
            data: bytes = super()._fetch(start, end)
        finally:
            self.blocksize = blocksize
        return data


register_cache(SequentialReadAhead, clobber=True)


class FrameportFile(AbstractBufferedFile):  # type: ignore[misc]
    """A file of a bucket: reads by Range requests (`_fetch_range`), writes by uploading the
    buffered bytes when closed."""

    fs: FrameportFileSystem

    def __init__(
        self,
        fs: FrameportFileSystem,
        path: str,
        mode: str = "rb",
        *,
        details: JsonObject | None = None,
        **options: Any,
    ) -> None:
        size = None if details is None else int(details["size"])
        super().__init__(fs, path, mode, size=size, **options)
        if details is not None:
            self.details = details
        self._spool: Any = None

    def _fetch_range(self, start: int, end: int) -> bytes:
        bucket_id, _ = self.fs._split(self.path)
        return self.fs.read_range(bucket_id, self.details["id"], start, end, self.size)

    def _initiate_upload(self) -> None:
        self._spool = tempfile.NamedTemporaryFile(prefix="frameport-", delete=False)  # noqa: SIM115

    def _upload_chunk(self, final: bool = False) -> bool:
        self.buffer.seek(0)
        shutil.copyfileobj(self.buffer, self._spool)
        if final:
            self._spool.close()
            try:
                self.fs.put_file(self._spool.name, self.path)
            finally:
                os.unlink(self._spool.name)
        return True


def _client_from_options(
    endpoint: str | None, project: str | None, key: str | None, jwt: str | None
) -> Client:
    endpoint = endpoint or os.environ.get(ENDPOINT_ENV)
    project = project or os.environ.get(PROJECT_ENV)
    if not endpoint or not project:
        raise ValueError(
            "The frameport filesystem needs storage_options endpoint= and project= (or "
            f"{ENDPOINT_ENV} and {PROJECT_ENV}), plus key= or jwt=, or client=."
        )
    if key is None and jwt is None:
        key, jwt = credentials_from_env()
    return Client(endpoint, project, key=key, jwt=jwt)


def _complete(record: JsonObject) -> bool:
    return bool(record.get("chunksUploaded") == record.get("chunksTotal"))


def _position(value: int | None, size: int, *, default: int) -> int:
    if value is None:
        return default
    return max(0, min(size, value + size if value < 0 else value))


def _directory(name: str) -> JsonObject:
    return {"name": name, "size": 0, "type": "directory"}


def _file_entry(bucket_id: str, record: JsonObject) -> JsonObject:
    file = File.from_record(record)
    return {
        "name": f"{bucket_id}/{file.name}",
        "size": file.size,
        "type": "file",
        "id": file.id,
        "mimetype": file.mime_type,
        "md5": file.signature,
        "created": file.created_at,
        "modified": file.updated_at,
    }
