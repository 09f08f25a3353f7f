"""Edges of reads and writes found by a user audit: empty results read by signed-in users
(types inferred from the rows), filters whose values do not fit a column, column names the
service cannot take, and inserting rows that already exist."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from frameport import Client, ConflictError, FilterError, NotFoundError, Table
from frameport._demo import sample_people
from tables_support import PEOPLE_DTYPES, SYSTEM_DTYPES, load, new_id

READ_DTYPES = {**SYSTEM_DTYPES, **PEOPLE_DTYPES, "late": "Int64"}


@pytest.fixture(scope="module")
def people(key_client: Client) -> Table:
    """People every signed-in user may read; `late` is null in the first rows."""
    frame = sample_people(40, seed=41)
    frame = frame.assign(late=pd.array([None] * 30 + list(range(10)), dtype="Int64"))
    table, _ = load(key_client, new_id("edges"), frame, permissions=['read("users")'])
    return table


@pytest.fixture(scope="module")
def empty_table(key_client: Client) -> Table:
    """A table with columns and no rows, readable by every signed-in user."""
    schema = sample_people(3, seed=42)
    return key_client.create_table(
        new_id("edges"), new_id("t"), schema=schema, permissions=['read("users")']
    )


def dtypes(frame: pd.DataFrame) -> dict[str, str]:
    return {str(name): str(dtype) for name, dtype in frame.dtypes.items()}


# ---------------------------------------------------------------------------------------------
# Empty results with inferred types


@pytest.mark.parametrize(
    "where",
    [
        "age > 1000",  # the service returns no row
        "city == 'Nowhere'",  # the client re-checks strings: no row either
        "age > 5 and age < 3",  # matches nothing: no request at all
    ],
)
def test_an_empty_result_of_a_user_has_the_columns_and_dtypes_of_the_table(
    user_client: Client, key_client: Client, people: Table, where: str
) -> None:
    table = user_client.table(people.database_id, people.id)
    assert "inferred from the rows" in table.explain()
    empty = table.query(where).to_pandas(progress=False, system=True)
    assert len(empty) == 0
    assert dtypes(empty) == READ_DTYPES
    assert dtypes(empty) == dtypes(table.to_pandas(progress=False, system=True))
    assert dtypes(empty) == dtypes(key_client.table(people.database_id, people.id).query(where)
                                   .to_pandas(progress=False, system=True))  # fmt: skip
    assert empty["age"].tolist() == []


def test_every_terminal_of_an_empty_user_read_knows_the_columns(
    user_client: Client, people: Table, tmp_path: Path
) -> None:
    table = user_client.table(people.database_id, people.id)
    full = table.to_arrow(progress=False, system=True).schema
    query = table.query("age > 1000")
    assert query.to_arrow(progress=False, system=True).schema == full
    assert query.schema(system=True) == full
    assert query.count() == 0
    assert list(query.iter_batches(progress=False, system=True)) == []
    target = tmp_path / "none.parquet"
    assert query.to_parquet(target, progress=False, system=True).rows == 0
    assert pq.read_schema(target).remove_metadata() == full
    assert table.head(0).to_arrow(progress=False, system=True).schema == full
    chosen = query.select("name", "late").to_pandas(progress=False, system=True)
    assert dtypes(chosen) == {**SYSTEM_DTYPES, "name": "str", "late": "Int64"}
    assert "<code>late</code>" in query._repr_html_()


def test_a_user_reading_a_table_without_rows_gets_what_can_be_known(
    user_client: Client, empty_table: Table, tmp_path: Path
) -> None:
    table = user_client.table(empty_table.database_id, empty_table.id)
    frame = table.query("age > 30").to_pandas(progress=False, system=True)
    assert dtypes(frame) == SYSTEM_DTYPES
    assert table.count() == 0
    assert table.schema(system=True).names == list(SYSTEM_DTYPES)
    assert table.to_parquet(tmp_path / "none.parquet", progress=False, system=True).rows == 0


# ---------------------------------------------------------------------------------------------
# Values that do not fit a column


@pytest.mark.parametrize(
    "where", ["age > 'x'", "name > 3", "signup > 5", "active == 1", "age > 30 and score < 'x'"]
)
def test_a_value_that_does_not_fit_says_so_for_users_as_for_keys(
    user_client: Client, key_client: Client, people: Table, where: str
) -> None:
    with pytest.raises(FilterError) as by_key:
        key_client.table(people.database_id, people.id).query(where).to_pandas(progress=False)
    query = user_client.table(people.database_id, people.id).query(where)
    for read in (
        lambda: query.to_pandas(progress=False),
        lambda: list(query.iter_batches(progress=False)),
        query.count,
    ):
        with pytest.raises(FilterError) as by_user:
            read()
        assert str(by_user.value) == str(by_key.value)
        assert "pandas" not in str(by_user.value)


# ---------------------------------------------------------------------------------------------
# Column names the service cannot take


@pytest.mark.parametrize("name", ["has space", "_hidden", "x" * 37, "$id2", "$"])
def test_create_table_names_a_column_that_cannot_be_a_key(key_client: Client, name: str) -> None:
    database = new_id("names")
    for schema in (pd.DataFrame({"ok": [1], name: [1]}), {"ok": "integer", name: "integer"}):
        with pytest.raises(ValueError, match=r"df\.rename") as caught:
            key_client.create_table(database, "bad1", schema=schema)
        assert repr(name) in str(caught.value)
    with pytest.raises(NotFoundError):  # nothing was sent: not even the database was made
        key_client.table(database, "bad1").columns()


def test_insert_refuses_a_dollar_column_the_service_does_not_have(
    key_client: Client, people: Table
) -> None:
    before = people.count()
    row = people.head(1).to_pandas(progress=False).drop(columns=["$id"])
    with pytest.raises(ValueError, match=r"'\$id2'.*df.rename"):
        people.insert(row.assign(**{"$id2": ["x"]}), progress=False)
    with pytest.raises(ValueError, match="'has space'"):
        people.upsert(row.assign(**{"has space": ["x"]}), progress=False)
    assert people.count() == before


def test_a_frame_read_back_still_creates_a_table(key_client: Client, people: Table) -> None:
    read_back = people.to_pandas(progress=False)
    copy = key_client.create_table(people.database_id, new_id("copy"), schema=read_back)
    assert copy.columns()["key"].tolist() == [*PEOPLE_DTYPES, "late"]


# ---------------------------------------------------------------------------------------------
# Inserting rows that exist


@pytest.mark.parametrize("legacy", [False, True])
def test_inserting_an_existing_row_points_to_upsert(
    key_client: Client, people: Table, legacy: bool
) -> None:
    handle = key_client.collection if legacy else key_client.table
    table = handle(people.database_id, people.id)
    existing = people.head(2).to_pandas(progress=False)
    with pytest.raises(ConflictError) as caught:
        table.insert(existing, progress=False)
    error = caught.value
    assert (error.status, error.type) == (
        409,
        "document_already_exists" if legacy else "row_already_exists",
    )
    assert "table.upsert(df)" in str(error)
    assert "upsert" not in error.message  # the service's own message is kept as it was
    table.upsert(existing, progress=False)  # what the hint says works
