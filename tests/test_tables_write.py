"""Writing DataFrames through the public API: tables from dtypes, insert, upsert, retries.

The published write → read dtype table (`DTYPE_TABLE`) is enforced end to end: each dtype is
written with `insert`, read back, and compared with pandas' own conversion of the values.
"""

from __future__ import annotations

import inspect
from typing import Any

import pandas as pd
import pytest

from frameport._client import Client
from frameport._core._transport import RetryPolicy
from frameport._demo import sample_people
from frameport._exceptions import ConflictError, LoadError
from frameport._schema import DTYPE_TABLE, DtypeMapping
from frameport.local import LocalService
from tables_support import assert_same_rows, load, new_id


@pytest.fixture(scope="module")
def database() -> str:
    return new_id("write")


def expected_values(mapping: DtypeMapping) -> list[Any]:
    """What the service gives back for `mapping.example`, as pandas builds it."""
    values = list(mapping.example)
    if mapping.column_type == "datetime":
        stamps = pd.Series(pd.to_datetime(values, utc=True))
        return stamps.astype(pd.api.types.pandas_dtype(mapping.read)).tolist()
    if mapping.column_type.endswith("[]"):
        return values
    return pd.Series(values, dtype=mapping.read).tolist()


@pytest.mark.parametrize("mapping", DTYPE_TABLE, ids=lambda m: f"{m.written}-{m.column_type}")
def test_every_published_dtype_round_trips(
    key_client: Client, database: str, mapping: DtypeMapping
) -> None:
    frame = pd.DataFrame({"value": pd.Series(list(mapping.example), dtype=mapping.written)})
    table, expected = load(key_client, database, frame)
    [column] = table.columns().to_dict("records")
    assert column["type"] + ("[]" if column["array"] else "") == mapping.column_type
    read = table.to_pandas(progress=False).set_index("$id").loc[expected["$id"]]
    assert list(read.columns) == ["value"]  # the row's key (now the index), then the column
    assert str(read["value"].dtype) == mapping.read
    got = read["value"].tolist()
    assert [None if v is pd.NA or v is pd.NaT or v != v else v for v in got] == [
        None if v is pd.NA or v is pd.NaT or v != v else v for v in expected_values(mapping)
    ]
    assert table.to_arrow(progress=False).schema.field("value").type == mapping.arrow


def test_nulls_and_time_zones_are_written_as_documented(key_client: Client, database: str) -> None:
    oslo = pd.Series(
        # The stubs leave out missing values in a list, which pandas reads as NaT.
        pd.to_datetime(["2024-06-01 12:00:00.123456", None]).tz_localize("Europe/Oslo")  # type: ignore[arg-type]
    )
    frame = pd.DataFrame(
        {
            "when": oslo,
            "naive": pd.to_datetime(
                ["2024-06-01 12:00", "2024-12-01 00:00:00.999"], format="ISO8601"
            ),
            "score": [float("nan"), 2.5],
            "count": pd.array([None, 3], dtype="Int64"),
        }
    )
    table, expected = load(key_client, database, frame)
    read = table.to_pandas(progress=False).set_index("$id").loc[expected["$id"]]
    assert read["when"].tolist()[0] == pd.Timestamp("2024-06-01 10:00:00.123", tz="UTC")
    assert read["when"].isna().tolist() == [False, True]
    assert read["naive"].tolist() == [
        pd.Timestamp("2024-06-01 12:00", tz="UTC"),
        pd.Timestamp("2024-12-01 00:00:00.999", tz="UTC"),
    ]
    assert read["score"].isna().tolist() == [True, False]
    assert read["count"].tolist()[1] == 3 and read["count"].isna().tolist() == [True, False]


def test_create_table_from_a_mapping_of_types(key_client: Client) -> None:
    database = new_id("fresh")  # created by create_table, as it does not exist yet
    schema = {"name": "string(1000)", "n": "integer", "tags": "string[]", "when": "datetime"}
    table = key_client.create_table(database, new_id("t"), schema=schema)
    columns = table.columns(details=True).set_index("key")
    assert columns.loc["name", "size"] == 1000 and columns.loc["tags", "array"]
    assert (columns["status"] == "available").all()
    frame = pd.DataFrame({"name": ["x" * 900], "n": [7], "tags": [["a", "b"]], "when": [None]})
    table.insert(frame, progress=False)
    read = table.to_pandas(progress=False)
    assert read["name"].tolist() == ["x" * 900] and read["tags"].tolist() == [["a", "b"]]
    assert str(read["when"].dtype) == "datetime64[ms, UTC]" and read["when"].isna().all()
    with pytest.raises(ConflictError):
        key_client.create_table(database, table.id, schema=schema)


def test_upsert_replaces_rows_by_id_and_adds_the_others(key_client: Client, database: str) -> None:
    table, expected = load(key_client, database, sample_people(300, seed=3))
    changed = expected.iloc[:100].assign(score=-1.0, city="Vadsø")
    added = sample_people(50, seed=4)
    ids = table.upsert(pd.concat([changed, added], ignore_index=True), progress=False)
    assert ids[:100] == changed["$id"].tolist() and len(set(ids[100:])) == 50
    merged = pd.concat(
        [changed, expected.iloc[100:], added.assign(**{"$id": pd.array(ids[100:], dtype="str")})],
        ignore_index=True,
    )
    assert_same_rows(table.to_pandas(progress=False), merged)


def test_a_frame_read_back_can_be_upserted_unchanged(key_client: Client, database: str) -> None:
    table, expected = load(key_client, database, sample_people(120, seed=5))
    before = table.to_pandas(progress=False, system=True)
    table.upsert(before, progress=False)  # $sequence, $createdAt, $updatedAt are not written
    assert_same_rows(table.to_pandas(progress=False), expected)


def test_insert_refuses_ids_that_exist_or_repeat(key_client: Client, database: str) -> None:
    table, expected = load(key_client, database, sample_people(5, seed=6))
    with pytest.raises(ConflictError) as caught:
        table.insert(expected.iloc[:2], progress=False)
    assert caught.value.type == "row_already_exists"
    with pytest.raises(ValueError, match="repeats"):
        table.insert(pd.concat([expected.iloc[:1]] * 2), progress=False)
    assert table.count() == 5


def test_every_write_takes_the_same_concurrency_auto_by_default(
    key_client: Client, database: str
) -> None:
    table, _ = load(key_client, database, sample_people(5, seed=7))
    for write in (table.load, table.insert, table.upsert):
        assert inspect.signature(write).parameters["concurrency"].default == "auto"
        with pytest.raises(LoadError, match='concurrency must be "auto" or a whole number'):
            write(sample_people(2, seed=8), concurrency=0, progress=False)
    ids = table.insert(sample_people(3, seed=9), concurrency="auto", progress=False)
    assert len(ids) == 3 and table.count() == 8


def test_the_legacy_collection_interface_writes_the_same_rows(
    key_client: Client, database: str
) -> None:
    frame = sample_people(250, seed=8)
    table = key_client.create_table(database, new_id("c"), schema=frame)
    collection = key_client.collection(database, table.id)
    ids = collection.insert(frame, progress=False)
    assert_same_rows(
        table.to_pandas(progress=False), frame.assign(**{"$id": pd.array(ids, dtype="str")})
    )


def test_an_insert_retried_under_injected_faults_creates_no_duplicates() -> None:
    frame = sample_people(10_000, seed=9)
    patient = RetryPolicy(retries=12, backoff=0.05, backoff_max=0.5)
    with LocalService(faults="0.2:7") as faulty, faulty.client(retries=patient) as client:
        table = client.create_table("faulty", "people", schema=frame)
        ids = table.insert(frame, progress=False)
        read = table.to_pandas(progress=False, page_size=1000)
        faults = faulty.faults
    applied = [
        f
        for f in faults
        if f.applied and f.request_line.startswith("POST") and "/rows" in f.request_line
    ]
    assert applied, "no bulk create was applied and then lost: nothing was retried"
    assert_same_rows(read, frame.assign(**{"$id": pd.array(ids, dtype="str")}))
