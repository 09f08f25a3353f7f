"""Fault injection over real HTTP: refusals, dropped connections, applied-then-dropped changes,
and a retrying client that still gets every upload through byte-identical."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import httpx
import pytest
from storage_helpers import CHUNK, MIB, chunk_spans, key_client, seeded_bytes, send_chunk

from frameport.local import LocalService

RETRIED_STATUSES = {429, 500, 503}
REFUSALS = {"drop", "500", "503", "429"}


def retrying(send: Callable[[], httpx.Response], attempts: int = 60) -> httpx.Response:
    """What a client does: send again after a transport error, a 5xx or a 429."""
    for _ in range(attempts):
        try:
            response = send()
        except httpx.TransportError:
            continue
        if response.status_code not in RETRIED_STATUSES:
            return response
        # honour Retry-After, shortened so the test stays fast
        time.sleep(min(float(response.headers.get("Retry-After", "0")), 0.05))
    raise AssertionError(f"no answer after {attempts} attempts")


def test_faults_are_off_by_default() -> None:
    with LocalService() as svc, key_client(svc) as admin:
        for index in range(20):
            response = admin.post("/storage/buckets", json={"bucketId": f"b{index}", "name": "b"})
            assert response.status_code == 201
        assert svc.faults == []


def test_every_kind_behaves_as_described(tmp_path: Path) -> None:
    outcomes: list[tuple[str, str, object]] = []
    with LocalService(data_dir=tmp_path, faults="1:5") as svc, key_client(svc) as admin:
        for index in range(40):
            bucket_id = f"b{index}"
            try:
                answer: object = admin.post(
                    "/storage/buckets", json={"bucketId": bucket_id, "name": bucket_id}
                )
            except httpx.TransportError as exc:
                answer = exc
            outcomes.append((bucket_id, svc.faults[-1].kind, answer))
        faults = svc.faults
    with LocalService(data_dir=tmp_path) as svc, key_client(svc) as admin:
        listed = admin.get(
            "/storage/buckets", params={"queries[]": ['{"method":"limit","values":[100]}']}
        )
        existing = {bucket["$id"] for bucket in listed.json()["buckets"]}

    assert {kind for _, kind, _ in outcomes} == REFUSALS | {"apply_then_drop"}
    assert [fault.request_line for fault in faults] == ["POST /v1/storage/buckets"] * 40
    for bucket_id, kind, answer in outcomes:
        if kind in ("drop", "apply_then_drop"):
            assert isinstance(answer, httpx.TransportError), (kind, answer)
        else:
            assert isinstance(answer, httpx.Response)
            assert answer.status_code == int(kind)
            assert answer.json()["code"] == int(kind)
            assert answer.headers["cache-control"] == "no-cache, no-store, must-revalidate"
            if kind == "500":
                assert answer.json()["message"] == "Server Error"
            if kind == "429":
                assert answer.headers["Retry-After"] == "1"
        assert (bucket_id in existing) == (kind == "apply_then_drop")
    assert all(fault.applied == (fault.kind == "apply_then_drop") for fault in faults)


@pytest.mark.parametrize("spec", ["2", "abc", "0.5:x"])
def test_bad_fault_spec_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="fault"):
        LocalService(faults=spec).start()


def upload_retrying(
    client: httpx.Client, bucket_id: str, data: bytes, file_id: str, parallel: bool
) -> None:
    """Every chunk carries Content-Range, so a chunk sent again is always answered 200/201."""
    path = f"/storage/buckets/{bucket_id}/files"
    spans = chunk_spans(len(data))

    def send(span: tuple[int, int]) -> httpx.Response:
        response = retrying(lambda: send_chunk(client, path, data, span, upload_id=file_id))
        assert response.status_code in (200, 201), response.text
        return response

    send(spans[0])
    if parallel:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(send, spans[1:]))
    else:
        for span in spans[1:]:
            send(span)


def test_retrying_client_gets_every_upload_through() -> None:
    sizes = [1, 1000, CHUNK, CHUNK + 1, 23 * MIB]
    with LocalService(faults="0.2:7") as svc, key_client(svc) as client:
        created = retrying(
            lambda: client.post("/storage/buckets", json={"bucketId": "flaky", "name": "flaky"})
        )
        assert created.status_code in (201, 409), created.text
        uploads = {}
        for index, size in enumerate(sizes * 2):
            file_id = f"f{index}"
            uploads[file_id] = seeded_bytes(size, seed=index)
            upload_retrying(client, "flaky", uploads[file_id], file_id, parallel=index % 2 == 1)
        # keep going with small files until both families of fault have been seen
        extra = 0
        while not both_families_seen(svc) and extra < 200:
            file_id = f"extra{extra}"
            uploads[file_id] = seeded_bytes(100, seed=1000 + extra)
            upload_retrying(client, "flaky", uploads[file_id], file_id, parallel=False)
            extra += 1

        for file_id, data in uploads.items():
            path = f"/storage/buckets/flaky/files/{file_id}"
            model = retrying(partial(client.get, path)).json()
            body = retrying(partial(client.get, f"{path}/download")).content
            assert model["signature"] == hashlib.md5(data).hexdigest(), file_id
            assert body == data, file_id
        faults = svc.faults

    assert any(fault.kind in REFUSALS for fault in faults)
    assert any(fault.applied and "/files" in fault.request_line for fault in faults)


def both_families_seen(svc: LocalService) -> bool:
    """A refusal, and an upload chunk that was applied before its connection was dropped."""
    faults = svc.faults
    refused = any(not fault.applied for fault in faults)
    return refused and any(fault.applied and "/files" in fault.request_line for fault in faults)
