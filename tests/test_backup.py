"""Backups, restores and copies of whole projects, between two local services over HTTP: a
restore gives an equal project (schema, indexes, permissions, rows with every `$` field,
files byte for byte, function code), also into a service answering in an older response
format and through an fsspec URL; verify and restore name a missing or altered file; a
restore into a project holding some of the rows follows on_conflict and counts each case;
incremental snapshots store only what changed and each restores on its own."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import frameport as fp
from backup_support import (
    Project,
    assert_same_code,
    assert_same_project,
    make_project,
    people_frame,
    table_rows,
)
from frameport import ArchiveError, BackupReport, Client, ConflictError, Table
from frameport.cli import main
from frameport.local import LocalService


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, Project]]:
    with LocalService() as service, service.client() as client:
        yield client, make_project(client, tmp_path_factory.mktemp("source"))


@pytest.fixture(scope="module")
def archive(source: tuple[Client, Project], tmp_path_factory: pytest.TempPathFactory) -> Path:
    client, _ = source
    target = tmp_path_factory.mktemp("archive") / "crm"
    report = client.backup(target, progress=False)
    assert report.base is None and report.tables == 2 and report.rows == 303
    assert report.files == 3 and report.files_downloaded == 3
    return target


@pytest.fixture
def destination() -> Iterator[Client]:
    with LocalService() as service, service.client() as client:
        yield client


def test_a_restore_into_another_service_gives_an_equal_project(
    source: tuple[Client, Project], archive: Path, destination: Client, tmp_path: Path
) -> None:
    client, project = source
    report = destination.restore(archive, progress=False)
    assert report.written == 303 and report.skipped == report.replaced == 0
    assert report.files_uploaded == 3 and not report.rejected
    assert_same_project(client, destination, project)
    assert_same_code(client, destination, project.function, tmp_path)
    rows = table_rows(destination, project.database, "people")
    assert {"$id", "$createdAt", "$updatedAt", "$permissions"} <= set(rows.columns)


def test_a_restore_into_a_service_answering_an_older_format_through_a_url_is_equal(
    source: tuple[Client, Project], tmp_path: Path
) -> None:
    client, project = source
    url = f"memory://backups/{fp.ID.unique()}"
    client.backup(url, progress=False)
    assert fp.verify(url).ok
    with LocalService() as service:
        with Client(service.endpoint, service.project, key=service.key,
                    response_format="1.8.0") as older:  # fmt: skip
            report = older.restore(url, progress=False)
            assert report.written == 303
            listed = older._request_json("GET", f"/tablesdb/{project.database}/tables/notes/rows")[
                "rows"
            ]
            assert isinstance(listed[0]["$sequence"], int)  # the older format, indeed
        with service.client() as newer:
            assert_same_project(client, newer, project)


def test_the_manifest_records_the_service_the_bounds_and_the_hashes(
    source: tuple[Client, Project], archive: Path
) -> None:
    (snapshot,) = (path.name for path in (archive / "snapshots").iterdir())
    manifest = json.loads((archive / "snapshots" / snapshot / "manifest.json").read_text())
    assert manifest["format"] == 1 and manifest["service"]["version"] == "1.9.6"
    assert manifest["service"]["response_format"] == "1.9.5"
    people = next(t for t in manifest["databases"][0]["tables"] if t["record"]["$id"] == "people")
    assert people["rows"] == 300 and people["bound"] >= 300 and len(people["content_hash"]) == 64
    part = people["layers"][0]["rows"]
    assert pq.ParquetFile(archive / part["path"]).metadata.num_rows == 300
    assert manifest["files"][part["path"]]["bytes"] == (archive / part["path"]).stat().st_size
    written = pq.read_table(archive / part["path"])
    assert {"$id", "$sequence", "$createdAt", "$updatedAt", "$permissions"} <= set(
        written.column_names
    )


def test_verify_and_restore_name_an_altered_parquet_file_and_a_missing_file(
    source: tuple[Client, Project], tmp_path: Path, destination: Client
) -> None:
    client, _ = source
    target = tmp_path / "damaged"
    client.backup(target, progress=False)
    (rows,) = target.glob("snapshots/*/tables/*/people/rows.parquet")
    data = bytearray(rows.read_bytes())
    data[len(data) // 2] ^= 0xFF
    rows.write_bytes(bytes(data))
    (picture,) = target.glob("files/*/picture/*")
    picture.unlink()
    altered = str(rows.relative_to(target))
    missing = str(picture.relative_to(target))

    report = fp.verify(target)
    assert not report.ok
    assert report.altered == [altered] and report.missing == [missing]
    assert main(["verify", str(target)]) == 1

    with pytest.raises(ArchiveError) as refused:
        destination.restore(target, progress=False)
    assert refused.value.problems == [f"{missing}: missing", f"{altered}: altered"]
    assert altered in str(refused.value) and missing in str(refused.value)
    assert destination.databases().empty and destination.buckets().empty  # nothing written


def test_a_restore_into_a_project_holding_some_rows_follows_on_conflict(
    source: tuple[Client, Project], archive: Path, tmp_path: Path
) -> None:
    client, project = source
    original = table_rows(client, project.database, "notes")
    for rule, expected_text in (("skip", "changed"), ("replace", "one")):
        with LocalService() as service, service.client() as other:
            notes = other.create_table(project.database, "notes", schema={"text": "string(200)"})
            first_id = original["$id"].iloc[0]
            notes.insert(pd.DataFrame({"$id": [first_id, "extra"], "text": ["changed", "x"]}),
                         progress=False)  # fmt: skip
            plan = other.restore(archive, dry_run=True)
            assert any("notes: exists" in line and "1 differ" in line for line in plan.plan)
            assert other.table(project.database, "notes").count() == 2  # a dry run writes nothing
            if rule == "skip":
                with pytest.raises(ConflictError, match="already exist"):
                    other.restore(archive, progress=False)  # fail: the default
            report = other.restore(archive, on_conflict=rule, progress=False)
            outcome = next(t for t in report.tables if t.table.endswith("/notes"))
            assert outcome.rows == 3
            assert (outcome.written, outcome.skipped, outcome.replaced) == (
                (2, 1, 0) if rule == "skip" else (2, 0, 1)
            )
            kept = other.table(project.database, "notes").to_pandas(progress=False)
            assert kept.set_index("$id").loc[first_id, "text"] == expected_text
            assert len(kept) == 4


def test_a_restore_stopped_part_way_does_again_what_the_destination_lost_since(
    source: tuple[Client, Project], archive: Path, destination: Client
) -> None:
    """The steps a stopped restore did are kept for the next run; those whose database or
    table the destination no longer holds (dropped since) are done again, not skipped."""
    client, project = source
    notes = destination.create_table(project.database, "notes", schema={"text": "string(200)"})
    first_id = table_rows(client, project.database, "notes")["$id"].iloc[0]
    notes.insert(pd.DataFrame({"$id": [first_id], "text": ["taken"]}), progress=False)
    with pytest.raises(ConflictError, match="already exist"):
        destination.restore(archive, progress=False)  # stops at notes, the database done
    destination.drop_database(project.database)
    report = destination.restore(archive, progress=False)
    assert not report.resumed and report.written == 303
    assert_same_project(client, destination, project)


def test_the_report_lists_each_row_the_destination_rejects_and_restores_the_rest(
    source: tuple[Client, Project], archive: Path, destination: Client
) -> None:
    client, project = source
    destination.restore(archive, progress=False)
    people = destination.table(project.database, "people")
    taken = people.where(fp.col("name") == "person 5").to_pandas(progress=False)["$id"].iloc[0]
    rows_path = f"/tablesdb/{project.database}/tables/people/rows"
    destination._request("DELETE", f"{rows_path}/{taken}")
    people.insert(pd.DataFrame({"$id": ["clash"], "name": ["person 5"]}), progress=False)

    report = destination.restore(archive, on_conflict="skip", progress=False)
    ((item, reason),) = report.rejected
    assert item == f"row {project.database}/people/{taken}"
    assert "unique columns already exist" in reason
    outcome = next(t for t in report.tables if t.table.endswith("/people"))
    assert (outcome.written, outcome.skipped, outcome.unchanged) == (0, 0, 299)
    assert f"rejected row {project.database}/people/{taken}" in report.summary()
    restored = set(table_rows(destination, project.database, "people")["$id"])
    assert set(table_rows(client, project.database, "people")["$id"]) - restored == {taken}
    assert people.count() == 300


def test_an_incremental_backup_stores_what_changed_and_each_snapshot_restores_alone(
    tmp_path: Path,
) -> None:
    with LocalService() as service, service.client() as client:
        project = make_project(client, tmp_path, rows=500)
        target = tmp_path / "archive"
        # The watermark is the `Date` of an answer, whole seconds rounded down, by the
        # service's clock: two seconds on, the rows made are older.
        service.advance_clock(2.1)
        first = client.backup(target, progress=False)
        with LocalService() as service_1, service_1.client() as at_first:
            at_first.restore(target, progress=False)
            assert_same_project(client, at_first, project)

            people = client.table(project.database, "people")
            rows = people.to_pandas(progress=False)
            changed = rows.iloc[:5][["$id", "name"]].assign(name=lambda f: f["name"] + "!")
            people.upsert(changed, progress=False)
            for row_id in rows["$id"].iloc[10:13]:
                client._request(
                    "DELETE", f"/tablesdb/{project.database}/tables/people/rows/{row_id}"
                )
            people.insert(people_frame(4, seed=9).assign(name=[f"new {i}" for i in range(4)]),
                          progress=False)  # fmt: skip
            bucket = client.bucket(project.bucket)
            bucket.upload_bytes(b"added one", "added-1.txt", file_id="added1")
            bucket.upload_bytes(b"added two", "added-2.txt", file_id="added2")

            second = client.backup(target, progress=False, lag=0)
            assert second.base == first.snapshot
            assert second.rows_read < 20 and second.files_downloaded == 2
            assert second.rows == 503 - 3 + 4
            assert fp.verify(target).ok
            with LocalService() as service_2, service_2.client() as at_second:
                at_second.restore(target, progress=False)
                assert_same_project(client, at_second, project)
            with LocalService() as service_3, service_3.client() as again:
                again.restore(target, snapshot=first.snapshot, progress=False)
                assert_same_project(at_first, again, project)


def _backed_up_twice(
    service: LocalService, client: Client, tmp_path: Path
) -> tuple[Project, Path, Table, pd.DataFrame, BackupReport]:
    """A project of 200 people backed up, then again after one row changed: the project, the
    archive, its people table, their rows before (every ``$`` field) and the second
    backup's report."""
    project = make_project(client, tmp_path, rows=200)
    target = tmp_path / "archive"
    service.advance_clock(2.1)  # the rows made are older than the watermark (see above)
    client.backup(target, progress=False)
    people = client.table(project.database, "people")
    rows = people.to_pandas(system=True, progress=False)
    people.upsert(pd.DataFrame({"$id": [rows["$id"].iloc[0]], "name": ["changed"]}),
                  progress=False)  # fmt: skip
    return project, target, people, rows, client.backup(target, progress=False, lag=0)


def _as_an_earlier_version_wrote(target: Path, snapshot: str) -> None:
    """Take out of `snapshot` the ``held`` files (the ``$sequence``s each table holds), which
    earlier versions of the archive did not write."""
    manifest_path = target / "snapshots" / snapshot / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for database in manifest["databases"]:
        for table in database["tables"]:
            held = table["layers"][-1].pop("held", None)
            if held is None:  # a full layer
                continue
            del manifest["files"][held["path"]]
            (target / held["path"]).unlink()
            done = target / Path(held["path"]).parent / "layer.json"
            layer = json.loads(done.read_text())
            del layer["layer"]["held"]
            done.write_text(json.dumps(layer))
    manifest_path.write_text(json.dumps(manifest))
    (manifest_path.parent / "hashes.json").unlink()  # nor the hashes of manifest and plan


@pytest.mark.parametrize("earlier_version", [False, True], ids=["held", "earlier-archive"])
def test_an_incremental_backup_keeps_a_row_made_again_under_its_id(
    tmp_path: Path, earlier_version: bool
) -> None:
    """A row deleted and made again under its ``$id`` between two incremental snapshots is
    held once (its old ``$sequence`` is gone, its ``$id`` is not) beside rows deleted
    outright; also after an incremental snapshot an earlier version wrote (no ``held``
    files: its layers are read back)."""
    with LocalService() as service, service.client() as client:
        project, target, people, rows, second = _backed_up_twice(service, client, tmp_path)
        row_ids = rows["$id"]
        assert second.rows_read == 1
        if earlier_version:
            _as_an_earlier_version_wrote(target, second.snapshot)
            assert fp.verify(target).ok
        made_again = str(row_ids.iloc[40])
        for row_id in [made_again, *row_ids.iloc[[5, 120, 121]]]:
            client._request("DELETE", f"/tablesdb/{project.database}/tables/people/rows/{row_id}")
        again = people_frame(1, seed=4).assign(**{"$id": [made_again], "name": ["made again"]})
        people.insert(again, progress=False)

        third = client.backup(target, progress=False, lag=0)
        assert third.base == second.snapshot
        assert third.rows == 203 - 3
        assert fp.verify(target).ok
        gone = pq.read_table(target / "snapshots" / third.snapshot / "tables" / project.database
                             / "people" / "gone.parquet").column("$id")  # fmt: skip
        assert sorted(map(str, gone.to_pylist())) == sorted(row_ids.iloc[[5, 120, 121]])
        with LocalService() as other, other.client() as restored:
            restored.restore(target, progress=False)
            assert_same_project(client, restored, project)


def _without_held_sequence(target: Path, snapshot: str, sequence: int) -> None:
    """Take `sequence` out of the ``held`` file of each incremental table of `snapshot`, as if
    the row there had been committed, at a ``$sequence`` below the last the snapshot held,
    only after the snapshot was read (a service that numbers rows as they are begun does)."""
    manifest_path = target / "snapshots" / snapshot / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for database in manifest["databases"]:
        for table in database["tables"]:
            held = table["layers"][-1].get("held")
            if held is None:
                continue
            path = target / held["path"]
            sequences = pq.read_table(path).column("$sequence").combine_chunks()
            kept = sequences.filter(pc.not_equal(sequences, pa.scalar(sequence, pa.int64())))
            if len(kept) == len(sequences):
                continue
            pq.write_table(pa.table({"$sequence": kept}), path)
            entry = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                     "bytes": path.stat().st_size, "rows": len(kept)}  # fmt: skip
            held.update(entry)
            manifest["files"][held["path"]].update(sha256=entry["sha256"], bytes=entry["bytes"])
            done = path.parent / "layer.json"
            layer = json.loads(done.read_text())
            layer["layer"]["held"].update(entry)
            done.write_text(json.dumps(layer))
    manifest_path.write_text(json.dumps(manifest))
    (manifest_path.parent / "hashes.json").unlink()  # the manifest's own hash no longer holds


def test_an_incremental_backup_finds_a_row_gone_beside_a_row_the_last_snapshot_did_not_hold(
    tmp_path: Path,
) -> None:
    """A changed row at a ``$sequence`` below the last one the earlier snapshot held, which
    that snapshot did not hold, while another row is deleted: the service then has as many
    rows up to that ``$sequence`` as the snapshot held, and the deleted row is still found
    gone."""
    with LocalService() as service, service.client() as client:
        project, target, people, rows, second = _backed_up_twice(service, client, tmp_path)
        late = rows.iloc[60]
        _without_held_sequence(target, second.snapshot, int(late["$sequence"]))
        assert fp.verify(target).ok

        people.upsert(pd.DataFrame({"$id": [late["$id"]], "name": ["committed late"]}),
                      progress=False)  # fmt: skip
        deleted = str(rows["$id"].iloc[90])
        client._request("DELETE", f"/tablesdb/{project.database}/tables/people/rows/{deleted}")
        third = client.backup(target, progress=False, lag=0)
        assert third.rows == 200 + 3 - 1  # the other table's 3 rows, less the deleted one
        gone = pq.read_table(target / "snapshots" / third.snapshot / "tables" / project.database
                             / "people" / "gone.parquet").column("$id")  # fmt: skip
        assert gone.to_pylist() == [deleted]
        with LocalService() as other, other.client() as restored:
            restored.restore(target, progress=False)
            assert_same_project(client, restored, project)


def test_an_incremental_backup_of_more_changed_rows_than_a_segment_holds(tmp_path: Path) -> None:
    """Changed rows past a resumable export's segment (four pages, 20,000 rows) are read in
    segments from the table's start to its last row, and restore equal."""
    with LocalService() as service, service.client() as client:
        project = make_project(client, tmp_path, rows=20)
        target = tmp_path / "archive"
        service.advance_clock(2.1)  # the rows made are older than the watermark (see above)
        client.backup(target, progress=False)
        added = people_frame(20_001, seed=7).assign(name=lambda f: "added " + f["name"])
        client.table(project.database, "people").insert(added, progress=False)
        second = client.backup(target, progress=False, lag=0)
        assert second.rows_read == 20_001 and second.rows == 20 + 3 + 20_001
        with LocalService() as other, other.client() as restored:
            restored.restore(target, progress=False)
            assert_same_project(client, restored, project)


def test_a_restore_far_away_writes_more_than_two_requests_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The restore's writes tell the concurrency controller their CPU, as an insert's do, so
    against a distant service it sends more at once than the two it starts with."""
    with LocalService() as service, service.client() as client:
        table = client.create_table(fp.ID.unique(), "people", schema=people_frame(1))
        table.insert(people_frame(4_000), progress=False)
        client.backup(tmp_path / "archive", buckets=[], functions=[], progress=False)
    with (
        LocalService(latency=30) as far,
        far.client() as restored,
        caplog.at_level(logging.DEBUG, logger="frameport"),
    ):
        report = restored.restore(tmp_path / "archive", progress=False)
    assert report.written == 4_000
    logged = [vars(record) for record in caplog.records]
    writes = [
        (fields["created"] - fields["elapsed"], fields["created"])
        for fields in logged
        if fields.get("http_method") in ("POST", "PUT") and "/rows" in fields["http_path"]
    ]
    assert len(writes) >= 40
    events = sorted([(start, 1) for start, _ in writes] + [(end, -1) for _, end in writes])
    in_flight = most = 0
    for _, change in events:
        in_flight += change
        most = max(most, in_flight)
    assert most > 2


def test_a_copy_streams_a_project_into_another(
    source: tuple[Client, Project], destination: Client
) -> None:
    client, project = source
    report = fp.copy(client, destination, on_conflict="skip", progress=False)
    assert report.written == 303 and report.files_uploaded == 3
    assert_same_project(client, destination, project)
    again = fp.copy(client, destination, on_conflict="skip", progress=False)
    assert again.unchanged == 303 and again.written == again.skipped == 0
    assert again.files_unchanged == 3 and again.files_skipped == 0


def test_bad_choices_are_refused_before_anything_is_written(
    source: tuple[Client, Project], archive: Path, destination: Client, tmp_path: Path
) -> None:
    client, _ = source
    with pytest.raises(ValueError, match="on_conflict must be one of"):
        destination.restore(archive, on_conflict="overwrite")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no database 'nope'"):
        client.backup(tmp_path / "x", databases=["nope"], progress=False)
    with pytest.raises(ArchiveError, match="no complete snapshot"):
        destination.restore(tmp_path / "empty", progress=False)
    with pytest.raises(ArchiveError, match="no complete snapshot 'nope'"):
        destination.restore(archive, snapshot="nope", progress=False)
    assert destination.databases().empty


def test_dry_runs_return_their_plan_and_print_nothing_while_the_command_line_prints_it(
    source: tuple[Client, Project],
    archive: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, project = source
    with LocalService() as service, service.client() as destination:
        restored = destination.restore(archive, dry_run=True)
        copied = fp.copy(client, destination, dry_run=True, progress=False)
        assert capsys.readouterr().out == ""
        for report in (restored, copied):
            assert report.dry_run and any(f"database {project.database}: create" in line
                                          for line in report.plan)  # fmt: skip
        assert destination.databases().empty

        monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
        monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
        monkeypatch.setenv("FRAMEPORT_KEY", service.key)
        monkeypatch.delenv("FRAMEPORT_JWT", raising=False)
        assert main(["restore", str(archive), "--dry-run", "--no-progress"]) == 0
        assert capsys.readouterr().out == restored.summary() + "\n"
