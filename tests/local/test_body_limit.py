"""JSON bodies are bounded: a body over the limit gets 413 before it is read whole.

Once, a 68 MB JSON body took the service from 135 MB to 1.3 GB of memory, and it kept 1.26 GB
afterwards. The service runs in its own process here so that its memory can be measured.
"""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest
from callers import assert_error
from served import ServedService, served

from frameport.local.service._state import DEFAULT_MAX_BODY_SIZE as MAX_BODY_BYTES

MIB = 1024 * 1024
BODY_BYTES = 68 * MIB
#: Growth allowed: the interpreter's own noise, far below the body's size.
RSS_SLACK = 8 * MIB


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedService]:
    with served(tmp_path_factory.mktemp("body-limit")) as svc:
        yield svc


def json_body(size: int) -> Iterator[bytes]:
    """A `{"data": "xxx..."}` body of `size` bytes, produced one MiB at a time."""
    head, tail = b'{"rowId": "r", "data": "', b'"}'
    yield head
    left = size - len(head) - len(tail)
    block = b"x" * MIB
    while left > 0:
        yield block[: min(left, MIB)]
        left -= MIB
    yield tail


def rss(service: ServedService) -> int:
    return int(psutil.Process(service.pid).memory_info().rss)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_68_mb_body_is_refused_with_413_and_memory_stays_flat(
    service: ServedService, declared: bool
) -> None:
    headers = {"Content-Type": "application/json"}
    if declared:
        headers["Content-Length"] = str(BODY_BYTES)
    with service.client() as client:
        client.get("/tablesdb")  # warm: the first request imports and allocates
        before = rss(service)
        response = client.post("/tablesdb", content=json_body(BODY_BYTES), headers=headers)
        after = rss(service)
    body = assert_error(response, 413, "general_payload_too_large")
    assert f"{MAX_BODY_BYTES:,}" in body["message"]
    # Without a Content-Length, up to the limit is read before the body is known to be too long.
    allowed = RSS_SLACK if declared else MAX_BODY_BYTES + RSS_SLACK
    assert after - before < allowed, (before, after)


def test_a_body_just_under_the_limit_is_read(service: ServedService) -> None:
    with service.client() as client:
        response = client.post(
            "/tablesdb",
            content=b"".join(json_body(MAX_BODY_BYTES)),
            headers={"Content-Type": "application/json"},
        )
    # Read and parsed: the service answers on the parameters, not on the size.
    assert_error(response, 400, "general_argument_invalid")


def test_an_oversized_form_is_refused_too(service: ServedService) -> None:
    with service.client() as client:
        response = client.post(
            "/tablesdb",
            content=b"name=" + b"x" * (MAX_BODY_BYTES + 1),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    assert_error(response, 413, "general_payload_too_large")
