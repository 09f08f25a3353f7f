"""`system=` on every read: ``$id`` and the table's columns by default, every ``$`` field with
True, none with False, or the ones named; `select` means exactly the columns it names. The
read still uses ``$sequence`` and ``$id`` itself (ranges, cursors, several requests, a
client-side sort) without showing them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow.parquet as pq
import pytest

import frameport as fp
from frameport import Client, Table
from frameport.cli import main
from tables_support import SYSTEM_DTYPES, data_frames, new_id

ALL = list(SYSTEM_DTYPES)
COLUMNS = ["name", "age", "city"]
ROWS = 30


@pytest.fixture(scope="module")
def people(key_client: Client) -> Table:
    frame = pd.DataFrame(
        {
            "name": [f"p{n:02}" for n in range(ROWS)],
            "age": pd.array([20 + n for n in range(ROWS)], dtype="Int64"),
            "city": ["Oslo", "Bergen", "Tromsø"] * (ROWS // 3),
        }
    )
    database = new_id("system")
    key_client.create_table(database, "people", schema=frame).insert(frame, progress=False)
    return key_client.table(database, "people", page_size=4)


@pytest.mark.parametrize(
    ("system", "shown"),
    [
        ("id", ["$id"]),
        (True, ALL),
        (False, []),
        (["updatedAt", "$id"], ["$id", "$updatedAt"]),
        ("permissions", ["$permissions"]),
    ],
)
def test_system_says_which_fields_a_frame_has(
    people: Table, system: bool | str | list[str], shown: list[str]
) -> None:
    frame = people.to_pandas(system=system, progress=False)
    assert list(frame.columns) == [*shown, *COLUMNS]
    assert len(frame) == ROWS
    for name in shown:
        assert str(frame[name].dtype) == SYSTEM_DTYPES[name]


def test_the_default_is_the_row_key_and_the_columns(people: Table) -> None:
    assert list(people.to_pandas(progress=False).columns) == ["$id", *COLUMNS]
    assert people.schema().names == ["$id", *COLUMNS]
    assert people.select("name").to_arrow(progress=False).column_names == ["$id", "name"]


def test_select_means_exactly_the_columns_named(people: Table) -> None:
    chosen = people.select("city", "name")
    assert list(chosen.to_pandas(system=False, progress=False).columns) == ["city", "name"]
    named = people.select("name", "$createdAt").to_pandas(system=False, progress=False)
    assert list(named.columns) == ["$createdAt", "name"]
    assert list(chosen.to_pandas(system=True, progress=False).columns) == [*ALL, "city", "name"]


@pytest.mark.parametrize("parallel", [1, 4])
def test_hidden_fields_still_drive_the_read(people: Table, parallel: int) -> None:
    """Pages of 4 rows, each after the last $id; ranges of $sequence; a text condition the
    client checks again; a sort: all without showing those fields."""
    expected = people.to_pandas(system=True, progress=False)
    every = people.to_pandas(system=False, parallel=parallel, progress=False)
    pd.testing.assert_frame_equal(every, expected[COLUMNS])
    view = people.where((fp.col("age") < 25) | (fp.col("city") == "Bergen"))
    read = view.to_pandas(system=False, parallel=parallel, progress=False)
    kept = expected.query("age < 25 or city == 'Bergen'")
    pd.testing.assert_frame_equal(read, kept[COLUMNS].reset_index(drop=True))
    by_age = view.sort("age", ascending=False).to_pandas(system=False, progress=False)
    kept = kept.sort_values("age", ascending=False)
    pd.testing.assert_frame_equal(by_age, kept[COLUMNS].reset_index(drop=True))


def test_every_read_takes_system(people: Table, key_client: Client) -> None:
    view = people.where(fp.col("age") >= 40).select("name")
    names = ["$id", "$updatedAt", "name"]
    system = ["id", "updatedAt"]
    assert view.to_arrow(system=system, progress=False).column_names == names
    batches = data_frames(view.iter_batches(rows=3, system=system, progress=False))
    assert {tuple(batch.columns) for batch in batches} == {tuple(names)}
    arrow = list(view.iter_batches(arrow=True, system=False, progress=False))
    assert {tuple(batch.schema.names) for batch in arrow} == {("name",)}
    assert view.schema(system=True).names == [*ALL, "name"]
    dask_frame = view.to_dask(partitions=2, system=system).compute()
    assert list(dask_frame.columns) == names and len(dask_frame) == 10
    eager = view.to_polars(system=system)
    assert isinstance(eager, pl.DataFrame) and eager.columns == names
    lazy = view.to_polars(lazy=True, system=False)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().columns == ["name"]
    scan = fp.scan_table(key_client, people.database_id, people.id, system=True)
    assert scan.collect_schema().names() == [*ALL, *COLUMNS]
    assert scan.filter(pl.col("age") >= 40).select("$sequence").collect().height == 10


@pytest.mark.parametrize("resume", [False, True])
def test_an_export_writes_what_system_shows(people: Table, tmp_path: Path, resume: bool) -> None:
    path = tmp_path / "people.parquet"
    report = people.to_parquet(path, system=False, resume=resume, progress=False)
    assert pq.read_schema(path).names == COLUMNS
    assert report.rows == ROWS and report.checks.pages_in_order
    assert report.checks.ids_unique is None and report.ok
    assert "$id unique: not checked (no $id column)" in report.summary()
    report = people.to_parquet(path, resume=resume, progress=False)
    assert pq.read_schema(path).names == ["$id", *COLUMNS]
    assert report.checks.ids_unique and report.ok


def test_a_sync_keeps_every_field(people: Table, tmp_path: Path) -> None:
    pytest.importorskip("deltalake")
    from deltalake import DeltaTable

    people.select("name").sync(tmp_path / "delta", progress=False)
    assert DeltaTable(str(tmp_path / "delta")).schema().to_arrow().names == [*ALL, "name"]


def test_a_system_that_is_not_a_field_is_refused(people: Table) -> None:
    with pytest.raises(ValueError, match=r"id, sequence, createdAt, updatedAt, permissions"):
        people.to_pandas(system="sequnce", progress=False)
    with pytest.raises(ValueError, match=r"system=\['id', 'updatedAt'\]"):
        people.to_pandas(system=[1], progress=False)  # type: ignore[list-item]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    said = capsys.readouterr()
    return code, said.out, said.err


def test_the_command_line_takes_system(
    credentials: None, people: Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = [people.database_id, people.id]
    code, out, _ = run(capsys, "head", *where, "--columns", "name", "--system", "none", "-n", "2")
    assert (code, out.split()) == (0, ["name", "p00", "p01"])
    code, out, _ = run(capsys, "head", *where, "--columns", "name", "--system", "id,createdAt")
    assert code == 0 and out.split()[:3] == ["$id", "$createdAt", "name"]
    output = tmp_path / "all.parquet"
    code, _, _ = run(capsys, "export", *where, "-o", str(output), "--system", "all")
    assert code == 0 and pq.read_schema(output).names == [*ALL, *COLUMNS]
    code, _, _ = run(capsys, "export", *where, "-o", str(output), "--columns", "age")
    assert code == 0 and pq.read_schema(output).names == ["$id", "age"]
    with pytest.raises(SystemExit) as exited:
        main(["head", *where, "--system", "ids"])
    assert exited.value.code == 2
    assert "expected all, none, or names among id, sequence, createdAt" in capsys.readouterr().err
