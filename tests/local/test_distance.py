"""A distant service, simulated (`LocalService(latency=, bandwidth=)`, `frameport serve
--latency --bandwidth`): the service's own delays and caps, measured on raw HTTP exchanges.

Lower bounds are what the simulation promises (an answer never comes sooner than its
latency, a body never faster than its bandwidth); the upper bounds are loose, for a busy
machine, and only catch a simulation that waits far more than asked.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import httpx
import pytest
from starlette.responses import PlainTextResponse

from frameport import ID
from frameport.cli import main
from frameport.local import LocalService
from frameport.local._distance import DistanceSimulator, parse_latency

SLACK = 0.005  # the event loop's clock may wake a sleeper this early
LOOSE = 3.0  # seconds a busy machine may add on top


def timed(call: object) -> float:
    started = time.perf_counter()
    call()  # type: ignore[operator]
    return time.perf_counter() - started


@pytest.fixture(scope="module")
def distant() -> Iterator[tuple[LocalService, httpx.Client]]:
    with LocalService(latency=250) as svc:
        headers = {"X-Service-Project": svc.project, "X-Service-Key": svc.key}
        with httpx.Client(base_url=svc.endpoint, headers=headers, timeout=30) as http:
            http.get("/databases")  # the connection is open before anything is timed
            yield svc, http


def test_every_answer_waits_the_latency(distant: tuple[LocalService, httpx.Client]) -> None:
    _, http = distant
    for path in ("/databases", "/storage/buckets", "/users"):
        elapsed = timed(lambda path=path: http.get(path))
        assert 0.25 - SLACK <= elapsed < 0.25 + LOOSE, path


def test_errors_wait_too(distant: tuple[LocalService, httpx.Client]) -> None:
    _, http = distant
    response: list[httpx.Response] = []
    elapsed = timed(lambda: response.append(http.get("/databases/none-such")))
    assert response[0].status_code == 404
    assert elapsed >= 0.25 - SLACK


def test_jitter_spreads_the_delays_within_its_bounds() -> None:
    simulator = DistanceSimulator(PlainTextResponse("ok"), parse_latency("200:50"), seed=3)
    delays = [simulator.delay() for _ in range(500)]
    assert all(0.15 <= delay <= 0.25 for delay in delays)
    assert max(delays) - min(delays) > 0.08  # spread over most of the interval
    steady = DistanceSimulator(PlainTextResponse("ok"), parse_latency(40))
    assert {steady.delay() for _ in range(20)} == {0.04}


def test_bandwidth_caps_answers_and_uploads() -> None:
    size = 384 * 1024
    megabits = 4.0
    seconds = size * 8 / (megabits * 1e6)  # about 0.79 s each way
    data = random.Random(1).randbytes(size)
    with LocalService(bandwidth=megabits) as svc, svc.client() as client:
        bucket = client.create_bucket(ID.unique(), "distance")
        headers = {"X-Service-Project": svc.project, "X-Service-Key": svc.key}
        with httpx.Client(base_url=svc.endpoint, headers=headers, timeout=60) as http:
            created: list[httpx.Response] = []
            upload = timed(
                lambda: created.append(
                    http.post(
                        f"/storage/buckets/{bucket.id}/files",
                        data={"fileId": "paced"},
                        files={"file": ("paced.bin", data, "application/octet-stream")},
                    )
                )
            )
            assert created[0].status_code == 201, created[0].text
            downloaded: list[bytes] = []
            path = f"/storage/buckets/{bucket.id}/files/paced/download"
            download = timed(lambda: downloaded.append(http.get(path).content))
    assert downloaded[0] == data
    assert seconds - SLACK <= upload < seconds + LOOSE
    assert seconds - SLACK <= download < seconds + LOOSE


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--latency", "soon"], "MS:JITTER_MS"),
        (["--latency", "10:20"], "jitter at most the latency"),
        (["--latency", "-5"], ">= 0"),
        (["--bandwidth", "0"], "megabits per second > 0"),
    ],
)
def test_serve_refuses_a_bad_distance(
    arguments: list[str], message: str, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--data", f"{tmp_path}/data", "--port", "1", *arguments]) == 2
    assert message in capsys.readouterr().err


def test_local_service_refuses_a_bad_distance() -> None:
    with pytest.raises(ValueError, match="MS:JITTER_MS"):
        LocalService(latency="far")
    with pytest.raises(ValueError, match="megabits"):
        LocalService(bandwidth=-1)
