"""The catalog through the public API: databases, tables, buckets and columns listed as
DataFrames; creating them again with exist_ok; dropping them; adding columns of every type."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

import frameport as fp
from frameport import Client
from tables_support import new_id

PEOPLE = pd.DataFrame({"name": ["Ada", "Bo"], "age": pd.array([36, 17], dtype="Int64")})


@pytest.fixture
def database(key_client: Client) -> str:
    return new_id("catalog")


def test_databases_tables_and_columns_are_dataframes(key_client: Client, database: str) -> None:
    people = key_client.create_table(database, "people", schema=PEOPLE)
    key_client.create_table(database, "empty", schema={"note": "string(20)"})

    databases = key_client.databases(details=True)
    assert list(databases.columns) == ["$id", "name", "enabled", "$createdAt", "$updatedAt"]
    assert database in set(databases["$id"])
    assert str(databases["$createdAt"].dtype) == "datetime64[ms, UTC]"

    tables = key_client.tables(database, details=True).set_index("$id")
    assert sorted(tables.index) == ["empty", "people"]
    assert tables["columns"].to_dict() == {"empty": 1, "people": 2}
    assert str(tables["columns"].dtype) == "Int64" and str(tables["enabled"].dtype) == "boolean"
    assert tables.loc["people", "$permissions"] == ()

    columns = people.columns(details=True)
    assert columns[["key", "type", "array", "required", "size", "status", "dtype"]].to_dict(
        "records"
    ) == [
        {"key": "name", "type": "string", "array": False, "required": False, "size": 255,
         "status": "available", "dtype": "str"},
        {"key": "age", "type": "integer", "array": False, "required": False, "size": None,
         "status": "available", "dtype": "Int64"},
    ]  # fmt: skip


def test_buckets_are_a_dataframe(key_client: Client) -> None:
    bucket_id = new_id("catalog")
    key_client.create_bucket(bucket_id, "Reports", compression="zstd")
    buckets = key_client.buckets().set_index("$id")
    assert buckets.loc[bucket_id, "name"] == "Reports"
    assert buckets.loc[bucket_id, "compression"] == "zstd"
    assert str(buckets["maximumFileSize"].dtype) == "Int64"


def test_creating_again_with_exist_ok_keeps_what_is_there(
    key_client: Client, database: str
) -> None:
    record = key_client.create_database(database, "CRM")
    assert record["name"] == "CRM"
    with pytest.raises(fp.ConflictError):
        key_client.create_database(database)
    assert key_client.create_database(database, exist_ok=True)["name"] == "CRM"

    people = key_client.create_table(database, "people", schema=PEOPLE)
    people.insert(PEOPLE, progress=False)
    with pytest.raises(fp.ConflictError):
        key_client.create_table(database, "people", schema=PEOPLE)
    again = key_client.create_table(database, "people", schema=PEOPLE, exist_ok=True)
    assert again.count() == 2  # the rows are kept
    narrower = key_client.create_table(database, "people", schema={"name": "string"}, exist_ok=True)
    assert narrower.count() == 2

    bucket_id = new_id("catalog")
    key_client.create_bucket(bucket_id, "Reports")
    with pytest.raises(fp.ConflictError):
        key_client.create_bucket(bucket_id, "Reports")
    assert key_client.create_bucket(bucket_id, "Other", exist_ok=True).info()["name"] == "Reports"


def test_exist_ok_says_which_columns_an_existing_table_lacks(
    key_client: Client, database: str
) -> None:
    key_client.create_table(database, "people", schema={"name": "string"})
    with pytest.raises(fp.ConflictError) as caught:
        key_client.create_table(database, "people", schema=PEOPLE, exist_ok=True)
    assert "without the column(s) ['age']" in str(caught.value)
    assert "add_column" in str(caught.value) and "drop()" in str(caught.value)


def test_drop_a_table_a_database_and_a_bucket(key_client: Client, database: str) -> None:
    people = key_client.create_table(database, "people", schema=PEOPLE)
    key_client.create_table(database, "other", schema=PEOPLE)
    people.drop()
    assert list(key_client.tables(database)["$id"]) == ["other"]
    with pytest.raises(fp.NotFoundError):
        people.to_pandas(progress=False)
    key_client.drop_table(database, "other")
    assert key_client.tables(database).empty

    key_client.drop_database(database)
    assert database not in set(key_client.databases()["$id"])
    with pytest.raises(fp.NotFoundError):
        key_client.tables(database)

    bucket = key_client.create_bucket(new_id("catalog"))
    bucket.upload_bytes(b"data", "a.txt", progress=False)
    bucket.drop()
    assert bucket.id not in set(key_client.buckets()["$id"])
    with pytest.raises(fp.NotFoundError):
        bucket.list_files()


ADDED = [
    # (type, a value to write, the dtype it reads as, the value read back)
    ("string(100)", "x", "str", "x"),
    ("text", "long text", "str", "long text"),
    ("integer", 7, "Int64", 7),
    ("bigint", 2**40, "Int64", 2**40),
    ("float", 1.5, "float64", 1.5),
    ("boolean", True, "boolean", True),
    ("datetime", "2024-06-01T12:00:00.000+00:00", "datetime64[ms, UTC]",
     pd.Timestamp(datetime(2024, 6, 1, 12, tzinfo=UTC))),
    ("email", "ada@example.org", "str", "ada@example.org"),
    ("ip", "10.0.0.1", "str", "10.0.0.1"),
    ("url", "https://example.org", "str", "https://example.org"),
    ("string[]", ["a", "b"], "object", ["a", "b"]),
    ("point", [10.5, 59.9], "object", [10.5, 59.9]),
]  # fmt: skip


def test_add_column_of_each_type_is_usable_at_once(key_client: Client, database: str) -> None:
    table = key_client.create_table(database, "wide", schema={"name": "string"})
    for number, (kind, *_) in enumerate(ADDED):
        table.add_column(f"c{number}", kind, progress=False)
    table.add_column("level", "enum", elements=["low", "high"], default="low", progress=False)
    row = {f"c{number}": [value] for number, (_, value, *_) in enumerate(ADDED)}
    table.insert(pd.DataFrame({"name": ["Ada"], **row}), progress=False)

    read = table.to_pandas(progress=False)
    for number, (kind, _, dtype, expected) in enumerate(ADDED):
        assert str(read[f"c{number}"].dtype) == dtype, kind
        assert read[f"c{number}"].tolist() == [expected], kind
    assert read["level"].tolist() == ["low"]  # the default
    columns = table.columns(details=True).set_index("key")
    assert columns.loc["c0", "size"] == 100
    assert columns.loc["level", "elements"] == ["low", "high"]
    assert columns.loc["c10", "type"] == "string" and columns.loc["c10", "array"]
    assert (columns["status"] == "available").all()


def test_add_column_refuses_what_the_service_cannot_make(key_client: Client) -> None:
    table = key_client.table(new_id("catalog"), "nothing")
    with pytest.raises(ValueError, match="needs its elements"):
        table.add_column("level", "enum")
    with pytest.raises(ValueError, match="unknown type 'integr'"):
        table.add_column("n", "integr")
    with pytest.raises(ValueError, match="for enum columns only"):
        table.add_column("n", "integer", elements=["a"])


def test_a_signed_in_user_cannot_list_the_catalog(user_client: Client) -> None:
    with pytest.raises(fp.AuthenticationError):
        user_client.databases()
    with pytest.raises(fp.AuthenticationError):
        user_client.buckets()


def test_create_function_with_exist_ok(key_client: Client) -> None:
    function_id = new_id("catalog")
    key_client.create_function(function_id, "ETL", "python-3.11", entrypoint="main.py")
    with pytest.raises(fp.ConflictError):
        key_client.create_function(function_id, "ETL", "python-3.11")
    again = key_client.create_function(function_id, "Other", "python-3.11", exist_ok=True)
    assert again.info()["name"] == "ETL"


def test_catalog_frames_print_their_useful_columns_in_a_terminal_80_wide(
    key_client: Client, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    people = key_client.create_table(database, "people", schema=PEOPLE)
    people.add_column("signup", "datetime", progress=False)
    bucket = key_client.create_bucket(fp.ID.unique(), "Reports")
    bucket.upload_bytes(b"name,age\nAda,36\n", "people-2024.csv", progress=False)
    # This test's rows only: the shared service holds others, with long test IDs.
    databases = key_client.databases().query("`$id` == @database")
    buckets = key_client.buckets().query("`$id` == @bucket.id")
    frames = {
        "tables": (key_client.tables(database), ["$id", "name", "columns", "rowSecurity"]),
        "columns": (people.columns(), ["key", "type", "dtype", "required", "array", "size"]),
        "databases": (databases, ["$id", "name", "enabled"]),
        "buckets": (buckets, ["$id", "name", "totalSize", "maximumFileSize"]),
        "list_files": (bucket.list_files(), ["$id", "name", "mimeType", "sizeOriginal"]),
    }
    monkeypatch.setenv("COLUMNS", "80")  # the terminal's width, as pandas reads it
    with pd.option_context("display.max_columns", 0):  # pandas' default in a terminal
        for name, (frame, useful) in frames.items():
            lines = repr(frame).splitlines()
            assert "..." not in lines[0], f"{name} elides columns:\n{lines[0]}"
            assert set(useful) <= set(lines[0].split()), name
            assert max(map(len, lines)) <= 80, name
    detailed = key_client.tables(database, details=True).set_index("$id")
    assert detailed.loc["people", "$permissions"] == ()
    assert "$createdAt" in people.columns(details=True)
    assert "$updatedAt" in key_client.databases(details=True)
    assert "$permissions" in key_client.buckets(details=True)
    assert "chunksUploaded" in bucket.list_files(details=True)
