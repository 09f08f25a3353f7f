"""Writes read as people write them: update operators take their amount first (the column
comes from ``set=``), a load says whether a rerun writes its rows again, the two meanings of
IDs have two spellings, and `update` / `delete` take what `load` takes, all against the
local service."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import frameport as fp
from frameport import Client, Table
from frameport.cli import main
from tables_support import new_id

COLUMNS = {
    "n": "integer",
    "x": "float",
    "tags": "string[]",
    "name": "string",
    "on": "boolean",
    "seen": "datetime",
}


@pytest.fixture(scope="module")
def database(key_client: Client) -> str:
    name = new_id("spell")
    key_client.create_database(name)
    return name


def start(client: Client, database: str) -> Table:
    table = client.create_table(database, new_id("t"), schema=COLUMNS)
    frame = pd.DataFrame(
        {"$id": ["r"], "n": [10], "x": [8.0], "tags": [["a", "b"]], "name": ["Ada"], "on": [True]}
    )
    table.load(frame, progress=False)
    return table


def row(table: Table) -> dict[str, object]:
    read = table.to_pandas(progress=False).iloc[0]
    return {"n": read["n"], "x": read["x"], "tags": list(read["tags"]), "name": read["name"]}


# ---------------------------------------------------------------------------------------------
# Operators


@pytest.mark.parametrize(
    ("column", "positional", "keyword", "expected"),
    [
        ("n", fp.increment(2), fp.increment(by=2), 14),
        ("n", fp.decrement(2), fp.decrement(by=2), 6),
        ("n", fp.multiply(2), fp.multiply(by=2), 40),
        ("x", fp.divide(2), fp.divide(by=2), 2.0),
        ("tags", fp.append("c"), fp.append("d"), ["a", "b", "c", "d"]),
        ("tags", fp.prepend("c"), fp.prepend("d"), ["d", "c", "a", "b"]),
        ("tags", fp.remove("a"), fp.remove(value="b"), []),
        ("name", fp.concat("!"), fp.concat(text="?"), "Ada!?"),
    ],
)
def test_every_operator_takes_its_amount_first_or_by_keyword(
    key_client: Client,
    database: str,
    column: str,
    positional: fp.UpdateOperator,
    keyword: fp.UpdateOperator,
    expected: object,
) -> None:
    table = start(key_client, database)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spellings warn about nothing
        table.update(set={column: positional})
        table.update(set={column: keyword})
    assert row(table)[column] == expected


def test_bounds_toggle_and_now_take_no_column(key_client: Client, database: str) -> None:
    table = start(key_client, database)
    table.update(set={"n": fp.increment(5, max=12), "on": fp.toggle(), "seen": fp.now()})
    read = table.to_pandas(progress=False).iloc[0]
    assert (read["n"], read["on"], pd.notna(read["seen"])) == (12, False, True)
    table.update(set={"n": fp.decrement(by=50, min=1)})
    assert row(table)["n"] == 1


def test_the_column_first_spelling_still_works_with_a_warning_naming_the_new_one(
    key_client: Client, database: str
) -> None:
    table = start(key_client, database)
    with pytest.warns(FutureWarning, match=r"set=\{'n': fp.increment\(1000\)\}"):
        old = fp.increment("n", 1000)  # type: ignore[arg-type]
    with pytest.warns(FutureWarning, match=r"fp.append\('c'\)"):
        table.update(set={"n": old, "tags": fp.append("tags", "c")})
    assert (row(table)["n"], row(table)["tags"]) == (1010, ["a", "b", "c"])


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        (lambda: fp.increment("visits"), r"set=\{'n': fp.increment\(1\)\}"),  # type: ignore[arg-type]
        (lambda: fp.concat("name", "!"), r"set=\{'n': fp.concat\('!'\)\}"),
    ],
)
def test_a_column_name_where_the_amount_goes_shows_the_right_spelling(
    key_client: Client, database: str, written: object, shown: str
) -> None:
    table = start(key_client, database)
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match=shown):
        table.update(set={"n": written()})  # type: ignore[operator]


@pytest.mark.parametrize(
    ("make", "shown"),
    [
        (lambda: fp.increment(by="2"), r"fp.increment\(2\)"),  # type: ignore[arg-type]
        (lambda: fp.multiply(True), r"fp.multiply\(2\)"),
        (lambda: fp.decrement(1, min="0"), r"min="),  # type: ignore[arg-type]
        (lambda: fp.concat(3), r"fp.concat\('!'\)"),  # type: ignore[arg-type]
    ],
)
def test_a_wrong_type_shows_the_right_spelling(make: object, shown: str) -> None:
    with pytest.raises(TypeError, match=shown):
        make()  # type: ignore[operator]


def test_an_unknown_column_in_set_lists_the_columns_as_filters_do(
    key_client: Client, database: str
) -> None:
    table = start(key_client, database)
    with pytest.raises(fp.FilterError, match=r"'vists'.*its columns are: n, name, on, seen"):
        table.update(set={"vists": 3})
    with pytest.raises(fp.FilterError, match="'vists'"):
        table.where(fp.col("n") > 0).update(set={"vists": fp.increment(1)})
    with pytest.raises(fp.FilterError, match="'vists'"), key_client.transaction() as tx:
        tx.table(database, table.id).where(fp.col("n") > 0).update(set={"vists": 3})
    assert row(table)["n"] == 10


def test_a_transaction_update_takes_the_same_spellings(key_client: Client, database: str) -> None:
    table = start(key_client, database)
    with key_client.transaction() as tx:
        staged = tx.table(database, table.id).where(fp.col("n") > 0)
        staged.update(set={"n": fp.increment(5), "tags": fp.append("c")})
    assert (row(table)["n"], row(table)["tags"]) == (15, ["a", "b", "c"])


# ---------------------------------------------------------------------------------------------
# Changes: what is counted, and progress


def test_rows_that_already_hold_the_value_are_not_counted_as_changed(
    key_client: Client, database: str
) -> None:
    table = key_client.create_table(database, new_id("t"), schema=COLUMNS)
    names = ["Ada", "ada", "Bo", None, "Ada"]
    table.load(pd.DataFrame({"n": range(5), "name": names, "tags": [["a"]] * 5}), progress=False)
    whole = table.where(fp.col("n") >= 0).update(set={"name": "Ada"})
    assert (whole.matched, whole.changed) == (5, 3)  # "ada" differs from "Ada"
    again = table.where(fp.col("n") >= 0).update(set={"name": "Ada"})
    assert (again.matched, again.changed) == (5, 0)
    by_id = table.query("n < 3 and name == 'Ada'").update(set={"n": 1})
    assert (by_id.matched, by_id.changed) == (3, 2)  # 0, 1, 2 become 1
    bounded = table.where(fp.col("n") >= 0).update(set={"n": fp.increment(2, max=4)})
    assert (bounded.matched, bounded.changed) == (5, 4)  # 1, 1, 1, 3, 4 become 3, 3, 3, 4, 4
    capped = table.where(fp.col("n") >= 0).update(set={"n": fp.increment(2, max=4)})
    assert (capped.matched, capped.changed) == (5, 3)
    kept = table.where(fp.col("n") >= 0).update(set={"tags": fp.remove("z")})
    assert (kept.matched, kept.changed) == (5, 0)


def test_update_and_delete_take_progress(key_client: Client, database: str) -> None:
    table = start(key_client, database)
    assert table.update(set={"n": 1}, progress=False).matched == 1
    assert table.where(fp.col("n") == 1).delete(progress=False).changed == 1


# ---------------------------------------------------------------------------------------------
# Reruns and the two spellings of IDs


def frame() -> pd.DataFrame:
    return pd.DataFrame({"name": ["Ada", "Bo"], "n": [1, 2]})


def test_a_load_without_ids_says_a_rerun_writes_the_rows_again(
    key_client: Client, database: str
) -> None:
    table = key_client.create_table(database, new_id("t"), schema=COLUMNS)
    with pytest.warns(
        fp.FrameportWarning, match="writes these rows again.*id_from=.*id_hash="
    ) as caught:
        report = table.load(frame(), progress=False)
    assert report.rerun_safe is False
    assert [warning.filename for warning in caught] == [__file__]  # the user's line, not asyncio's
    assert "a rerun writes these rows again" in report.summary()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        safe = table.load(frame(), id_hash=["name"], progress=False)
    assert safe.rerun_safe is True and "rerun" not in safe.summary()
    assert table.load(frame(), id_from="name", progress=False).rerun_safe


def test_id_from_names_the_id_column_and_id_hash_hashes_the_key_columns(
    key_client: Client, database: str
) -> None:
    valued = key_client.create_table(database, new_id("t"), schema=COLUMNS)
    valued.load(frame(), id_from="name", progress=False)
    assert sorted(valued.to_pandas(progress=False)["$id"]) == ["Ada", "Bo"]
    hashed = key_client.create_table(database, new_id("t"), schema=COLUMNS)
    first = hashed.load(frame(), id_hash=["name", "n"], progress=False)
    again = hashed.load(frame(), id_hash=["name", "n"], progress=False)
    assert (first.written, again.written, again.skipped) == (2, 0, 2)
    one = hashed.load(frame(), id_hash="name", progress=False)  # one column, as a string
    assert one.written == 2 and hashed.count() == 4
    with pytest.raises(fp.LoadError, match="id_from= or id_hash="):
        hashed.load(frame(), id_from="name", id_hash=["n"], progress=False)


def test_the_list_spelling_of_id_from_still_hashes_with_a_warning_naming_id_hash(
    key_client: Client, database: str
) -> None:
    table = key_client.create_table(database, new_id("t"), schema=COLUMNS)
    new = table.load(frame(), id_hash=["name"], progress=False)
    with pytest.warns(FutureWarning, match=r"id_hash=\['name'\]"):
        old = table.load(frame(), id_from=["name"], progress=False)
    assert (new.written, old.written, old.skipped) == (2, 0, 2)


@pytest.mark.usefixtures("credentials")
def test_import_takes_id_hash_and_says_when_a_rerun_writes_again(
    key_client: Client, database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = key_client.create_table(database, new_id("t"), schema=COLUMNS)
    source = tmp_path / "people.csv"
    frame().to_csv(source, index=False)
    args = ["import", database, table.id, str(source), "--no-progress"]
    assert main([*args, "--id-hash", "name,n"]) == 0
    assert main([*args, "--id-hash", "name,n"]) == 0
    assert "written 0 · skipped 2" in capsys.readouterr().out
    assert main([*args, "--id-from", "name,n"]) == 0
    captured = capsys.readouterr()
    assert "written 0 · skipped 2" in captured.out and "--id-hash" in captured.err
    assert main(args) == 0
    assert "a rerun writes these rows again" in capsys.readouterr().out
