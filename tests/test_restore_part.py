"""Restores that do what a person means: the rows a project holds as the snapshot holds them
are left alone (counted as unchanged, not rewritten, not conflicts), `on_conflict` decides
for the rows that differ only, part of a snapshot is restored by naming its databases or
tables, a dry run says in its first line what the run would do and where it would stop,
and a refusal's advice names the restore's own options."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import frameport as fp
from frameport import Client, ConflictError
from frameport.cli import main
from frameport.local import LocalService

_SYSTEM = ["$id", "$sequence", "$createdAt", "$updatedAt"]


def _rows(client: Client, database: str, table: str) -> pd.DataFrame:
    rows = client.table(database, table).to_pandas(progress=False, system=True)
    return rows.sort_values("$id").reset_index(drop=True)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Client, str]]:
    """A project with a database of two tables (people, notes) and a bucket with a file."""
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(tmp_path / "cache"))
    with LocalService() as service, service.client() as client:
        database = fp.ID.unique()
        people = pd.DataFrame({"name": [f"person {i}" for i in range(120)], "age": range(120)})
        client.create_table(database, "people", schema=people).insert(people, progress=False)
        notes = pd.DataFrame({"text": ["one", "two", None]})
        client.create_table(database, "notes", schema=notes).insert(notes, progress=False)
        bucket = client.create_bucket("files", "files")
        bucket.upload_bytes(b"a,b\n1,2\n", "small.csv", file_id="small")
        monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
        monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
        monkeypatch.setenv("FRAMEPORT_KEY", service.key)
        monkeypatch.delenv("FRAMEPORT_JWT", raising=False)
        yield client, database


@pytest.fixture
def archive(project: tuple[Client, str], tmp_path: Path) -> tuple[Path, str]:
    """A snapshot of `project`."""
    client, database = project
    client.backup(tmp_path / "crm", functions=[], progress=False)
    return tmp_path / "crm", database


@pytest.fixture
def restored(project: tuple[Client, str], archive: tuple[Path, str]) -> Client:
    """The project backed up into `archive`, as the restores of these tests find it."""
    return project[0]


def test_restoring_after_one_table_was_dropped_writes_it_back_and_rewrites_no_other_row(
    archive: tuple[Path, str], restored: Client
) -> None:
    target, database = archive
    people_before = _rows(restored, database, "people")
    notes_before = _rows(restored, database, "notes")
    restored.drop_table(database, "notes")

    report = restored.restore(target, progress=False)  # the defaults: on_conflict="fail"

    assert (report.written, report.unchanged, report.skipped, report.replaced) == (3, 120, 0, 0)
    assert report.files_unchanged == 1 and report.files_uploaded == 0
    pd.testing.assert_frame_equal(_rows(restored, database, "people"), people_before)
    notes = _rows(restored, database, "notes").drop(columns=["$sequence"])
    pd.testing.assert_frame_equal(notes, notes_before.drop(columns=["$sequence"]))
    assert "120 unchanged" in report.summary()


def test_on_conflict_decides_only_for_the_rows_that_differ(
    archive: tuple[Path, str], restored: Client
) -> None:
    target, database = archive
    people = restored.table(database, "people")
    changed = people.where(fp.col("name") == "person 7").to_pandas(progress=False)["$id"].iloc[0]
    people.where(fp.col("$id") == changed).update(set={"age": 1000})
    before = _rows(restored, database, "people").set_index("$id")

    report = restored.restore(target, on_conflict="replace", progress=False)

    assert (report.replaced, report.unchanged, report.written) == (1, 122, 0)
    after = _rows(restored, database, "people").set_index("$id")
    assert after.loc[changed, "age"] == 7
    others = after.index != changed
    pd.testing.assert_frame_equal(after[others][_SYSTEM[1:]], before[others][_SYSTEM[1:]])


def test_a_single_table_or_database_is_restored_on_its_own(
    archive: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, database = archive
    with LocalService() as service, service.client() as client:
        report = client.restore(target, tables=[f"{database}/notes"], progress=False)
        assert report.written == 3
        assert list(client.tables(database)["$id"]) == ["notes"]
        assert client.buckets().empty  # a part of a snapshot is its tables only

        with pytest.raises(ValueError, match=r"no table 'nope/x'.*choose among"):
            client.restore(target, tables=["nope/x"], progress=False)
        with pytest.raises(ValueError, match='as "database/table"'):
            client.restore(target, tables=["notes"], progress=False)

        monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
        monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
        monkeypatch.setenv("FRAMEPORT_KEY", service.key)
        monkeypatch.delenv("FRAMEPORT_JWT", raising=False)
        command = ["restore", str(target), "--table", f"{database}/people", "--no-progress"]
        assert main(command) == 0
        assert sorted(client.tables(database)["$id"]) == ["notes", "people"]
        assert client.table(database, "people").count() == 120

    with LocalService() as service, service.client() as client:
        whole = client.restore(target, databases=[database], progress=False)
        assert whole.written == 123 and client.buckets().empty


def test_a_dry_run_says_in_one_line_what_the_run_would_do_and_where_it_would_stop(
    archive: tuple[Path, str], restored: Client
) -> None:
    target, database = archive
    restored.drop_table(database, "notes")
    line = restored.restore(target, dry_run=True).summary().splitlines()[0]
    assert line.startswith("dry run: the restore would ")
    assert "write 3 new row(s)" in line and "leave 120 row(s) unchanged" in line
    assert "stop" not in line

    people = restored.table(database, "people")
    people.where(fp.col("name") == "person 7").update(set={"age": 1000})
    line = restored.restore(target, dry_run=True).summary().splitlines()[0]
    assert f"would stop at table {database}/people, where 1 row(s) differ" in line
    assert 'on_conflict="skip"' in line
    line = restored.restore(target, dry_run=True, on_conflict="skip").summary().splitlines()[0]
    assert "keep 1 differing row(s) as they are" in line and "stop" not in line


def test_a_refusal_names_the_restores_own_options(
    archive: tuple[Path, str], restored: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    target, database = archive
    people = restored.table(database, "people")
    people.where(fp.col("name") == "person 7").update(set={"age": 1000})

    with pytest.raises(ConflictError) as refused:
        restored.restore(target, progress=False)
    advice = str(refused.value)
    assert f"table {database}/people" in advice and "differ" in advice
    assert 'on_conflict="skip"' in advice and 'on_conflict="replace"' in advice
    assert "--on-conflict skip" in advice
    assert "upsert" not in advice and "load(" not in advice

    assert main(["restore", str(target), "--no-progress"]) != 0
    assert "--on-conflict skip" in capsys.readouterr().err


def test_a_copy_says_it_copied_and_copies_one_table(
    archive: tuple[Path, str], restored: Client
) -> None:
    with LocalService() as service, service.client() as destination:
        report = fp.copy(restored, destination, progress=False)
        assert report.summary().startswith("copied ")
        again = fp.copy(restored, destination, progress=False)  # the defaults: nothing differs
        assert again.unchanged == 123 and again.written == 0
    _, database = archive
    with LocalService() as service, service.client() as destination:
        one = fp.copy(restored, destination, tables=[f"{database}/notes"], progress=False)
        assert one.written == 3 and list(destination.tables(database)["$id"]) == ["notes"]
