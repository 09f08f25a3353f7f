"""Buckets, files and deployments against the wire contract, item by item (§3.7–§3.9, §4, §5.7,
§6): the models' exact fields, the metadata lists' query errors and the final chunk's
permissions, over real HTTP."""

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


# --- §4 models: every listed field, nothing else ------------------------------------------


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


# --- §5.7 metadata lists: the param validator's message -----------------------------------

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


# --- §6.7 the final chunk's permissions replace the record's -------------------------------


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
