"""`frameport` commands given bad input: one line on stderr, a non-zero exit, no traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from frameport import ID
from frameport.cli import main
from frameport.local import LocalService


@pytest.fixture(scope="module")
def table(service: LocalService) -> tuple[str, str]:
    frame = pd.DataFrame({"name": ["Ada", "Bo"], "age": pd.array([36, None], dtype="Int64")})
    database = f"cli-{ID.unique()}"
    with service.client() as client:
        client.create_table(database, "people", schema=frame).insert(frame, progress=False)
    return database, "people"


def one_line_error(capsys: pytest.CaptureFixture[str], command: str) -> str:
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"frameport {command}"), error
    assert "Traceback" not in error and "\n" not in error, error
    return error


def test_export_names_a_wrong_key_and_what_to_check(
    table: tuple[str, str],
    credentials: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = str(tmp_path / "x.parquet")
    monkeypatch.setenv("FRAMEPORT_KEY", "standard_0123456789abcdef")
    assert main(["export", *table, "-o", target, "--no-progress"]) == 1
    error = one_line_error(capsys, "export")
    assert "FRAMEPORT_KEY" in error and "standard_0123456789abcdef" not in error
    monkeypatch.delenv("FRAMEPORT_KEY")
    assert main(["export", *table, "-o", target, "--no-progress"]) == 1
    assert "give an API key with --key" in one_line_error(capsys, "export")
    assert not Path(target).exists()


@pytest.mark.parametrize(
    ("output", "said"),
    [(".", "is a directory"), ("missing-dir/x.parquet", "does not exist")],
)
def test_export_checks_the_output_path_first(
    credentials: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    output: str,
    said: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["export", "db", "t", "-o", output]) == 2
    assert said in one_line_error(capsys, "export")


def test_export_refuses_a_bad_endpoint_and_codec(
    credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(tmp_path / "x.parquet")
    assert main(["export", "db", "t", "-o", target, "--endpoint", "not-a-url"]) == 2
    assert "endpoint must be an http(s) URL" in one_line_error(capsys, "export")
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "db", "t", "-o", target, "--compression", "bogus"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


def test_export_without_compression(
    table: tuple[str, str], credentials: None, tmp_path: Path
) -> None:
    target = tmp_path / "x.parquet"
    code = main(["export", *table, "-o", str(target), "--compression", "none", "--no-progress"])
    assert code == 0
    metadata = pq.read_metadata(target)
    assert metadata.num_rows == 2
    assert metadata.row_group(0).column(0).compression == "UNCOMPRESSED"


def test_serve_says_a_busy_port_and_bad_faults_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["serve", "--port", str(port), "--data", str(tmp_path / "data")])
    assert code == 1
    error = one_line_error(capsys, "serve")
    assert f"127.0.0.1:{port}" in error and "--port" in error
    assert not (tmp_path / "data").exists()  # refused before anything was created
    assert main(["serve", "--faults", "often", "--data", str(tmp_path / "data")]) == 2
    assert "RATE:SEED" in one_line_error(capsys, "serve")
    assert main(["serve", "--project", "bad id!", "--data", str(tmp_path / "data")]) == 2
    assert "not a valid ID" in one_line_error(capsys, "serve")


def test_demo_refuses_a_negative_row_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--rows", "-5"])
    assert exit_info.value.code == 2
    assert "--rows" in capsys.readouterr().err
