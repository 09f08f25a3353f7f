"""A restore killed at its last instant (after its checkpoint said it finished, before it
could say so) run again writes nothing and stops at nothing: what it wrote is there as the
snapshot holds it, so it is unchanged; what the destination lost since is written again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import frameport as fp
from frameport.local import LocalService

# A restore, then SIGKILL the moment it returns: its checkpoint is gone, nothing is printed.
_RESTORE_THEN_KILLED = """
import os, signal, sys
import frameport as fp
fp.Client.from_env().restore(sys.argv[1], progress=False)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _restore_killed_at_its_last_instant(service: LocalService, archive: Path, cache: Path) -> None:
    env = {**os.environ, "FRAMEPORT_ENDPOINT": service.endpoint,
           "FRAMEPORT_PROJECT": service.project, "FRAMEPORT_KEY": service.key,
           "FRAMEPORT_CACHE_DIR": str(cache)}  # fmt: skip
    killed = subprocess.run(
        [sys.executable, "-c", _RESTORE_THEN_KILLED, str(archive)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr


def test_a_restore_killed_at_its_last_instant_run_again_finds_its_rows_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(cache))
    archive = tmp_path / "archive"
    with LocalService() as source_service, source_service.client() as source:
        database = fp.ID.unique()
        people = source.create_table(database, "people", schema={"name": "string(40)"})
        people.insert(pd.DataFrame({"name": ["Ada", "Bob", "Cy"]}), progress=False)
        bucket = source.create_bucket(fp.ID.unique(), "files")
        bucket.upload_bytes(b"hello", "hello.txt", file_id="hello")
        first = source.backup(archive, functions=[], progress=False)
        people.insert(pd.DataFrame({"name": ["Di"]}), progress=False)
        second = source.backup(archive, functions=[], progress=False)

    with LocalService() as service, service.client() as destination:
        _restore_killed_at_its_last_instant(service, archive, cache)
        assert destination.table(database, "people").count() == 4

        again = destination.restore(archive, progress=False)  # on_conflict="fail"
        assert again.snapshot == second.snapshot and not again.resumed
        assert (again.written, again.unchanged, again.files_unchanged) == (0, 4, 1)
        assert not again.created

        # Another snapshot: the rows there as it holds them are left alone.
        older = destination.restore(archive, snapshot=first.snapshot, progress=False)
        assert older.unchanged == 3 and older.skipped == older.written == 0

        # What the destination lost since is restored again, the rest left alone.
        destination.drop_database(database)
        redone = destination.restore(archive, progress=False)
        assert redone.written == 4 and redone.files_uploaded == 0 and redone.files_unchanged == 1

    # Another destination gets the snapshot.
    with LocalService() as other_service, other_service.client() as other:
        elsewhere = other.restore(archive, progress=False)
        assert elsewhere.written == 4
