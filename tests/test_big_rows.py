"""Rows of a megabyte and more: every bulk write (load, insert, import, restore, copy) is cut
by encoded size as well as by count, so that no request passes the service's body limit; a
request the service still refuses as too large (413) is halved; a row too large for any
request is a rejected row naming its size, and the rest of the write goes on. Bulk update
and delete answers list at most 100 rows beside the total of rows changed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

import frameport as fp
from frameport import Client
from frameport.cli import main
from frameport.local import LocalService
from tables_support import new_id

MIB = 1024 * 1024
ROWS = 24  # 24 MiB: over the local service's 16 MiB body limit in 100-row requests
SCHEMA = {"n": "integer", "blob": "longtext"}


def big_rows(count: int, size: int = MIB, first: int = 0) -> pd.DataFrame:
    """`count` rows whose `blob` is `size` characters, each row's its own."""
    return pd.DataFrame(
        {
            "$id": [f"r{first + i}" for i in range(count)],
            "n": range(first, first + count),
            "blob": [chr(ord("a") + (first + i) % 26) * size for i in range(count)],
        }
    )


def new_table(client: Client, name: str = "big") -> fp.Table:
    database = new_id("big")
    client.create_database(database)
    return client.create_table(database, name, schema=SCHEMA)


def assert_holds(table: fp.Table, frame: pd.DataFrame) -> None:
    """The table holds exactly the rows of `frame` (IDs, numbers and whole blobs)."""
    read = table.to_pandas(progress=False).sort_values("n").reset_index(drop=True)
    assert read["$id"].tolist() == frame["$id"].tolist()
    assert read["n"].tolist() == frame["n"].tolist()
    assert read["blob"].tolist() == frame["blob"].tolist()


def size_named(message: str) -> int:
    """The size in bytes a rejection's message names."""
    match = re.search(r"([\d,]+) bytes", message)
    assert match, message
    return int(match.group(1).replace(",", ""))


# --- load, insert, import ----------------------------------------------------------------


def test_a_load_of_one_mib_rows_writes_them_all(client: Client) -> None:
    table = new_table(client)
    frame = big_rows(ROWS)
    report = table.load(frame, progress=False)
    assert report.written == ROWS and report.ok, report.rejected
    assert report.batches == 3  # 11 rows of 1 MiB a request at most
    assert_holds(table, frame)


def test_an_insert_of_one_mib_rows_writes_them_all(client: Client) -> None:
    table = new_table(client)
    frame = big_rows(20)
    table.insert(frame, progress=False)
    assert_holds(table, frame)


@pytest.mark.usefixtures("credentials")
def test_an_import_of_a_file_of_one_mib_rows_writes_them_all(
    client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = new_table(client)
    frame = big_rows(20)
    source = tmp_path / "big.parquet"
    frame.to_parquet(source)
    code = main(["import", table.database_id, table.id, str(source)])
    assert code == 0, capsys.readouterr()
    assert_holds(table, frame)


def assert_only_rejected(table: fp.Table, frame: pd.DataFrame, place: int, size: int) -> None:
    """A load of `frame`, its row at `place` given a blob of `size` bytes, writes the other
    rows and rejects that one, naming its size and its largest column."""
    frame.loc[place, "blob"] = "z" * size
    report = table.load(frame, progress=False)
    assert report.written == len(frame) - 1
    ((row, column, message),) = report.rejected[["row", "column", "message"]].to_numpy()
    assert row == place and column == "blob"
    assert size < size_named(message) < size + 100
    assert_holds(table, frame.drop(index=place).reset_index(drop=True))


def test_a_row_over_the_body_limit_is_rejected_with_its_size_and_the_others_written(
    client: Client,
) -> None:
    assert_only_rejected(new_table(client), big_rows(6), 3, 17 * MIB)


# --- a service that refuses smaller bodies: 413 halves the request -----------------------


@pytest.fixture(scope="module")
def small_bodies() -> Iterator[Client]:
    with LocalService(max_body_size=3 * MIB) as service, service.client() as client:
        yield client


def test_a_request_refused_as_too_large_is_halved_and_written(small_bodies: Client) -> None:
    table = new_table(small_bodies)
    frame = big_rows(8)  # 8 MiB: one request under frameport's cut, 413 here
    report = table.load(frame, progress=False)
    assert report.written == 8 and report.ok, report.rejected
    assert report.retries == 3  # 8 → 4 + 4 → 2 + 2 + 2 + 2
    assert_holds(table, frame)


def test_a_row_the_service_refuses_as_too_large_is_rejected_with_its_size(
    small_bodies: Client,
) -> None:
    assert_only_rejected(new_table(small_bodies), big_rows(3), 1, 4 * MIB)


# --- restore and copy --------------------------------------------------------------------


@pytest.fixture(scope="module")
def backed_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, fp.Table, Path]]:
    with LocalService() as service, service.client() as client:
        table = new_table(client)
        table.load(big_rows(ROWS), batch_size=8, progress=False)  # 8 MiB requests
        target = tmp_path_factory.mktemp("big-backup") / "big"
        report = client.backup(target, progress=False)
        assert report.rows == ROWS
        yield client, table, target


def test_a_restore_of_one_mib_rows_writes_every_row(
    backed_up: tuple[Client, fp.Table, Path],
) -> None:
    _, table, archive = backed_up
    with LocalService() as service, service.client() as destination:
        report = destination.restore(archive, progress=False)
        assert report.written == ROWS and not report.rejected
        assert_holds(destination.table(table.database_id, table.id), big_rows(ROWS))


def test_a_copy_of_one_mib_rows_writes_every_row(
    backed_up: tuple[Client, fp.Table, Path],
) -> None:
    source, table, _ = backed_up
    with LocalService() as service, service.client() as destination:
        report = fp.copy(source, destination, progress=False)
        assert report.written == ROWS and not report.rejected
        assert_holds(destination.table(table.database_id, table.id), big_rows(ROWS))


# --- bulk update and delete answers ------------------------------------------------------


def test_bulk_update_and_delete_answer_the_total_and_list_at_most_100_rows(
    service: LocalService, client: Client
) -> None:
    database = new_id("bulk")
    client.create_database(database)
    table = client.create_table(database, "many", schema={"n": "integer", "tag": "string(8)"})
    table.insert(pd.DataFrame({"n": range(250), "tag": "a"}), progress=False)
    rows = f"{service.endpoint}/tablesdb/{database}/tables/many/rows"
    headers = {"X-Service-Project": service.project, "X-Service-Key": service.key}
    with httpx.Client(headers=headers) as http:
        updated = http.patch(rows, json={"data": {"tag": "b"}, "queries": []})
        assert updated.status_code == 200, updated.text
        assert updated.json()["total"] == 250 and len(updated.json()["rows"]) == 100
        deleted = http.request("DELETE", rows, json={"queries": []})
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["total"] == 250 and len(deleted.json()["rows"]) == 100
    assert table.count() == 0


def test_update_and_delete_reports_count_every_row_past_the_first_100(client: Client) -> None:
    database = new_id("bulk")
    client.create_database(database)
    table = client.create_table(database, "many", schema={"n": "integer", "tag": "string(8)"})
    table.insert(pd.DataFrame({"n": range(250), "tag": "a"}), progress=False)
    updated = table.where(fp.col("n") >= 10).update({"tag": "b"})
    assert (updated.matched, updated.changed, updated.requests) == (240, 240, 1)
    assert table.where(fp.col("tag") == "b").count() == 240
    deleted = table.where(fp.col("n") >= 10).delete()
    assert (deleted.matched, deleted.changed, deleted.requests) == (240, 240, 1)
    assert table.count() == 10
