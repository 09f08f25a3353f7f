"""Ordering and cursor paging of rows (service interface, "Ordering and cursors") against an
ordering computed in Python.

From every row of a small table with ties and nulls, `cursorAfter` and `cursorBefore` return
exactly the neighbouring rows of the Python ordering; a cursor row with null in an order
column is a 400. A 12,000-row table is paged through in both directions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from tablesdb_helpers import (
    assert_error,
    create_database,
    create_table,
    fold,
    insert_rows,
    key_client,
    list_rows,
    ok,
    q,
    row_ids,
)

from frameport.local import LocalService

DB = "pdb"
LABELS = ["b", "B", "a", "á", "c", None]
Orders = Sequence[tuple[str, bool]]


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        yield svc


@pytest.fixture(scope="module")
def client(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as admin:
        create_database(admin, DB)
        yield admin


@pytest.fixture(scope="module")
def small(client: httpx.Client) -> list[dict[str, Any]]:
    columns = [
        {"key": "grp", "type": "integer", "required": False},
        {"key": "label", "type": "string", "size": 8, "required": False},
        {"key": "flag", "type": "boolean", "required": False},
    ]
    create_table(client, DB, "small", columns)
    rows = [
        {
            "$id": f"s{index:02d}",
            "grp": None if index % 9 == 4 else index % 4,
            "label": LABELS[index % len(LABELS)],
            "flag": index % 3 == 0,
            "$createdAt": f"2024-01-0{index % 3 + 1}T00:00:00.000+00:00",
        }
        for index in range(48)
    ]
    insert_rows(client, DB, "small", rows)
    return [{**row, "$sequence": index + 1} for index, row in enumerate(rows)]


def expected_order(rows: list[dict[str, Any]], orders: Orders) -> list[dict[str, Any]]:
    """The orders, then $sequence (in a first $createdAt's direction); nulls sort first
    ascending, last descending; strings compare folded (service interface,
    "Ordering and cursors", "Collation")."""
    keys = list(orders)
    if not any(key in ("$id", "$sequence") for key, _ in keys):
        descending = bool(keys) and keys[0][0] in ("$createdAt", "$updatedAt") and keys[0][1]
        keys.append(("$sequence", descending))
    ordered = list(rows)
    for key, descending in reversed(keys):

        def sort_key(row: dict[str, Any], key: str = key) -> tuple[bool, Any]:
            value = row[key]
            return (value is not None, fold(value) if isinstance(value, str) else value or 0)

        ordered.sort(key=sort_key, reverse=descending)
    return ordered


def order_queries(orders: Orders) -> list[str]:
    return [q("orderDesc" if descending else "orderAsc", key) for key, descending in orders]


ORDERINGS: list[Orders] = [
    [],
    [("grp", False)],
    [("grp", True)],
    [("label", False), ("grp", True)],
    [("label", True)],
    [("$createdAt", True)],
    [("$createdAt", False), ("label", True)],
    [("$id", True)],
    [("flag", False), ("$sequence", True)],
]


@pytest.mark.parametrize("orders", ORDERINGS, ids=lambda orders: json.dumps(orders))
def test_cursors_from_every_row(
    client: httpx.Client, small: list[dict[str, Any]], orders: Orders
) -> None:
    expected = [row["$id"] for row in expected_order(small, orders)]
    ordering = order_queries(orders)
    whole = row_ids(list_rows(client, DB, "small", *ordering, q("limit", values=[100])))
    assert whole == expected
    by_id = {row["$id"]: row for row in small}
    for position, row_id in enumerate(expected):
        after = list_rows(
            client,
            DB,
            "small",
            *ordering,
            q("cursorAfter", values=[row_id]),
            q("limit", values=[5]),
        )
        before = list_rows(
            client,
            DB,
            "small",
            *ordering,
            q("cursorBefore", values=[row_id]),
            q("limit", values=[5]),
        )
        if any(by_id[row_id][key] is None for key, _ in orders):
            assert_error(after, 400, "database_query_order_null")
            assert_error(before, 400, "database_query_order_null")
            continue
        assert row_ids(after) == expected[position + 1 : position + 6]
        assert row_ids(before) == expected[max(position - 5, 0) : position]


def test_cursor_with_offset_and_filters(client: httpx.Client, small: list[dict[str, Any]]) -> None:
    filtered = [row for row in small if row["grp"] is not None and row["grp"] > 0]
    ordered = expected_order(filtered, [("label", False)])
    expected = [row["$id"] for row in ordered]
    first = next(index for index, row in enumerate(ordered) if row["label"] is not None)
    ordering = [q("greaterThan", "grp", [0]), q("orderAsc", "label")]
    after = list_rows(
        client,
        DB,
        "small",
        *ordering,
        q("cursorAfter", values=[expected[first + 1]]),
        q("offset", values=[2]),
        q("limit", values=[4]),
    )
    assert row_ids(after) == expected[first + 4 : first + 8]
    before = list_rows(
        client,
        DB,
        "small",
        *ordering,
        q("cursorBefore", values=[expected[first + 8]]),
        q("offset", values=[1]),
        q("limit", values=[3]),
    )
    assert row_ids(before) == expected[first + 4 : first + 7]


def test_cursor_errors(client: httpx.Client, small: list[dict[str, Any]]) -> None:
    body = assert_error(
        list_rows(client, DB, "small", q("cursorAfter", values=["missing"])),
        400,
        "general_cursor_not_found",
    )
    assert body["message"] == "Row 'missing' for the 'cursor' value not found."
    legacy = client.get(
        f"/databases/{DB}/collections/small/documents",
        params={"queries[]": [q("cursorBefore", values=["missing"])]},
    )
    body = assert_error(legacy, 400, "general_cursor_not_found")
    assert body["message"] == "Document 'missing' for the 'cursor' value not found."
    random_with_cursor = list_rows(
        client, DB, "small", q("orderRandom"), q("cursorAfter", values=["s01"])
    )
    assert_error(random_with_cursor, 400, "general_query_invalid")
    shuffled = row_ids(list_rows(client, DB, "small", q("orderRandom"), q("limit", values=[100])))
    assert sorted(shuffled) == sorted(row["$id"] for row in small)


def _walk(client: httpx.Client, table: str, orders: Orders, last: str | None = None) -> list[str]:
    """Every row of `table` by cursor pages of 5000: forwards, or backwards from `last`."""
    ordering = order_queries(orders)
    method = "cursorAfter" if last is None else "cursorBefore"
    collected = [] if last is None else [last]
    cursor = last or ""
    while True:
        paging = [q(method, values=[cursor])] if cursor else []
        body = ok(list_rows(client, DB, table, *ordering, *paging, q("limit", values=[5000])))
        page = [row["$id"] for row in body["rows"]]
        assert body["total"] == 5000
        if not page:
            return collected
        if last is None:
            collected += page
            cursor = page[-1]
        else:
            collected = page + collected
            cursor = page[0]


def test_paging_twelve_thousand_rows(client: httpx.Client) -> None:
    columns = [
        {"key": "n", "type": "integer", "required": True},
        {"key": "s", "type": "string", "size": 8, "required": False},
    ]
    create_table(client, DB, "big", columns)
    rows = [
        {"$id": f"b{index:05d}", "n": index % 97, "s": ["x", "Y", "y", None][index % 4]}
        for index in range(12_000)
    ]
    insert_rows(client, DB, "big", rows)
    numbered = [{**row, "$sequence": index + 1} for index, row in enumerate(rows)]
    for orders in ([], [("n", True)]):
        expected = [row["$id"] for row in expected_order(numbered, orders)]
        assert _walk(client, "big", orders) == expected
        assert _walk(client, "big", orders, last=expected[-1]) == expected
    body = ok(list_rows(client, DB, "big", q("equal", "s", ["y"]), q("limit", values=[1])))
    assert body["total"] == 5000
    body = ok(list_rows(client, DB, "big", q("equal", "s", ["x"]), q("limit", values=[1])))
    assert body["total"] == 3000


SEQUENCE_FILTERS = [
    [("greaterThan", 10), ("lessThanEqual", 30), ("greaterThan", 20)],
    [("greaterThanEqual", 12), ("lessThan", 40), ("lessThanEqual", 25)],
    [("equal", 17), ("greaterThan", 3)],
    [("lessThan", 9)],
    [("greaterThan", 30), ("lessThan", 20)],
]

SEQUENCE_KEEPS = {
    "greaterThan": lambda seq, value: seq > value,
    "greaterThanEqual": lambda seq, value: seq >= value,
    "lessThan": lambda seq, value: seq < value,
    "lessThanEqual": lambda seq, value: seq <= value,
    "equal": lambda seq, value: seq == value,
}


@pytest.mark.parametrize("filters", SEQUENCE_FILTERS, ids=lambda filters: json.dumps(filters))
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_sequence_comparisons_with_cursors(
    client: httpx.Client, small: list[dict[str, Any]], filters: list[tuple[str, int]],
    descending: bool,
) -> None:  # fmt: skip
    """Several comparisons of `$sequence` AND-ed together, paged by cursor either way from
    every row and by offset (which walks the index of `$sequence` alone): the rows both the
    comparisons and the cursor or offset keep."""
    kept = [
        row
        for row in small
        if all(SEQUENCE_KEEPS[method](row["$sequence"], value) for method, value in filters)
    ]
    expected = [row["$id"] for row in expected_order(kept, [("$sequence", descending)])]
    queries = [q(method, "$sequence", [value]) for method, value in filters]
    queries.append(q("orderDesc" if descending else "orderAsc", "$sequence"))
    for position, row_id in enumerate(expected):
        after = list_rows(client, DB, "small", *queries, q("cursorAfter", values=[row_id]),
                          q("limit", values=[4]))  # fmt: skip
        before = list_rows(client, DB, "small", *queries, q("cursorBefore", values=[row_id]),
                           q("limit", values=[4]))  # fmt: skip
        assert row_ids(after) == expected[position + 1 : position + 5]
        assert row_ids(before) == expected[max(position - 4, 0) : position]
        skipped = list_rows(client, DB, "small", *queries, q("offset", values=[position]),
                            q("limit", values=[4]))  # fmt: skip
        assert row_ids(skipped) == expected[position : position + 4]
        two_on = (q("offset", values=[2]), q("limit", values=[4]))
        skipping_after = list_rows(client, DB, "small", *queries, *two_on,
                                   q("cursorAfter", values=[row_id]))  # fmt: skip
        assert row_ids(skipping_after) == expected[position + 3 : position + 7]
        skipping_before = list_rows(client, DB, "small", *queries, *two_on,
                                    q("cursorBefore", values=[row_id]))  # fmt: skip
        assert row_ids(skipping_before) == expected[max(position - 6, 0) : max(position - 2, 0)]
    counted = ok(list_rows(client, DB, "small", *queries, q("limit", values=[1])))
    assert counted["total"] == len(expected)


DAY = "2024-01-0{}T00:00:00.000+00:00"
CREATED_FILTERS = [
    [("greaterThan", DAY.format(2))],
    [("lessThanEqual", DAY.format(1))],
    [("equal", DAY.format(2)), ("greaterThan", 10)],
    [("greaterThanEqual", DAY.format(2)), ("lessThanEqual", 30)],
    [("between", DAY.format(1), DAY.format(2)), ("greaterThan", 40)],
]
CREATED_KEEPS: dict[str, Callable[..., bool]] = {
    **SEQUENCE_KEEPS,
    "between": lambda value, low, high: low <= value <= high,
}


@pytest.mark.parametrize("filters", CREATED_FILTERS, ids=lambda filters: json.dumps(filters))
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("limit", [3, 40])
def test_created_at_ranges_with_cursors_and_offsets(
    client: httpx.Client, small: list[dict[str, Any]], filters: list[tuple[Any, ...]],
    descending: bool, limit: int,
) -> None:  # fmt: skip
    """A comparison of `$createdAt` (with one of `$sequence`), paged by cursor either way from
    every row, by offset and by both: the rows Python keeps, in `$sequence` order. Pages of 3 of the
    48 rows are read along the rowid, pages of 40 through the `$createdAt` index (a range
    holding fewer rows than the scan would pass): both give the same rows."""

    def keeps(row: dict[str, Any]) -> bool:
        for method, *values in filters:
            value = row["$sequence"] if isinstance(values[0], int) else row["$createdAt"]
            if not CREATED_KEEPS[method](value, *values):
                return False
        return True

    kept = [row for row in small if keeps(row)]
    expected = [row["$id"] for row in expected_order(kept, [("$sequence", descending)])]
    queries = [
        q(method, "$sequence" if isinstance(values[0], int) else "$createdAt", values)
        for method, *values in filters
    ]
    queries.append(q("orderDesc" if descending else "orderAsc", "$sequence"))
    page = q("limit", values=[limit])
    for position, row_id in enumerate(expected):
        after = list_rows(client, DB, "small", *queries, q("cursorAfter", values=[row_id]), page)
        before = list_rows(client, DB, "small", *queries, q("cursorBefore", values=[row_id]), page)
        assert row_ids(after) == expected[position + 1 : position + 1 + limit]
        assert row_ids(before) == expected[max(position - limit, 0) : position]
        skipped = list_rows(client, DB, "small", *queries, q("offset", values=[position]), page)
        assert row_ids(skipped) == expected[position : position + limit]
        skipping = list_rows(client, DB, "small", *queries, q("offset", values=[2]), page,
                             q("cursorAfter", values=[row_id]))  # fmt: skip
        assert row_ids(skipping) == expected[position + 3 : position + 3 + limit]
    assert ok(list_rows(client, DB, "small", *queries, page))["total"] == len(expected)


def test_a_data_folder_of_an_earlier_version_gets_the_sequence_index(tmp_path: Path) -> None:
    """Row tables made before the index of `$sequence` existed get it when the service starts
    on their folder, and offsets read the same rows through it."""
    rows = [{"$id": f"r{index:03d}", "grp": index % 7} for index in range(250)]
    with LocalService(data_dir=tmp_path) as first, key_client(first) as admin:
        create_database(admin, DB)
        create_table(admin, DB, "older", [{"key": "grp", "type": "integer", "required": False}])
        insert_rows(admin, DB, "older", rows)
    with closing(sqlite3.connect(tmp_path / "service.sqlite3")) as conn:
        dropped = [name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'r\\_%\\_seq' "
            "ESCAPE '\\'"
        )]  # fmt: skip
        assert dropped
        for name in dropped:
            conn.execute(f"DROP INDEX {name}")
        conn.commit()
    with LocalService(data_dir=tmp_path) as again, key_client(again) as admin:
        for offset in (0, 1, 137, 249, 250):
            for order, expected in (("orderAsc", rows), ("orderDesc", rows[::-1])):
                page = list_rows(admin, DB, "older", q(order, "$sequence"),
                                 q("greaterThan", "$sequence", [0]),
                                 q("offset", values=[offset]), q("limit", values=[5]))  # fmt: skip
                assert row_ids(page) == [row["$id"] for row in expected[offset : offset + 5]]
    with closing(sqlite3.connect(tmp_path / "service.sqlite3")) as conn:
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert set(dropped) <= names
