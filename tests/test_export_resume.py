"""Resumable Parquet export: killed with SIGKILL at random points and resumed, it writes the
file an uninterrupted export writes; a changed query refuses to resume; every export reports."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from frameport import FrameportError, ResumeError, Table
from frameport._demo import sample_people
from frameport.cli import main
from frameport.local import LocalService
from tables_support import load, new_id

PAGE = 100
FRAGILE_FAULTS = "0.05:2"  # fails part-way, after at least one segment


EXPORT = """
import os, sys
from frameport import Client
client = Client(os.environ["EXPORT_ENDPOINT"], os.environ["EXPORT_PROJECT"],
                key=os.environ["EXPORT_KEY"])
query = client.table(sys.argv[1], sys.argv[2]).query("age >= 30")
print("ready", flush=True)
query.to_parquet(sys.argv[3], resume=True, progress=False, page_size=int(sys.argv[4]))
"""


@pytest.fixture(scope="module")
def people(service: LocalService) -> Iterator[Table]:
    with service.client() as client:
        table, _ = load(client, new_id("resume"), sample_people(8000, seed=15))
        yield table


def _start_export(service: LocalService, table: Table, target: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "EXPORT_ENDPOINT": service.endpoint,
           "EXPORT_PROJECT": service.project, "EXPORT_KEY": service.key}  # fmt: skip
    command = [sys.executable, "-c", EXPORT, table.database_id, table.id, str(target), str(PAGE)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    return process


def _checkpoint(target: Path) -> dict[str, object] | None:
    path = target.with_name(f".{target.name}.resume") / "checkpoint.json"
    return json.loads(path.read_text()) if path.exists() else None


@pytest.mark.slow
def test_an_export_killed_at_random_points_resumes_to_the_uninterrupted_file(
    service: LocalService, people: Table, tmp_path: Path
) -> None:
    query = people.query("age >= 30")
    expected_path = tmp_path / "whole.parquet"
    finished = _start_export(service, people, expected_path)
    assert finished.wait(timeout=120) == 0, finished.stderr.read() if finished.stderr else ""

    # Each run is killed at a random point after a randomly chosen segment completed: while
    # a segment is read or written, while the checkpoint is replaced, or while joining.
    target = tmp_path / "resumed.parquet"
    chance = random.Random(15)
    interrupted = []  # (segments done, segments) found after each kill
    for _ in range(3):
        process = _start_export(service, people, target)
        before = _checkpoint(target)
        done = before["done"] if before is not None else 0
        assert isinstance(done, int)
        wanted = done + chance.randint(1, 3)
        while process.poll() is None:
            checkpoint = _checkpoint(target)
            reached = checkpoint["done"] if checkpoint is not None else 0
            if isinstance(reached, int) and reached >= wanted:
                time.sleep(chance.uniform(0.0, 0.05))
                break
            time.sleep(0.002)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        checkpoint = _checkpoint(target)
        assert checkpoint is not None and isinstance(checkpoint["segments"], list)
        done_now = checkpoint["done"]
        assert isinstance(done_now, int)
        interrupted.append((done_now, len(checkpoint["segments"])))
    assert all(0 < done < total for done, total in interrupted), interrupted

    report = query.to_parquet(target, resume=True, progress=False, page_size=PAGE)
    assert report.ok and report.resumed
    written, expected = pq.read_table(target), pq.read_table(expected_path)
    assert written.schema.equals(expected.schema)
    assert written.equals(expected)
    assert written.equals(query.to_arrow(progress=False))
    assert report.rows == written.num_rows
    assert sorted(path.name for path in tmp_path.iterdir()) == ["resumed.parquet", "whole.parquet"]


@pytest.mark.parametrize("earlier_version", [False, True])
def test_a_failed_export_resumes_after_its_last_complete_segment(
    tmp_path: Path, earlier_version: bool
) -> None:
    # The same data served calmly, then with faults (a fixed seed and a serial export make
    # the faults fall in the same places every run), then calmly again.
    data = tmp_path / "service"
    with LocalService(data_dir=data) as calm, calm.client() as patient:
        table, _ = load(patient, new_id("resume"), sample_people(4000, seed=14))
        location = (table.database_id, table.id)
        expected = table.to_parquet(tmp_path / "whole.parquet", progress=False, page_size=PAGE)
    target = tmp_path / "out.parquet"
    with (
        LocalService(data_dir=data, faults=FRAGILE_FAULTS) as faulty,
        faulty.client(retries=0) as fragile,
        pytest.raises(FrameportError),
    ):
        fragile.table(*location).to_parquet(
            target, resume=True, progress=False, page_size=PAGE, parallel=1
        )
    checkpoint = _checkpoint(target)
    assert checkpoint is not None and not target.exists()
    done, segments, pages = checkpoint["done"], checkpoint["segments"], checkpoint["pages"]
    assert isinstance(done, int) and isinstance(segments, list)
    assert 0 < done < len(segments)
    assert isinstance(pages, list)
    folder = target.with_name(f".{target.name}.resume")
    segment_files = sorted(folder.glob("segment-*"))
    assert [path.suffix for path in segment_files] == [".arrow"] * done
    if earlier_version:  # whose segments were Parquet files
        for path in segment_files:
            pq.write_table(pa.ipc.open_file(str(path)).read_all(), path.with_suffix(".parquet"))
            path.unlink()
    with LocalService(data_dir=data) as calm, calm.client() as patient:
        table = patient.table(*location)
        table.insert(sample_people(7, seed=19), progress=False)  # after the bound
        report = table.to_parquet(target, resume=True, progress=False, page_size=PAGE)
    assert report.resumed and report.ok and report.rows_left == 7
    assert report.resumed_after == (segments[done][0] if done else None)
    assert sum(pages) + report.pages == expected.pages  # no page read twice
    assert pq.read_table(target).equals(pq.read_table(tmp_path / "whole.parquet"))


def test_an_export_stopped_before_its_first_segment_resumes_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed while its first segment is read (each page takes 0.2 s to answer), the export
    leaves a checkpoint with no segment done; the command run again finishes it and says it
    resumed from the start."""
    data = tmp_path / "service"
    with LocalService(data_dir=data) as calm, calm.client() as client:
        table, _ = load(client, new_id("resume"), sample_people(1000, seed=16))
        whole = table.query("age >= 30").to_arrow(progress=False)
        sequence = table.query("age >= 30").to_arrow(progress=False, system=["sequence"])
        upper = sequence.column("$sequence")[-1].as_py()
    target = tmp_path / "out.parquet"
    with LocalService(data_dir=data, latency=200) as slow:
        process = _start_export(slow, table, target)
        while process.poll() is None and _checkpoint(target) is None:
            time.sleep(0.002)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    checkpoint = _checkpoint(target)
    assert checkpoint is not None and checkpoint["done"] == 0 and not target.exists()
    with LocalService(data_dir=data) as calm:
        for name, value in (("ENDPOINT", calm.endpoint), ("PROJECT", calm.project),
                            ("KEY", calm.key)):  # fmt: skip
            monkeypatch.setenv(f"FRAMEPORT_{name}", value)
        command = ["export", table.database_id, table.id, "-o", str(target), "--where",
                   "age >= 30", "--resume"]  # fmt: skip
        assert main(command) == 0
    output = capsys.readouterr()
    assert f"resumed from the start; read up to $sequence {upper:,}" in output.out, output.err
    assert "Traceback" not in output.err
    assert pq.read_table(target).equals(whole)


def test_resume_refuses_a_changed_query(people: Table, tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    folder = target.with_name(f".{target.name}.resume")
    folder.mkdir()
    # A checkpoint as an export of another filter leaves it.
    (folder / "checkpoint.json").write_text(json.dumps({
        "version": 1, "segments": [[0, 800]], "done": 0, "rows": [], "pages": [],
        "in_order": True, "fingerprint": {"table": str(people.location), "requests": [[]],
                                          "columns": []},
    }))  # fmt: skip
    with pytest.raises(ResumeError, match="the filter changed"):
        people.query("age >= 30").to_parquet(target, resume=True, progress=False)
    with pytest.raises(ResumeError, match="sorted by age"):
        people.sort("age").to_parquet(tmp_path / "sorted.parquet", resume=True, progress=False)
    assert not target.exists()


def test_an_export_without_resume_reports_its_checks(people: Table, tmp_path: Path) -> None:
    target = tmp_path / "plain.parquet"
    query = people.query("age < 30")
    report = query.to_parquet(target, progress=False, page_size=PAGE, parallel=1)
    written = pq.read_table(target)
    assert report.rows == written.num_rows and report.ok and not report.resumed
    assert report.pages == -(-written.num_rows // PAGE)  # a serial read: every page full
    ranged = query.to_parquet(tmp_path / "ranged.parquet", progress=False, page_size=PAGE)
    assert ranged.ok and ranged.rows == report.rows and ranged.pages >= report.pages
    assert report.bytes == target.stat().st_size
    sorted_report = people.sort("age").to_parquet(tmp_path / "s.parquet", progress=False)
    assert sorted_report.checks.pages_in_order is None and sorted_report.ok
    assert "rows written = rows listed: yes" in report.summary()


def test_a_resumable_export_of_few_rows_spread_over_the_table_is_one_segment(
    people: Table, tmp_path: Path
) -> None:
    """A filter keeping fewer rows than a segment holds, spread over the whole table (as an
    incremental read's), is read as one segment: pages of its rows, not a request for each
    segment's width of the table (8,000 rows: twenty segments of 4 pages of 100)."""
    query = people.query("age == 41")
    expected = query.to_arrow(progress=False)
    assert 0 < expected.num_rows <= 4 * PAGE
    report = query.to_parquet(tmp_path / "few.parquet", resume=True, progress=False, page_size=PAGE)
    assert report.ok and report.rows == expected.num_rows
    assert report.pages <= expected.num_rows // PAGE + 1
    assert pq.read_table(tmp_path / "few.parquet").equals(expected)


def test_a_segment_ending_with_a_full_page_asks_for_no_page_after_it(
    people: Table, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A segment read up ``$sequence`` whose page ends with the segment's last row ends
    there: no request for the page after it (which would come back empty a round trip
    later). Each of the segment's rows is one page here, the last one full."""
    query = people.query("age == 41")
    expected = query.to_arrow(progress=False)
    caplog.set_level(logging.DEBUG, logger="frameport")
    report = query.to_parquet(tmp_path / "full-page.parquet", resume=True, progress=False,
                              page_size=expected.num_rows)  # fmt: skip
    assert report.ok and report.rows == expected.num_rows and report.pages == 1
    asked = [record.getMessage() for record in caplog.records if "/rows" in record.getMessage()]
    assert asked and not [message for message in asked if "cursorAfter" in message]
    assert pq.read_table(tmp_path / "full-page.parquet").equals(expected)
