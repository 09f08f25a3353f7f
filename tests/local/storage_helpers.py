"""Helpers for the storage and functions tests: callers, seeded bytes and a chunked uploader.

The uploader is written against the upload rules (service interface, "Chunked uploads"), not
with the frameport client: the tests prove the local service applies the upload rules, so they
speak HTTP themselves.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

# Re-exported for the storage tests.
from callers import PASSWORD as PASSWORD
from callers import assert_error as assert_error
from callers import create_user as create_user
from callers import guest_client as guest_client
from callers import key_client as key_client
from callers import project_headers as project_headers
from callers import session_client as session_client

CHUNK = 5 * 1024 * 1024
MIB = 1024 * 1024


def seeded_bytes(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def create_bucket(client: httpx.Client, bucket_id: str, **settings: Any) -> dict[str, Any]:
    response = client.post(
        "/storage/buckets", json={"bucketId": bucket_id, "name": bucket_id, **settings}
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def chunk_spans(size: int) -> list[tuple[int, int]]:
    """(start, end exclusive) of each 5 MiB chunk of a `size`-byte file."""
    return [(start, min(start + CHUNK, size)) for start in range(0, max(size, 1), CHUNK)]


def send_chunk(
    client: httpx.Client,
    path: str,
    data: bytes,
    span: tuple[int, int],
    *,
    upload_id: str,
    name: str = "data.bin",
    field: str = "file",
    form: Mapping[str, Any] | None = None,
    ranged: bool = True,
) -> httpx.Response:
    """POST one chunk of `data` as the service's own SDKs send it
    (service interface, "Chunked uploads")."""
    start, end = span
    headers = {"X-Service-ID": upload_id}
    if ranged:
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
    fields = {"fileId": upload_id, **(form or {})} if field == "file" else dict(form or {})
    return client.post(path, files={field: (name, data[start:end])}, data=fields, headers=headers)


def upload(
    client: httpx.Client,
    bucket_id: str,
    data: bytes,
    *,
    file_id: str,
    order: str = "forward",
    name: str = "data.bin",
    form: Mapping[str, Any] | None = None,
) -> list[httpx.Response]:
    """Upload `data` in 5 MiB chunks; `order` is forward, reverse, parallel or duplicates.

    `parallel` sends the first chunk, then the rest 8 at a time; `duplicates` sends every chunk
    but the last twice in a row, then the last, then the first once more (to the complete file).
    Returns the responses in the order they were sent.
    """
    spans = chunk_spans(len(data))
    path = f"/storage/buckets/{bucket_id}/files"

    def send(span: tuple[int, int]) -> httpx.Response:
        return send_chunk(client, path, data, span, upload_id=file_id, name=name, form=form)

    if order == "forward":
        return [send(span) for span in spans]
    if order == "reverse":
        return [send(span) for span in reversed(spans)]
    if order == "duplicates":
        doubled = [span for span in spans[:-1] for _ in range(2)]
        return [send(span) for span in [*doubled, spans[-1], spans[0]]]
    if order == "parallel":
        first = send(spans[0])
        with ThreadPoolExecutor(max_workers=8) as pool:
            return [first, *pool.map(send, spans[1:])]
    raise ValueError(f"unknown order {order!r}")


def download(client: httpx.Client, bucket_id: str, file_id: str, **kwargs: Any) -> httpx.Response:
    return client.get(f"/storage/buckets/{bucket_id}/files/{file_id}/download", **kwargs)


def query(method: str, attribute: str = "", values: Sequence[Any] = ()) -> str:
    """One JSON query string."""
    return json.dumps({"method": method, "attribute": attribute, "values": list(values)})
