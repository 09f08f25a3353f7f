"""`frameport export --resume` prints the export's report; `frameport sync` keeps a Delta
table in step and prints what it did."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from delta_support import assert_no_secret
from frameport._demo import sample_people
from frameport.cli import main
from frameport.local import LocalService
from tables_support import load, new_id


@pytest.fixture
def environment(service: LocalService, monkeypatch: pytest.MonkeyPatch) -> LocalService:
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    return service


def test_export_resume_prints_the_report(
    environment: LocalService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with environment.client() as client:
        table, _ = load(client, new_id("cli"), sample_people(600, seed=31))
    target = tmp_path / "out.parquet"
    assert main(["export", table.database_id, table.id, "-o", str(target), "--resume"]) == 0
    output = capsys.readouterr().out
    assert "wrote 600 rows" in output
    assert "$id unique: yes; pages in order: yes; rows written = rows listed: yes" in output
    assert "started from the start" in output
    assert pq.read_table(target).num_rows == 600


def test_sync_writes_then_merges(
    environment: LocalService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with environment.client() as client:
        table, _ = load(client, new_id("cli"), sample_people(400, seed=32))
        target = tmp_path / "delta"
        command = ["sync", table.database_id, table.id, str(target), "--where", "age > 30",
                   "--columns", "name,age", "--lag", "0"]  # fmt: skip
        assert main(command) == 0
        assert "full snapshot" in capsys.readouterr().out
        table.insert(sample_people(3, seed=33).assign(age=50), progress=False)
        assert main([*command, "--deletes", "ignore"]) == 0
        output = capsys.readouterr()
        assert "incremental: 3 inserted" in output.out
        assert environment.key not in output.out + output.err
        expected = table.query("age > 30").to_pandas(progress=False)
    synced = DeltaTable(str(target)).to_pandas()
    assert sorted(synced["$id"]) == sorted(expected["$id"])
    assert list(synced.columns)[-2:] == ["name", "age"]
    assert_no_secret(target, [environment.key])
