"""Backups and restores killed with SIGKILL at random points, then run again: a backup goes
on with the snapshot the killed runs began (its report says it resumed), the archive
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


def _kill_while_reading(
    service: LocalService, cache: Path, arguments: list[str], database: str, seed: int
) -> None:
    """Run the command `KILLS` times, each killed once the service has sent it a random share
    (10 to 90 %) of the people table's rows: part-way through, never before it began."""
    chance = random.Random(seed)
    for _ in range(KILLS):
        before = service.rows_served_from(database, "people")
        wanted = before + int(chance.uniform(0.1, 0.9) * ROWS)
        process = _start(service, cache, *arguments)
        while service.rows_served_from(database, "people") < wanted and process.poll() is None:
            time.sleep(0.01)  # polls the service's count of the rows it sent
        assert process.poll() is None, "the backup ended before it was killed"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)


@pytest.mark.slow
def test_a_backup_killed_at_random_points_resumes_to_an_equal_project(
    source: tuple[LocalService, Client, Project], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, client, project = source
    cache = tmp_path / "cache"
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(cache))
    target = tmp_path / "archive"
    _kill_while_reading(service, cache, ["backup", str(target)], project.database, seed=30)
    # Each killed run went on with the first one's snapshot, and so does the last run.
    started = sorted(folder.name for folder in (target / "snapshots").iterdir())
    assert len(started) == 1
    report = client.backup(target, progress=False)
    assert report.resumed and report.snapshot == started[0]
    assert (report.tables, report.rows) == (2, ROWS + 3)
    verified = fp.verify(target)
    assert verified.ok and verified.snapshots == started
    with LocalService() as other, other.client() as restored:
        restore = restored.restore(target, progress=False)
        assert not restore.rejected
        assert_same_project(client, restored, project)


@pytest.mark.slow
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
