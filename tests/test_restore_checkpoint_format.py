"""A restore's checkpoint as versions before checkpoints had a version wrote it (no
``version`` key) still serves: a restore run again reads it, and starts from the beginning
as after any finished run, finding its rows unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import frameport as fp
from frameport.local import LocalService


def test_a_restore_checkpoint_written_without_a_version_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, cache = tmp_path / "archive", tmp_path / "cache"
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(cache))
    with LocalService() as origin, origin.client() as source:
        names = pd.DataFrame({"name": ["Ada", "Bob"]})
        source.create_table(fp.ID.unique(), "people", schema=names).insert(names, progress=False)
        source.backup(archive, functions=[], progress=False)

    with LocalService() as service, service.client() as destination:
        assert destination.restore(archive, progress=False).written == 2
        (mark,) = (cache / "restores").glob("*.json")
        state = json.loads(mark.read_text())
        assert state.pop("version") == 1
        mark.write_text(json.dumps(state))  # as an earlier version left it
        again = destination.restore(archive, progress=False)
        assert not again.resumed and (again.written, again.unchanged) == (0, 2)
