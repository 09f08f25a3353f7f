"""`frameport ls`, `head`, `count` and `drop` against the local service, and the exit codes
every client command shares: 0 done, 2 bad input, 1 a failed operation, 130 interrupted."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from cutting_proxy import CuttingProxy
from frameport._demo import sample_people
from frameport.cli import main
from frameport.local import LocalService
from tables_support import new_id

PEOPLE = pd.DataFrame(
    {
        "name": ["Ada", "Bo", "Cy"],
        "age": pd.array([36, 17, 52], dtype="Int64"),
        "city": ["Oslo", "Bergen", "Oslo"],
    }
)


@pytest.fixture
def database(service: LocalService) -> str:
    database = new_id("cli")
    with service.client() as client:
        client.create_table(database, "people", schema=PEOPLE).insert(PEOPLE, progress=False)
    return database


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    said = capsys.readouterr()
    return code, said.out, said.err


def test_ls_lists_databases_and_buckets_then_tables_then_columns(
    service: LocalService, credentials: None, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = new_id("cli")
    with service.client() as client:
        client.create_bucket(bucket, "Reports")
    code, out, _ = run(capsys, "ls")
    assert code == 0
    listed_databases, listed_buckets = out.split("buckets:\n")
    assert listed_databases.startswith("databases:\n") and database in listed_databases
    assert bucket in listed_buckets and "Reports" in listed_buckets

    code, out, _ = run(capsys, "ls", database)
    assert code == 0 and out.startswith(f"tables of {database}:\n")
    [row] = [line.split() for line in out.splitlines() if "people" in line]
    assert row[:3] == ["people", "people", "3"]  # ID, name, columns

    code, out, _ = run(capsys, "ls", database, "people")
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert rows["age"][1] == "integer" and rows["age"][-1] == "Int64"
    assert rows["name"][1] == "string" and rows["name"][-1] == "str"


def test_head_and_count(
    credentials: None, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "head", database, "people", "-n", "2", "--columns", "name,age")
    assert code == 0
    assert [line.split()[-2:] for line in out.splitlines()[1:]] == [["Ada", "36"], ["Bo", "17"]]
    code, out, _ = run(capsys, "count", database, "people", "--where", "city == 'Oslo'")
    assert (code, out) == (0, "2\n")
    code, out, _ = run(capsys, "head", database, "people", "--where", "age > 100")
    assert (code, out) == (0, "(no rows)\n")


def test_drop_asks_for_yes_and_says_what_it_deletes(
    service: LocalService, credentials: None, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "drop", database, "people")
    assert code == 2
    assert err.strip() == (
        f"frameport drop: this deletes table {database}/people and its 3 row(s); "
        "run it again with --yes to do it"
    )
    assert run(capsys, "count", database, "people")[:2] == (0, "3\n")  # nothing was deleted
    assert run(capsys, "drop", database, "people", "--yes")[:2] == (
        0,
        f"deleted table {database}/people and its 3 row(s)\n",
    )
    assert run(capsys, "count", database, "people")[0] == 1  # not found: a failed operation

    assert run(capsys, "drop", database)[0] == 2
    assert run(capsys, "drop", database, "--yes")[1] == (
        f"deleted database {database} and its 0 table(s)\n"
    )
    bucket = new_id("cli")
    with service.client() as client:
        client.create_bucket(bucket).upload_bytes(b"x", "x.txt", progress=False)
    assert run(capsys, "drop", "--bucket", bucket, "--yes")[1] == (
        f"deleted bucket {bucket} and its 1 file(s)\n"
    )
    code, _, err = run(capsys, "drop")
    assert code == 2 and "DB TABLE, DB, or --bucket BUCKET" in err


def one_line(err: str, command: str) -> str:
    assert err.startswith(f"frameport {command}: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--where", "age >"], "age >"),  # a filter that does not parse
        (["--where", "agee > 3"], "'agee', which the table does not have; its columns are: age,"),
        (["--columns", "nme"], "unknown column 'nme'; its columns are: age, city, name."),
    ],
)
def test_bad_input_exits_2_and_lists_the_choices(
    credentials: None,
    database: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
) -> None:
    target = str(tmp_path / "x.parquet")
    for command in (["export", database, "people", "-o", target], ["head", database, "people"]):
        code, _, err = run(capsys, *command, *argv, "--no-progress")
        assert code == 2, err
        assert said in one_line(err, command[0])
    assert not Path(target).exists()


def test_a_missing_table_or_database_lists_the_ones_there(
    credentials: None, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "count", database, "peple")
    assert code == 1
    assert one_line(err, "count").rstrip().endswith(f"; the tables of {database} are: people.")
    code, _, err = run(capsys, "ls", "nowhere")
    assert code == 1
    line = one_line(err, "ls")
    assert "; the databases are: " in line and database in line


def test_a_bad_endpoint_is_bad_input(credentials: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "count", "db", "t", "--endpoint", "not-a-url")
    assert code == 2 and "endpoint must be an http(s) URL" in one_line(err, "count")


def test_a_closed_port_fails_after_one_attempt_with_a_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("FRAMEPORT_PROJECT", "demo")
    monkeypatch.setenv("FRAMEPORT_KEY", "k")
    code, _, err = run(capsys, "count", "crm", "people")
    assert code == 1
    line = one_line(err, "count")
    assert "failed after 1 attempt: ConnectError" in line
    assert line.rstrip().endswith(
        f"(the connection was refused)? Start a local one with `frameport serve --port {port}`."
    )


def test_a_wrong_key_says_what_to_check_in_one_sentence(
    credentials: None,
    database: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FRAMEPORT_KEY", "standard_0123456789abcdef")
    code, _, err = run(capsys, "count", database, "people")
    assert code == 1
    line = one_line(err, "count")
    assert ".;" not in line and "standard_0123456789abcdef" not in line
    assert line.rstrip().endswith("the credential came from --key / FRAMEPORT_KEY.")


def test_logout_without_a_session_points_at_frameport_login(
    service: LocalService,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", str(tmp_path / "config"))
    code, _, err = run(capsys, "logout", "--endpoint", service.endpoint, "--project", "demo")
    assert code == 1
    assert one_line(err, "logout").rstrip().endswith("sign in with `frameport login`")


def segments_done(checkpoint: Path) -> int:
    """How many segments the checkpoint in the folder `checkpoint` records as written."""
    try:
        done: int = json.loads((checkpoint / "checkpoint.json").read_text())["done"]
    except (FileNotFoundError, json.JSONDecodeError):
        return 0
    return done


@pytest.mark.slow
def test_ctrl_c_during_a_resumable_export_says_a_rerun_resumes(tmp_path: Path) -> None:
    data = tmp_path / "service"
    rows = 60_000
    with LocalService(data_dir=data) as fast, fast.client() as client:
        client.create_table("crm", "people", schema=sample_people(10)).insert(
            sample_people(rows), progress=False
        )
    target = tmp_path / "people.parquet"
    checkpoint = tmp_path / ".people.parquet.resume"
    # Each page takes a second or more to arrive, so when the first segment is recorded the
    # others still have pages to come; the network is then held (every connection cut, new
    # ones refused) before Ctrl-C, so the export cannot finish first on a busy machine.
    with (
        LocalService(data_dir=data, latency=50, bandwidth=8) as far,
        CuttingProxy(far.endpoint, cut_after=0, cuts=0) as network,
    ):
        env = {
            **os.environ,
            "FRAMEPORT_ENDPOINT": network.endpoint,
            "FRAMEPORT_PROJECT": far.project,
            "FRAMEPORT_KEY": far.key,
            "FRAMEPORT_PROGRESS": "0",
        }
        command = [sys.executable, "-m", "frameport.cli", "export", "crm", "people"]
        command += ["-o", str(target), "--resume"]
        export = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not segments_done(checkpoint) and export.poll() is None:
            assert time.monotonic() < deadline, "the export never completed a segment"
            time.sleep(0.05)
        network.hold()
        export.send_signal(signal.SIGINT)
        _, err = export.communicate(timeout=60)
        network.release()
        assert export.returncode == 130, err
        assert err.strip() == (
            f"frameport export: interrupted; the rows exported so far are kept beside {target}; "
            "run the same command again to resume from them"
        )
        assert checkpoint.exists() and not target.exists()
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "resumed" in again.stdout
    assert pq.read_metadata(target).num_rows == rows
