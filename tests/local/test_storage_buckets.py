"""Buckets and the `queries` of the bucket and file lists
(service interface, "Buckets", "Files", "Queries")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from storage_helpers import (
    CHUNK,
    assert_error,
    create_bucket,
    key_client,
    query,
    seeded_bytes,
    send_chunk,
)

from frameport.local import LocalService

LIMIT = 50 * 1024 * 1024


@pytest.fixture(scope="module")
def admin() -> Iterator[httpx.Client]:
    with LocalService(max_file_size=LIMIT) as svc, key_client(svc) as client:
        yield client


def test_create_applies_the_defaults(admin: httpx.Client) -> None:
    bucket = create_bucket(admin, "defaults")

    assert bucket["$permissions"] == []
    assert (bucket["fileSecurity"], bucket["enabled"]) == (False, True)
    assert bucket["maximumFileSize"] == LIMIT
    assert bucket["allowedFileExtensions"] == []
    assert bucket["compression"] == "none"
    assert (bucket["encryption"], bucket["antivirus"], bucket["transformations"]) == (
        True,
        True,
        True,
    )
    assert bucket["totalSize"] == 0


def test_create_keeps_every_setting(admin: httpx.Client) -> None:
    bucket = create_bucket(
        admin,
        "configured",
        permissions=['write("users")', 'read("any")'],
        fileSecurity=True,
        enabled=False,
        maximumFileSize=1000,
        allowedFileExtensions=["csv", "parquet"],
        compression="zstd",
        encryption=False,
        antivirus=False,
        transformations=False,
    )
    fetched = admin.get("/storage/buckets/configured").json()

    assert fetched == bucket
    assert bucket["$permissions"] == [
        'create("users")',
        'update("users")',
        'delete("users")',
        'read("any")',
    ]
    assert (bucket["maximumFileSize"], bucket["compression"]) == (1000, "zstd")
    assert bucket["allowedFileExtensions"] == ["csv", "parquet"]


@pytest.mark.parametrize(
    "settings",
    [
        {"maximumFileSize": LIMIT + 1},
        {"maximumFileSize": 0},
        {"compression": "brotli"},
        {"permissions": ['fly("any")']},
        {"allowedFileExtensions": ["x" * 65]},
        {"name": "n" * 129},
        {"bucketId": "-bad"},
    ],
)
def test_invalid_settings_are_400(admin: httpx.Client, settings: dict[str, object]) -> None:
    body = {"bucketId": "invalid", "name": "invalid", **settings}
    assert_error(admin.post("/storage/buckets", json=body), 400, "general_argument_invalid")


def test_duplicate_bucket_is_409(admin: httpx.Client) -> None:
    create_bucket(admin, "twice")
    response = admin.post("/storage/buckets", json={"bucketId": "twice", "name": "again"})
    assert_error(response, 409, "storage_bucket_already_exists")


def test_unique_generates_an_id(admin: httpx.Client) -> None:
    response = admin.post("/storage/buckets", json={"bucketId": "unique()", "name": "generated"})
    assert len(response.json()["$id"]) == 20


def test_update_replaces_the_settings(admin: httpx.Client) -> None:
    create_bucket(admin, "changing", permissions=['read("any")'], maximumFileSize=10)
    response = admin.put(
        "/storage/buckets/changing", json={"name": "changed", "fileSecurity": True}
    )
    updated = response.json()

    assert response.status_code == 200
    assert (updated["name"], updated["fileSecurity"]) == ("changed", True)
    assert updated["$permissions"] == ['read("any")']  # kept when not sent
    assert updated["maximumFileSize"] == LIMIT  # back to the default
    assert_error(
        admin.put("/storage/buckets/missing", json={"name": "x"}), 404, "storage_bucket_not_found"
    )


def test_delete_removes_the_bucket_and_its_files(admin: httpx.Client) -> None:
    create_bucket(admin, "doomed")
    send_chunk(admin, "/storage/buckets/doomed/files", b"abc", (0, 3), upload_id="f")
    assert admin.delete("/storage/buckets/doomed").status_code == 204
    assert_error(admin.get("/storage/buckets/doomed"), 404, "storage_bucket_not_found")
    assert_error(admin.get("/storage/buckets/doomed/files/f"), 404, "storage_bucket_not_found")


def test_total_size_sums_the_stored_files(admin: httpx.Client) -> None:
    create_bucket(admin, "sized")
    for file_id, size in (("a", 10), ("b", 32)):
        data = seeded_bytes(size, seed=size)
        send_chunk(admin, "/storage/buckets/sized/files", data, (0, size), upload_id=file_id)
    assert admin.get("/storage/buckets/sized").json()["totalSize"] == 42


# -- lists --------------------------------------------------------------------------------


def bucket_ids(admin: httpx.Client, *queries: str, **params: Any) -> list[str]:
    response = admin.get("/storage/buckets", params={"queries[]": list(queries), **params})
    assert response.status_code == 200, response.text
    return [bucket["$id"] for bucket in response.json()["buckets"]]


def test_bucket_list_filters_on_its_attributes(admin: httpx.Client) -> None:
    create_bucket(admin, "list-a", maximumFileSize=100, encryption=False)
    create_bucket(admin, "list-b", maximumFileSize=200, encryption=False)

    small = query("lessThan", "maximumFileSize", [150])
    unencrypted = query("equal", "encryption", [False])
    named = query("startsWith", "name", ["LIST-"])  # case-insensitive collation
    assert "list-a" in bucket_ids(admin, small) and "list-b" not in bucket_ids(admin, small)
    assert bucket_ids(admin, unencrypted, named) == ["list-a", "list-b"]
    assert bucket_ids(admin, named, query("orderDesc", "maximumFileSize")) == ["list-b", "list-a"]
    assert bucket_ids(admin, named, search="list-b") == ["list-b"]


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        (query("equal", "totalSize", [1]), "Attribute not found in schema: totalSize"),
        (query("select", "", ["name"]), "Invalid query method: select"),
        (query("equal", "enabled", ["yes"]), 'Query value is invalid for attribute "enabled"'),
        ("{not json", "Syntax error"),
    ],
)
def test_bucket_list_rejects_bad_queries(admin: httpx.Client, text: str, detail: str) -> None:
    response = admin.get("/storage/buckets", params={"queries[]": [text]})
    body = assert_error(response, 400, "general_argument_invalid")
    assert body["message"].startswith("Invalid `queries` param: ")
    assert detail in body["message"]


def test_file_list_filters_orders_and_pages(admin: httpx.Client) -> None:
    create_bucket(admin, "listed")
    path = "/storage/buckets/listed/files"
    for index, name in enumerate(["b.csv", "a.csv", "c.txt", "Ä.csv"]):
        data = seeded_bytes(10 + index, seed=index)
        send_chunk(admin, path, data, (0, len(data)), upload_id=f"f{index}", name=name)
    partial = seeded_bytes(2 * CHUNK, seed=99)
    send_chunk(admin, path, partial, (0, CHUNK), upload_id="partial", name="big.bin")

    def ids(*queries: str, **params: Any) -> tuple[int, list[str]]:
        response = admin.get(path, params={"queries[]": list(queries), **params})
        assert response.status_code == 200, response.text
        body = response.json()
        return body["total"], [item["$id"] for item in body["files"]]

    assert ids() == (5, ["f0", "f1", "f2", "f3", "partial"])
    assert ids(query("equal", "mimeType", ["text/csv"]))[1] == ["f0", "f1", "f3"]
    # the collation ignores case and accents: "a.csv" and "Ä.csv" are equal
    # (service interface, "Collation")
    assert ids(query("equal", "name", ["ä.CSV"]))[1] == ["f1", "f3"]
    assert ids(query("orderAsc", "name"), query("limit", "", [3]))[1] == ["f1", "f3", "f0"]
    assert ids(query("greaterThanEqual", "sizeOriginal", [12]), query("offset", "", [1])) == (
        3,
        ["f3", "partial"],
    )
    assert ids(query("cursorAfter", "", ["f1"]), query("limit", "", [2]))[1] == ["f2", "f3"]
    assert ids(query("cursorBefore", "", ["f3"]), query("limit", "", [2]))[1] == ["f1", "f2"]
    assert ids(query("equal", "chunksTotal", [2]))[1] == ["partial"]
    assert ids(total=False)[0] == 0
    assert ids(search="big")[1] == ["partial"]


def test_file_list_cursor_must_exist(admin: httpx.Client) -> None:
    create_bucket(admin, "cursor")
    response = admin.get(
        "/storage/buckets/cursor/files", params={"queries[]": [query("cursorAfter", "", ["x"])]}
    )
    body = assert_error(response, 400, "general_cursor_not_found")
    assert body["message"] == "File 'x' for the 'cursor' value not found."
