"""Delta Lake sync over the local service: a synced table equals a fresh export after
inserts, updates, deletes and an added column, under faults and after a killed run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from delta_support import assert_synced
from frameport import Client, ResumeError, RetryPolicy, SchemaChangeError, Table, col
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import load, new_id


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    """The module's own service: a test moves its clock forward (`advance_clock`)."""
    with LocalService() as own:
        yield own


@pytest.fixture
def people(service: LocalService) -> Iterator[tuple[Client, Table, list[str]]]:
    with service.client() as client:
        table, frame = load(client, new_id("sync"), sample_people(1500, seed=21))
        yield client, table, list(frame["$id"])


def _change(client: Client, table: Table, ids: list[str], seed: int) -> None:
    """Update a few rows, insert a few, delete a few."""
    chance = random.Random(seed)
    updated = chance.sample(ids, 20)
    table.upsert(pd.DataFrame({"$id": updated, "name": [f"renamed {seed}"] * 20,
                               "age": pd.array([seed] * 20, dtype="Int64")}),
                 progress=False)  # fmt: skip
    ids.extend(table.insert(sample_people(7, seed=seed), progress=False))
    deleted = chance.sample([i for i in ids if i not in updated], 5)
    table.where(col("$id").isin(deleted)).delete()
    for row_id in deleted:
        ids.remove(row_id)


def test_a_sync_after_changes_equals_a_fresh_export(
    service: LocalService, people: tuple[Client, Table, list[str]], tmp_path: Path
) -> None:
    client, table, ids = people
    target = tmp_path / "people"
    service.advance_clock(2.1)  # the Date header counts whole seconds: the rows are older
    first = table.sync(target)
    assert (first.inserted, first.version, first.full) == (1500, 0, True)
    _change(client, table, ids, seed=1)
    second = table.sync(target, lag=0)
    assert (second.inserted, second.updated, second.deleted) == (7, 20, 5)
    assert not second.full and second.version == 1 and second.rows_read == 27
    assert_synced(target, table, tmp_path)
    # One commit per run, with the watermark and figures in its metadata.
    commit = DeltaTable(str(target)).history(1)[0]
    assert commit["frameport.watermark"] == second.watermark
    assert commit["operation"] == "MERGE"
    # Readable by any Delta reader.
    assert len(pl.read_delta(str(target))) == len(ids)


def test_a_filtered_view_keeps_its_rows_and_ignored_deletes_stay(
    people: tuple[Client, Table, list[str]], tmp_path: Path
) -> None:
    client, table, ids = people
    view = table.query("age >= 40").select("name", "age")
    target = tmp_path / "adults"
    view.sync(target)
    _change(client, table, ids, seed=2)
    report = view.sync(target, deletes="ignore", lag=0)
    assert report.deleted == 0
    kept = set(DeltaTable(str(target)).to_pandas()["$id"])
    assert kept >= set(view.to_pandas(progress=False)["$id"])
    view.sync(target, lag=0)
    assert_synced(target, view, tmp_path)
    with pytest.raises(ResumeError, match="another view"):
        table.query("age >= 41").sync(target)
    write_deltalake(str(tmp_path / "theirs"), pa.table({"$id": ["a"]}))
    with pytest.raises(ResumeError, match="not written by a sync"):
        view.sync(tmp_path / "theirs")


def test_an_added_column_is_added_to_the_delta_table(
    people: tuple[Client, Table, list[str]], tmp_path: Path
) -> None:
    _, table, ids = people
    target = tmp_path / "people"
    table.sync(target)
    table.add_column("team", "string(64)", progress=False)  # returns once it is available
    table.upsert(pd.DataFrame({"$id": ids[:3], "team": ["red", "blue", "red"]}), progress=False)
    report = table.sync(target, lag=0)
    assert report.full
    assert "team" in DeltaTable(str(target)).schema().to_arrow().names
    assert_synced(target, table, tmp_path)


def test_a_changed_column_type_is_refused_naming_both_types(tmp_path: Path) -> None:
    target = tmp_path / "people"
    frame = sample_people(50, seed=22)
    for age in (frame["age"], frame["age"].astype("str")):
        with LocalService() as svc, svc.client() as client:
            table = client.create_table("db", "people", schema=frame.assign(age=age))
            table.insert(frame.assign(age=age), progress=False)
            if age.dtype == "str":
                with pytest.raises(SchemaChangeError, match=r"'age'.*int64.*string") as caught:
                    table.sync(target)
                assert caught.value.column == "age"
            else:
                table.sync(target)
    assert DeltaTable(str(target)).version() == 0


def test_a_sync_under_faults_converges(tmp_path: Path) -> None:
    patient = RetryPolicy(retries=12, backoff=0.05, backoff_max=0.5)
    with LocalService(faults="0.2:23") as faulty, faulty.client(retries=patient) as client:
        table, frame = load(client, new_id("faults"), sample_people(1200, seed=23))
        ids = list(frame["$id"])
        target = tmp_path / "people"
        table.sync(target, page_size=200)
        for seed in (3, 4):
            _change(client, table, ids, seed=seed)
            table.sync(target, lag=0, page_size=200)
        assert faulty.faults
        assert_synced(target, table, tmp_path)


SYNC = """
import os, sys
from frameport import Client
client = Client(os.environ["SYNC_ENDPOINT"], os.environ["SYNC_PROJECT"],
                key=os.environ["SYNC_KEY"])
table = client.table(sys.argv[1], sys.argv[2])
print("ready", flush=True)
table.sync(sys.argv[3], lag=0, page_size=100)
"""


def test_a_killed_sync_leaves_the_previous_version_and_the_next_run_completes(
    service: LocalService, people: tuple[Client, Table, list[str]], tmp_path: Path
) -> None:
    client, table, ids = people
    target = tmp_path / "people"
    table.sync(target)
    env = {**os.environ, "SYNC_ENDPOINT": service.endpoint, "SYNC_PROJECT": service.project,
           "SYNC_KEY": service.key}  # fmt: skip
    command = [sys.executable, "-c", SYNC, table.database_id, table.id, str(target)]
    chance = random.Random(24)
    left = []  # the version each killed run left
    for seed in (5, 6, 7):
        _change(client, table, ids, seed=seed)
        before = DeltaTable(str(target)).version()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE)
        assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        time.sleep(chance.uniform(0.0, 0.3))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        after = DeltaTable(str(target))
        assert after.version() in (before, before + 1)
        left.append(after.version() - before)
        after.to_pyarrow_table()  # readable
    assert 0 in left  # at least one run was killed before its commit
    table.sync(target, lag=0)
    assert_synced(target, table, tmp_path)


def test_the_deletes_scan_reads_only_the_ranges_whose_counts_changed(
    client: Client, tmp_path: Path
) -> None:
    table, frame = load(client, new_id("gone"), sample_people(12_000, seed=25))
    ids = list(frame["$id"])
    view = table.query("age >= 0 or age < 0")  # the rows with an age
    target = tmp_path / "people"
    view.sync(target)
    # three rows of the second range of 4,999 $sequence values
    table.where(col("$id").isin(ids[6000:6003])).delete()
    report = view.sync(target, lag=0)
    assert report.deleted == 3
    assert 0 < report.ids_read < 5000  # one range's IDs, not the view's
    assert_synced(target, view, tmp_path)


def test_deletes_scattered_over_a_large_table_are_all_found(client: Client, tmp_path: Path) -> None:
    """More rows than one cut of the probed ranges: a delete in each of a few distant places,
    and a run of deletes, are each found, and the IDs read are those of the ranges holding
    them."""
    table, frame = load(client, new_id("scattered"), sample_people(48_000, seed=26))
    ids = list(frame["$id"])
    target = tmp_path / "people"
    table.sync(target)
    deleted = [ids[0], ids[17_321], ids[47_999], *ids[30_000:30_040]]
    table.where(col("$id").isin(deleted)).delete()
    report = table.sync(target, lag=0)
    assert report.deleted == len(deleted)
    assert 0 < report.ids_read <= 4 * 5000  # four places, each in a range of 5,000 held rows
    assert_synced(target, table, tmp_path)
    gone = set(deleted)
    assert set(DeltaTable(target).to_pandas()["$id"]) == set(ids) - gone
    unchanged = table.sync(target, lag=0)
    assert (unchanged.deleted, unchanged.ids_read) == (0, 0)
