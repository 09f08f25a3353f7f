"""Downloads and views (service interface, "Downloads and previews"): headers, Range requests and
their limits."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from storage_helpers import (
    MIB,
    assert_error,
    create_bucket,
    download,
    key_client,
    seeded_bytes,
    send_chunk,
    upload,
)

from frameport.local import LocalService

SMALL = seeded_bytes(1000, seed=11)
BIG = seeded_bytes(23 * MIB, seed=12)
TEN_MIB = 10 * MIB


@pytest.fixture(scope="module")
def admin() -> Iterator[httpx.Client]:
    with LocalService() as svc, key_client(svc) as client:
        create_bucket(client, "docs")
        upload(client, "docs", SMALL, file_id="small", name="report.bin")
        upload(client, "docs", BIG, file_id="big", name="big.bin")
        yield client


def ranged(client: httpx.Client, file_id: str, header: str) -> httpx.Response:
    return download(client, "docs", file_id, headers={"Range": header})


def test_download_sends_the_bytes_with_attachment_headers(admin: httpx.Client) -> None:
    response = download(admin, "docs", "small")

    assert response.status_code == 200
    assert response.content == SMALL
    assert response.headers["Content-Disposition"] == 'attachment; filename="report.bin"'
    assert response.headers["Cache-Control"] == "private, max-age=3888000"
    assert response.headers["Content-Type"] == "application/octet-stream"
    assert response.headers["Content-Length"] == "1000"


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=0-99", 0, 99),
        ("bytes=100-", 100, 999),
        ("bytes=-500", 500, 999),
        ("bytes=998-999", 998, 999),
        ("bytes=-5000", 0, 999),
    ],
)
def test_range_answers_206_with_the_span(
    admin: httpx.Client, header: str, start: int, end: int
) -> None:
    response = ranged(admin, "small", header)

    assert response.status_code == 206
    assert response.content == SMALL[start : end + 1]
    assert response.headers["Accept-Ranges"] == "bytes"
    assert response.headers["Content-Range"] == f"bytes {start}-{end}/1000"
    assert response.headers["Content-Length"] == str(end - start + 1)


def test_open_ended_range_is_cut_to_ten_mib(admin: httpx.Client) -> None:
    response = ranged(admin, "big", "bytes=100-")

    assert response.status_code == 206
    assert response.headers["Content-Range"] == f"bytes 100-{100 + TEN_MIB - 1}/{len(BIG)}"
    assert response.content == BIG[100 : 100 + TEN_MIB]


def test_range_larger_than_20_mb_is_cut_to_ten_mib(admin: httpx.Client) -> None:
    kept = ranged(admin, "big", "bytes=0-20000000")  # a span of exactly 20,000,000: kept
    cut = ranged(admin, "big", "bytes=0-20000001")

    assert kept.headers["Content-Range"] == f"bytes 0-20000000/{len(BIG)}"
    assert len(kept.content) == 20_000_001
    assert cut.headers["Content-Range"] == f"bytes 0-{TEN_MIB - 1}/{len(BIG)}"
    assert cut.content == BIG[:TEN_MIB]


@pytest.mark.parametrize(
    "header", ["items=0-5", "bytes=5-5", "bytes=6-5", "bytes=0-1000", "bytes=1000-", "bytes=-0"]
)
def test_unsatisfiable_range_is_416(admin: httpx.Client, header: str) -> None:
    assert_error(ranged(admin, "small", header), 416, "storage_invalid_range")


@pytest.mark.parametrize("header", ["bytes", "bytes=", "bytes=-", "bytes=a-b", "bytes=0-5,7-9"])
def test_malformed_range_sends_the_whole_file(admin: httpx.Client, header: str) -> None:
    response = ranged(admin, "small", header)
    assert response.status_code == 200
    assert response.content == SMALL


def test_view_is_inline_and_nosniff(admin: httpx.Client) -> None:
    response = admin.get("/storage/buckets/docs/files/small/view", headers={"Range": "bytes=0-9"})

    assert response.status_code == 206
    assert response.content == SMALL[:10]
    assert response.headers["Content-Disposition"] == 'inline; filename="report.bin"'
    assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    ("name", "data", "media_type"),
    [
        ("page.html", b"<html><script>alert(1)</script></html>", "text/plain"),
        ("notes.txt", b"plain words", "text/plain"),
        ("doc.pdf", b"%PDF-1.4 tiny", "application/pdf"),
    ],
)
def test_view_sends_only_safe_mime_types(
    admin: httpx.Client, name: str, data: bytes, media_type: str
) -> None:
    file_id = name.replace(".", "-")
    send_chunk(
        admin, "/storage/buckets/docs/files", data, (0, len(data)), upload_id=file_id, name=name
    )
    view = admin.get(f"/storage/buckets/docs/files/{file_id}/view")
    assert view.headers["Content-Type"].split(";")[0] == media_type
    assert view.content == data


def test_non_ascii_names_get_an_encoded_filename(admin: httpx.Client) -> None:
    send_chunk(
        admin, "/storage/buckets/docs/files", b"x", (0, 1), upload_id="accent", name="résumé.txt"
    )
    header = download(admin, "docs", "accent").headers["Content-Disposition"]
    assert header == "attachment; filename=\"r_sum_.txt\"; filename*=utf-8''r%C3%A9sum%C3%A9.txt"


def test_incomplete_file_cannot_be_downloaded(admin: httpx.Client) -> None:
    data = seeded_bytes(6 * MIB, seed=13)
    send_chunk(admin, "/storage/buckets/docs/files", data, (0, 5 * MIB), upload_id="half")

    assert_error(download(admin, "docs", "half"), 404, "storage_file_not_found")
    view = admin.get("/storage/buckets/docs/files/half/view")
    assert_error(view, 404, "storage_file_not_found")


def test_missing_file_is_404(admin: httpx.Client) -> None:
    assert_error(download(admin, "docs", "ghost"), 404, "storage_file_not_found")
