"""The bytes of a file: download, view and preview
(service interface, "Downloads and previews").

Each needs the file's read access (see `files`) and a complete upload: a file still being
uploaded is 404 `storage_file_not_found`. Download and view answer Range requests.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from starlette.responses import Response

from ..service.downloads._preview import GRAVITIES, OUTPUTS, PreviewOptions, render_preview
from ..service.downloads._stored_bytes import content_disposition, stored_bytes_response
from ..wire._errors import ServiceError, invalid_param
from ._routing import Context, Reply, RouteSpec, route
from .buckets import Bucket, bucket_files, open_bucket
from .files import StoredFile, accessible_file

#: Mime types `view` sends as they are; anything else is sent as text/plain.
VIEW_SAFE_MIMES = frozenset(
    {
        "image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "image/heic",
        "image/bmp", "audio/mpeg", "audio/ogg", "audio/wav", "audio/webm", "audio/aac",
        "audio/flac", "video/mp4", "video/webm", "video/ogg", "video/quicktime",
        "application/pdf", "text/plain",
    }
)  # fmt: skip  # a set of names, several a line
CACHE_CONTROL = "private, max-age=3888000"
_HEX_COLOR = re.compile(r"[0-9a-fA-F]{3}|[0-9a-fA-F]{6}")


def _complete_file(ctx: Context, bucket: Bucket) -> StoredFile:
    stored = accessible_file(ctx, bucket, "read")
    if not stored.complete:
        raise ServiceError(
            "storage_file_not_found",
            f"File not found in {bucket.id}/{stored.id}: its upload is not complete.",
        )
    return stored


def download_file(ctx: Context) -> Response:
    bucket = open_bucket(ctx)
    stored = _complete_file(ctx, bucket)
    headers = {
        "Content-Disposition": content_disposition("attachment", stored.name),
        "Cache-Control": CACHE_CONTROL,
    }
    path = bucket_files(ctx.state, bucket.id).final(stored.id)
    return stored_bytes_response(path, ctx.header("Range"), stored.mime_type, headers)


def view_file(ctx: Context) -> Response:
    bucket = open_bucket(ctx)
    stored = _complete_file(ctx, bucket)
    headers = {
        "Content-Disposition": content_disposition("inline", stored.name),
        "Cache-Control": CACHE_CONTROL,
        "X-Content-Type-Options": "nosniff",
    }
    mime = stored.mime_type if stored.mime_type in VIEW_SAFE_MIMES else "text/plain"
    path = bucket_files(ctx.state, bucket.id).final(stored.id)
    return stored_bytes_response(path, ctx.header("Range"), mime, headers)


def _one_of(ctx: Context, name: str, choices: Collection[str], default: str) -> str:
    value = ctx.params.string(name, default=default) or default
    if value not in choices:
        raise invalid_param(name, f"Value must be one of ({', '.join(choices)})")
    return value


def _bounded(ctx: Context, name: str, default: int, minimum: int, maximum: int) -> int:
    value = ctx.params.integer(name, default, minimum=minimum, maximum=maximum)
    return default if value is None else value


def _hex_color(ctx: Context, name: str) -> str:
    value = ctx.params.string(name, default="") or ""
    if value and _HEX_COLOR.fullmatch(value) is None:
        raise invalid_param(name, "Value must be a valid hex color code without the #")
    return value


def _preview_options(ctx: Context) -> PreviewOptions:
    opacity = ctx.params.number("opacity", 1.0)
    if opacity is None or not 0 <= opacity <= 1:
        raise invalid_param("opacity", "Value must be a valid range between 0 and 1")
    return PreviewOptions(
        width=_bounded(ctx, "width", 0, 0, 4000),
        height=_bounded(ctx, "height", 0, 0, 4000),
        gravity=_one_of(ctx, "gravity", GRAVITIES, "center"),
        quality=_bounded(ctx, "quality", -1, -1, 100),
        border_width=_bounded(ctx, "borderWidth", 0, 0, 100),
        border_color=_hex_color(ctx, "borderColor"),
        border_radius=_bounded(ctx, "borderRadius", 0, 0, 4000),
        opacity=opacity,
        rotation=_bounded(ctx, "rotation", 0, -360, 360),
        background=_hex_color(ctx, "background"),
        output=_one_of(ctx, "output", ("", *OUTPUTS), ""),
    )


def preview_file(ctx: Context) -> Reply:
    bucket = open_bucket(ctx)
    if not bucket.transformations and not ctx.caller.is_key:
        raise ServiceError(
            "storage_bucket_transformations_disabled",
            "Image transformations are disabled for the requested bucket.",
        )
    stored = _complete_file(ctx, bucket)
    options = _preview_options(ctx)
    path = bucket_files(ctx.state, bucket.id).final(stored.id)
    data, media_type = render_preview(
        path, stored.mime_type, stored.size_actual, stored.name, options
    )
    return Reply(
        data,
        headers={"Cache-Control": "private, max-age=2592000"},
        media_type=media_type,
    )


ROUTES: list[RouteSpec] = [
    *route(
        download_file,
        "GET",
        "/v1/storage/buckets/{bucketId}/files/{fileId}/download",
        scopes=("files.read",),
    ),
    *route(
        view_file,
        "GET",
        "/v1/storage/buckets/{bucketId}/files/{fileId}/view",
        scopes=("files.read",),
    ),
    *route(
        preview_file,
        "GET",
        "/v1/storage/buckets/{bucketId}/files/{fileId}/preview",
        scopes=("files.read",),
    ),
]
