"""The file preview widget against the local service: images, Parquet, CSV, failures."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pandas as pd
import pytest
from PIL import Image

import frameport.widgets as fpw
from frameport import ID, Bucket, Client
from frameport.local import LocalService


@pytest.fixture(scope="module")
def bucket(service: LocalService) -> Iterator[Bucket]:
    with Client(service.endpoint, service.project, key=service.key) as admin:
        yield admin.create_bucket(f"preview-{ID.unique()}", "Preview tests")


def png_bytes(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 80, 40)).save(buffer, "PNG")
    return buffer.getvalue()


def numbers(rows: int) -> pd.DataFrame:
    return pd.DataFrame({"n": range(rows), "label": [f"row {i}" for i in range(rows)]})


def test_image_preview_is_fetched_by_the_client(bucket: Bucket, service: LocalService) -> None:
    uploaded = bucket.upload_bytes(png_bytes(300, 200), "red.png", progress=False)
    widget = fpw.preview(bucket, uploaded.id, width=120)
    assert widget.error is None and widget.image is not None
    assert widget.image.format == "png"
    with Image.open(io.BytesIO(widget.image.value)) as shown:
        assert shown.size == (120, 80)  # scaled by the service, not by the browser
    assert "red.png" in widget.details.value and "image/png" in widget.details.value
    image_state = widget.image.get_state()
    assert isinstance(image_state["value"], bytes | memoryview)  # the bytes, not a URL
    states = json.dumps([widget.get_state(), widget.details.get_state()])
    assert service.key not in states


def test_parquet_preview_reads_the_first_rows_only(bucket: Bucket) -> None:
    frame = numbers(60_000)
    uploaded = bucket.upload_dataframe(
        frame, "numbers.parquet", progress=False, row_group_size=5000
    )
    widget = fpw.preview(bucket, uploaded.id, rows=10)
    assert widget.error is None and widget.frame is not None
    pd.testing.assert_frame_equal(widget.frame, frame.head(10), check_dtype=False)
    assert 0 < widget.bytes_read < uploaded.size / 2
    assert "row 9" in widget.summary() and "row 10" not in widget.summary()
    assert "<table" in widget._repr_html_()


def test_csv_preview_reads_the_first_rows_only(bucket: Bucket) -> None:
    frame = numbers(100_000)
    uploaded = bucket.upload_dataframe(frame, "numbers.csv", format="csv", progress=False)
    widget = fpw.preview(bucket, uploaded.id, rows=5)
    assert widget.frame is not None
    pd.testing.assert_frame_equal(widget.frame, frame.head(5), check_dtype=False)
    assert 0 < widget.bytes_read < uploaded.size / 2


def test_tiny_files_are_read_whole(bucket: Bucket) -> None:
    uploaded = bucket.upload_bytes(b"a\n", "one.csv", progress=False)
    widget = fpw.preview(bucket, uploaded.id)
    assert widget.frame is not None and list(widget.frame.columns) == ["a"]
    assert widget.frame.empty


def test_other_files_show_the_service_icon(bucket: Bucket) -> None:
    uploaded = bucket.upload_bytes(b"%PDF-1.4 not really", "paper.pdf", progress=False)
    widget = fpw.preview(bucket, uploaded.id)
    assert widget.image is not None
    with Image.open(io.BytesIO(widget.image.value)) as icon:
        assert icon.format == "PNG"


def test_missing_file_is_said_plainly(bucket: Bucket) -> None:
    widget = fpw.preview(bucket, "no-such-file")
    assert widget.error == "There is no such file in this bucket (or you may not read it)."
    bundle = widget._repr_mimebundle_()
    assert widget.error in bundle["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_views_without_a_widget_frontend(bucket: Bucket) -> None:
    uploaded = bucket.upload_bytes(png_bytes(40, 30), "small.png", progress=False)
    bundle = fpw.preview(bucket, uploaded.id, width=40)._repr_mimebundle_()
    assert "small.png" in bundle["text/plain"] and "png preview image" in bundle["text/plain"]
    assert 'src="data:image/png;base64,' in bundle["text/html"]
