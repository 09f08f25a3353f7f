"""Functions and deployments (service interface, "Functions"): chunked archives, the archive check,
activation."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from storage_helpers import (
    MIB,
    assert_error,
    chunk_spans,
    create_user,
    key_client,
    seeded_bytes,
    send_chunk,
    session_client,
)

from frameport.local import LocalService

DEPLOYMENTS = "/functions/etl/deployments"


def archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(content)
            tar.addfile(member, io.BytesIO(content))
    return buffer.getvalue()


BIG_ARCHIVE = archive({"main.py": b"print('hi')\n", "data.bin": seeded_bytes(12 * MIB, seed=21)})


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc, key_client(svc) as admin:
        response = admin.post(
            "/functions",
            json={
                "functionId": "etl",
                "name": "ETL",
                "runtime": "python-3.12",
                "entrypoint": "main.py",
                "commands": "pip install -r requirements.txt",
            },
        )
        assert response.status_code == 201, response.text
        yield svc


@pytest.fixture
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        yield client


def deploy(
    client: httpx.Client,
    data: bytes,
    deployment_id: str,
    *,
    name: str = "code.tar.gz",
    **form: Any,
) -> list[httpx.Response]:
    """Upload an archive in 5 MiB chunks, the first alone, then the rest in reverse."""
    fields = {"activate": "false", **form}
    spans = chunk_spans(len(data))
    return [
        send_chunk(
            client,
            DEPLOYMENTS,
            data,
            span,
            upload_id=deployment_id,
            name=name,
            field="code",
            form=fields,
        )
        for span in [spans[0], *reversed(spans[1:])]
    ]


def settled(client: httpx.Client, deployment_id: str) -> dict[str, Any]:
    """The deployment once its archive check is over (polled as clients do)."""
    for _ in range(3000):
        body: dict[str, Any] = client.get(f"{DEPLOYMENTS}/{deployment_id}").json()
        if body["status"] in ("ready", "failed"):
            return body
        time.sleep(0.01)
    raise AssertionError(f"deployment {deployment_id} did not settle: {body}")


def test_function_model_and_listing(admin: httpx.Client) -> None:
    function = admin.get("/functions/etl").json()
    listed = admin.get(
        "/functions",
        params={"queries[]": ['{"method":"equal","attribute":"runtime","values":["python-3.12"]}']},
    )

    assert (function["$id"], function["name"], function["runtime"]) == ("etl", "ETL", "python-3.12")
    assert (function["entrypoint"], function["deploymentId"]) == ("main.py", "")
    assert [item["$id"] for item in listed.json()["functions"]] == ["etl"]


def test_duplicate_function_is_409(admin: httpx.Client) -> None:
    body = {"functionId": "etl", "name": "again", "runtime": "python-3.12"}
    assert_error(admin.post("/functions", json=body), 409, "function_already_exists")


def test_chunked_deployment_downloads_identical_and_activates(admin: httpx.Client) -> None:
    responses = deploy(admin, BIG_ARCHIVE, "big", activate="true")

    assert [response.status_code for response in responses] == [202, 202, 202]
    assert [response.json()["status"] for response in responses] == ["waiting"] * 3
    assert "chunksUploaded" not in responses[0].json()
    done = settled(admin, "big")
    assert done["status"] == "ready", done["buildLogs"]
    assert (done["sourceSize"], done["activate"]) == (len(BIG_ARCHIVE), True)
    assert (done["entrypoint"], done["type"], done["resourceId"]) == ("main.py", "manual", "etl")
    download = admin.get(f"{DEPLOYMENTS}/big/download")
    assert download.content == BIG_ARCHIVE
    assert download.headers["Content-Type"] == "application/gzip"
    ranged = admin.get(f"{DEPLOYMENTS}/big/download", headers={"Range": "bytes=10-19"})
    assert (ranged.status_code, ranged.content) == (206, BIG_ARCHIVE[10:20])
    function = admin.get("/functions/etl").json()
    assert function["deploymentId"] == function["deployment"] == "big"
    assert function["latestDeploymentId"] == "big"


def test_resent_chunk_of_a_complete_deployment_is_202(admin: httpx.Client) -> None:
    small = archive({"main.py": b"x = 1\n"})
    deploy(admin, small, "resent")
    again = deploy(admin, small, "resent")
    assert again[0].status_code == 202
    assert again[0].json()["$id"] == "resent"


def test_inactive_deployment_leaves_the_function_alone(admin: httpx.Client) -> None:
    before = admin.get("/functions/etl").json()["deploymentId"]
    deploy(admin, archive({"main.py": b"pass\n"}), "quiet")

    assert settled(admin, "quiet")["status"] == "ready"
    assert admin.get("/functions/etl").json()["deploymentId"] == before


def test_corrupt_archive_fails_with_the_reason(admin: httpx.Client) -> None:
    good = archive({"main.py": b"print(1)\n" * 1000})
    corrupt = good[: len(good) // 2] + bytes(len(good) - len(good) // 2)
    deploy(admin, corrupt, "corrupt", activate="true")
    done = settled(admin, "corrupt")

    assert done["status"] == "failed"
    assert "not a readable .tar.gz" in done["buildLogs"]
    assert admin.get("/functions/etl").json()["deploymentId"] != "corrupt"


def test_missing_entrypoint_in_archive_is_a_warning(admin: httpx.Client) -> None:
    deploy(admin, archive({"other.py": b""}), "warned")
    done = settled(admin, "warned")
    assert done["status"] == "ready"
    assert "entrypoint 'main.py' is not in the archive" in done["buildLogs"]


def test_entrypoint_sent_overrides_the_functions(admin: httpx.Client) -> None:
    deploy(admin, archive({"app.py": b""}), "custom", entrypoint="app.py")
    assert settled(admin, "custom")["entrypoint"] == "app.py"


def test_deployment_list_filters_on_status(admin: httpx.Client) -> None:
    deploy(admin, archive({"main.py": b""}), "listed")
    settled(admin, "listed")
    response = admin.get(
        DEPLOYMENTS,
        params={"queries[]": ['{"method":"equal","attribute":"status","values":["ready"]}']},
    )
    assert response.status_code == 200, response.text
    assert "listed" in [item["$id"] for item in response.json()["deployments"]]


# -- errors -------------------------------------------------------------------------------


def test_archive_name_must_end_in_gz(admin: httpx.Client) -> None:
    response = deploy(admin, archive({"main.py": b""}), "zip", name="code.zip")[0]
    assert_error(response, 400, "storage_file_type_unsupported")


def test_size_limit_is_checked_against_the_declared_total(admin: httpx.Client) -> None:
    response = admin.post(
        DEPLOYMENTS,
        files={"code": ("code.tar.gz", b"x" * 100)},
        data={"activate": "false"},
        headers={"Content-Range": "bytes 0-99/30000001", "X-Service-ID": "huge"},
    )
    assert_error(response, 400, "deployment_invalid_file_size")


def test_entrypoint_missing_everywhere_is_404(admin: httpx.Client) -> None:
    admin.post("/functions", json={"functionId": "bare", "name": "bare", "runtime": "node-22"})
    response = admin.post(
        "/functions/bare/deployments",
        files={"code": ("code.tar.gz", archive({"a": b""}))},
        data={"activate": "false"},
    )
    assert_error(response, 404, "function_entrypoint_missing")


def test_unknown_function_and_deployment_are_404(admin: httpx.Client) -> None:
    files = {"code": ("code.tar.gz", b"x")}
    unknown = admin.post("/functions/nope/deployments", files=files, data={"activate": "false"})
    assert_error(unknown, 404, "function_not_found")
    assert_error(admin.get(f"{DEPLOYMENTS}/nope"), 404, "deployment_not_found")


def test_activate_is_required_and_code_must_be_sent(admin: httpx.Client) -> None:
    no_activate = admin.post(DEPLOYMENTS, files={"code": ("code.tar.gz", b"x")})
    no_code = admin.post(DEPLOYMENTS, data={"activate": "true"})
    assert_error(no_activate, 400, "general_argument_invalid")
    assert_error(no_code, 400, "storage_file_empty")


def test_incomplete_deployment_cannot_be_downloaded(admin: httpx.Client) -> None:
    send_chunk(
        admin,
        DEPLOYMENTS,
        BIG_ARCHIVE,
        (0, 5 * MIB),
        upload_id="half",
        name="code.tar.gz",
        field="code",
        form={"activate": "false"},
    )
    assert admin.get(f"{DEPLOYMENTS}/half").json()["status"] == "waiting"
    assert_error(admin.get(f"{DEPLOYMENTS}/half/download"), 404, "deployment_not_found")


def test_functions_are_managed_with_a_key_only(service: LocalService) -> None:
    create_user(service, "developer")
    with session_client(service, "developer") as user:
        created = user.post("/functions", json={"functionId": "f", "name": "f", "runtime": "x"})
        deployed = user.post(DEPLOYMENTS, files={"code": ("code.tar.gz", b"x")})
    assert_error(created, 401, "general_unauthorized_scope")
    assert_error(deployed, 401, "general_unauthorized_scope")
