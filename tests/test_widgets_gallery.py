"""The bucket gallery against the local service: thumbnails, paging, enlarging."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from PIL import Image

import frameport.widgets as fpw
from frameport import ID, Bucket, Client
from frameport.local import LocalService

FILES = 30


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[Client]:
    with Client(service.endpoint, service.project, key=service.key) as client:
        yield client


@pytest.fixture(scope="module")
def bucket(admin: Client) -> Bucket:
    photos = admin.create_bucket(f"gallery-{ID.unique()}", "Gallery tests")
    for number in range(FILES):
        buffer = io.BytesIO()
        Image.new("RGB", (90 + number, 60), (number * 8, 90, 160)).save(buffer, "PNG")
        photos.upload_bytes(buffer.getvalue(), f"photo-{number:02d}.png", progress=False)
    return photos


def names_shown(gallery: fpw.Gallery) -> list[str]:
    return [str(tile.button.description) for tile in gallery.tiles]


def test_pages_of_server_side_thumbnails(bucket: Bucket) -> None:
    gallery = fpw.gallery(bucket, page_size=12, thumbnail_size=64)
    assert gallery.page_count == 3
    assert gallery.page_label.value == "Page 1 of 3 · files 1–12 of 30"
    assert names_shown(gallery) == [f"photo-{n:02d}.png" for n in range(12)]
    assert gallery.previous_button.disabled and not gallery.next_button.disabled
    for tile in gallery.tiles:
        assert tile.data is not None
        with Image.open(io.BytesIO(tile.data)) as thumbnail:
            assert thumbnail.size == (64, 64)  # cropped to a square by the service


def test_next_and_previous(bucket: Bucket) -> None:
    gallery = fpw.gallery(bucket, page_size=12)
    gallery.next_button.click()
    gallery.next_button.click()
    assert gallery.page_label.value == "Page 3 of 3 · files 25–30 of 30"
    assert names_shown(gallery) == [f"photo-{n:02d}.png" for n in range(24, 30)]
    assert gallery.next_button.disabled and not gallery.previous_button.disabled
    gallery.previous_button.click()
    assert names_shown(gallery)[0] == "photo-12.png"


def test_click_enlarges_and_close_hides(bucket: Bucket) -> None:
    gallery = fpw.gallery(bucket, page_size=6)
    gallery.tiles[2].button.click()
    assert gallery.enlarged_file == gallery.tiles[2].file_id
    enlarged = gallery.enlarged.children[1]
    assert isinstance(enlarged, fpw.FilePreview)
    assert enlarged.file is not None and enlarged.file.name == "photo-02.png"
    assert enlarged.image is not None
    with Image.open(io.BytesIO(enlarged.image.value)) as shown:
        assert shown.width == 640
    gallery.enlarged.children[0].click()
    assert gallery.enlarged_file is None and gallery.enlarged.children == ()


def test_empty_bucket(admin: Client) -> None:
    empty = admin.create_bucket(f"empty-{ID.unique()}", "Empty")
    gallery = fpw.gallery(empty)
    assert gallery.page_label.value == "No files"
    assert gallery.tiles == [] and gallery.next_button.disabled


def test_missing_bucket_is_said_plainly(admin: Client) -> None:
    gallery = fpw.gallery(admin.bucket("no-such-bucket"))
    assert "There is no such bucket" in gallery.status.value


def test_views_without_a_widget_frontend(bucket: Bucket) -> None:
    bundle = fpw.gallery(bucket, page_size=4)._repr_mimebundle_()
    assert "Page 1 of 8" in bundle["text/plain"] and "photo-03.png" in bundle["text/plain"]
    assert bundle["text/html"].count('src="data:image/png;base64,') == 4
