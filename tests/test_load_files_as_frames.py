"""CSV and JSON lines files load as the frames they were written from: each value is judged by
its column's type as the same value in a DataFrame is, the strings read as null are a setting
the report states, and a rejected row names every rule it breaks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from frameport import Client, LoadError, Table
from frameport.cli import main
from tables_support import new_id

SCHEMA = {
    "name": "string",
    "code": "string",
    "age": "integer",
    "score": "float",
    "active": "boolean",
    "born": "datetime",
}


MakeTable = Callable[..., Table]


@pytest.fixture(scope="module")
def new_table(key_client: Client) -> MakeTable:
    """Makes a table of a schema (`SCHEMA` by default) in the module's database."""
    database = new_id("files")
    key_client.create_database(database)

    def make(schema: dict[str, str] = SCHEMA) -> Table:
        return key_client.create_table(database, new_id("t"), schema=schema)

    return make


def pandas_frame(rows: int = 50) -> pd.DataFrame:
    """A frame as pandas holds one read from a file: an integer column with nulls is float64
    (written as ``19.0``), and a text column holds ISO dates."""
    return pd.DataFrame(
        {
            "name": [f"person {i}" for i in range(rows)],
            "code": [f"2024-01-{i % 28 + 1:02d}" for i in range(rows)],
            "age": [None if i % 10 == 3 else 18.0 + i for i in range(rows)],
            "score": [i / 4 for i in range(rows)],
            "active": [i % 3 == 0 for i in range(rows)],
            "born": pd.to_datetime("2000-01-01", utc=True) + pd.to_timedelta(range(rows), "D"),
        }
    )


def table_rows(table: Table) -> pd.DataFrame:
    read = table.to_pandas(progress=False)[list(SCHEMA)]
    return read.sort_values("name", ignore_index=True)


def expected_rows(frame: pd.DataFrame, table: Table) -> pd.DataFrame:
    """`frame` in the dtypes the table reads back, pandas' own values converted by pandas."""
    dtypes = table.to_pandas(progress=False).dtypes
    return frame.astype({name: dtypes[name] for name in SCHEMA}).sort_values(
        "name", ignore_index=True
    )


def test_a_pandas_written_csv_with_an_integer_column_holding_nulls_loads_as_the_frame(
    new_table: MakeTable, tmp_path: Path
) -> None:
    frame = pandas_frame()
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    assert "19.0" in path.read_text()
    table = new_table()
    report = table.load(path, progress=False)
    assert report.rejected.empty and report.written == len(frame)
    pd.testing.assert_frame_equal(table_rows(table), expected_rows(frame, table))


def test_a_pandas_written_ndjson_with_an_integer_column_holding_nulls_loads_as_the_frame(
    new_table: MakeTable, tmp_path: Path
) -> None:
    frame = pandas_frame()
    path = tmp_path / "people.ndjson"
    frame.to_json(path, orient="records", lines=True, date_format="iso")
    table = new_table()
    report = table.load(path, progress=False)
    assert report.rejected.empty and report.written == len(frame)
    pd.testing.assert_frame_equal(table_rows(table), expected_rows(frame, table))


@pytest.mark.parametrize("kind", ["frame", "csv", "ndjson"])
def test_a_number_with_a_fraction_is_rejected_from_an_integer_column_naming_the_fraction(
    new_table: MakeTable, tmp_path: Path, kind: str
) -> None:
    frame = pd.DataFrame({"name": ["a", "b", "c", "d"], "age": [19.0, 1.5, -3.0, 2.25]})
    source: object = frame
    if kind == "csv":
        source = tmp_path / "ages.csv"
        frame.to_csv(source, index=False)
    elif kind == "ndjson":
        source = tmp_path / "ages.ndjson"
        frame.to_json(source, orient="records", lines=True)
    table = new_table({"name": "string", "age": "integer"})
    report = table.load(source, progress=False)
    assert report.rejected["row"].tolist() == [1, 3]
    assert set(report.rejected["rule"]) == {"type"}
    assert all("fraction" in message for message in report.rejected["message"])
    assert sorted(table.to_pandas(progress=False)["age"].tolist()) == [-3, 19]


def test_a_row_breaking_two_rules_lists_both(new_table: MakeTable) -> None:
    table = new_table({"email": "email", "name": "string(5)", "age": "integer"})
    frame = pd.DataFrame(
        {
            "email": ["a@x.io", "not an address", "b@x.io"],
            "name": ["Ada", "Bartholomew", "Eli"],
            "age": ["36", "x", "1.5"],
        }
    )
    report = table.load(frame, progress=False)
    assert report.rejected["row"].tolist() == [1, 2]
    both = report.rejected.iloc[0]
    assert both["column"] == "email; name; age"
    assert both["rule"] == "email; size; type"
    parts = both["message"].split("; ")
    assert parts[0].startswith("email: ") and parts[1].startswith("name: longer than 5")
    assert parts[2].startswith("age: ")
    assert report.rejected.iloc[1]["column"] == "age"
    assert "fraction" in report.rejected.iloc[1]["message"]


def nulls_file(new_table: MakeTable, tmp_path: Path) -> tuple[Table, Path]:
    """A table, and a CSV file whose fields hold usual markers of nulls."""
    path = tmp_path / "nulls.csv"
    path.write_text("name,code,age\nAda,n/a,1\nBo,NA,n/a\nCy,,\nDi,null,NA\n")
    return new_table({"name": "string", "code": "string", "age": "integer"}), path


def test_only_empty_fields_are_null_by_default_and_the_report_says_so(
    new_table: MakeTable, tmp_path: Path
) -> None:
    table, path = nulls_file(new_table, tmp_path)
    report = table.load(path, progress=False)
    assert report.null_values == ("",)
    assert "read as null: empty fields" in report.summary()
    assert report.rejected["row"].tolist() == [1, 3]  # n/a and NA are no whole numbers
    read = table.to_pandas(progress=False).set_index("name")
    assert read.loc["Ada", "code"] == "n/a" and read.loc["Ada", "age"] == 1
    assert read.filter(items=["Cy"], axis=0)[["code", "age"]].isna().all(axis=None)


def test_null_values_names_the_strings_read_as_null(new_table: MakeTable, tmp_path: Path) -> None:
    table, path = nulls_file(new_table, tmp_path)
    report = table.load(path, null_values=["", "n/a", "NA", "null"], progress=False)
    assert report.rejected.empty and report.null_values == ("", "n/a", "NA", "null")
    assert 'read as null: empty fields, "n/a", "NA", "null"' in report.summary()
    read = table.to_pandas(progress=False).set_index("name")
    assert read["code"].isna().tolist() == [True, True, True, True]
    assert read["age"].isna().tolist() == [False, True, True, True]


def test_null_values_is_refused_for_a_source_that_is_not_a_csv_file(new_table: MakeTable) -> None:
    table = new_table({"name": "string"})
    with pytest.raises(LoadError, match="null_values applies to CSV"):
        table.load(pd.DataFrame({"name": ["a"]}), null_values=["NA"], progress=False)
    assert table.count() == 0


@pytest.mark.usefixtures("credentials")
def test_import_takes_null_values_and_prints_them(
    new_table: MakeTable, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, path = nulls_file(new_table, tmp_path)
    code = main(["import", table.database_id, table.id, str(path), "--null-values", ",n/a,NA,null"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert 'read as null: empty fields, "n/a", "NA", "null"' in out
    assert table.count() == 4


def test_text_that_is_no_number_is_rejected_from_a_float_column_not_made_null(
    new_table: MakeTable, tmp_path: Path
) -> None:
    path = tmp_path / "scores.csv"
    path.write_text("name,score\nAda,1.5\nBo,n/a\nCy,\n")
    table = new_table({"name": "string", "score": "float"})
    report = table.load(path, progress=False)
    assert report.rejected[["row", "column", "rule"]].values.tolist() == [[1, "score", "type"]]
    assert table.count() == 2
