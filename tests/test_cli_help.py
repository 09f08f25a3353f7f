"""The command line explains itself: `--version`, an example at the end of every `--help`,
and `serve --access-log` printing one line per request."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import frameport as fp
from frameport.cli import build_parser, main


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"frameport {fp.__version__}"


def command_names() -> list[str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    return sorted(commands.choices)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", command_names())
def test_every_help_ends_with_an_example_of_that_command(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    example = capsys.readouterr().out.split("\nexample:\n", 1)[1]
    assert f"frameport {command}" in example


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_access_log_prints_one_line_per_request(tmp_path: Path) -> None:
    port = free_port()
    run_cli = "import sys; from frameport.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", run_cli, "serve", "--port", str(port)]
    command += ["--data", str(tmp_path), "--key", "k" * 32, "--access-log"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    assert server.stdout is not None
    try:
        lines = iter(server.stdout.readline, b"")
        next(line for line in lines if b"Uvicorn running" in line)
        headers = {"X-Service-Project": "demo"}
        for path in ("/v1/nowhere", "/v1/account"):
            httpx.get(f"http://127.0.0.1:{port}{path}", headers=headers)
        logged = [next(lines).decode(), next(lines).decode()]
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert '"GET /v1/nowhere HTTP/1.1" 404' in logged[0]
    assert '"GET /v1/account HTTP/1.1" 401' in logged[1]
    assert "k" * 32 not in "".join(logged)
