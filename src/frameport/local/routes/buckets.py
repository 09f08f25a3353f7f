"""/v1/storage/buckets: create, get, list, update and delete buckets (service interface, "Buckets").

Buckets are managed with an API key (scopes `buckets.read`/`buckets.write`, which users and
guests lack). The local service stores every file uncompressed and unencrypted: a bucket
keeps the `compression`, `encryption` and `antivirus` settings it was given, and its files
report `compression: "none"` and `encryption: false`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from typing import Any

from ..service._state import ServiceState
from ..service.accounts._caller import Caller
from ..service.accounts._permissions import RESOURCE_ACTIONS, is_allowed, normalize_permissions
from ..service.uploads._chunks import UploadPaths
from ..store._listing import MetadataList
from ..wire._errors import ServiceError, invalid_param
from ..wire._timefmt import now_text, stamps
from ._routing import Context, Reply, RouteSpec, route

COMPRESSIONS = ("none", "gzip", "zstd")

BUCKET_LIST = MetadataList(
    "buckets",
    {
        "boolean": ("enabled", "fileSecurity", "encryption", "antivirus", "transformations"),
        "string": ("name",),
        "integer": ("maximumFileSize",),
    },
    noun="Bucket",
)
_COLUMNS = (
    "sequence, id, name, permissions, file_security, enabled, maximum_file_size, "
    "allowed_file_extensions, compression, encryption, antivirus, transformations, "
    "created_at, updated_at"
)


@dataclass(frozen=True)
class Bucket:
    """One bucket's settings, as stored."""

    sequence: int
    id: str
    name: str
    permissions: list[str]
    file_security: bool
    enabled: bool
    maximum_file_size: int
    allowed_file_extensions: list[str]
    compression: str
    encryption: bool
    antivirus: bool
    transformations: bool
    created_at: str
    updated_at: str

    @classmethod
    def from_row(cls, row: sqlite3.Row | tuple[Any, ...]) -> Bucket:
        (
            sequence,
            bucket_id,
            name,
            permissions,
            file_security,
            enabled,
            maximum,
            extensions,
            compression,
            encryption,
            antivirus,
            transformations,
            created,
            updated,
        ) = row
        return cls(
            sequence,
            bucket_id,
            name,
            json.loads(permissions),
            bool(file_security),
            bool(enabled),
            maximum,
            json.loads(extensions),
            compression,
            bool(encryption),
            bool(antivirus),
            bool(transformations),
            created,
            updated,
        )

    def allows(self, caller: Caller, action: str) -> bool:
        """Whether the bucket's own permissions give `caller` `action` (keys always)."""
        return caller.is_key or is_allowed(self.permissions, action, caller.roles)

    def model(self, total_size: int) -> dict[str, Any]:
        """The Bucket model (service interface, "Models")."""
        return {
            **stamps(self.id, self.created_at, self.updated_at),
            "$permissions": self.permissions,
            "fileSecurity": self.file_security,
            "name": self.name,
            "enabled": self.enabled,
            "maximumFileSize": self.maximum_file_size,
            "allowedFileExtensions": self.allowed_file_extensions,
            "compression": self.compression,
            "encryption": self.encryption,
            "antivirus": self.antivirus,
            "transformations": self.transformations,
            "totalSize": total_size,
        }


def bucket_files(state: ServiceState, bucket_id: str) -> UploadPaths:
    """Where a bucket's files live on disk."""
    return UploadPaths(state.files_dir / bucket_id)


def find_bucket(conn: sqlite3.Connection, bucket_id: str) -> Bucket | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM buckets WHERE id = ?", (bucket_id,)).fetchone()
    return None if row is None else Bucket.from_row(row)


def _not_found() -> ServiceError:
    return ServiceError(
        "storage_bucket_not_found", "Storage bucket with the requested ID could not be found."
    )


def open_bucket(ctx: Context) -> Bucket:
    """The path's bucket for file routes: 404 when missing, or disabled for a non-key caller."""
    with ctx.store.read() as conn:
        bucket = find_bucket(conn, ctx.path["bucketId"])
    if bucket is None or (not bucket.enabled and not ctx.caller.is_key):
        raise _not_found()
    return bucket


def _total_size(conn: sqlite3.Connection, bucket_id: str) -> int:
    row = conn.execute(
        "SELECT COALESCE(SUM(size_actual), 0) FROM files WHERE bucket_id = ?", (bucket_id,)
    ).fetchone()
    return int(row[0])


def _settings(ctx: Context, current: Bucket | None) -> dict[str, Any]:
    """The bucket parameters of a create or update, with the service's defaults."""
    params = ctx.params
    limit = ctx.state.config.max_file_size
    sent_permissions = params.permission_strings()
    if sent_permissions is not None:
        permissions = normalize_permissions(sent_permissions, RESOURCE_ACTIONS)
    else:
        permissions = current.permissions if current is not None else []
    compression = params.string("compression", default="none")
    if compression not in COMPRESSIONS:
        raise invalid_param("compression", f"Value must be one of ({', '.join(COMPRESSIONS)})")
    extensions = params.string_list("allowedFileExtensions", max_items=100, max_length=64)
    return {
        "name": params.required_string("name", max_length=128),
        "permissions": json.dumps(permissions),
        "file_security": int(params.boolean("fileSecurity", False)),
        "enabled": int(params.boolean("enabled", True)),
        "maximum_file_size": params.integer("maximumFileSize", limit, minimum=1, maximum=limit),
        "allowed_file_extensions": json.dumps(extensions or []),
        "compression": compression,
        "encryption": int(params.boolean("encryption", True)),
        "antivirus": int(params.boolean("antivirus", True)),
        "transformations": int(params.boolean("transformations", True)),
    }


def _existing(conn: sqlite3.Connection, bucket_id: str) -> Bucket:
    bucket = find_bucket(conn, bucket_id)
    if bucket is None:
        raise _not_found()
    return bucket


def create_bucket(ctx: Context) -> Reply:
    bucket_id = ctx.params.uid("bucketId")
    settings = _settings(ctx, None)
    now = now_text()
    with ctx.store.write() as conn:
        if find_bucket(conn, bucket_id) is not None:
            raise ServiceError(
                "storage_bucket_already_exists",
                "A storage bucket with the requested ID already exists.",
            )
        names = ", ".join(settings)
        marks = ", ".join("?" for _ in settings)
        conn.execute(
            f"INSERT INTO buckets (id, {names}, created_at, updated_at) VALUES (?, {marks}, ?, ?)",
            (bucket_id, *settings.values(), now, now),
        )
        bucket = _existing(conn, bucket_id)
    return Reply(bucket.model(0), 201)


def get_bucket(ctx: Context) -> Reply:
    with ctx.store.read() as conn:
        bucket = _existing(conn, ctx.path["bucketId"])
        return Reply(bucket.model(_total_size(conn, bucket.id)))


def list_buckets(ctx: Context) -> Reply:
    listed = BUCKET_LIST.parse(ctx.params)
    with ctx.store.read() as conn:
        total, rows = BUCKET_LIST.page(conn, listed, _COLUMNS)
        buckets = [Bucket.from_row(row) for row in rows]
        models = [bucket.model(_total_size(conn, bucket.id)) for bucket in buckets]
    return Reply({"total": total, "buckets": models})


def update_bucket(ctx: Context) -> Reply:
    with ctx.store.write() as conn:
        current = _existing(conn, ctx.path["bucketId"])
        settings = _settings(ctx, current)
        assignments = ", ".join(f"{name} = ?" for name in settings)
        conn.execute(
            f"UPDATE buckets SET {assignments}, updated_at = ? WHERE id = ?",
            (*settings.values(), now_text(), current.id),
        )
        bucket = _existing(conn, ctx.path["bucketId"])
        return Reply(bucket.model(_total_size(conn, bucket.id)))


def delete_bucket(ctx: Context) -> Reply:
    with ctx.store.write() as conn:
        bucket = _existing(conn, ctx.path["bucketId"])
        conn.execute("DELETE FROM files WHERE bucket_id = ?", (bucket.id,))
        conn.execute("DELETE FROM buckets WHERE id = ?", (bucket.id,))
    shutil.rmtree(bucket_files(ctx.state, bucket.id).root, ignore_errors=True)
    return Reply(status=204)


ROUTES: list[RouteSpec] = [
    *route(create_bucket, "POST", "/v1/storage/buckets", scopes=("buckets.write",)),
    *route(get_bucket, "GET", "/v1/storage/buckets/{bucketId}", scopes=("buckets.read",)),
    *route(list_buckets, "GET", "/v1/storage/buckets", scopes=("buckets.read",)),
    *route(update_bucket, "PUT", "/v1/storage/buckets/{bucketId}", scopes=("buckets.write",)),
    *route(delete_bucket, "DELETE", "/v1/storage/buckets/{bucketId}", scopes=("buckets.write",)),
]
