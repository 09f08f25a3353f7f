"""Chunked uploads (service interface, "Chunked uploads"): sizes, chunk orders, duplicates, resume
and every error."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from storage_helpers import (
    CHUNK,
    MIB,
    assert_error,
    chunk_spans,
    create_bucket,
    create_user,
    download,
    guest_client,
    key_client,
    seeded_bytes,
    send_chunk,
    session_client,
    upload,
)

from frameport.local import LocalService

SIZES = [1, CHUNK - 1, CHUNK, CHUNK + 1, 23 * MIB]
FILES = "/storage/buckets/uploads/files"


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    overrides = {"POST /v1/storage/buckets/{bucketId}/files": (3, 3600)}
    with LocalService(rate_limit_overrides=overrides) as svc:
        with key_client(svc) as admin:
            create_bucket(admin, "uploads", permissions=['create("users")'])
        yield svc


@pytest.fixture
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        yield client


@pytest.mark.parametrize("order", ["forward", "reverse", "parallel", "duplicates"])
@pytest.mark.parametrize("size", SIZES)
def test_upload_reads_back_identical(admin: httpx.Client, size: int, order: str) -> None:
    data = seeded_bytes(size, seed=size)
    file_id = f"f-{size}-{order}"
    responses = upload(admin, "uploads", data, file_id=file_id, order=order)

    *before_completion, last = responses
    assert all(response.status_code == 201 for response in before_completion)
    assert last.status_code == (200 if order == "duplicates" else 201)
    final = admin.get(f"{FILES}/{file_id}").json()
    assert final["signature"] == hashlib.md5(data).hexdigest()
    assert final["sizeOriginal"] == final["sizeActual"] == size
    assert final["chunksUploaded"] == final["chunksTotal"] == len(chunk_spans(size))
    assert download(admin, "uploads", file_id).content == data


def test_empty_file_uploads_in_one_request_and_reads_back_empty(admin: httpx.Client) -> None:
    response = send_chunk(admin, FILES, b"", (0, 0), upload_id="empty", ranged=False)
    assert response.status_code == 201, response.text
    final = response.json()
    assert final["sizeOriginal"] == final["sizeActual"] == 0
    assert final["chunksUploaded"] == final["chunksTotal"] == 1
    assert final["signature"] == hashlib.md5(b"").hexdigest()
    fetched = download(admin, "uploads", "empty")
    assert fetched.status_code == 200 and fetched.content == b""


def test_intermediate_answers_count_distinct_parts(admin: httpx.Client) -> None:
    data = seeded_bytes(3 * CHUNK, seed=3)
    spans = chunk_spans(len(data))
    first = send_chunk(admin, FILES, data, spans[2], upload_id="progress")
    again = send_chunk(admin, FILES, data, spans[2], upload_id="progress")
    second = send_chunk(admin, FILES, data, spans[0], upload_id="progress")

    assert first.status_code == again.status_code == second.status_code == 201
    assert [r.json()["chunksUploaded"] for r in (first, again, second)] == [1, 1, 2]
    partial = second.json()
    assert partial["chunksTotal"] == 3
    assert (partial["signature"], partial["mimeType"], partial["sizeActual"]) == ("", "", 0)
    resumed = admin.get(f"{FILES}/progress").json()
    assert resumed["chunksUploaded"] == 2
    assert_error(download(admin, "uploads", "progress"), 404, "storage_file_not_found")

    last = send_chunk(admin, FILES, data, spans[1], upload_id="progress")
    assert last.status_code == 201
    assert last.json()["signature"] == hashlib.md5(data).hexdigest()


def test_duplicate_part_is_not_rewritten(admin: httpx.Client) -> None:
    data = seeded_bytes(2 * CHUNK, seed=4)
    spans = chunk_spans(len(data))
    send_chunk(admin, FILES, data, spans[0], upload_id="keeps-first")
    other = bytes(len(data))  # the same span of different bytes
    send_chunk(admin, FILES, other, spans[0], upload_id="keeps-first")
    send_chunk(admin, FILES, data, spans[1], upload_id="keeps-first")

    assert download(admin, "uploads", "keeps-first").content == data


def test_completed_file_resent_with_range_answers_200(admin: httpx.Client) -> None:
    data = seeded_bytes(CHUNK + 10, seed=5)
    upload(admin, "uploads", data, file_id="done")
    again = send_chunk(admin, FILES, data, chunk_spans(len(data))[1], upload_id="done")

    assert again.status_code == 200
    assert again.json()["signature"] == hashlib.md5(data).hexdigest()


def test_completed_file_resent_without_range_is_409(admin: httpx.Client) -> None:
    data = seeded_bytes(100, seed=6)
    first = send_chunk(admin, FILES, data, (0, 100), upload_id="once", ranged=False)
    again = send_chunk(admin, FILES, data, (0, 100), upload_id="once", ranged=False)

    assert first.status_code == 201
    assert_error(again, 409, "storage_file_already_exists")


def test_single_request_takes_a_file_larger_than_a_chunk(admin: httpx.Client) -> None:
    data = seeded_bytes(23 * MIB, seed=7)
    response = send_chunk(admin, FILES, data, (0, len(data)), upload_id="whole", ranged=False)

    assert response.status_code == 201
    assert response.json()["chunksTotal"] == 1
    assert response.json()["signature"] == hashlib.md5(data).hexdigest()


def test_file_id_comes_from_header_then_field_then_generated(admin: httpx.Client) -> None:
    part = {"file": ("a.txt", b"hello")}
    by_header = admin.post(
        FILES, files=part, data={"fileId": "from-field"}, headers={"X-Service-ID": "from-header"}
    )
    by_field = admin.post(FILES, files=part, data={"fileId": "from-field"})
    generated = admin.post(FILES, files=part, data={"fileId": "unique()"})
    without = admin.post(FILES, files=part)

    assert by_header.json()["$id"] == "from-header"
    assert by_field.json()["$id"] == "from-field"
    assert len(generated.json()["$id"]) == len(without.json()["$id"]) == 20


def test_first_chunk_names_the_file_and_sets_mime(admin: httpx.Client) -> None:
    data = b"name,age\nada,36\n"
    response = admin.post(
        FILES, files={"file": ("people.csv", data)}, data={"fileId": "csv", "folder": "x/y"}
    )
    model = response.json()

    assert (model["name"], model["folder"], model["key"]) == ("people.csv", "x/y", "x/y/people.csv")
    assert model["mimeType"] == "text/csv"
    assert (model["encryption"], model["compression"]) == (False, "none")


# -- errors, in the service's order (service interface, "Chunked uploads") ------------------


def test_missing_bucket_is_404(admin: httpx.Client) -> None:
    response = admin.post("/storage/buckets/nope/files", files={"file": ("a", b"x")})
    assert_error(response, 404, "storage_bucket_not_found")


def test_disabled_bucket_is_404_for_users_not_keys(service: LocalService) -> None:
    create_user(service, "disabled-user")
    with key_client(service) as admin:
        create_bucket(admin, "off", enabled=False, permissions=['create("users")'])
        assert admin.post("/storage/buckets/off/files", files={"file": ("a", b"x")}).is_success
    with session_client(service, "disabled-user") as user:
        response = user.post("/storage/buckets/off/files", files={"file": ("a", b"x")})
    assert_error(response, 404, "storage_bucket_not_found")


def test_create_needs_bucket_create_permission(service: LocalService) -> None:
    with key_client(service) as admin:
        create_bucket(admin, "readonly", permissions=['read("any")'])
    with guest_client(service) as guest:
        response = guest.post("/storage/buckets/readonly/files", files={"file": ("a", b"x")})
    assert_error(response, 401, "user_unauthorized")


def test_users_may_grant_only_roles_they_hold(service: LocalService) -> None:
    create_user(service, "granter")
    with session_client(service, "granter") as user:
        foreign = user.post(
            FILES,
            files={"file": ("a.txt", b"x")},
            data={"permissions[]": 'read("user:someone-else")'},
        )
        own = user.post(
            FILES,
            files={"file": ("a.txt", b"x")},
            data={"fileId": "granted", "permissions[]": 'read("user:granter")'},
        )
    assert_error(foreign, 401, "user_unauthorized")
    assert own.json()["$permissions"] == ['read("user:granter")']


def test_create_permission_is_not_a_file_permission(admin: httpx.Client) -> None:
    response = admin.post(
        FILES, files={"file": ("a.txt", b"x")}, data={"permissions[]": 'create("any")'}
    )
    assert_error(response, 400, "general_argument_invalid")


def test_missing_file_part_is_storage_file_empty(admin: httpx.Client) -> None:
    response = admin.post(FILES, files={"other": ("a.txt", b"x")}, data={"fileId": "nofile"})
    assert_error(response, 400, "storage_file_empty")


@pytest.mark.parametrize(
    "header",
    [
        "bytes 0-4/",
        "bytes=0-4/10",
        "bytes  0-4/10",
        "bytes 0-4",
        "bytes 5-4/10",
        "bytes 0-11/10",
        "bytes -1-4/10",
        "bytes 0-4/1x",
        "bytes 5242880-5242880/5242880",  # a start past the file's only chunk
    ],
)
def test_malformed_content_range_is_400(admin: httpx.Client, header: str) -> None:
    response = admin.post(
        FILES,
        files={"file": ("a.txt", b"hello")},
        headers={"Content-Range": header, "X-Service-ID": "ranges"},
    )
    assert_error(response, 400, "storage_invalid_content_range")


def test_content_range_unit_is_not_checked_and_end_may_equal_size(admin: httpx.Client) -> None:
    response = admin.post(
        FILES,
        files={"file": ("a.txt", b"hello")},
        headers={"Content-Range": "items 0-5/5", "X-Service-ID": "lenient"},
    )
    assert response.status_code == 201
    assert response.json()["sizeOriginal"] == 5


def test_chunk_naming_another_total_is_400(admin: httpx.Client) -> None:
    data = seeded_bytes(2 * CHUNK, seed=8)
    send_chunk(admin, FILES, data, (0, CHUNK), upload_id="sized")
    response = admin.post(
        FILES,
        files={"file": ("data.bin", data[CHUNK:])},
        headers={
            "Content-Range": f"bytes {CHUNK}-{2 * CHUNK}/{3 * CHUNK}",
            "X-Service-ID": "sized",
        },
    )
    assert_error(response, 400, "storage_invalid_content_range")


@pytest.mark.parametrize("upload_id", ["unique()", "-starts-badly", "a" * 37, "has space"])
def test_invalid_upload_id_is_400(admin: httpx.Client, upload_id: str) -> None:
    response = admin.post(
        FILES,
        files={"file": ("a.txt", b"hello")},
        headers={"Content-Range": "bytes 0-4/5", "X-Service-ID": upload_id},
    )
    assert_error(response, 400, "storage_invalid_service_id")


def test_invalid_file_id_field_is_400(admin: httpx.Client) -> None:
    response = admin.post(FILES, files={"file": ("a.txt", b"x")}, data={"fileId": "bad id"})
    assert_error(response, 400, "storage_invalid_service_id")


def test_extension_must_be_allowed(admin: httpx.Client) -> None:
    create_bucket(admin, "pictures", allowedFileExtensions=["png", "JPG"])
    path = "/storage/buckets/pictures/files"
    refused = admin.post(path, files={"file": ("notes.txt", b"x")})
    upper = admin.post(path, files={"file": ("photo.JPG", b"x")})

    assert_error(refused, 400, "storage_file_type_unsupported")
    assert upper.status_code == 201


def test_total_size_above_bucket_maximum_is_400(admin: httpx.Client) -> None:
    create_bucket(admin, "tiny", maximumFileSize=10)
    path = "/storage/buckets/tiny/files"
    whole = admin.post(path, files={"file": ("a.txt", b"x" * 11)})
    declared = admin.post(
        path,
        files={"file": ("a.txt", b"x")},
        headers={"Content-Range": "bytes 0-0/11", "X-Service-ID": "declared"},
    )
    fits = admin.post(path, files={"file": ("a.txt", b"x" * 10)})

    assert_error(whole, 400, "storage_invalid_file_size")
    assert_error(declared, 400, "storage_invalid_file_size")
    assert fits.status_code == 201


def test_bucket_maximum_above_the_service_limit_is_500(tmp_path: Path) -> None:
    with LocalService(data_dir=tmp_path, max_file_size=1000) as svc, key_client(svc) as admin:
        create_bucket(admin, "roomy")
    with LocalService(data_dir=tmp_path, max_file_size=500) as svc, key_client(svc) as admin:
        response = admin.post("/storage/buckets/roomy/files", files={"file": ("a", b"x")})
    # A 500 keeps its type, but its message is always `Server Error` (service interface, "Errors").
    assert assert_error(response, 500, "general_server_error")["message"] == "Server Error"
    assert response.headers["cache-control"] == "no-cache, no-store, must-revalidate"


# -- rate limit (service interface, "Rate limits") -----------------------------------------


def test_chunks_are_rate_limited_per_chunk_index_for_users(service: LocalService) -> None:
    create_user(service, "limited")
    data = seeded_bytes(2 * CHUNK, seed=9)
    spans = chunk_spans(len(data))
    with session_client(service, "limited") as user:
        firsts = [send_chunk(user, FILES, data, spans[0], upload_id=f"l{i}") for i in range(4)]
        second = send_chunk(user, FILES, data, spans[1], upload_id="l0")

    assert [r.status_code for r in firsts] == [201, 201, 201, 429]
    assert firsts[0].headers["X-RateLimit-Limit"] == "3"
    assert_error(firsts[3], 429, "general_rate_limit_exceeded")
    assert second.status_code == 201


def test_keys_are_not_rate_limited(admin: httpx.Client) -> None:
    responses = [
        admin.post(FILES, files={"file": ("a.txt", b"x")}, data={"fileId": f"k{i}"})
        for i in range(5)
    ]
    assert all(response.status_code == 201 for response in responses)


def test_malformed_form_is_400(admin: httpx.Client) -> None:
    response = admin.post(
        FILES,
        content=b"--xx\r\nContent-Disposition form-data\r\n\r\nabc\r\n--xx--\r\n",
        headers={"Content-Type": "multipart/form-data; boundary=xx"},
    )
    assert_error(response, 400, "general_bad_request")
