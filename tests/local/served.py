"""The local service in its own process (`frameport serve`), for tests that kill it or
measure its memory: the process can be SIGKILLed and restarted on the same data directory.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

KEY = "standard_" + "0" * 64
PROJECT = "demo"
_START = "import sys; from frameport.cli import main; sys.exit(main())"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ServedService:
    process: subprocess.Popen[bytes]
    endpoint: str

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1].split("/")[0])

    @property
    def pid(self) -> int:
        return self.process.pid

    def client(self, **options: object) -> httpx.Client:
        headers = {"X-Service-Project": PROJECT, "X-Service-Key": KEY}
        return httpx.Client(base_url=self.endpoint, headers=headers, timeout=120, **options)  # type: ignore[arg-type]

    def wait_dead(self) -> int:
        """The exit status once the process has ended (a fault point ends it by itself)."""
        return self.process.wait(timeout=60)


@contextmanager
def served(
    data_dir: Path,
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    *,
    open_files: int | None = None,
    log: Path | None = None,
    options: Sequence[str] = (),
) -> Iterator[ServedService]:
    """`frameport serve` on `port` (default: a free one) over `data_dir`, killed on exit if
    still running; `open_files` limits its file descriptors, `log` receives its output,
    `options` are further `serve` options."""
    port = port or free_port()
    command = [
        sys.executable, "-c", _START, "serve", "--port", str(port), "--data", str(data_dir),
        "--key", KEY, "--project", PROJECT, "--no-rate-limits", *options,
    ]  # fmt: skip

    def limit_files() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    output = None if log is None else open(log, "wb")  # noqa: SIM115
    process = subprocess.Popen(
        command,
        env={**os.environ, **(env or {})},
        stdout=output or subprocess.DEVNULL,
        stderr=output or subprocess.DEVNULL,
        preexec_fn=limit_files,
    )
    if output is not None:
        output.close()
    service = ServedService(process, f"http://127.0.0.1:{port}/v1")
    try:
        _wait_ready(service)
        yield service
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)


def _wait_ready(service: ServedService) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            raise RuntimeError(f"frameport serve exited with {service.process.returncode}")
        try:
            with service.client() as client:
                client.get("/tablesdb")
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("frameport serve did not answer within 60 s")


def serve_banner(data_dir: Path, *, terminal: bool, key: str | None = None) -> str:
    """What `frameport serve` prints at start (on a terminal when `terminal`), up to its data
    line; the process is killed once that line is printed."""
    command = [
        sys.executable, "-c", _START, "serve", "--port", str(free_port()), "--data", str(data_dir),
    ]  # fmt: skip
    if key is not None:
        command += ["--key", key]
    reader, writer = os.openpty() if terminal else os.pipe()
    process = subprocess.Popen(command, stdout=writer, stderr=subprocess.DEVNULL)
    os.close(writer)
    output = b""
    try:
        while b"data:" not in output:
            block = os.read(reader, 4096)
            if not block:
                break
            output += block
    finally:
        process.kill()
        process.wait(timeout=30)
        os.close(reader)
    return output.decode()
