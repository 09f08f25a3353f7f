"""bigint, point, line and polygon columns: created, validated, stored, filtered and served
under both interfaces, with their column models."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tablesdb_helpers import (
    assert_error,
    create_database,
    create_table,
    key_client,
    list_rows,
    ok,
    q,
    row_ids,
    wait_available,
)

from frameport.local import LocalService

POINT = [10.5, -3]
LINE = [[0, 0], [1, 1], [2, 0.5]]
POLYGON = [[[0, 0], [4, 0], [4, 4], [0, 0]]]
COLUMNS = [
    {"key": "big", "type": "bigint", "required": False, "min": -(2**63), "max": 2**63 - 1},
    {"key": "where", "type": "point", "required": False},
    {"key": "path", "type": "line", "required": False},
    {"key": "area", "type": "polygon", "required": False},
]
BASES = {
    "tablesdb": ("/tablesdb", "tables", "rows"),
    "legacy": ("/databases", "collections", "documents"),
}


@pytest.fixture(scope="module", params=sorted(BASES))
def rows_path(request: pytest.FixtureRequest, service: LocalService) -> Iterator[str]:
    base, tables, rows = BASES[request.param]
    with key_client(service) as admin:
        database = f"types{request.param}"
        create_database(admin, database, base=base)
        body = {"tableId": "geo", "name": "geo", "columns": COLUMNS}
        if tables == "collections":
            body = {"collectionId": "geo", "name": "geo", "attributes": COLUMNS}
        ok(admin.post(f"{base}/{database}/{tables}", json=body), 201)
        yield f"{base}/{database}/{tables}/geo/{rows}"


@pytest.fixture
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        yield client


def create(
    admin: httpx.Client, rows_path: str, row_id: str, data: dict[str, Any]
) -> httpx.Response:
    key = "rowId" if "/rows" in rows_path else "documentId"
    return admin.post(rows_path, json={key: row_id, "data": data})


def test_values_round_trip(admin: httpx.Client, rows_path: str) -> None:
    data = {"big": 2**62 + 7, "where": POINT, "path": LINE, "area": POLYGON}
    created = ok(create(admin, rows_path, "full", data), 201)
    got = ok(admin.get(f"{rows_path}/full"))
    for key, value in data.items():
        assert created[key] == value and got[key] == value


def test_column_models(admin: httpx.Client, rows_path: str) -> None:
    table_path = rows_path.rsplit("/", 1)[0]
    listed = ok(admin.get(table_path))
    columns = {c["key"]: c for c in listed.get("columns", listed.get("attributes", []))}
    assert columns["big"]["type"] == "bigint"
    assert (columns["big"]["min"], columns["big"]["max"]) == (-(2**63), 2**63 - 1)
    assert {columns[k]["type"] for k in ("where", "path", "area")} == {"point", "line", "polygon"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("big", 2**63),
        ("big", "12"),
        ("where", [1]),
        ("where", [1, "2"]),
        ("where", [1, 2, 3]),
        ("path", [[0, 0]]),
        ("area", [[[0, 0], [1, 0], [1, 1], [0, 1]]]),  # not closed
        ("area", [[[0, 0], [1, 0], [0, 0]]]),  # too few points
    ],
)
def test_invalid_values_are_refused(
    admin: httpx.Client, rows_path: str, key: str, value: Any
) -> None:
    response = create(admin, rows_path, "bad", {key: value})
    kind = "row" if "/rows" in rows_path else "document"
    assert_error(response, 400, f"{kind}_invalid_structure")


def test_filters(admin: httpx.Client, rows_path: str) -> None:
    ok(create(admin, rows_path, "small", {"big": -(2**40), "where": [0, 0]}), 201)
    ok(create(admin, rows_path, "large", {"big": 2**60, "where": POINT}), 201)

    def ids(*queries: str) -> set[str]:
        response = admin.get(rows_path, params={"queries[]": list(queries)})
        assert response.status_code == 200, response.text
        return {row["$id"] for row in response.json()[rows_path.rsplit("/", 1)[1]]}

    assert {"large"} <= ids(q("greaterThan", "big", [2**59]))
    assert "small" in ids(q("lessThan", "big", [0]))
    assert "large" in ids(q("equal", "where", [POINT]))
    assert "large" not in ids(q("notEqual", "where", [POINT]))
    assert "small" in ids(q("isNull", "path"))
    spatial = admin.get(rows_path, params={"queries[]": [q("crosses", "path", [LINE])]})
    assert_error(spatial, 400, "general_query_invalid")


def test_a_table_created_with_columns_by_route(admin: httpx.Client) -> None:
    create_database(admin, "typesroute")
    create_table(admin, "typesroute", "t")
    columns = "/tablesdb/typesroute/tables/t/columns"
    ok(admin.post(f"{columns}/bigint", json={"key": "b", "required": False, "default": 5}), 202)
    ok(admin.post(f"{columns}/point", json={"key": "p", "required": False, "default": [1, 2]}), 202)
    bad = admin.post(f"{columns}/line", json={"key": "l", "required": False, "default": [[1, 2]]})
    assert bad.status_code == 400, bad.text
    wait_available(admin, "typesroute", "t")
    row = ok(
        admin.post("/tablesdb/typesroute/tables/t/rows", json={"rowId": "r", "data": {"b": None}}),
        201,
    )
    assert (row["b"], row["p"]) == (5, [1, 2])
    assert row_ids(list_rows(admin, "typesroute", "t", q("equal", "p", [[1, 2]]))) == ["r"]
