"""`frameport serve` in a subprocess of its own, as the benchmarks start it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

KEY = "standard_benchmark"
PROJECT = "bench"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def headers(key: str = KEY, project: str = PROJECT) -> dict[str, str]:
    """The headers of a server-side caller with `key`."""
    return {"X-Service-Project": project, "X-Service-Key": key}


@contextmanager
def service_process(
    data: Path | str, extra: Sequence[str] = (), *, key: str = KEY, project: str = PROJECT
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``frameport serve`` on a free port with the data directory `data`, no rate limits and
    the options `extra`; yields its endpoint and process once it answers, and stops it."""
    port = free_port()
    command = [
        sys.executable, "-m", "frameport.cli", "serve", "--port", str(port),
        "--data", str(data), "--project", project, "--key", key, "--no-rate-limits", *extra,
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise SystemExit("frameport serve exited during start-up")
            if time.monotonic() > deadline:
                raise SystemExit("frameport serve did not answer within 60 s")
            try:
                httpx.get(endpoint, timeout=1)  # any answer: the service is up
                break
            except httpx.TransportError:
                time.sleep(0.05)
        yield endpoint, process
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def local_service(
    data: Path | str, extra: Sequence[str] = (), *, key: str = KEY, project: str = PROJECT
) -> Iterator[str]:
    """`service_process`, yielding only the endpoint."""
    with service_process(data, extra, key=key, project=project) as (endpoint, _):
        yield endpoint
