"""/v1/storage/buckets/{bucketId}/files: chunked create, get, list, update and delete
(service interface, "Files", "Chunked uploads", "Permissions"); the bytes are sent by
`file_content`.

Access for non-key callers: the bucket's `read` (or `update`, `delete`) permission covers every
file; without it, a bucket with `fileSecurity` lets each file's own permissions decide; else
401 `user_unauthorized`. A file the caller may not read under fileSecurity is 404
`storage_file_not_found`. Creating needs the bucket's `create` permission on every chunk.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.datastructures import UploadFile

from ..service._crash_points import crash_point
from ..service._ratelimit import RateLimit
from ..service.accounts._permissions import (
    ITEM_ACTIONS,
    check_grantable,
    default_item_permissions,
    is_allowed,
    normalize_permissions,
)
from ..service.realtime._hub import publish_file_event
from ..service.uploads._chunks import (
    ChunkPlan,
    FileTarget,
    JoinedFile,
    JoinedSizeMismatch,
    UploadPaths,
    chunk_index,
    file_extension,
    part_size,
    part_too_long,
    plan_chunk,
    ranged_chunk,
    require_same_size,
    require_whole_chunk,
    sniff_mime,
    upload_id,
    upload_lock,
    uploaded_part,
)
from ..store._listing import MetadataList, readable_by
from ..wire._errors import ServiceError
from ..wire._timefmt import now_text
from ._routing import Context, Reply, RouteSpec, route
from .buckets import Bucket, bucket_files, open_bucket

FILE_LIST = MetadataList(
    "files",
    {
        "string": ("name", "folder", "signature", "mimeType"),
        "integer": ("sizeOriginal", "chunksTotal", "chunksUploaded"),
    },
    noun="File",
)
_COLUMNS = (
    "sequence, bucket_id, id, name, folder, permissions, signature, mime_type, size_original, "
    "size_actual, chunks_total, chunks_uploaded, created_at, updated_at"
)


@dataclass(frozen=True)
class StoredFile:
    """One file's record."""

    sequence: int
    bucket_id: str
    id: str
    name: str
    folder: str
    permissions: list[str]
    signature: str
    mime_type: str
    size_original: int
    size_actual: int
    chunks_total: int
    chunks_uploaded: int
    created_at: str
    updated_at: str

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> StoredFile:
        values = list(row)
        values[5] = json.loads(values[5])
        return cls(*values)

    @property
    def complete(self) -> bool:
        return self.chunks_uploaded >= self.chunks_total

    def model(self) -> dict[str, Any]:
        """The File model (service interface, "Models")."""
        return {
            "$id": self.id,
            "bucketId": self.bucket_id,
            "$createdAt": self.created_at,
            "$updatedAt": self.updated_at,
            "$permissions": self.permissions,
            "name": self.name,
            "folder": self.folder,
            "key": f"{self.folder}/{self.name}" if self.folder else self.name,
            "signature": self.signature,
            "mimeType": self.mime_type,
            "sizeOriginal": self.size_original,
            "sizeActual": self.size_actual,
            "chunksTotal": self.chunks_total,
            "chunksUploaded": self.chunks_uploaded,
            "encryption": False,
            "compression": "none",
        }


def _find(conn: sqlite3.Connection, bucket_id: str, file_id: str) -> StoredFile | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM files WHERE bucket_id = ? AND id = ?", (bucket_id, file_id)
    ).fetchone()
    return None if row is None else StoredFile.from_row(row)


def _not_found(file_id: str) -> ServiceError:
    return ServiceError(
        "storage_file_not_found", f"The file {file_id!r} could not be found in this bucket."
    )


def _unauthorized() -> ServiceError:
    return ServiceError("user_unauthorized", "The current user is not authorized to do this.")


def accessible_file(ctx: Context, bucket: Bucket, action: str) -> StoredFile:
    """The path's file if the caller may `action` it, under the permission rules
    (service interface, "Permissions")."""
    by_bucket = bucket.allows(ctx.caller, action)
    if not by_bucket and not bucket.file_security:
        raise _unauthorized()
    file_id = ctx.path["fileId"]
    with ctx.store.read() as conn:
        stored = _find(conn, bucket.id, file_id)
    if stored is None:
        raise _not_found(file_id)
    if not by_bucket and not is_allowed(stored.permissions, action, ctx.caller.roles):
        raise _not_found(file_id) if action == "read" else _unauthorized()
    return stored


def _granted_permissions(ctx: Context) -> list[str] | None:
    """The `permissions` sent, validated, and only with roles a non-key caller holds."""
    sent = ctx.params.permission_strings()
    if sent is None:
        return None
    permissions = normalize_permissions(sent, ITEM_ACTIONS)
    check_grantable(permissions, ctx.caller)
    return permissions


# -- create (one request per chunk) ---------------------------------------------------------


def _chunk_rate_key(ctx: Context) -> str:
    """The chunk index, so each chunk of an upload has its own budget
    (service interface, "Rate limits")."""
    return str(chunk_index(ctx.header("Content-Range")))


def create_file(ctx: Context) -> Reply:
    """One chunk of a file (or the whole file): 201, or 200 for a chunk of a complete file."""
    bucket = open_bucket(ctx)
    chunk = _read_chunk(ctx, bucket)
    paths = bucket_files(ctx.state, bucket.id)
    staged = paths.stage(chunk.part)
    try:
        with upload_lock(ctx.state, f"file:{bucket.id}:{chunk.file_id}"):
            return _store_chunk(ctx, bucket, chunk, paths, staged)
    finally:
        staged.unlink(missing_ok=True)


def incoming_file(ctx: Context) -> FileTarget:
    """Before the body: the checks of `_declared_chunk`, and where the `file` part goes, at
    most the chunk's length (or, without Content-Range, the bucket's maximum size)."""
    bucket = open_bucket(ctx)
    plan = _declared_chunk(ctx, bucket)
    incoming = bucket_files(ctx.state, bucket.id).incoming
    if plan is None:
        return FileTarget("file", bucket.maximum_file_size, incoming, lambda: _too_large(bucket))
    content_range = ctx.header("Content-Range")
    return FileTarget("file", plan.length, incoming, lambda: part_too_long(content_range, plan))


def _too_large(bucket: Bucket) -> ServiceError:
    return ServiceError(
        "storage_invalid_file_size",
        f"File size not allowed: the bucket takes at most {bucket.maximum_file_size} bytes.",
    )


@dataclass(frozen=True)
class FileChunk:
    """What one create request carries."""

    file_id: str
    name: str
    folder: str
    permissions: list[str]
    plan: ChunkPlan
    part: UploadFile


def _declared_chunk(ctx: Context, bucket: Bucket) -> ChunkPlan | None:
    """What a chunk declares before its body, checked in the service's order
    (service interface, "Chunked uploads"): the
    bucket's `create` permission, the bucket's limit, then the Content-Range (None without
    one), its total within the bucket's maximum size, and a whole chunk."""
    if not bucket.allows(ctx.caller, "create"):
        raise _unauthorized()
    limit = ctx.state.config.max_file_size
    if bucket.maximum_file_size > limit:
        raise ServiceError(
            "general_server_error",
            f"The bucket's maximumFileSize ({bucket.maximum_file_size}) is larger than the "
            f"service's limit ({limit}).",
        )
    content_range = ctx.header("Content-Range")
    if not content_range:
        return None
    plan = ranged_chunk(content_range)
    if plan.total_size > bucket.maximum_file_size:
        raise _too_large(bucket)
    require_whole_chunk(plan, content_range)
    return plan


def _read_chunk(ctx: Context, bucket: Bucket) -> FileChunk:
    """The request's chunk: what it declared, then its form (permissions, the part and its
    length, the extension, a whole file's size)."""
    _declared_chunk(ctx, bucket)
    permissions = _granted_permissions(ctx)
    if permissions is None:
        permissions = default_item_permissions(ctx.caller)
    part = uploaded_part(ctx.params, "file")
    plan = plan_chunk(ctx.header("Content-Range"), part_size(part))
    file_id = upload_id(ctx.header("X-Service-ID"), ctx.params.raw("fileId"))
    name = part.filename or file_id
    allowed = {extension.lower() for extension in bucket.allowed_file_extensions}
    if allowed and file_extension(name) not in allowed:
        raise ServiceError("storage_file_type_unsupported", "File extension not allowed.")
    if plan.total_size > bucket.maximum_file_size:
        raise _too_large(bucket)
    folder = ctx.params.string("folder", default="", max_length=255) or ""
    return FileChunk(file_id, name, folder, permissions, plan, part)


def _store_chunk(
    ctx: Context, bucket: Bucket, chunk: FileChunk, paths: UploadPaths, staged: Path
) -> Reply:
    """Keep the chunk (under the file's lock); join the parts when it was the last one."""
    with ctx.store.read() as conn:
        stored = _find(conn, bucket.id, chunk.file_id)
    if stored is None:
        stored = _create_record(ctx, bucket, chunk)
    elif stored.complete and chunk.plan.ranged:
        return Reply(stored.model(), 200)
    elif stored.complete or not chunk.plan.ranged:
        raise ServiceError(
            "storage_file_already_exists", "A file with the same ID already exists in this bucket."
        )
    require_same_size(stored.id, stored.size_original, chunk.plan)
    parts = paths.parts(stored.id)
    parts.commit(staged, chunk.plan.index)
    uploaded = parts.count()
    if uploaded < stored.chunks_total:
        stored = _record_progress(ctx, stored, uploaded)
    else:
        try:
            joined = parts.join(paths.joining(stored.id), stored.chunks_total, stored.size_original)
        except JoinedSizeMismatch:
            _discard_upload(ctx, stored, paths)
            raise
        stored = _record_completion(ctx, stored, joined, chunk.permissions)
        crash_point("upload.recorded")
        paths.place(stored.id)
        publish_file_event(ctx.state, "create", bucket, stored.model())
    return Reply(stored.model(), 201)


def _discard_upload(ctx: Context, stored: StoredFile, paths: UploadPaths) -> None:
    """Forget an unfinished upload: its parts and its record."""
    paths.remove(stored.id)
    with ctx.store.write() as conn:
        conn.execute("DELETE FROM files WHERE sequence = ?", (stored.sequence,))


def _create_record(ctx: Context, bucket: Bucket, chunk: FileChunk) -> StoredFile:
    """The first chunk to arrive creates the file's record."""
    now = now_text()
    with ctx.store.write() as conn:
        conn.execute(
            f"INSERT INTO files ({_COLUMNS.removeprefix('sequence, ')}) "
            "VALUES (?, ?, ?, ?, ?, '', '', ?, 0, ?, 0, ?, ?)",
            (
                bucket.id,
                chunk.file_id,
                chunk.name,
                chunk.folder,
                json.dumps(chunk.permissions),
                chunk.plan.total_size,
                chunk.plan.total_chunks,
                now,
                now,
            ),
        )
        return _reloaded(conn, bucket.id, chunk.file_id)


def _reloaded(conn: sqlite3.Connection, bucket_id: str, file_id: str) -> StoredFile:
    stored = _find(conn, bucket_id, file_id)
    if stored is None:  # deleted between two statements of this request
        raise _not_found(file_id)
    return stored


def _record_progress(ctx: Context, stored: StoredFile, uploaded: int) -> StoredFile:
    with ctx.store.write() as conn:
        conn.execute(
            "UPDATE files SET chunks_uploaded = MAX(chunks_uploaded, ?), updated_at = ? "
            "WHERE sequence = ?",
            (uploaded, now_text(), stored.sequence),
        )
        return _reloaded(conn, stored.bucket_id, stored.id)


def _record_completion(
    ctx: Context, stored: StoredFile, joined: JoinedFile, permissions: list[str]
) -> StoredFile:
    """The last part is in: the file's signature, mime type and sizes, and its final permissions."""
    with ctx.store.write() as conn:
        conn.execute(
            "UPDATE files SET chunks_uploaded = chunks_total, signature = ?, mime_type = ?, "
            "size_actual = ?, permissions = ?, updated_at = ? WHERE sequence = ?",
            (
                joined.md5,
                sniff_mime(joined.head, stored.name),
                joined.size,
                json.dumps(permissions),
                now_text(),
                stored.sequence,
            ),
        )
        return _reloaded(conn, stored.bucket_id, stored.id)


# -- read, list, update, delete ---------------------------------------------------------------


def get_file(ctx: Context) -> Reply:
    """A file's record, complete or not (a client resumes from `chunksUploaded`)."""
    return Reply(accessible_file(ctx, open_bucket(ctx), "read").model())


def list_files(ctx: Context) -> Reply:
    bucket = open_bucket(ctx)
    by_bucket = bucket.allows(ctx.caller, "read")
    if not by_bucket and not bucket.file_security:
        raise _unauthorized()
    listed = FILE_LIST.parse(ctx.params)
    visible = None if by_bucket else readable_by(ctx.caller.roles)
    with ctx.store.read() as conn:
        scope = ("bucket_id = ?", [bucket.id])
        total, rows = FILE_LIST.page(conn, listed, _COLUMNS, scope=scope, visible=visible)
    return Reply({"total": total, "files": [StoredFile.from_row(row).model() for row in rows]})


def update_file(ctx: Context) -> Reply:
    bucket = open_bucket(ctx)
    stored = accessible_file(ctx, bucket, "update")
    name = ctx.params.string("name", max_length=255)
    permissions = _granted_permissions(ctx)
    with ctx.store.write() as conn:
        conn.execute(
            "UPDATE files SET name = ?, permissions = ?, updated_at = ? WHERE sequence = ?",
            (
                stored.name if name is None else name,
                json.dumps(stored.permissions if permissions is None else permissions),
                now_text(),
                stored.sequence,
            ),
        )
        updated = _reloaded(conn, stored.bucket_id, stored.id).model()
    publish_file_event(ctx.state, "update", bucket, updated)
    return Reply(updated)


def delete_file(ctx: Context) -> Reply:
    bucket = open_bucket(ctx)
    stored = accessible_file(ctx, bucket, "delete")
    with upload_lock(ctx.state, f"file:{bucket.id}:{stored.id}"):
        with ctx.store.write() as conn:
            conn.execute("DELETE FROM files WHERE sequence = ?", (stored.sequence,))
        bucket_files(ctx.state, bucket.id).remove(stored.id)
    publish_file_event(ctx.state, "delete", bucket, stored.model())
    return Reply(status=204)


ROUTES: list[RouteSpec] = [
    *route(
        create_file,
        "POST",
        "/v1/storage/buckets/{bucketId}/files",
        scopes=("files.write",),
        rate_limit=RateLimit(60, 60, key=_chunk_rate_key, by_method=True, by_user=True),
        file_target=incoming_file,
    ),
    *route(
        get_file, "GET", "/v1/storage/buckets/{bucketId}/files/{fileId}", scopes=("files.read",)
    ),
    *route(list_files, "GET", "/v1/storage/buckets/{bucketId}/files", scopes=("files.read",)),
    *route(
        update_file, "PUT", "/v1/storage/buckets/{bucketId}/files/{fileId}", scopes=("files.write",)
    ),
    *route(
        delete_file,
        "DELETE",
        "/v1/storage/buckets/{bucketId}/files/{fileId}",
        scopes=("files.write",),
        rate_limit=RateLimit(60, 60, by_method=True, by_user=True),
    ),
]
