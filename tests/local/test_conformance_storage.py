"""Buckets, files and deployments, item by item: the models' exact fields, the metadata lists'
query errors and the final chunk's permissions, over real HTTP (service interface, "Buckets",
"Files", "Functions", "Models", "Query errors", "Chunked uploads")."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator

import httpx
import pytest
from storage_helpers import (
    CHUNK,
    assert_error,
    chunk_spans,
    create_bucket,
    guest_client,
    key_client,
    query,
    seeded_bytes,
    send_chunk,
)

from frameport.local import LocalService

BUCKET = "conformance"
FILES = f"/storage/buckets/{BUCKET}/files"
DEPLOYMENTS = "/functions/conform/deployments"

FILE_FIELDS = {
    "$id", "bucketId", "$createdAt", "$updatedAt", "$permissions", "name", "folder", "key",
    "signature", "mimeType", "sizeOriginal", "sizeActual", "chunksTotal", "chunksUploaded",
    "encryption", "compression",
}  # fmt: skip
BUCKET_FIELDS = {
    "$id", "$createdAt", "$updatedAt", "$permissions", "fileSecurity", "name", "enabled",
    "maximumFileSize", "allowedFileExtensions", "compression", "encryption", "antivirus",
    "transformations", "totalSize",
}  # fmt: skip
DEPLOYMENT_FIELDS = {
    "$id", "$createdAt", "$updatedAt", "type", "resourceId", "resourceType", "entrypoint",
    "sourceSize", "buildSize", "totalSize", "buildId", "activate", "screenshotLight",
    "screenshotDark", "status", "buildLogs", "buildDuration", "providerRepositoryName",
    "providerRepositoryOwner", "providerRepositoryUrl", "providerCommitHash",
    "providerCommitAuthorUrl", "providerCommitAuthor", "providerCommitMessage",
    "providerCommitUrl", "providerBranch", "providerBranchUrl",
}  # fmt: skip


def _archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        source = b"print('hi')\n"
        entry = tarfile.TarInfo("main.py")
        entry.size = len(source)
        archive.addfile(entry, io.BytesIO(source))
    return buffer.getvalue()


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        with key_client(svc) as admin:
            create_bucket(admin, BUCKET)
            body = {"functionId": "conform", "name": "conform", "runtime": "python-3.12"}
            response = admin.post("/functions", json={**body, "entrypoint": "main.py"})
            assert response.status_code == 201, response.text
        yield svc


@pytest.fixture
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        yield client


# --- models: every listed field, nothing else (service interface, "Models") ---------------


def test_bucket_model_has_exactly_its_fields(admin: httpx.Client) -> None:
    created = create_bucket(admin, "modelled")
    listed = admin.get("/storage/buckets").json()
    assert set(created) == BUCKET_FIELDS
    assert set(listed) == {"total", "buckets"}
    assert all(set(bucket) == BUCKET_FIELDS for bucket in listed["buckets"])


def test_file_model_has_exactly_its_fields_partial_or_complete(admin: httpx.Client) -> None:
    data = seeded_bytes(CHUNK + 3, seed=4)
    first, last = chunk_spans(len(data))
    partial = send_chunk(admin, FILES, data, first, upload_id="modelled").json()
    complete = send_chunk(admin, FILES, data, last, upload_id="modelled").json()
    listed = admin.get(FILES).json()
    assert set(partial) == set(complete) == FILE_FIELDS
    assert set(listed) == {"total", "files"}
    assert all(set(item) == FILE_FIELDS for item in listed["files"])


def test_deployment_model_has_exactly_its_fields(admin: httpx.Client) -> None:
    response = admin.post(
        DEPLOYMENTS, files={"code": ("code.tar.gz", _archive())}, data={"activate": "false"}
    )
    assert response.status_code == 202, response.text
    deployment = response.json()
    assert set(deployment) == DEPLOYMENT_FIELDS
    assert (deployment["status"], deployment["type"]) == ("waiting", "manual")
    listed = admin.get(DEPLOYMENTS).json()
    assert all(set(item) == DEPLOYMENT_FIELDS for item in listed["deployments"])


# --- metadata lists: the param validator's message (service interface, "Query errors") ----

BAD_QUERIES = [
    (json.dumps({"method": "frobnicate"}), "Invalid query method: frobnicate"),
    (query("select", "", ["name"]), "Invalid query method: select"),
    ("{not json", "Syntax error"),
    (query("equal", "nope", ["x"]), "Attribute not found in schema: nope"),
]


@pytest.mark.parametrize("path", ["/storage/buckets", FILES, DEPLOYMENTS])
@pytest.mark.parametrize(("text", "detail"), BAD_QUERIES)
def test_metadata_list_query_errors_name_the_queries_param(
    admin: httpx.Client, path: str, text: str, detail: str
) -> None:
    response = admin.get(path, params={"queries[]": [text]})
    body = assert_error(response, 400, "general_argument_invalid")
    assert body["message"].startswith("Invalid `queries` param: Invalid query: ")
    assert body["message"].endswith(detail)


# --- the final chunk's permissions replace the record's
# (service interface, "Chunked uploads") ---------------------------------------------------


def test_final_chunk_permissions_replace_the_first_chunks(admin: httpx.Client) -> None:
    data = seeded_bytes(CHUNK + 5, seed=9)
    first, last = chunk_spans(len(data))
    opening = send_chunk(
        admin, FILES, data, last, upload_id="regranted", form={"permissions[]": 'read("any")'}
    )
    closing = send_chunk(
        admin, FILES, data, first, upload_id="regranted", form={"permissions[]": 'read("users")'}
    )
    assert opening.status_code == closing.status_code == 201
    assert opening.json()["$permissions"] == ['read("any")']
    assert closing.json()["$permissions"] == ['read("users")']
    assert closing.json()["chunksUploaded"] == closing.json()["chunksTotal"] == 2


# --- path IDs (service interface, "IDs") ---------------------------------------------------

#: Path IDs that break the ID rule: too long, a leading special char, `unique()`.
MALFORMED_IDS = ["x" * 37, "_x", ".x", "-x", "unique()"]


@pytest.mark.parametrize("bad", MALFORMED_IDS)
def test_malformed_path_ids_of_storage_and_functions_are_argument_errors(
    admin: httpx.Client, bad: str
) -> None:
    file_routes = [("GET", ""), ("PUT", ""), ("DELETE", "")]
    file_routes += [("GET", f"/{action}") for action in ("download", "view", "preview")]
    cases = [
        ("GET", f"/storage/buckets/{bad}", "bucketId"),
        ("PUT", f"/storage/buckets/{bad}", "bucketId"),
        ("DELETE", f"/storage/buckets/{bad}", "bucketId"),
        ("GET", f"/storage/buckets/{bad}/files", "bucketId"),
        ("POST", f"/storage/buckets/{bad}/files", "bucketId"),
        *((method, f"{FILES}/{bad}{tail}", "fileId") for method, tail in file_routes),
        ("GET", f"/storage/buckets/{bad}/files/f", "bucketId"),
        ("GET", f"/functions/{bad}", "functionId"),
        ("GET", f"/functions/{bad}/deployments", "functionId"),
        ("POST", f"/functions/{bad}/deployments", "functionId"),
        ("GET", f"{DEPLOYMENTS}/{bad}", "deploymentId"),
        ("GET", f"{DEPLOYMENTS}/{bad}/download", "deploymentId"),
    ]
    for method, path, name in cases:
        body = assert_error(admin.request(method, path), 400, "general_argument_invalid")
        assert body["message"].startswith(f"Invalid `{name}` param: "), (method, path, body)


def test_valid_but_unknown_path_ids_are_still_not_found(admin: httpx.Client) -> None:
    assert_error(admin.get("/storage/buckets/nope"), 404, "storage_bucket_not_found")
    assert_error(admin.get(f"{FILES}/nope"), 404, "storage_file_not_found")
    assert_error(admin.get("/functions/nope"), 404, "function_not_found")
    assert_error(admin.get(f"{DEPLOYMENTS}/nope"), 404, "deployment_not_found")


def test_scope_is_checked_before_the_path_ids(service: LocalService) -> None:
    with guest_client(service) as guest:
        refused = guest.get("/storage/buckets/_bad")
        assert_error(refused, 401, "general_unauthorized_scope")
        assert_error(guest.get("/functions/_bad"), 401, "general_unauthorized_scope")


def test_deployment_upload_id_is_format_checked_though_the_service_does_not(
    admin: httpx.Client,
) -> None:
    # The service takes X-Service-ID without checking it (service interface, "Functions");
    # the local service checks it because the ID names the archive's files on disk.
    response = admin.post(
        DEPLOYMENTS,
        files={"code": ("code.tar.gz", _archive())},
        data={"activate": "false"},
        headers={"X-Service-ID": "../escape"},
    )
    assert_error(response, 400, "storage_invalid_service_id")
