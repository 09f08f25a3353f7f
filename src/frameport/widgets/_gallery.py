"""`gallery`: a bucket's files as a grid of thumbnails, a page at a time; click to enlarge."""

from __future__ import annotations

import asyncio
import html
import math
from typing import TYPE_CHECKING

import ipywidgets as widgets
import pandas as pd

from .._core import async_twin, run_sync
from .._exceptions import FrameportError
from ._display import StaticViews, describe_failure, image_html, message_html
from ._preview import PREVIEW_FORMAT, FilePreview

if TYPE_CHECKING:
    from .._storage import AsyncBucket, Bucket

#: Thumbnails fetched at the same time.
THUMBNAIL_REQUESTS = 6


class Thumbnail(widgets.VBox):  # type: ignore[misc]
    """One file of the grid: its thumbnail (`image`) and a button with its name (`button`)
    that enlarges it."""

    def __init__(self, file_id: str, name: str, data: bytes | None, size: int) -> None:
        self.file_id = file_id
        self.data = data
        side = f"{size}px"
        if data is None:
            picture: widgets.Widget = widgets.HTML(
                message_html("no preview", error=True),
                layout=widgets.Layout(width=side, height=side),
            )
        else:
            picture = widgets.Image(value=data, format=PREVIEW_FORMAT, width=size, height=size)
        self.button = widgets.Button(
            description=name, tooltip=f"Enlarge {name}", layout=widgets.Layout(width=side)
        )
        super().__init__([picture, self.button])


class Gallery(StaticViews, widgets.VBox):  # type: ignore[misc]
    """A grid of server-side thumbnails of a bucket's files, `page_size` per page, with
    Previous / Next and a page label; a click on a file's name shows it enlarged below
    (a `FilePreview`, in `enlarged`).

    The file list is read once; thumbnails are fetched for the page shown only.
    """

    def __init__(self, bucket: Bucket, *, page_size: int = 24, thumbnail_size: int = 160) -> None:
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a whole number >= 1 (got {page_size!r}).")
        self.bucket = bucket
        self.page_size = page_size
        self.thumbnail_size = thumbnail_size
        self.page = 0
        self.tiles: list[Thumbnail] = []
        self.enlarged_file: str | None = None
        self.previous_button = widgets.Button(description="Previous", icon="arrow-left")
        self.next_button = widgets.Button(description="Next", icon="arrow-right")
        self.page_label = widgets.Label()
        self.status = widgets.HTML()
        self.grid = widgets.GridBox(
            layout=widgets.Layout(
                grid_template_columns=f"repeat(auto-fill, {thumbnail_size + 8}px)",
                grid_gap="8px",
            )
        )
        self.enlarged = widgets.VBox()
        self.previous_button.on_click(lambda _button: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _button: self.show_page(self.page + 1))
        controls = widgets.HBox([self.previous_button, self.page_label, self.next_button])
        super().__init__([controls, self.status, self.grid, self.enlarged])
        self.add_class("frameport-gallery")
        self.files = self._complete_files()
        self.show_page(0)

    @property
    def page_count(self) -> int:
        """The number of pages of `page_size` files (at least 1)."""
        return max(1, math.ceil(len(self.files) / self.page_size))

    def show_page(self, page: int) -> None:
        """Show page `page` (0-based, clamped to the pages there are)."""
        self.page = min(max(page, 0), self.page_count - 1)
        shown = self.files.iloc[self.page * self.page_size : (self.page + 1) * self.page_size]
        ids, names = list(shown["$id"]), list(shown["name"])
        thumbnails = self._thumbnails(ids)
        self.tiles = [
            Thumbnail(file_id, name, data, self.thumbnail_size)
            for file_id, name, data in zip(ids, names, thumbnails, strict=True)
        ]
        for tile in self.tiles:
            tile.button.on_click(lambda _button, file_id=tile.file_id: self.enlarge(file_id))
        self.grid.children = self.tiles
        self.page_label.value = self._page_text()
        self.previous_button.disabled = self.page == 0
        self.next_button.disabled = self.page >= self.page_count - 1
        if None in thumbnails:
            self.status.value = message_html("Some previews could not be made.", error=True)

    def enlarge(self, file_id: str) -> None:
        """Show one file large, below the grid, with a button to close it."""
        close = widgets.Button(description="Close", icon="times")
        close.on_click(lambda _button: self.close_enlarged())
        self.enlarged_file = file_id
        self.enlarged.children = [close, FilePreview(self.bucket, file_id)]

    def close_enlarged(self) -> None:
        """Close the enlarged view of a file and show the grid again."""
        self.enlarged_file = None
        self.enlarged.children = []

    def _complete_files(self) -> pd.DataFrame:
        try:
            files = self.bucket.list_files(details=True)
        except FrameportError as exc:
            self.status.value = message_html(describe_failure(exc), error=True)
            return pd.DataFrame({"$id": [], "name": []})
        return files[files["chunksUploaded"] == files["chunksTotal"]].reset_index(drop=True)

    def _thumbnails(self, file_ids: list[str]) -> list[bytes | None]:
        """The thumbnails of `file_ids` (None where the service made none), fetched together."""
        bucket: AsyncBucket = async_twin(self.bucket)
        side = self.thumbnail_size
        limit = asyncio.Semaphore(THUMBNAIL_REQUESTS)

        async def one(file_id: str) -> bytes | None:
            async with limit:
                try:
                    return await bucket.preview(
                        file_id, width=side, height=side, output=PREVIEW_FORMAT
                    )
                except FrameportError:
                    return None

        async def every() -> list[bytes | None]:
            return list(await asyncio.gather(*(one(file_id) for file_id in file_ids)))

        return run_sync(every())

    def _page_text(self) -> str:
        if self.files.empty:
            return "No files"
        first = self.page * self.page_size + 1
        last = min(first + self.page_size - 1, len(self.files))
        return (
            f"Page {self.page + 1} of {self.page_count} · files {first}–{last} of {len(self.files)}"
        )

    def summary(self) -> str:
        """The gallery as plain text: the page and the names of its files."""
        lines = [f"frameport gallery of bucket {self.bucket.id}: {self._page_text()}"]
        lines.extend(str(tile.button.description) for tile in self.tiles)
        return "\n".join(lines)

    def _html_body(self) -> str:
        figures = "".join(
            f'<figure style="display: inline-block; margin: 4px; width: {self.thumbnail_size}px">'
            f"{image_html(tile.data, PREVIEW_FORMAT) if tile.data else ''}"
            f"<figcaption>{html.escape(str(tile.button.description))}</figcaption></figure>"
            for tile in self.tiles
        )
        title = html.escape(f"Bucket {self.bucket.id} · {self._page_text()}")
        return f"<p><b>{title}</b></p><div>{figures}</div>"


def gallery(bucket: Bucket, page_size: int = 24, *, thumbnail_size: int = 160) -> Gallery:
    """A paged grid of the bucket's files as square thumbnails of `thumbnail_size` pixels,
    made by the service; click a file's name to enlarge it.

    Example (a notebook cell)::

        fp.widgets.gallery(client.bucket("photos"), page_size=12)
    """
    return Gallery(bucket, page_size=page_size, thumbnail_size=thumbnail_size)
