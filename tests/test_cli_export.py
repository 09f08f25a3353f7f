"""`frameport export`: a table or a filtered view to a Parquet file, credentials from the
environment or the command line."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from frameport._core import _progress
from frameport._demo import sample_people
from frameport.cli import main
from frameport.local import LocalService
from tables_support import load, new_id


@pytest.fixture(scope="module")
def people(service: LocalService) -> tuple[str, str]:
    with service.client() as client:
        table, _ = load(client, new_id("cli"), sample_people(7000, seed=21))
    return table.database_id, table.id


def test_export_with_a_filter_and_columns_from_the_environment(
    service: LocalService,
    people: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    target = tmp_path / "out.parquet"
    where = "age > 30 and city in ['Oslo', 'Bergen']"
    code = main(["export", *people, "-o", str(target), "--where", where, "--columns", "name, age"])
    assert code == 0
    with service.client() as client:
        expected = client.table(*people).query(where).select("name", "age").to_arrow(progress=False)
    written = pq.read_table(target)
    assert written.equals(expected)
    output = capsys.readouterr()
    assert f"wrote {expected.num_rows:,} rows" in output.out
    assert service.key not in output.out + output.err


def test_export_with_credentials_as_options_and_a_progress_bar(
    service: LocalService,
    people: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("FRAMEPORT_ENDPOINT", "FRAMEPORT_PROJECT", "FRAMEPORT_KEY", "FRAMEPORT_PROGRESS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_progress, "DELAY", 0.0)  # as for an export slower than the delay
    target = tmp_path / "all.parquet"
    options = ["--endpoint", service.endpoint, "--project", service.project, "--key", service.key]
    assert main(["export", *people, "-o", str(target), *options]) == 0
    assert pq.read_metadata(target).num_rows == 7000
    assert "rows" in capsys.readouterr().err  # the progress bar


def test_export_failures_are_reported_without_a_traceback(
    service: LocalService,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("FRAMEPORT_ENDPOINT", raising=False)
    assert main(["export", "db", "t", "-o", str(tmp_path / "x.parquet")]) == 2
    options = ["--endpoint", service.endpoint, "--project", service.project, "--key", service.key]
    code = main(["export", "nodb", "nothing", "-o", str(tmp_path / "x.parquet"), *options])
    assert code == 1
    error = capsys.readouterr().err
    assert "frameport export:" in error and "could not be found" in error
    assert service.key not in error
    assert not (tmp_path / "x.parquet").exists()
