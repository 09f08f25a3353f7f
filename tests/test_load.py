"""`Table.load`: any source, checked rows, stable IDs, conflicts, atomic writes, faults, and
changes by filter, all over HTTP against the local service.

pandas is the oracle: every source of the same rows writes the table the pandas frame
writes, and the rows rejected are exactly those whose values break their column's rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import frameport as fp
from frameport import Client, LoadError, RetryPolicy, RowsRejectedError, Table
from frameport.local import LocalService
from tables_support import new_id

COLUMNS = {
    "email": "email",
    "name": "string(20)",
    "age": "integer",
    "score": "float",
    "active": "boolean",
    "born": "datetime",
}


@pytest.fixture(scope="module")
def database(key_client: Client) -> str:
    name = new_id("load")
    key_client.create_database(name)
    return name


def people(rows: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "email": [f"user{i}@example.com" for i in range(rows)],
            "name": [f"name {i}" for i in range(rows)],
            "age": rng.integers(0, 100, rows),
            "score": rng.random(rows).round(3),
            "active": rng.random(rows) > 0.5,
            "born": pd.Timestamp("2000-01-01", tz="UTC")
            + pd.to_timedelta(rng.integers(0, 10_000, rows), unit="D"),
        }
    )


def new_table(client: Client, database: str, columns: dict[str, str] = COLUMNS) -> Table:
    return client.create_table(database, new_id("t"), schema=columns)


def rows_of(table: Table) -> pd.DataFrame:
    """The table's rows by ID, in the columns of `COLUMNS`, as plain Python values."""
    read = table.to_pandas(progress=False).set_index("$id").sort_index()
    return read[[c for c in COLUMNS if c in read.columns]]


def test_every_source_writes_the_table_the_pandas_frame_writes(
    key_client: Client, database: str, tmp_path: Path
) -> None:
    frame = people(450)
    reference = new_table(key_client, database)
    report = reference.load(frame, id_from=["email"], progress=False)
    assert (report.written, len(report.rejected)) == (450, 0)
    expected = rows_of(reference)
    arrow = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(arrow, tmp_path / "people.parquet", row_group_size=100)
    text = frame.assign(born=frame["born"].dt.strftime("%Y-%m-%dT%H:%M:%S.000+00:00"))
    text.to_csv(tmp_path / "people.csv", index=False)
    text.to_json(tmp_path / "people.ndjson", orient="records", lines=True)
    relation = duckdb.connect().from_arrow(arrow)
    sources = {
        "polars": pl.from_pandas(frame),
        "polars lazy": pl.from_pandas(frame).lazy(),
        "pyarrow table": arrow,
        "record batch reader": pa.RecordBatchReader.from_batches(
            arrow.schema, arrow.to_batches(100)
        ),
        "duckdb": relation,
        "parquet": tmp_path / "people.parquet",
        "csv": str(tmp_path / "people.csv"),
        "ndjson": str(tmp_path / "people.ndjson"),
    }
    for name, source in sources.items():
        table = new_table(key_client, database)
        report = table.load(source, id_from=["email"], progress=False)
        assert (report.written, len(report.rejected)) == (450, 0), name
        pd.testing.assert_frame_equal(rows_of(table), expected, obj=name)


def test_a_rerun_skips_what_is_there_and_replace_makes_the_table_the_source(
    key_client: Client, database: str
) -> None:
    table = new_table(key_client, database)
    frame = people(250)
    first = table.load(frame.iloc[:120], id_from=["email"], progress=False)
    again = table.load(frame, id_from=["email"], progress=False)
    assert (first.written, again.written, again.skipped) == (120, 130, 120)
    changed = frame.assign(age=frame["age"] + 1)
    replaced = table.load(changed, id_from=["email"], on_conflict="replace", progress=False)
    assert (replaced.written, replaced.replaced) == (0, 250)
    assert table.count() == 250
    assert sorted(rows_of(table)["age"]) == sorted(changed["age"])
    with pytest.raises(fp.ConflictError, match="on_conflict"):
        table.load(frame.iloc[:5], id_from=["email"], on_conflict="fail", progress=False)


def test_id_from_a_column_uses_its_values_and_rejects_values_that_cannot_be_ids(
    key_client: Client, database: str
) -> None:
    table = new_table(key_client, database)
    frame = people(5).assign(name=["a1", "b.2", "-bad", "has space", "e_5"])
    report = table.load(frame, id_from="name", progress=False)
    assert sorted(table.to_pandas(progress=False)["$id"]) == ["a1", "b.2", "e_5"]
    assert report.rejected[["row", "column", "rule"]].values.tolist() == [
        [2, "name", "id"],
        [3, "name", "id"],
    ]


def test_dry_run_checks_and_writes_nothing(key_client: Client, database: str) -> None:
    table = new_table(key_client, database)
    frame = people(30).astype({"age": object})
    frame.loc[7, "age"] = "seven"
    report = table.load(frame, dry_run=True, progress=False)
    assert (report.dry_run, report.written, report.rejected["row"].tolist()) == (True, 29, [7])
    assert table.count() == 0


def test_a_source_that_does_not_fit_the_table_is_refused_before_anything_is_written(
    key_client: Client, database: str
) -> None:
    table = new_table(key_client, database, {**COLUMNS, "level": "integer"})
    table.add_column("code", "string", required=True)
    with pytest.raises(LoadError, match="requires the column 'code'"):
        table.load(people(3), progress=False)
    with pytest.raises(LoadError, match="no column 'extra'"):
        table.load(people(3).assign(code="x", extra=1), progress=False)
    with pytest.raises(LoadError, match="cannot load from a int"):
        table.load(3, progress=False)
    assert table.count() == 0


# ---------------------------------------------------------------------------------------------
# The rejected rows are exactly the rows that break a column's rule

RULED = {
    "size": "string(5)",
    "level": "integer",
    "kind": "email",
    "site": "url",
    "when": "datetime",
}


BOUNDED = {"small": (-5, 5), "share": (0.0, 1.0)}  # integer and float columns: min, max


@pytest.fixture(scope="module")
def ruled(key_client: Client, database: str) -> Table:
    table = key_client.create_table(database, new_id("ruled"), schema=RULED)
    table.add_column("small", "integer", minimum=-5, maximum=5)
    table.add_column("share", "float", minimum=0.0, maximum=1.0)
    return table


def breaks(column: str, value: object) -> bool:
    """The oracle: whether `value` breaks `column`'s rule (plain Python)."""
    if value is None:
        return False
    if column in BOUNDED:
        low, high = BOUNDED[column]
        return not low <= value <= high  # type: ignore[operator]
    text = str(value)
    if column == "size":
        return len(text) > 5
    if column == "level":
        return False  # any 64-bit integer
    if column == "kind":
        return text.count("@") != 1 or "." not in text.split("@")[1] or " " in text
    if column == "site":
        return not (
            text.startswith(("http://", "https://"))
            and len(text) > len("https://")
            and " " not in text
        )
    return not text[:4].isdigit()


texts = st.sampled_from(
    ["ab", "abcdef", "a@b.io", "a@b", "x y@b.io", "http://h.io/p", "http:/h", "https://", "h i"]
)
rows_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "size": st.none() | texts,
            "level": st.none() | st.integers(-20, 20),
            "small": st.none() | st.integers(-8, 8),
            "share": st.none() | st.sampled_from([-0.5, -0.0, 0.0, 0.25, 1.0, 1.0000001, 7.5]),
            "kind": st.none() | texts,
            "site": st.none() | texts,
            "when": st.none()
            | st.sampled_from(["2024-01-02", "2024-01-02T03:04:05Z", "soon", "02/01/2024"]),
        }
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=15)
@given(rows=rows_strategy)
def test_the_rejected_rows_are_exactly_those_that_break_a_rule(
    ruled: Table, rows: list[dict[str, object]]
) -> None:
    table = ruled
    table.delete()
    columns = [*RULED, *BOUNDED]
    frame = pd.DataFrame(rows, columns=columns).astype(
        {"level": "Int64", "small": "Int64", "share": "Float64"}
    )
    report = table.load(frame, progress=False)
    bad = [i for i, row in enumerate(rows) if any(breaks(c, row[c]) for c in columns)]
    assert sorted(report.rejected["row"]) == bad
    assert report.written == len(rows) - len(bad) == table.count()
    for _, rejection in report.rejected.iterrows():  # every broken rule, in column order
        row = rows[rejection["row"]]
        assert rejection["column"].split("; ") == [c for c in columns if breaks(c, row[c])]


# ---------------------------------------------------------------------------------------------
# Atomic loads


def test_an_atomic_load_with_one_bad_row_late_leaves_the_table_unchanged(
    key_client: Client, database: str
) -> None:
    table = new_table(key_client, database)
    table.load(people(10, seed=3), id_from=["email"], progress=False)
    before = rows_of(table)
    frame = people(25_000, seed=4).assign(email=lambda d: "new" + d["email"])
    bad = frame.astype({"age": object})
    bad.loc[24_990, "age"] = 1.5
    with pytest.raises(RowsRejectedError) as caught:
        table.load(bad, id_from=["email"], atomic=True, progress=False)
    assert caught.value.report.rejected["row"].tolist() == [24_990]
    pd.testing.assert_frame_equal(rows_of(table), before)
    report = table.load(frame, id_from=["email"], atomic=True, progress=False)
    assert (report.written, report.batches) == (25_000, 3)  # operations of 9,000 rows
    assert table.count() == 25_010


def test_an_atomic_replace_upserts_in_the_same_transaction(
    key_client: Client, database: str
) -> None:
    table = new_table(key_client, database)
    frame = people(150)
    table.load(frame.iloc[:100], id_from=["email"], progress=False)
    report = table.load(
        frame.assign(age=7), id_from=["email"], atomic=True, on_conflict="replace", progress=False
    )
    assert (report.written, report.replaced) == (50, 100)
    assert set(rows_of(table)["age"]) == {7}


# ---------------------------------------------------------------------------------------------
# Faults and rate limits


def test_a_load_under_faults_and_429s_converges_to_the_same_table(tmp_path: Path) -> None:
    frame = people(3_000, seed=5)
    patient = RetryPolicy(retries=12, backoff=0.05, backoff_max=0.5)
    with LocalService(faults="0.2:11") as faulty, faulty.client(retries=patient) as client:
        table = client.create_table("faulty", "people", schema=COLUMNS)
        report = table.load(frame, id_from=["email"], progress=False)
        again = table.load(frame, id_from=["email"], progress=False)
        read = rows_of(table)
        kinds = {fault.kind for fault in faulty.faults}
    assert {"429", "apply_then_drop"} <= kinds
    assert (report.written, len(read)) == (3_000, 3_000)
    # A batch whose answer was lost finds its rows there and counts them as written: the
    # service cannot say whether the lost attempt or an earlier run wrote them.
    assert again.written + again.skipped == 3_000
    with LocalService() as calm, calm.client() as client:
        reference = client.create_table("calm", "people", schema=COLUMNS)
        reference.load(frame, id_from=["email"], progress=False)
        pd.testing.assert_frame_equal(read, rows_of(reference))


FAULTS = "0.3:6"  # a staged operation applied, its answer lost


def test_an_atomic_load_whose_answers_are_lost_stages_and_commits_once() -> None:
    frame = people(300, seed=6)
    patient = RetryPolicy(retries=12, backoff=0.05, backoff_max=0.5)
    with LocalService(faults=FAULTS) as faulty, faulty.client(retries=patient) as client:
        table = client.create_table("faulty", "people", schema=COLUMNS)
        table.load(frame.iloc[:100], id_from=["email"], progress=False)
        report = table.load(
            frame.assign(age=7), id_from=["email"], atomic=True, on_conflict="replace",
            progress=False,
        )  # fmt: skip
        read = rows_of(table)
        lost = {f.request_line.split("?")[0] for f in faulty.faults if f.applied}
    transaction = re.compile(r"(POST /v1/tablesdb/transactions/\w+/operations|PATCH .*)$")
    assert any(transaction.match(line) for line in lost), lost
    # Two operations: a bulk create of the new rows, a bulk upsert of those there.
    assert (report.written, report.replaced, report.batches) == (200, 100, 2)
    assert len(read) == 300 and set(read["age"]) == {7}


# ---------------------------------------------------------------------------------------------
# Changes by filter


def test_update_and_delete_by_filter_count_and_dry_run(key_client: Client, database: str) -> None:
    table = key_client.create_table(
        database,
        new_id("t"),
        schema={"n": "integer", "tags": "string[]", "seen": "datetime", "on": "boolean"},
    )
    table.load(
        pd.DataFrame({"n": range(300), "tags": [["a"]] * 300, "on": [True] * 300}),
        progress=False,
    )
    report = table.where(fp.col("n") >= 100).update(
        set={
            "n": fp.increment(1000),
            "tags": fp.append("b"),
            "seen": fp.now(),
            "on": fp.toggle(),
        }
    )
    assert (report.matched, report.changed, report.requests) == (200, 200, 1)
    read = table.to_pandas(progress=False)
    changed = read[read["n"] >= 1100]
    assert len(changed) == 200
    assert changed["tags"].map(list).tolist() == [["a", "b"]] * 200
    assert changed["seen"].notna().all() and not changed["on"].any()
    dry = table.where(fp.col("n") < 50).delete(dry_run=True)
    assert (dry.matched, dry.changed, table.count()) == (50, 0, 300)
    # a filter the client finishes: the IDs are read first, then deleted by ID
    deleted = table.query("n < 50 or n > 1290").delete()
    assert (deleted.matched, deleted.changed) == (59, 59)
    assert table.count() == 241
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="name of another column"):
        table.update(set={"m": fp.increment("n")})  # type: ignore[arg-type]


def test_report_rejected_rows_carry_their_values(key_client: Client, database: str) -> None:
    table = new_table(key_client, database)
    frame = people(4).assign(name=["ok", "x" * 30, "fine", "y" * 21])
    report = table.load(frame, progress=False)
    rejected = report.rejected
    assert rejected[["row", "column", "rule"]].values.tolist() == [
        [1, "name", "size"],
        [3, "name", "size"],
    ]
    assert rejected["name"].tolist() == ["x" * 30, "y" * 21]
    assert rejected["message"].iloc[0] == "longer than 20 characters"


def test_a_row_a_unique_index_refuses_is_rejected_and_named_after_a_conflict_too(
    key_client: Client, database: str
) -> None:
    table = new_table(key_client, database)
    key_client._request(
        "POST",
        f"/tablesdb/{database}/tables/{table.id}/indexes",
        json={"key": "one_name", "type": "unique", "columns": ["name"]},
    )
    frame = people(30)
    first = table.load(frame.iloc[:10], id_from=["email"], progress=False)
    assert first.written == 10
    # row 17 takes the name of row 3, which is there: the index refuses it, and only it
    clashing = frame.assign(name=frame["name"].where(frame.index != 17, "name 3"))
    report = table.load(clashing, id_from=["email"], progress=False)
    assert (report.written, report.skipped) == (19, 10)
    assert report.rejected[["row", "rule"]].values.tolist() == [[17, "service"]]
    assert report.rejected["email"].tolist() == ["user17@example.com"]
    assert "unique" in report.rejected["message"].iloc[0]
    assert table.count() == 29
    assert set(rows_of(table)["name"]) == set(frame["name"]) - {"name 17"}


def test_a_refused_row_keeps_its_values_beside_the_reports_own_columns(
    key_client: Client, database: str
) -> None:
    """A column named like one of the report's (row, column, rule, message) keeps its value
    as ``<name>_value``, whether the rules rejected the row or the service refused it."""
    table = new_table(key_client, database, {"email": "email", "message": "string(20)"})
    key_client._request(
        "POST",
        f"/tablesdb/{database}/tables/{table.id}/indexes",
        json={"key": "one_message", "type": "unique", "columns": ["message"]},
    )
    frame = pd.DataFrame(
        {
            "email": ["a@example.com", "b@example.com", "not an email", "c@example.com"],
            "message": ["hello", "hello", "bad row", "other"],
        }
    )
    report = table.load(frame, id_from=["email"], progress=False)
    rejected = report.rejected.sort_values("row")
    assert rejected[["row", "rule"]].values.tolist() == [[1, "service"], [2, "email"]]
    assert rejected["message_value"].tolist() == ["hello", "bad row"]
    assert "unique" in rejected["message"].iloc[0]
    assert rejected["email"].tolist() == ["b@example.com", "not an email"]
