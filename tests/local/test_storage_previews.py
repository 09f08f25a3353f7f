"""Previews (service interface, "Downloads and previews"): Pillow-made images of the requested size
and format."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from PIL import Image
from storage_helpers import (
    assert_error,
    create_bucket,
    create_user,
    key_client,
    send_chunk,
    session_client,
)

from frameport.local import LocalService

FILES = "/storage/buckets/pics/files"


def image_bytes(fmt: str, size: tuple[int, int] = (300, 200)) -> bytes:
    """A picture whose left half is red and right half blue (to see where a crop went)."""
    picture = Image.new("RGB", size, (255, 0, 0))
    picture.paste((0, 0, 255), (size[0] // 2, 0, size[0], size[1]))
    buffer = io.BytesIO()
    picture.save(buffer, fmt)
    return buffer.getvalue()


def put(client: httpx.Client, file_id: str, name: str, data: bytes, **form: str) -> None:
    response = send_chunk(
        client, FILES, data, (0, len(data)), upload_id=file_id, name=name, form=form
    )
    assert response.status_code == 201, response.text


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc, key_client(svc) as admin:
        create_bucket(admin, "pics", fileSecurity=True)
        put(admin, "png", "photo.png", image_bytes("PNG"), **{"permissions[]": 'read("any")'})
        put(admin, "jpg", "photo.jpg", image_bytes("JPEG"))
        put(admin, "gif", "anim.gif", image_bytes("GIF"))
        put(admin, "csv", "table.csv", b"a,b\n1,2\n")
        put(admin, "video", "clip.mp4", b"\x00\x00\x00\x18ftypmp42 not really a video")
        put(admin, "broken", "broken.png", b"this is not a png at all")
        create_bucket(admin, "plain", transformations=False, permissions=['read("users")'])
        plain = "/storage/buckets/plain/files"
        png = image_bytes("PNG")
        send_chunk(admin, plain, png, (0, len(png)), upload_id="p", name="p.png")
        yield svc


@pytest.fixture
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        yield client


def preview(client: httpx.Client, file_id: str, **params: Any) -> Image.Image:
    response = client.get(f"{FILES}/{file_id}/preview", params=params)
    assert response.status_code == 200, response.text
    picture = Image.open(io.BytesIO(response.content))
    picture.load()
    return picture


def pixel(picture: Image.Image, mode: str, at: tuple[int, int]) -> tuple[int, ...]:
    """The colour of one pixel as a tuple of channel values."""
    value = picture.convert(mode).getpixel(at)
    assert isinstance(value, tuple)
    return value


@pytest.mark.parametrize(
    ("output", "pillow_format", "media_type"),
    [
        ("jpg", "JPEG", "image/jpeg"),
        ("jpeg", "JPEG", "image/jpeg"),
        ("png", "PNG", "image/png"),
        ("gif", "GIF", "image/gif"),
        ("webp", "WEBP", "image/webp"),
        ("avif", "AVIF", "image/avif"),
    ],
)
def test_preview_has_the_requested_size_and_format(
    admin: httpx.Client, output: str, pillow_format: str, media_type: str
) -> None:
    response = admin.get(
        f"{FILES}/png/preview", params={"width": 64, "height": 48, "output": output}
    )
    picture = Image.open(io.BytesIO(response.content))

    assert response.headers["Content-Type"] == media_type
    assert (picture.format, picture.size) == (pillow_format, (64, 48))


@pytest.mark.parametrize(("file_id", "fmt"), [("png", "PNG"), ("jpg", "JPEG"), ("gif", "GIF")])
def test_default_output_follows_the_extension(admin: httpx.Client, file_id: str, fmt: str) -> None:
    assert preview(admin, file_id).format == fmt


def test_one_side_keeps_the_aspect_ratio(admin: httpx.Client) -> None:
    assert preview(admin, "png", width=150).size == (150, 100)
    assert preview(admin, "png", height=50).size == (75, 50)
    assert preview(admin, "png").size == (300, 200)


@pytest.mark.parametrize(("gravity", "color"), [("left", (255, 0, 0)), ("right", (0, 0, 255))])
def test_both_sides_crop_at_the_gravity(
    admin: httpx.Client, gravity: str, color: tuple[int, int, int]
) -> None:
    picture = preview(admin, "png", width=50, height=100, gravity=gravity, output="png")
    assert picture.size == (50, 100)
    assert pixel(picture, "RGB", (25, 50)) == color


def test_border_rotation_opacity_and_radius(admin: httpx.Client) -> None:
    bordered = preview(admin, "png", width=100, height=100, borderWidth=5, borderColor="00ff00")
    rotated = preview(admin, "png", rotation=90, output="png")
    faded = preview(admin, "png", opacity=0.5, output="png")
    rounded = preview(admin, "png", borderRadius=40, output="png")

    assert bordered.size == (110, 110)
    assert pixel(bordered, "RGB", (1, 1)) == (0, 255, 0)
    assert rotated.size == (200, 300)
    assert pixel(faded, "RGBA", (10, 10))[3] == 128
    assert pixel(rounded, "RGBA", (0, 0))[3] == 0
    assert pixel(rounded, "RGBA", (150, 100))[3] == 255


def test_background_fills_transparency(admin: httpx.Client) -> None:
    """Applied after opacity and before the border radius, in the service's order."""
    picture = preview(admin, "png", opacity=0, background="ffff00", borderRadius=40, output="png")
    assert pixel(picture, "RGBA", (150, 100)) == (255, 255, 0, 255)
    assert pixel(picture, "RGBA", (0, 0))[3] == 0


def test_quality_changes_jpeg_size(admin: httpx.Client) -> None:
    low = admin.get(f"{FILES}/jpg/preview", params={"quality": 0}).content
    high = admin.get(f"{FILES}/jpg/preview", params={"quality": 95}).content
    assert len(low) < len(high)


@pytest.mark.parametrize("file_id", ["csv", "video"])
def test_non_images_get_a_placeholder_icon(admin: httpx.Client, file_id: str) -> None:
    icon = preview(admin, file_id)
    sized = preview(admin, file_id, width=64, height=64, background="112233", output="jpg")

    assert icon.format == "PNG"
    assert pixel(icon, "RGB", (0, 0)) == (0xEC, 0xEF, 0xF1)
    assert (sized.format, sized.size) == ("JPEG", (64, 64))
    assert all(
        abs(a - b) < 8 for a, b in zip(pixel(sized, "RGB", (0, 0)), (0x11, 0x22, 0x33), strict=True)
    )


def test_undecodable_image_is_400(admin: httpx.Client) -> None:
    response = admin.get(f"{FILES}/broken/preview")
    assert_error(response, 400, "storage_file_type_unsupported")


def test_heic_output_is_not_available(admin: httpx.Client) -> None:
    response = admin.get(f"{FILES}/png/preview", params={"output": "heic"})
    assert_error(response, 400, "storage_file_type_unsupported")


@pytest.mark.parametrize(
    "params",
    [
        {"width": 4001},
        {"gravity": "middle"},
        {"quality": 101},
        {"opacity": 1.5},
        {"rotation": 361},
        {"borderColor": "red"},
        {"output": "bmp"},
    ],
)
def test_out_of_range_parameters_are_400(admin: httpx.Client, params: dict[str, Any]) -> None:
    response = admin.get(f"{FILES}/png/preview", params=params)
    assert_error(response, 400, "general_argument_invalid")


def test_project_query_parameter_replaces_the_header(service: LocalService) -> None:
    url = f"{service.endpoint}{FILES}/png/preview?project={service.project}&width=20"
    response = httpx.get(url)  # no headers at all, as an <img> tag would send

    assert response.status_code == 200
    assert Image.open(io.BytesIO(response.content)).size == (20, 13)


def test_transformations_disabled_refuses_users_not_keys(service: LocalService) -> None:
    create_user(service, "viewer")
    path = "/storage/buckets/plain/files/p/preview"
    with session_client(service, "viewer") as user:
        refused = user.get(path)
        download = user.get("/storage/buckets/plain/files/p/download")
    with key_client(service) as admin:
        allowed = admin.get(path)

    assert_error(refused, 403, "storage_bucket_transformations_disabled")
    assert download.status_code == 200
    assert allowed.status_code == 200
