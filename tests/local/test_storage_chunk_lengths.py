"""A chunk is what its Content-Range claims: its length is the span's, and the span is one
whole 5 MiB chunk, so no part can hold more than the upload declared.

Once, a 20 MiB part sent as `bytes 0-0/1` was stored whole, past a 10 MiB bucket limit.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from storage_helpers import (
    CHUNK,
    MIB,
    assert_error,
    create_bucket,
    download,
    key_client,
    seeded_bytes,
)

from frameport.local import LocalService

BUCKET = "chunklen"
FILES = f"/storage/buckets/{BUCKET}/files"
LIMIT = 10 * MIB


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_bucket(client, BUCKET, maximumFileSize=LIMIT)
        yield client


def send(client: httpx.Client, file_id: str, part: bytes, content_range: str) -> httpx.Response:
    return client.post(
        FILES,
        files={"file": ("data.bin", part)},
        data={"fileId": file_id},
        headers={"X-Service-ID": file_id, "Content-Range": content_range},
    )


def missing(client: httpx.Client, file_id: str) -> bool:
    return client.get(f"{FILES}/{file_id}").status_code == 404


def test_a_20_mib_part_claiming_one_byte_is_refused(admin: httpx.Client) -> None:
    response = send(admin, "big-lie", seeded_bytes(20 * MIB, 1), "bytes 0-0/1")
    assert_error(response, 400, "storage_invalid_content_range")
    assert missing(admin, "big-lie")


@pytest.mark.parametrize("delta", [-1, 1, -(CHUNK - 10)], ids=["short", "long", "much-short"])
def test_a_chunk_shorter_or_longer_than_its_span_is_refused(
    admin: httpx.Client, delta: int
) -> None:
    size = CHUNK + 100
    part = seeded_bytes(CHUNK + delta, 2)
    response = send(admin, f"off-{abs(delta)}-{delta > 0}", part, f"bytes 0-{CHUNK - 1}/{size}")
    assert_error(response, 400, "storage_invalid_content_range")


def test_a_part_spanning_two_chunks_is_refused_before_anything_is_stored(
    admin: httpx.Client,
) -> None:
    size = 2 * CHUNK  # within the limit, but the first part claims the whole file
    whole = seeded_bytes(size, 3)
    response = send(admin, "overlap", whole, f"bytes 0-{size - 1}/{size}")
    assert_error(response, 400, "storage_invalid_content_range")
    assert missing(admin, "overlap")


def test_the_lenient_end_equal_to_the_size_is_still_accepted(admin: httpx.Client) -> None:
    data = seeded_bytes(1000, 4)
    response = send(admin, "lenient", data, "bytes 0-1000/1000")
    assert response.status_code == 201, response.text
    assert download(admin, BUCKET, "lenient").content == data


def test_exact_spans_upload_and_read_back(admin: httpx.Client) -> None:
    size = CHUNK + 1234
    data = seeded_bytes(size, 5)
    first = send(admin, "exact", data[:CHUNK], f"bytes 0-{CHUNK - 1}/{size}")
    second = send(admin, "exact", data[CHUNK:], f"bytes {CHUNK}-{size - 1}/{size}")
    assert (first.status_code, second.status_code) == (201, 201), second.text
    assert second.json()["sizeActual"] == size
    assert download(admin, BUCKET, "exact").content == data
