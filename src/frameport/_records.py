"""Records of the service's catalog, storage and function areas: lists as typed DataFrames,
creates with a client-chosen ID, and the service's datetimes.

`list_table` reads every page of a list (databases, tables, buckets, files, deployments) by
cursor (``cursorAfter`` the last ID of the previous page) and decodes it with Arrow against a
fixed schema; `list_frame` converts that with frameport's read dtypes: integers ``Int64``,
times ``datetime64[ms, UTC]``, text ``str``, flags ``boolean``, lists ``object``
(``$permissions``: tuples).

>>> frame = await list_frame(client, "/storage/buckets/b/files", "files", FILE_SCHEMA)
... # doctest: +SKIP
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from ._core._json import JsonObject
from ._core._pages import iter_pages
from ._exceptions import ConflictError
from ._schema import TIMESTAMP, to_pandas
from ._tables._decode import decode_page

if TYPE_CHECKING:
    from ._core import Requester

#: Records asked for per page.
PAGE_SIZE = 100

_FILE_FIELDS: list[tuple[str, pa.DataType]] = [
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
    ("$permissions", pa.list_(pa.string())),
    ("$createdAt", TIMESTAMP),
    ("$updatedAt", TIMESTAMP),
]
FILE_SCHEMA = pa.schema(_FILE_FIELDS)
"""The columns of `Bucket.list_files`: the File model's fields, named as the service names them."""

_DEPLOYMENT_FIELDS: list[tuple[str, pa.DataType]] = [
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
    ("$createdAt", TIMESTAMP),
    ("$updatedAt", TIMESTAMP),
]
DEPLOYMENT_SCHEMA = pa.schema(_DEPLOYMENT_FIELDS)
"""The columns of `Function.deployments`."""

_TIMES: list[tuple[str, pa.DataType]] = [("$createdAt", TIMESTAMP), ("$updatedAt", TIMESTAMP)]
_PERMISSIONS: list[tuple[str, pa.DataType]] = [("$permissions", pa.list_(pa.string()))]

_DATABASE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("$id", pa.string()),
    ("name", pa.string()),
    ("enabled", pa.bool_()),
    *_TIMES,
]
DATABASE_SCHEMA = pa.schema(_DATABASE_FIELDS)
"""The columns of `Client.databases`."""

_TABLE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("$id", pa.string()),
    ("name", pa.string()),
    ("enabled", pa.bool_()),
    ("rowSecurity", pa.bool_()),
    ("columns", pa.list_(pa.struct([("key", pa.string())]))),
    *_TIMES,
    *_PERMISSIONS,
]
TABLE_SCHEMA = pa.schema(_TABLE_FIELDS)
"""What `Client.tables` reads of each table model (`columns`: their keys)."""

_BUCKET_FIELDS: list[tuple[str, pa.DataType]] = [
    ("$id", pa.string()),
    ("name", pa.string()),
    ("enabled", pa.bool_()),
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
BUCKET_SCHEMA = pa.schema(_BUCKET_FIELDS)
"""The columns of `Client.buckets`."""


def parse_time(text: object) -> datetime | None:
    """A service datetime as an aware datetime (None for a missing or empty value).

    >>> parse_time("2020-10-15T06:38:00.000+00:00").isoformat()
    '2020-10-15T06:38:00+00:00'
    """
    return datetime.fromisoformat(text) if isinstance(text, str) and text else None


async def create_record(
    requester: Requester,
    path: str,
    body: JsonObject,
    resource_id: str,
    *,
    existing: str | None = None,
) -> JsonObject:
    """POST `body` to the collection at `path`, creating the resource `resource_id`.

    With a chosen ID (not ``"unique()"``) the create is idempotent: it is retried after a
    failure, and an "already exists" caused by an earlier attempt reads the resource back.
    With `existing` (the error type the service gives a resource that exists, e.g.
    ``"storage_bucket_already_exists"``), a resource that existed before is read back too
    instead of raising `ConflictError` (``exist_ok``).
    """
    chosen = resource_id != "unique()"
    own_path = f"{path}/{resource_id}"
    try:
        record: JsonObject = await requester.request_json(
            "POST",
            path,
            json=body,
            idempotent=chosen,
            read_back=own_path if chosen else None,
        )
    except ConflictError as exc:
        if existing is None or exc.type != existing:
            raise
        record = await requester.request_json("GET", own_path)
    return record


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
    requester: Requester, path: str, items_key: str, schema: pa.Schema
) -> pd.DataFrame:
    """`list_table` as a DataFrame with frameport's read dtypes."""
    return to_pandas(await list_table(requester, path, items_key, schema))
