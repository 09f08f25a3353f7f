"""Records of the service's catalog, storage and function areas: lists as DataFrames with
frameport's read dtypes, decoded against a fixed schema; resources created with a
client-chosen ID; the service's datetimes. Without ``details=True`` a listing keeps the
columns people look at (its ``*_SUMMARY``), so that ``print()`` shows them whole in a
terminal 80 characters wide.

>>> frame = await list_frame(client, "/storage/buckets/b/files", "files", FILE_SCHEMA)
... # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Self

import pandas as pd
import pyarrow as pa

from ._core._ids import ID
from ._core._json import JsonObject
from ._core._pages import iter_pages
from ._exceptions import ConflictError
from ._schema import TIMESTAMP, to_pandas
from ._tables._decode import decode_page

if TYPE_CHECKING:
    from ._core import Requester

#: Records asked for per page.
PAGE_SIZE = 100

Fields = list[tuple[str, pa.DataType]]
_TIMES: Fields = [("$createdAt", TIMESTAMP), ("$updatedAt", TIMESTAMP)]
_PERMISSIONS: Fields = [("$permissions", pa.list_(pa.string()))]
_ID_NAME_ENABLED: Fields = [("$id", pa.string()), ("name", pa.string()), ("enabled", pa.bool_())]

_FILE_FIELDS: Fields = [
    ("$id", pa.string()),
    ("bucketId", pa.string()),
    ("name", pa.string()),
    ("mimeType", pa.string()),
    ("sizeOriginal", pa.int64()),
    ("sizeActual", pa.int64()),
    ("signature", pa.string()),
    ("chunksTotal", pa.int64()),
    ("chunksUploaded", pa.int64()),
    ("compression", pa.string()),
    ("encryption", pa.bool_()),
    *_PERMISSIONS,
    *_TIMES,
]
FILE_SCHEMA = pa.schema(_FILE_FIELDS)
"""The columns of `Bucket.list_files`: the File model's fields, named as the service names them."""
FILE_SUMMARY = ("$id", "name", "mimeType", "sizeOriginal")
"""The columns `Bucket.list_files` keeps without ``details=True``."""

_DEPLOYMENT_FIELDS: Fields = [
    ("$id", pa.string()),
    ("resourceId", pa.string()),
    ("type", pa.string()),
    ("status", pa.string()),
    ("entrypoint", pa.string()),
    ("activate", pa.bool_()),
    ("sourceSize", pa.int64()),
    ("buildSize", pa.int64()),
    ("totalSize", pa.int64()),
    ("buildDuration", pa.int64()),
    *_TIMES,
]
DEPLOYMENT_SCHEMA = pa.schema(_DEPLOYMENT_FIELDS)
"""The columns of `Function.deployments`."""

DATABASE_SCHEMA = pa.schema([*_ID_NAME_ENABLED, *_TIMES])
"""The columns of `Client.databases`."""
DATABASE_SUMMARY = ("$id", "name", "enabled")
"""The columns `Client.databases` keeps without ``details=True``."""

TABLE_SCHEMA = pa.schema(
    [
        *_ID_NAME_ENABLED,
        ("rowSecurity", pa.bool_()),
        ("columns", pa.list_(pa.struct([("key", pa.string())]))),
        *_TIMES,
        *_PERMISSIONS,
    ]
)
"""What `Client.tables` reads of each table model (`columns`: their keys)."""
TABLE_SUMMARY = ("$id", "name", "columns", "rowSecurity", "enabled")
"""The columns `Client.tables` keeps without ``details=True``."""

BUCKET_SCHEMA = pa.schema(
    [
        *_ID_NAME_ENABLED,
        ("fileSecurity", pa.bool_()),
        ("maximumFileSize", pa.int64()),
        ("compression", pa.string()),
        ("encryption", pa.bool_()),
        ("antivirus", pa.bool_()),
        ("transformations", pa.bool_()),
        ("totalSize", pa.int64()),
        *_TIMES,
        *_PERMISSIONS,
    ]
)
"""The columns of `Client.buckets`."""
BUCKET_SUMMARY = ("$id", "name", "totalSize", "maximumFileSize", "compression")
"""The columns `Client.buckets` keeps without ``details=True``."""


def parse_time(text: object) -> datetime | None:
    """A service datetime as an aware datetime (None for a missing or empty value).

    >>> parse_time("2020-10-15T06:38:00.000+00:00").isoformat()
    '2020-10-15T06:38:00+00:00'
    """
    return datetime.fromisoformat(text) if isinstance(text, str) and text else None


class AsyncResource:
    """What a bucket and a function share: the resource at ``<collection>/<ID>``, its items
    (files, deployments) at ``<collection>/<ID>/<items>/<item ID>``."""

    _collection: ClassVar[str]
    _items: ClassVar[str]
    _exists_error: ClassVar[str]  # the service's error type for a create whose ID is taken

    def __init__(self, requester: Requester, resource_id: str) -> None:
        self._requester = requester
        self._id = ID.custom(resource_id)
        self._path = f"{self._collection}/{self._id}"
        self._items_path = f"{self._path}/{self._items}"

    @property
    def id(self) -> str:
        """The bucket's or function's ID."""
        return self._id

    async def info(self) -> JsonObject:
        """The service's record of the bucket (name, permissions, maximumFileSize, ...) or of
        the function (name, runtime, entrypoint, ...)."""
        record: JsonObject = await self._requester.request_json("GET", self._path)
        return record

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self._id!r})"

    def _item_path(self, item_id: str, action: str = "") -> str:
        """The path of one item, or of an `action` on it (``download``, ``preview``)."""
        suffix = f"/{action}" if action else ""
        return f"{self._items_path}/{ID.custom(item_id)}{suffix}"

    @classmethod
    async def _create(
        cls, requester: Requester, resource_id: str, body: JsonObject, *, exist_ok: bool
    ) -> Self:
        """POST `body` to the collection, creating the resource `resource_id`.

        With a chosen ID (not ``"unique()"``) the create is idempotent: it is retried after a
        failure, and an "already exists" caused by an earlier attempt reads the resource back.
        With `exist_ok`, a resource that existed before is read back too instead of raising
        `ConflictError`.
        """
        chosen = resource_id != "unique()"
        own_path = f"{cls._collection}/{resource_id}"
        try:
            record: JsonObject = await requester.request_json(
                "POST",
                cls._collection,
                json=body,
                idempotent=chosen,
                read_back=own_path if chosen else None,
            )
        except ConflictError as exc:
            if not exist_ok or exc.type != cls._exists_error:
                raise
            record = await requester.request_json("GET", own_path)
        return cls(requester, str(record["$id"]))


async def list_table(
    requester: Requester, path: str, items_key: str, schema: pa.Schema
) -> pa.Table:
    """All records of the list at `path` (their key in the body: `items_key`), in the
    service's order, as an Arrow table with `schema`'s columns."""
    batches = [
        decode_page(body, schema, items_key=items_key)[1]
        async for body in iter_pages(requester, path, (), PAGE_SIZE)
    ]
    return pa.Table.from_batches(batches, schema=schema)


async def list_frame(
    requester: Requester,
    path: str,
    items_key: str,
    schema: pa.Schema,
    summary: Sequence[str] | None = None,
) -> pd.DataFrame:
    """`list_table` as a DataFrame with frameport's read dtypes, of the `summary` columns
    only when given."""
    return to_pandas(summarized(await list_table(requester, path, items_key, schema), summary))


def summarized(records: pa.Table, summary: Sequence[str] | None) -> pa.Table:
    """`records` with only the `summary` columns, or whole when it is None."""
    return records if summary is None else records.select(list(summary))
