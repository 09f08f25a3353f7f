"""`frameport import DB TABLE SOURCE`: the report printed, rejected rows written on request,
and the exit codes (0 done, 1 rows rejected or a failed operation, 2 bad input)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from frameport import Client
from frameport.cli import main
from tables_support import new_id

pytestmark = pytest.mark.usefixtures("credentials")


@pytest.fixture
def table_id(key_client: Client) -> tuple[str, str]:
    database = new_id("import")
    key_client.create_database(database)
    table = key_client.create_table(database, "people", schema={"email": "email", "age": "integer"})
    return database, table.id


def test_import_prints_the_report_writes_the_rejects_and_exits_1(
    key_client: Client,
    table_id: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "people.csv"
    source.write_text("email,age\na@x.io,1\nnot-an-email,2\nc@x.io,three\nd@x.io,4\n")
    rejects = tmp_path / "rejects.csv"
    code = main(["import", *table_id, str(source), "--id-from", "email", "--rejects", str(rejects)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "written 2 · skipped 0 · replaced 0 · rejected 2" in out
    assert "column 'email', rule email" in out and "column 'age', rule type" in out
    assert "2 rows were rejected" in err
    saved = pd.read_csv(rejects)
    assert saved[["row", "column", "rule"]].values.tolist() == [
        [1, "email", "email"],
        [2, "age", "type"],
    ]
    assert key_client.table(*table_id).count() == 2
    again = main(["import", *table_id, str(source), "--id-from", "email", "--allow-rejects"])
    assert again == 0
    assert "written 0 · skipped 2" in capsys.readouterr().out


def test_import_exits_2_on_bad_input(
    table_id: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "people.ndjson"
    source.write_text('{"email": "a@x.io", "shoe": 42}\n')
    assert main(["import", *table_id, str(source)]) == 2
    assert "no column 'shoe'" in capsys.readouterr().err
    assert main(["import", *table_id, str(tmp_path / "missing.parquet")]) == 2
    assert main(["import", *table_id, str(tmp_path / "data.xlsx")]) == 2
