"""Input meant to break the service gets a 4xx with the error body, never a 500.

Each case below once answered 500 `general_unknown`: JSON nested past Python's recursion
limit, lone UTF-16 surrogates (`"\\ud800"`) and integers beyond int64 in filters.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from callers import assert_error, guest_client, key_client
from served import PROJECT, ServedService, serve_banner, served
from tablesdb_helpers import create_database, create_table, q, wait_available

from frameport.local import LocalService

DB, TABLE = "hostile", "things"
ROWS = f"/tablesdb/{DB}/tables/{TABLE}/rows"
DEEP = 100_000
#: Deeper than the recursion limit, yet within the server's 16 KiB of headers.
DEEP_HEADER = 3_000
#: The deepest list that still fits in one 4096-character query string.
DEEP_QUERY_VALUE = "[" * 2000 + "]" * 2000
#: A lone high surrogate, escaped as JSON sends it.
LONE = '"\\ud800"'


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(rate_limits=False) as service:
        with key_client(service) as admin:
            create_database(admin, DB)
            create_table(
                admin, DB, TABLE,
                columns=[
                    {"key": "name", "type": "string", "size": 64, "required": False},
                    {"key": "n", "type": "integer", "required": False},
                ],
            )  # fmt: skip
            wait_available(admin, DB, TABLE)
        yield service


@pytest.fixture
def admin(svc: LocalService) -> Iterator[httpx.Client]:
    with key_client(svc) as client:
        yield client


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def raw_post(client: httpx.Client, path: str, text: str) -> httpx.Response:
    return client.post(path, content=text, headers={"Content-Type": "application/json"})


def test_a_deeply_nested_body_is_a_bad_request(admin: httpx.Client) -> None:
    body = '{"rowId": "r1", "data": ' + deep_json(DEEP) + "}"
    assert_error(raw_post(admin, ROWS, body), 400, "general_bad_request")


@pytest.mark.parametrize("name", ["data", "permissions"])
def test_a_deeply_nested_json_string_parameter_is_refused(admin: httpx.Client, name: str) -> None:
    body: dict[str, Any] = {"rowId": "r2", "data": {"name": "x"}, name: deep_json(DEEP)}
    response = admin.post(ROWS, json=body)
    assert 400 <= response.status_code < 500, response.text
    assert set(response.json()) == {"message", "code", "type", "version"}


def test_a_deeply_nested_query_value_is_an_invalid_query(admin: httpx.Client) -> None:
    query = '{"method":"equal","attribute":"name","values":' + DEEP_QUERY_VALUE + "}"
    assert len(query) <= 4096
    response = admin.get(ROWS, params={"queries[]": [query]})
    assert_error(response, 400, "general_query_invalid")


def test_deeply_nested_fallback_cookies_are_ignored(svc: LocalService) -> None:
    with guest_client(svc) as guest:
        response = guest.get("/account", headers={"X-Fallback-Cookies": deep_json(DEEP_HEADER)})
    assert_error(response, 401, "general_unauthorized_scope")


@pytest.mark.parametrize(
    "payload",
    [
        deep_json(DEEP_HEADER),
        '{"id": ' + LONE + ', "secret": "s"}',
        '{"id": "u", "secret": ' + LONE + "}",
    ],
    ids=["deep", "surrogate-id", "surrogate-secret"],
)
def test_a_hostile_session_cookie_is_no_session(svc: LocalService, payload: str) -> None:
    cookie = base64.b64encode(payload.encode()).decode()
    with guest_client(svc) as guest:
        response = guest.get("/account", headers={"X-Service-Session": cookie})
    assert 400 <= response.status_code < 500, response.text
    assert set(response.json()) == {"message", "code", "type", "version"}


def test_a_lone_surrogate_in_row_data_is_a_bad_request(admin: httpx.Client) -> None:
    body = '{"rowId": "r3", "data": {"name": ' + LONE + "}}"
    assert_error(raw_post(admin, ROWS, body), 400, "general_bad_request")


def test_a_lone_surrogate_in_a_query_value_is_an_invalid_query(admin: httpx.Client) -> None:
    query = '{"method":"equal","attribute":"name","values":[' + LONE + "]}"
    assert_error(admin.get(ROWS, params={"queries[]": [query]}), 400, "general_query_invalid")


def test_a_lone_surrogate_in_a_bucket_name_is_a_bad_request(admin: httpx.Client) -> None:
    body = '{"bucketId": "b1", "name": ' + LONE + "}"
    assert_error(raw_post(admin, "/storage/buckets", body), 400, "general_bad_request")


def test_a_lone_surrogate_in_a_guest_password_is_a_bad_request(svc: LocalService) -> None:
    body = '{"userId": "unique()", "email": "s@example.org", "password": ' + LONE + "}"
    with guest_client(svc) as guest:
        assert_error(raw_post(guest, "/account", body), 400, "general_bad_request")


@pytest.mark.parametrize("method", ["equal", "greaterThan", "lessThan", "between"])
@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**400])
def test_integers_beyond_int64_in_filters_are_invalid_queries(
    admin: httpx.Client, method: str, value: int
) -> None:
    values = [value, value] if method == "between" else [value]
    response = admin.get(ROWS, params={"queries[]": [q(method, "n", values)]})
    assert_error(response, 400, "general_query_invalid")


def test_int64_bounds_themselves_are_valid_filters(admin: httpx.Client) -> None:
    query = q("between", "n", [-(2**63), 2**63 - 1])
    response = admin.get(ROWS, params={"queries[]": [query]})
    assert response.status_code == 200, response.text


def test_a_huge_integer_against_a_float_column_is_an_invalid_query(svc: LocalService) -> None:
    with key_client(svc) as admin:
        create_table(
            admin, DB, "floats", columns=[{"key": "x", "type": "float", "required": False}]
        )
        wait_available(admin, DB, "floats")
        response = admin.get(
            f"/tablesdb/{DB}/tables/floats/rows", params={"queries[]": [q("equal", "x", [10**400])]}
        )
    assert_error(response, 400, "general_query_invalid")


# -- numbers in headers ----------------------------------------------------------------------

BUCKET = "hostile-files"
FILE_BYTES = bytes(range(256)) * 4
#: Past float range (`ceil(size / 5 MiB)` overflowed), and past Python's 4300-digit `int()`.
HUGE_TOTAL = "9" * 315
HUGE_NUMBER = "9" * 4301


@pytest.fixture(scope="module")
def stored_file(svc: LocalService) -> str:
    with key_client(svc) as admin:
        response = admin.post("/storage/buckets", json={"bucketId": BUCKET, "name": BUCKET})
        assert response.status_code == 201, response.text
        response = admin.post(
            f"/storage/buckets/{BUCKET}/files",
            files={"file": ("data.bin", FILE_BYTES)},
            data={"fileId": "stored"},
        )
        assert response.status_code == 201, response.text
    return "stored"


def send_chunk_with_range(client: httpx.Client, bucket: str, content_range: str) -> httpx.Response:
    return client.post(
        f"/storage/buckets/{bucket}/files",
        files={"file": ("data.bin", b"x")},
        data={"fileId": "huge"},
        headers={"X-Service-ID": "huge", "Content-Range": content_range},
    )


@pytest.mark.parametrize("total", [HUGE_TOTAL, HUGE_NUMBER])
def test_a_huge_content_range_total_for_a_missing_bucket_is_bucket_not_found(
    svc: LocalService, total: str
) -> None:
    with guest_client(svc) as guest:
        response = send_chunk_with_range(guest, "no-such-bucket", f"bytes 0-0/{total}")
    assert_error(response, 404, "storage_bucket_not_found")


@pytest.mark.parametrize("total", [HUGE_TOTAL, HUGE_NUMBER])
def test_a_huge_content_range_total_is_a_file_too_large(
    admin: httpx.Client, stored_file: str, total: str
) -> None:
    response = send_chunk_with_range(admin, BUCKET, f"bytes 0-0/{total}")
    assert_error(response, 400, "storage_invalid_file_size")


@pytest.mark.parametrize("route", ["download", "view"])
@pytest.mark.parametrize(
    "header",
    [f"bytes={HUGE_NUMBER}-", f"bytes={HUGE_NUMBER}-{HUGE_NUMBER}"],
    ids=["huge-start", "huge-both"],
)
def test_a_range_beyond_the_file_is_not_satisfiable(
    admin: httpx.Client, stored_file: str, route: str, header: str
) -> None:
    path = f"/storage/buckets/{BUCKET}/files/{stored_file}/{route}"
    assert_error(admin.get(path, headers={"Range": header}), 416, "storage_invalid_range")


@pytest.mark.parametrize("route", ["download", "view"])
def test_a_huge_range_end_is_cut_to_the_file_as_the_service_cuts_long_spans(
    admin: httpx.Client, stored_file: str, route: str
) -> None:
    # The service reads header numbers as 64-bit integers (a longer one is the largest), and
    # a span longer than 20,000,000 bytes ends 10 MiB after its start or at the file's end.
    path = f"/storage/buckets/{BUCKET}/files/{stored_file}/{route}"
    for header in (f"bytes=0-{HUGE_NUMBER}", f"bytes=-{HUGE_NUMBER}"):
        response = admin.get(path, headers={"Range": header})
        assert response.status_code == 206, response.text
        assert response.content == FILE_BYTES
        size = len(FILE_BYTES)
        assert response.headers["Content-Range"] == f"bytes 0-{size - 1}/{size}"


# -- small leniencies --------------------------------------------------------------------------

ANY_READ = 'read("any")'


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (ROWS, {"rowId": "perm-text", "data": {"name": "x"}}),
        (f"/tablesdb/{DB}/tables", {"tableId": "perm-text", "name": "t"}),
        ("/storage/buckets", {"bucketId": "perm-text", "name": "b"}),
    ],
    ids=["row", "table", "bucket"],
)
@pytest.mark.parametrize("text", [ANY_READ, json.dumps([ANY_READ])], ids=["plain", "json-text"])
def test_a_permissions_string_instead_of_an_array_is_invalid(
    admin: httpx.Client, path: str, body: dict[str, Any], text: str
) -> None:
    body = {
        key: f"{value}-{len(text)}" if key.endswith("Id") else value for key, value in body.items()
    }
    response = admin.post(path, json={**body, "permissions": text})
    assert_error(response, 400, "general_argument_invalid")
    created = admin.post(path, json={**body, "permissions": [ANY_READ]})
    assert created.status_code == 201, created.text


def test_a_permissions_string_in_a_file_form_is_invalid(
    admin: httpx.Client, stored_file: str
) -> None:
    response = admin.post(
        f"/storage/buckets/{BUCKET}/files",
        files={"file": ("data.bin", b"x")},
        data={"fileId": "perm-text", "permissions": ANY_READ},
    )
    assert_error(response, 400, "general_argument_invalid")


@pytest.mark.parametrize("kind", ["user", "team", "member"])
@pytest.mark.parametrize("length", [37, 5000])
def test_a_role_naming_an_id_over_36_characters_is_invalid(
    admin: httpx.Client, kind: str, length: int
) -> None:
    permission = f'read("{kind}:{"a" * length}")'
    body = {"rowId": f"long-{kind}-{length}", "data": {"name": "x"}, "permissions": [permission]}
    assert_error(admin.post(ROWS, json=body), 400, "general_argument_invalid")


def test_a_role_naming_a_36_character_id_is_valid(admin: httpx.Client) -> None:
    permission = f'read("user:{"a" * 36}")'
    body = {"rowId": "id-36", "data": {"name": "x"}, "permissions": [permission]}
    response = admin.post(ROWS, json=body)
    assert response.status_code == 201, response.text
    assert response.json()["$permissions"] == [permission]


def test_sequence_in_row_data_is_stripped_as_the_service_strips_it(admin: httpx.Client) -> None:
    body = {"rowId": "seq-given", "data": {"name": "x", "$sequence": "999999"}}
    created = admin.post(ROWS, json=body)
    assert created.status_code == 201, created.text
    assert created.json()["$sequence"] != "999999"
    fetched = admin.get(f"{ROWS}/seq-given").json()
    assert fetched["$sequence"] == created.json()["$sequence"]


def kept_key(data_dir: Path) -> str:
    with closing(sqlite3.connect(data_dir / "service.sqlite3")) as conn:
        return str(conn.execute("SELECT value FROM meta WHERE name = 'api_key'").fetchone()[0])


def test_serve_names_the_key_file_and_never_echoes_a_generated_key(tmp_path: Path) -> None:
    piped, shown = tmp_path / "piped", tmp_path / "shown"
    first_piped = serve_banner(piped, terminal=False)
    assert str(piped / "api-key") in first_piped and kept_key(piped) not in first_piped

    for _ in range(2):  # the start that generates it, then a start that reuses it
        banner = serve_banner(shown, terminal=True)
        assert str(shown / "api-key") in banner and kept_key(shown) not in banner


def test_serve_never_echoes_a_key_given_with_key(tmp_path: Path) -> None:
    given = "standard_" + "7" * 64
    banner = serve_banner(tmp_path, terminal=True, key=given)
    assert "API key:" in banner and given not in banner


# -- the upload rules ----------------------------------------------------------------------------

CHUNK = 5 * 1024 * 1024
MIB = 1024 * 1024
MB = 1_000_000
TWELVE_MIB = bytes(range(256)) * (12 * MIB // 256)


def send_part(
    client: httpx.Client, file_id: str, first: int, last: int, size: int, data: bytes
) -> httpx.Response:
    """POST `data[first:last + 1]` as the part `bytes first-last/size` of upload `file_id`."""
    return client.post(
        f"/storage/buckets/{BUCKET}/files",
        files={"file": ("data.bin", data[first : last + 1])},
        data={"fileId": file_id},
        headers={"X-Service-ID": file_id, "Content-Range": f"bytes {first}-{last}/{size}"},
    )


def upload_record(client: httpx.Client, file_id: str) -> dict[str, Any] | None:
    response = client.get(f"/storage/buckets/{BUCKET}/files/{file_id}")
    return None if response.status_code == 404 else dict(response.json())


@pytest.mark.parametrize("length", [CHUNK + 1, 7 * MIB])
def test_a_part_longer_than_5_mib_is_refused_and_leaves_no_upload(
    admin: httpx.Client, stored_file: str, length: int
) -> None:
    file_id = f"long-part-{length}"
    response = send_part(admin, file_id, 0, length - 1, len(TWELVE_MIB), TWELVE_MIB)
    assert_error(response, 400, "storage_invalid_content_range")
    assert upload_record(admin, file_id) is None


def test_overlapping_parts_are_refused_and_the_file_is_what_was_sent(
    admin: httpx.Client, stored_file: str
) -> None:
    size, file_id = len(TWELVE_MIB), "overlaps"
    # The parts once joined into a "complete" 17 MiB file of a 12 MiB upload.
    overlapping = [
        (0, 7 * MIB - 1),
        (CHUNK, size - 1),
        (9 * MIB, size - 1),
        (3 * MIB, 8 * MIB - 1),
    ]
    for first, last in overlapping:
        response = send_part(admin, file_id, first, last, size, TWELVE_MIB)
        assert_error(response, 400, "storage_invalid_content_range")
    assert upload_record(admin, file_id) is None
    for first in range(0, size, CHUNK):
        last = min(first + CHUNK, size) - 1
        assert send_part(admin, file_id, first, last, size, TWELVE_MIB).status_code == 201
    record = upload_record(admin, file_id)
    assert record is not None and record["sizeActual"] == size
    download = admin.get(f"/storage/buckets/{BUCKET}/files/{file_id}/download")
    assert download.content == TWELVE_MIB


@pytest.mark.parametrize(
    ("first", "last"),
    [(0, 4 * MIB - 1), (CHUNK, 2 * CHUNK - 2), (1, CHUNK)],
    ids=["short-first", "short-middle", "unaligned"],
)
def test_a_part_that_is_not_a_whole_chunk_is_refused(
    admin: httpx.Client, stored_file: str, first: int, last: int
) -> None:
    response = send_part(admin, f"gap-{first}-{last}", first, last, len(TWELVE_MIB), TWELVE_MIB)
    assert_error(response, 400, "storage_invalid_content_range")


# -- refused before the body is read ----------------------------------------------------------

BOUNDARY = "hostileboundary"
GIB = 1024 * MIB


def multipart_head(field: str = "file") -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{field}"; filename="a.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()


def answer_before_the_body(
    svc: LocalService, path: str, headers: dict[str, str], declared: int, prefix: bytes
) -> tuple[int, dict[str, Any]]:
    """Send a request head announcing `declared` body bytes and only `prefix` of them; the
    answer must come without the rest (a service waiting for the body fails the read)."""
    host, port = svc.endpoint.split("//")[1].split("/")[0].split(":")
    lines = [f"POST /v1{path} HTTP/1.1", f"Host: {host}", f"Content-Length: {declared}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + prefix)
        response = http.client.HTTPResponse(conn)
        response.begin()
        return response.status, json.loads(response.read())


def multipart_headers(**extra: str) -> dict[str, str]:
    return {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}", **extra}


def test_a_multipart_body_without_a_project_is_refused_before_it_is_read(
    svc: LocalService,
) -> None:
    status, body = answer_before_the_body(svc, ROWS, multipart_headers(), 5 * GIB, multipart_head())
    assert (status, body["type"]) == (401, "general_access_forbidden")


def test_a_multipart_body_for_an_unknown_project_is_refused_before_it_is_read(
    svc: LocalService,
) -> None:
    headers = multipart_headers(**{"X-Service-Project": "elsewhere"})
    status, body = answer_before_the_body(svc, ROWS, headers, 5 * GIB, multipart_head())
    assert (status, body["type"]) == (404, "project_not_found")


def test_a_guest_upload_to_a_bucket_it_cannot_write_is_refused_before_the_body(
    svc: LocalService, stored_file: str
) -> None:
    headers = multipart_headers(**{"X-Service-Project": svc.project})
    status, body = answer_before_the_body(
        svc, f"/storage/buckets/{BUCKET}/files", headers, 5 * GIB, multipart_head()
    )
    assert (status, body["type"]) == (401, "user_unauthorized")


def test_a_guest_upload_to_a_missing_bucket_is_refused_before_the_body(svc: LocalService) -> None:
    headers = multipart_headers(**{"X-Service-Project": svc.project})
    status, body = answer_before_the_body(
        svc, "/storage/buckets/nowhere/files", headers, 5 * GIB, multipart_head()
    )
    assert (status, body["type"]) == (404, "storage_bucket_not_found")


def test_a_part_beyond_what_the_upload_allows_is_refused_before_it_is_read(
    svc: LocalService, stored_file: str
) -> None:
    key = {"X-Service-Project": svc.project, "X-Service-Key": svc.key, "X-Service-ID": "huge-part"}
    files = f"/storage/buckets/{BUCKET}/files"
    # A whole file over the bucket's maximum (5 GiB by default).
    status, body = answer_before_the_body(
        svc, files, multipart_headers(**key), 6 * GIB, multipart_head()
    )
    assert (status, body["type"]) == (400, "storage_invalid_file_size")
    # One 5 GiB part, which once left an upload that could never finish.
    ranged = multipart_headers(**key, **{"Content-Range": f"bytes 0-{5 * GIB - 1}/{5 * GIB}"})
    status, body = answer_before_the_body(svc, files, ranged, 5 * GIB, multipart_head())
    assert (status, body["type"]) == (400, "storage_invalid_content_range")
    with key_client(svc) as admin:
        assert upload_record(admin, "huge-part") is None


def test_a_part_longer_than_its_span_is_refused_as_it_streams(
    svc: LocalService, stored_file: str
) -> None:
    key = {"X-Service-Project": svc.project, "X-Service-Key": svc.key, "X-Service-ID": "sly"}
    headers = multipart_headers(**key, **{"Content-Range": "bytes 0-0/1"})
    prefix = multipart_head() + b"x" * (2 * MIB)  # far past the one byte announced
    status, body = answer_before_the_body(
        svc, f"/storage/buckets/{BUCKET}/files", headers, 5 * GIB, prefix
    )
    assert (status, body["type"]) == (400, "storage_invalid_content_range")


def test_parameters_over_16_mib_are_refused_as_they_stream(svc: LocalService) -> None:
    guest = {"X-Service-Project": svc.project}
    field = b"--" + BOUNDARY.encode() + b'\r\nContent-Disposition: form-data; name="f"\r\n\r\n'
    prefix = (field + b"x" * MB + b"\r\n") * 17
    status, body = answer_before_the_body(svc, ROWS, multipart_headers(**guest), GIB, prefix)
    assert (status, body["type"]) == (413, "general_payload_too_large")


# -- parameters are bounded -------------------------------------------------------------------

#: The JSON body once measured at 941 MiB peak: 15.7 MiB of empty objects.
EMPTY_OBJECTS = b'{"rows": [' + b",".join([b"{}"] * (int(15.7 * MIB) // 3)) + b"]}"


def urlencoded_stream(fields: int, field_bytes: int) -> Iterator[bytes]:
    """`f0=xxx&f1=xxx...`, one field at a time (sent chunked: no Content-Length)."""
    value = b"x" * field_bytes
    for number in range(fields):
        yield (b"&" if number else b"") + b"f%d=" % number + value


def test_a_chunked_urlencoded_form_over_16_mib_is_refused(svc: LocalService) -> None:
    with guest_client(svc) as guest:
        response = guest.post(
            ROWS,
            content=urlencoded_stream(999, MIB),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    assert_error(response, 413, "general_payload_too_large")


@pytest.mark.parametrize("kind", ["urlencoded", "multipart"])
def test_a_form_of_more_than_1000_fields_is_refused(svc: LocalService, kind: str) -> None:
    fields = {f"f{number}": "x" for number in range(1001)}
    with guest_client(svc) as guest:
        if kind == "urlencoded":
            response = guest.post(ROWS, data=fields)
        else:
            response = guest.post(ROWS, data=fields, files={"file": ("a.bin", b"x")})
    assert_error(response, 400, "general_bad_request")


def test_a_json_body_of_empty_objects_is_refused(admin: httpx.Client) -> None:
    assert len(EMPTY_OBJECTS) < 16 * MIB
    body = assert_error(raw_post(admin, ROWS, EMPTY_OBJECTS.decode()), 400, "general_bad_request")
    assert "objects" in body["message"]


def dense_rows(kind: str) -> list[dict[str, Any]]:
    """100 rows, 11 to 15 MiB of compact JSON, of the densest legitimate content: polygons
    of 15,000 points, or arrays of 20,000 integers."""
    if kind == "polygons":
        ring = [[n % 97, n % 89] for n in range(14_999)]
        return [{"$id": f"poly-{n}", "shape": [[*ring, ring[0]]]} for n in range(100)]
    return [{"$id": f"ints-{n}", "counts": list(range(20_000))} for n in range(100)]


@pytest.mark.parametrize("kind", ["polygons", "integers"])
def test_the_densest_legitimate_bulk_bodies_are_accepted(svc: LocalService, kind: str) -> None:
    with key_client(svc) as admin:
        create_table(
            admin, DB, f"dense-{kind}",
            columns=[
                {"key": "shape", "type": "polygon", "required": False},
                {"key": "counts", "type": "integer", "required": False, "array": True},
            ],
        )  # fmt: skip
        wait_available(admin, DB, f"dense-{kind}")
        body = json.dumps({"rows": dense_rows(kind)}, separators=(",", ":"))
        assert 10 * MIB < len(body) < 16 * MIB
        response = raw_post(admin, f"/tablesdb/{DB}/tables/dense-{kind}/rows", body)
    assert response.status_code == 201, response.text[:500]
    assert response.json()["total"] == 100


# -- memory and disk per request, measured on a service in its own process ---------------------

#: What the service's memory may grow by while the bodies below arrive: the 16 MiB of
#: parameters, their decoded text and the interpreter's own noise.
RSS_BOUND = 96 * MIB
#: The bucket's maximum size for the upload below: the most a part may write to disk.
SMALL_BUCKET_MAX = 30 * MIB
DISK_SLACK = MIB


class Peaks:
    """The service process's RSS and the bytes under its data and temporary directories,
    sampled every few milliseconds in a thread until `stop`."""

    def __init__(self, pid: int, *directories: Path) -> None:
        self.process = psutil.Process(pid)
        self.directories = directories
        self.rss = self.disk = 0
        self.baseline_rss = self.process.memory_info().rss
        self.baseline_disk = self._disk()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _disk(self) -> int:
        total = 0
        for directory in self.directories:
            for path in directory.rglob("*"):
                with suppress(OSError):  # a file removed between listing and stat
                    if path.is_file():
                        total += path.stat().st_size
        return total

    def _sample(self) -> None:
        while not self._done.wait(0.005):
            self.rss = max(self.rss, self.process.memory_info().rss - self.baseline_rss)
            self.disk = max(self.disk, self._disk() - self.baseline_disk)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def endless(block: bytes, total: int, head: bytes = b"") -> Iterator[bytes]:
    yield head
    for _ in range(total // len(block)):
        yield block


@pytest.fixture(scope="module")
def served_service(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServedService, Path]]:
    root = tmp_path_factory.mktemp("bounded")
    temporary = root / "tmp"
    temporary.mkdir()
    with served(root / "data", env={"TMPDIR": str(temporary)}) as service:
        with service.client() as admin:
            created = admin.post(
                "/storage/buckets",
                json={"bucketId": "small", "name": "small", "maximumFileSize": SMALL_BUCKET_MAX},
            )
            assert created.status_code == 201, created.text
        yield service, root


def test_memory_and_disk_stay_bounded_under_the_worst_bodies(
    served_service: tuple[ServedService, Path],
) -> None:
    service, root = served_service
    guest = httpx.Client(
        base_url=service.endpoint, headers={"X-Service-Project": PROJECT}, timeout=300
    )
    nobody = httpx.Client(base_url=service.endpoint, timeout=300)
    mib = b"x" * MIB
    field = b'--%s\r\nContent-Disposition: form-data; name="f%%d"\r\n\r\n' % BOUNDARY.encode()
    fields = (field % number + b"x" * MB + b"\r\n" for number in range(999))
    multipart = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    with guest, nobody, service.client() as admin:
        admin.get("/tablesdb")  # warm: the first request imports and allocates
        peaks = Peaks(service.pid, root)
        try:
            answers = [
                # 1 GiB of file part, no project: refused before the body is read.
                nobody.post(ROWS, content=endless(mib, GIB, multipart_head()), headers=multipart),
                # 999 fields of 1 MB each from a guest.
                guest.post(ROWS, content=fields, headers=multipart),
                # An urlencoded form of 1 GiB, sent chunked.
                guest.post(
                    ROWS,
                    content=urlencoded_stream(1024, MIB),
                    headers={"Content-Type": "application/x-www-form-urlencoded"},
                ),
                # 15.7 MiB of empty objects.
                admin.post(
                    ROWS, content=EMPTY_OBJECTS, headers={"Content-Type": "application/json"}
                ),
                # A whole file of 1 GiB for a bucket that takes 30 MiB, sent chunked.
                admin.post(
                    "/storage/buckets/small/files",
                    content=endless(mib, GIB, multipart_head()),
                    headers={**multipart, "X-Service-ID": "too-big"},
                ),
            ]
        finally:
            peaks.stop()
    assert [answer.status_code for answer in answers] == [401, 413, 413, 400, 400]
    assert peaks.rss < RSS_BOUND, f"RSS grew by {peaks.rss / MIB:.0f} MiB"
    assert peaks.disk < SMALL_BUCKET_MAX + DISK_SLACK, f"disk grew by {peaks.disk / MIB:.0f} MiB"


# -- slow connections ------------------------------------------------------------------------


def service_address(svc: LocalService | ServedService) -> tuple[str, int]:
    host, port = svc.endpoint.split("//")[1].split("/")[0].split(":")
    return host, int(port)


def closed_by_the_service(conn: socket.socket, drip: bytes = b"") -> bool:
    """Whether the service closes `conn` (sending `drip` every 0.2 s meanwhile) before the
    socket's own timeout, which a service without read timeouts would reach."""
    conn.settimeout(0.2)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if drip:
                conn.sendall(drip)
            if conn.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


@pytest.fixture(scope="module")
def impatient() -> Iterator[LocalService]:
    with LocalService(header_timeout=1, body_timeout=1) as service:
        yield service


@pytest.mark.parametrize(
    ("sent", "drip"),
    [
        (b"", b""),
        (b"GET /v1/tablesdb HTTP/1.1\r\n", b""),
        (b"GET /v1/tablesdb HTTP/1.1\r\n", b"X-A: b\r\n"),
    ],
    ids=["nothing", "half-a-head", "a-dripping-head"],
)
def test_a_request_head_that_does_not_arrive_in_time_is_closed(
    impatient: LocalService, sent: bytes, drip: bytes
) -> None:
    with socket.create_connection(service_address(impatient)) as conn:
        conn.sendall(sent)
        assert closed_by_the_service(conn, drip)


@pytest.mark.parametrize("drip", [b"", b" "], ids=["stalled", "dripping"])
def test_a_body_that_stalls_or_drips_is_cut(impatient: LocalService, drip: bytes) -> None:
    head = (
        "POST /v1/tablesdb HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"X-Service-Project: {impatient.project}\r\nX-Service-Key: {impatient.key}\r\n"
        "Content-Length: 100000\r\n\r\n{"
    )
    with socket.create_connection(service_address(impatient)) as conn:
        conn.sendall(head.encode())
        assert closed_by_the_service(conn, drip)


def test_a_newcomer_beyond_a_cap_of_busy_connections_gets_a_503() -> None:
    with LocalService(max_connections=4, body_timeout=120) as capped:
        head = (
            "POST /v1/tablesdb HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"X-Service-Project: {capped.project}\r\nContent-Length: 100\r\n\r\n{{"
        )
        busy = [socket.create_connection(service_address(capped)) for _ in range(4)]
        try:
            for conn in busy:  # each in the middle of its body: busy, not idle
                conn.sendall(head.encode())
            with key_client(capped) as admin:
                assert admin.get("/tablesdb").status_code == 503
            busy.pop().close()
            with key_client(capped) as admin:
                assert admin.get("/tablesdb").status_code == 200
        finally:
            for conn in busy:
                conn.close()


def test_slow_connections_past_the_descriptor_limit_neither_stall_others_nor_flood_the_log(
    tmp_path: Path,
) -> None:
    # 400 connections that never finish their head, at a limit of 256 descriptors, once made
    # accept() fail in a loop: normal requests stalled, and the log grew by megabytes a second.
    log = tmp_path / "service.log"
    with served(tmp_path / "data", open_files=256, log=log) as service:
        slow = []
        try:
            for _ in range(400):
                conn = socket.create_connection(service_address(service), timeout=60)
                conn.sendall(b"GET /v1/tablesdb HTTP/1.1\r\nHost: x\r\n")
                slow.append(conn)
            with service.client() as client:
                statuses = [client.get("/tablesdb").status_code for _ in range(20)]
        finally:
            for conn in slow:
                conn.close()
    assert statuses == [200] * 20
    assert log.stat().st_size < 4096, log.read_text()[:3000]


def test_a_flood_of_malformed_requests_writes_a_warning_at_most_once_a_second(
    tmp_path: Path,
) -> None:
    log = tmp_path / "service.log"
    with served(tmp_path / "data", log=log) as service:
        started = time.monotonic()
        for _ in range(300):
            with socket.create_connection(service_address(service), timeout=60) as conn:
                conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")
                assert conn.recv(65536).startswith(b"HTTP/1.1 400")
        seconds = time.monotonic() - started
    warnings = log.read_text().count("Invalid HTTP request received")
    assert 1 <= warnings <= seconds + 1, (warnings, seconds)


# -- reads do not queue behind writers ---------------------------------------------------------

LONG_UPDATE_ROWS = 30_000
"""Rows the long update rewrites: about 2.5 s on an idle machine of two cores (20,000 took
1.0–1.5 s, too close to the 1 s the read used to wait for the writers to queue)."""


def test_a_read_is_answered_while_60_writers_queue_behind_a_long_update() -> None:
    # Writers waiting for SQLite's write lock once held every worker thread, so a one-row
    # read waited for the whole update (18 s) though a read under WAL needs no lock.
    with LocalService(rate_limits=False) as service, key_client(service) as admin:
        create_database(admin, "busy")
        columns = [{"key": "n", "type": "integer", "required": False}]
        for table in ("big", "other"):
            create_table(admin, "busy", table, columns=columns)
        big, other = "/tablesdb/busy/tables/big/rows", "/tablesdb/busy/tables/other/rows"
        for first in range(0, LONG_UPDATE_ROWS, 100):
            rows = [{"$id": f"r{n}", "n": n} for n in range(first, first + 100)]
            assert admin.post(big, json={"rows": rows}).status_code == 201
        updated = threading.Event()

        def update() -> None:
            assert admin.patch(big, json={"data": {"n": -1}}).status_code == 200
            updated.set()

        def write(number: int) -> None:
            body = {"rowId": f"w{number}", "data": {"n": number}}
            assert admin.post(other, json=body).status_code == 201

        threads = [threading.Thread(target=update)]
        threads += [threading.Thread(target=write, args=(number,)) for number in range(60)]
        threads[0].start()
        time.sleep(0.25)  # the update holds the write lock before the writers arrive
        for thread in threads[1:]:
            thread.start()
        time.sleep(0.25)  # and the writers queue behind it
        read = admin.get(f"{big}/r7")
        answered_during_the_update = not updated.is_set()
        for thread in threads:
            thread.join()
    assert read.status_code == 200
    assert answered_during_the_update
