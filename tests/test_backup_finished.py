"""A restore finishes once: killed at its last instant (after its checkpoint became its mark
that it is done, before it could say so), it says it is done when run again, instead of
starting over and stopping at the first row already there. The mark is the restore's of one
snapshot into one destination."""

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


def test_a_restore_killed_at_its_last_instant_says_it_is_done_when_run_again(
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
        assert again.already_done and again.snapshot == second.snapshot
        assert again.written == 0 and not again.created
        assert "restored into this project already" in again.summary()

        # The mark is of this snapshot: another one is restored (here, the rows there as it
        # holds them are left alone).
        older = destination.restore(archive, snapshot=first.snapshot, on_conflict="skip",
                                    progress=False)  # fmt: skip
        assert not older.already_done and older.unchanged == 3 and older.skipped == 0
        # "skip" and "replace" restore a finished snapshot again.
        assert destination.restore(archive, on_conflict="skip", progress=False).unchanged == 4

        # What the destination lost since is restored again, the rest kept as done.
        destination.drop_database(database)
        redone = destination.restore(archive, progress=False)
        assert not redone.already_done and redone.resumed
        assert redone.written == 4 and redone.files_uploaded == 0
        assert destination.restore(archive, progress=False).already_done

    # The mark is of this destination: another one gets the snapshot.
    with LocalService() as other_service, other_service.client() as other:
        elsewhere = other.restore(archive, progress=False)
        assert not elsewhere.already_done and elsewhere.written == 4
