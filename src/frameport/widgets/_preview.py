"""`preview`: one file of a bucket, as an image, or as its first rows for Parquet and CSV."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from .._exceptions import FrameportError
from ._display import (
    StaticViews,
    describe_failure,
    facts_html,
    facts_text,
    file_facts,
    frame_html,
    frame_text,
    image_html,
    message_html,
)
from ._first_rows import first_rows, tabular_format

if TYPE_CHECKING:
    import pandas as pd

    from .._storage import Bucket, File

#: Image files the service turns into scaled previews (others get an icon).
PREVIEW_IMAGE_TYPES = frozenset(
    {"image/jpeg", "image/png", "image/gif", "image/webp", "image/heic"}
)
#: The format previews are asked in: every browser shows it, and it keeps transparency.
PREVIEW_FORMAT = "png"


class FilePreview(StaticViews, widgets.VBox):  # type: ignore[misc]
    """What a file holds, with its facts (name, type, size, ...) beside it.

    Images and other files: the service's preview image, fetched by the bucket's client (the
    browser never has to authenticate) into an ``ipywidgets.Image`` (`image`). Parquet and CSV
    files: their first `rows` rows (`frame`), read with Range requests; `bytes_read` says how
    many bytes of the file that took.
    """

    def __init__(self, bucket: Bucket, file_id: str, *, width: int = 640, rows: int = 10) -> None:
        self.bucket = bucket
        self.file_id = file_id
        self.file: File | None = None
        self.image: widgets.Image | None = None
        self.image_bytes: bytes | None = None
        self.frame: pd.DataFrame | None = None
        self.bytes_read = 0
        self.error: str | None = None
        self.details = widgets.HTML(layout=widgets.Layout(margin="0 0 0 1em"))
        self.content = widgets.Box()
        wrapping = widgets.Layout(flex_flow="row wrap", align_items="flex-start")
        super().__init__([widgets.Box([self.content, self.details], layout=wrapping)])
        self.add_class("frameport-preview")
        try:
            self._load(width, rows)
        except (FrameportError, ValueError, OSError) as exc:
            self.error = describe_failure(exc)
            self.content.children = [widgets.HTML(message_html(self.error, error=True))]

    def _load(self, width: int, rows: int) -> None:
        self.file = file = self.bucket.get(self.file_id)
        self.details.value = facts_html(file_facts(file))
        if not file.complete:
            raise ValueError("The file's upload is not complete; there is nothing to show yet.")
        if tabular_format(file) is not None:
            self.frame, self.bytes_read = first_rows(self.bucket, file, rows)
            self.content.children = [widgets.HTML(frame_html(self.frame))]
            return
        self.image_bytes = self.bucket.preview(
            file.id,
            width=width if file.mime_type in PREVIEW_IMAGE_TYPES else None,
            output=PREVIEW_FORMAT,
        )
        self.image = widgets.Image(value=self.image_bytes, format=PREVIEW_FORMAT)
        self.image.layout.max_width = "100%"
        self.content.children = [self.image]

    def summary(self) -> str:
        """The preview as plain text (shown where widgets cannot render)."""
        lines = [f"frameport preview of file {self.file_id}"]
        if self.file is not None:
            lines.append(facts_text(file_facts(self.file)))
        if self.error is not None:
            lines.append(f"error: {self.error}")
        elif self.frame is not None:
            lines.append(frame_text(self.frame))
        elif self.image_bytes is not None:
            lines.append(f"(a {PREVIEW_FORMAT} preview image, {len(self.image_bytes)} bytes)")
        return "\n".join(lines)

    def _html_body(self) -> str:
        parts = [self.details.value]
        if self.error is not None:
            parts.append(message_html(self.error, error=True))
        elif self.frame is not None:
            parts.append(frame_html(self.frame))
        elif self.image_bytes is not None:
            parts.append(image_html(self.image_bytes, PREVIEW_FORMAT))
        return "".join(parts)


def preview(bucket: Bucket, file_id: str, *, width: int = 640, rows: int = 10) -> FilePreview:
    """A view of one file: an image preview `width` pixels wide (made by the service), or the
    first `rows` rows of a Parquet or CSV file, with the file's facts.

    Example (a notebook cell)::

        fp.widgets.preview(client.bucket("photos"), "cat")
    """
    return FilePreview(bucket, file_id, width=width, rows=rows)
