"""The bytes of a file: download, view and preview
(service interface, "Downloads and previews").

Each needs the file's read access (see `files`) and a complete upload: a file still being
uploaded is 404 `storage_file_not_found`. Download and view answer Range requests.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

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


def _complete_file(ctx: Context, bucket: Bucket) -> tuple[StoredFile, Path]:
    """The path's file, if the caller may read it and its upload is complete, and where its
    bytes are."""
    stored = accessible_file(ctx, bucket, "read")
    if not stored.complete:
        raise ServiceError(
            "storage_file_not_found",
            f"File not found in {bucket.id}/{stored.id}: its upload is not complete.",
        )
    return stored, bucket_files(ctx.state, bucket.id).final(stored.id)


def file_bytes(ctx: Context) -> Response:
    """`.../download` sends the file as an attachment; `.../view` inline, as its own type
    only when that type is safe to show (else as text)."""
    stored, path = _complete_file(ctx, open_bucket(ctx))
    inline = ctx.route.path.endswith("/view")
    headers = {
        "Content-Disposition": content_disposition(
            "inline" if inline else "attachment", stored.name
        ),
        "Cache-Control": CACHE_CONTROL,
    }
    mime = stored.mime_type
    if inline:
        headers["X-Content-Type-Options"] = "nosniff"
        mime = mime if mime in VIEW_SAFE_MIMES else "text/plain"
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
    stored, path = _complete_file(ctx, bucket)
    options = _preview_options(ctx)
    data, media_type = render_preview(
        path, stored.mime_type, stored.size_actual, stored.name, options
    )
    return Reply(
        data,
        headers={"Cache-Control": "private, max-age=2592000"},
        media_type=media_type,
    )


_FILE = "/v1/storage/buckets/{bucketId}/files/{fileId}"
ROUTES: list[RouteSpec] = [
    *route(file_bytes, "GET", f"{_FILE}/download", f"{_FILE}/view", scopes=("files.read",)),
    *route(preview_file, "GET", f"{_FILE}/preview", scopes=("files.read",)),
]
