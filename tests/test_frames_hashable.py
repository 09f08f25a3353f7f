"""Every frame frameport returns works with pandas' hashing operations: ``$permissions`` reads
as tuples of strings, so drop_duplicates, nunique, groupby and merge work, and a frame read
back can be written again with its permissions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from frameport import Bucket, Client, Table
from tables_support import data_frames, new_id

READ_ANY = 'read("any")'
UPDATE_ANY = 'update("any")'


@pytest.fixture(scope="module")
def table(key_client: Client) -> Table:
    frame = pd.DataFrame(
        {
            "city": ["Oslo", "Oslo", "Bergen", "Bergen"],
            "$permissions": [[READ_ANY], [READ_ANY], [READ_ANY, UPDATE_ANY], []],
        }
    )
    created = key_client.create_table(new_id("hashable"), "t", schema=frame[["city"]])
    created.insert(frame, progress=False)
    return created


def frames_of_a_table(table: Table) -> dict[str, Callable[[], pd.DataFrame]]:
    return {
        "to_pandas": lambda: table.to_pandas(progress=False, system=True),
        "to_pandas pyarrow": lambda: table.to_pandas(
            dtype_backend="pyarrow", progress=False, system=True
        ),
        "iter_batches": lambda: pd.concat(
            data_frames(table.iter_batches(progress=False, system=True))
        ),
        "select": lambda: table.select("city", "$permissions").to_pandas(progress=False),
    }


@pytest.mark.parametrize("read", ["to_pandas", "to_pandas pyarrow", "iter_batches", "select"])
def test_hashing_operations_on_a_table_read(table: Table, read: str) -> None:
    frame = frames_of_a_table(table)[read]().reset_index(drop=True)
    permissions = frame["$permissions"]
    assert set(permissions) == {(READ_ANY,), (READ_ANY, UPDATE_ANY), ()}
    user_view = frame[["city", "$permissions"]]
    assert len(user_view.drop_duplicates()) == 3
    assert frame.nunique()["$permissions"] == 3
    assert user_view.groupby("$permissions", sort=False).size().to_dict() == {
        (READ_ANY,): 2,
        (READ_ANY, UPDATE_ANY): 1,
        (): 1,
    }
    pairs = user_view.merge(user_view, on=["city", "$permissions"])
    assert len(pairs) == 2 * 2 + 1 + 1
    assert frame.duplicated(subset=["$permissions"]).sum() == 1


def test_a_frame_read_back_writes_its_permissions_again(table: Table) -> None:
    read = table.to_pandas(progress=False, system=["id", "permissions"])
    changed = read.assign(city=read["city"].str.upper())
    table.upsert(changed, progress=False)
    again = table.to_pandas(progress=False, system=True).set_index("$id")
    assert again["city"].to_dict() == changed.set_index("$id")["city"].to_dict()
    assert again["$permissions"].to_dict() == read.set_index("$id")["$permissions"].to_dict()


def test_hashing_operations_on_a_bucket_listing(key_client: Client) -> None:
    bucket: Bucket = key_client.create_bucket(new_id("hashable"), "hashable")
    for name in ("a.txt", "b.txt"):
        bucket.upload_bytes(b"x", name, permissions=[READ_ANY], progress=False)
    files: Any = bucket.list_files(details=True)
    assert files["$permissions"].tolist() == [(READ_ANY,), (READ_ANY,)]
    assert files["$permissions"].nunique() == 1
    assert len(files[["$permissions", "sizeOriginal"]].drop_duplicates()) == 1
    assert files.groupby("$permissions").size().tolist() == [2]


@pytest.mark.parametrize("read", ["to_pandas", "to_pandas pyarrow", "iter_batches", "select"])
def test_rows_with_the_same_permissions_share_one_tuple(key_client: Client, read: str) -> None:
    # One tuple object per distinct permission list: a table's rows mostly share theirs.
    lists = [
        [READ_ANY, UPDATE_ANY],
        [UPDATE_ANY, READ_ANY],  # the same roles in another order: another list
        [READ_ANY, UPDATE_ANY],
        [],
        ['read("user:u1")', 'delete("team:t1/owner")'],
        [],
        [READ_ANY],
    ]
    frame = pd.DataFrame({"n": range(len(lists)), "$permissions": lists})
    created = key_client.create_table(new_id("shared"), "t", schema=frame[["n"]])
    created.insert(frame, progress=False)
    reads: dict[str, Callable[[], pd.DataFrame]] = {
        **frames_of_a_table(created),
        "select": lambda: created.select("n", "$permissions").to_pandas(progress=False),
    }
    read_back = reads[read]()
    permissions = read_back.sort_values("n")["$permissions"].tolist()
    assert permissions == [tuple(roles) for roles in lists]
    assert permissions[0] is permissions[2] and permissions[3] is permissions[5]
    assert permissions[0] is not permissions[1]
