"""Backups and restores killed with SIGKILL at random points, then run again: the archive
verifies, and the restored project equals the source (field by field, files byte for
byte)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import frameport as fp
from backup_support import Project, assert_same_project, make_project
from frameport import Client
from frameport.local import LocalService

ROWS = 8_000
KILLS = 3


@pytest.fixture(scope="module")
def source(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalService, Client, Project]]:
    with LocalService() as service, service.client() as client:
        yield service, client, make_project(client, tmp_path_factory.mktemp("src"), rows=ROWS)


def _start(service: LocalService, cache: Path, *arguments: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FRAMEPORT_ENDPOINT": service.endpoint,
           "FRAMEPORT_PROJECT": service.project, "FRAMEPORT_KEY": service.key,
           "FRAMEPORT_CACHE_DIR": str(cache)}  # fmt: skip
    command = [sys.executable, "-m", "frameport.cli", *arguments, "--no-progress"]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _seconds_to_finish(process: subprocess.Popen[bytes]) -> float:
    began = time.monotonic()
    assert process.wait(timeout=300) == 0, process.stderr.read() if process.stderr else b""
    return time.monotonic() - began


def _kill_at_random_moments(
    service: LocalService, cache: Path, arguments: list[str], duration: float, seed: int
) -> int:
    """Run the command `KILLS` times, each killed at a random moment within `duration`
    seconds (the time an uninterrupted run took); how many were still running."""
    chance = random.Random(seed)
    running = 0
    for _ in range(KILLS):
        process = _start(service, cache, *arguments)
        time.sleep(chance.uniform(0.2, 0.9) * duration)
        running += process.poll() is None
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    return running


def test_a_backup_killed_at_random_points_resumes_to_an_equal_project(
    source: tuple[LocalService, Client, Project], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, client, project = source
    cache = tmp_path / "cache"
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(cache))
    duration = _seconds_to_finish(_start(service, cache, "backup", str(tmp_path / "timed")))
    target = tmp_path / "archive"
    killed = _kill_at_random_moments(service, cache, ["backup", str(target)], duration, seed=30)
    assert killed >= 1
    client.backup(target, progress=False)
    assert fp.verify(target).ok
    with LocalService() as other, other.client() as restored:
        report = restored.restore(target, progress=False)
        assert not report.rejected
        assert_same_project(client, restored, project)


def test_a_restore_killed_at_random_points_resumes_to_an_equal_project(
    source: tuple[LocalService, Client, Project], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, client, project = source
    cache = tmp_path / "cache"
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(cache))
    archive = tmp_path / "archive"
    client.backup(archive, progress=False)
    with LocalService() as timed:
        duration = _seconds_to_finish(_start(timed, cache, "restore", str(archive)))
    with LocalService() as other, other.client() as restored:
        arguments = ["restore", str(archive)]
        killed = _kill_at_random_moments(other, cache, arguments, duration, seed=31)
        assert killed >= 1
        report = restored.restore(archive, progress=False)  # on_conflict="fail" throughout
        assert not report.rejected
        assert_same_project(client, restored, project)
