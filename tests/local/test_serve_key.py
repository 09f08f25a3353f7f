"""`frameport serve`'s API key, through the command in its own process: a generated key is
kept in an owner-only file whose place every start names, never in the output or the log;
`--print-key` shows it on demand; `--key` and FRAMEPORT_KEY use a key without a file."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import httpx
from served import PROJECT, free_port

_START = "import sys; from frameport.cli import main; sys.exit(main())"
KEY_FILE = "api-key"


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FRAMEPORT_KEY"}
    return {**env, **extra}


def _answers(endpoint: str, key: str) -> bool:
    headers = {"X-Service-Project": PROJECT, "X-Service-Key": key}
    try:
        return httpx.get(f"{endpoint}/tablesdb", headers=headers, timeout=10).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def serving(
    data_dir: Path, log: Path, options: Sequence[str] = (), **env: str
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`frameport serve` over `data_dir`, its output and errors redirected to `log`, run under
    umask 0 (a file made without an explicit mode would be world-readable); killed on exit."""
    port = free_port()
    command = [
        sys.executable, "-c", _START, "serve", "--port", str(port), "--data", str(data_dir),
        "--project", PROJECT, "--access-log", *options,
    ]  # fmt: skip
    with open(log, "ab") as output:
        process = subprocess.Popen(
            command,
            env=_environment(**env),
            stdout=output,
            stderr=output,
            preexec_fn=lambda: os.umask(0),
        )
    endpoint = f"http://127.0.0.1:{port}/v1"
    try:
        yield process, endpoint
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"frameport serve exited with {process.returncode}")
        if condition():
            return
        time.sleep(0.05)
    raise RuntimeError("frameport serve was not ready within 60 s")


def print_key(data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", _START, "serve", "--print-key", "--data", str(data_dir)]
    return subprocess.run(
        command, env=_environment(**env), capture_output=True, text=True, timeout=120
    )


def test_a_generated_key_is_kept_owner_only_named_never_shown_and_reused(tmp_path: Path) -> None:
    data, log = tmp_path / "data", tmp_path / "serve.log"
    key_file = data / KEY_FILE
    with serving(data, log) as (process, endpoint):
        wait_for(key_file.exists, process)
        key = key_file.read_text().strip()
        wait_for(lambda: _answers(endpoint, key), process)
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    first_log = log.read_text()
    assert str(key_file) in first_log  # the start names where the key is
    assert "GET /v1/tablesdb" in first_log  # the access log ran, and holds no key either
    assert key not in first_log

    printed = print_key(data)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == key

    with serving(data, log) as (process, endpoint):
        wait_for(lambda: _answers(endpoint, key), process)
        assert key_file.read_text().strip() == key
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    again = log.read_text()
    assert again.count(str(key_file)) >= 2 and key not in again


def test_print_key_before_any_key_says_what_to_do(tmp_path: Path) -> None:
    printed = print_key(tmp_path / "empty")
    assert printed.returncode != 0 and printed.stdout == ""
    assert "frameport serve" in printed.stderr and "--key" in printed.stderr
    assert "Traceback" not in printed.stderr


def test_a_given_key_is_used_and_no_key_file_is_written(tmp_path: Path) -> None:
    given, from_env = "standard_" + "5" * 64, "standard_" + "6" * 64
    for name, options, env in (
        ("flag", ["--key", given], {}),
        ("env", [], {"FRAMEPORT_KEY": from_env}),
    ):
        data, log = tmp_path / name, tmp_path / f"{name}.log"
        key = given if options else from_env
        with serving(data, log, options, **env) as (process, endpoint):
            wait_for(partial(_answers, endpoint, key), process)
        assert not (data / KEY_FILE).exists()
        assert key not in log.read_text()
