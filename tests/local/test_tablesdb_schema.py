"""Databases, tables, columns and indexes through both interfaces
(service interface, "The catalog", "Columns", "Models")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tablesdb_helpers import (
    assert_error,
    create_database,
    create_table,
    create_user,
    key_client,
    list_rows,
    ok,
    q,
    session_client,
    settle,
    wait_available,
)

from frameport.local import LocalService
from frameport.local.store import _schema_store

DATABASE_FIELDS = ["$id", "name", "$createdAt", "$updatedAt", "enabled", "type", "status"]
TABLE_FIELDS = [
    "$id",
    "$createdAt",
    "$updatedAt",
    "$permissions",
    "databaseId",
    "name",
    "enabled",
    "rowSecurity",
    "columns",
    "indexes",
    "bytesMax",
    "bytesUsed",
]
INDEX_FIELDS = [
    "$id",
    "$createdAt",
    "$updatedAt",
    "key",
    "type",
    "status",
    "error",
    "columns",
    "lengths",
    "orders",
]


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        yield svc


@pytest.fixture(scope="module")
def client(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as admin:
        yield admin


def test_databases_through_both_forms(client: httpx.Client) -> None:
    made = ok(client.post("/tablesdb", json={"databaseId": "alpha", "name": "Alpha"}), 201)
    assert list(made) == DATABASE_FIELDS and made["type"] == "tablesdb" and made["enabled"]
    legacy = ok(client.post("/databases", json={"databaseId": "beta", "name": "Béta"}), 201)
    assert legacy["type"] == "legacy"
    assert ok(client.get("/databases/alpha"))["$id"] == "alpha"
    assert ok(client.get("/tablesdb/beta"))["name"] == "Béta"
    create_table(client, "beta", "t")
    assert ok(client.get("/databases/beta/collections/t"))["$id"] == "t"
    listed = ok(client.get("/tablesdb"))
    assert listed["total"] == 2 and [db["$id"] for db in listed["databases"]] == ["alpha", "beta"]
    found = ok(client.get("/databases", params={"queries[]": [q("equal", "name", ["BETA"])]}))
    assert [db["$id"] for db in found["databases"]] == ["beta"]
    searched = ok(client.get("/tablesdb", params={"search": "alp"}))
    assert [db["$id"] for db in searched["databases"]] == ["alpha"]
    assert ok(client.get("/tablesdb", params={"total": "false"}))["total"] == 0
    paged = ok(client.get("/tablesdb", params={"queries[]": [q("cursorAfter", values=["alpha"])]}))
    assert [db["$id"] for db in paged["databases"]] == ["beta"]
    updated = ok(client.put("/tablesdb/alpha", json={"name": "Renamed", "enabled": False}))
    assert (updated["name"], updated["enabled"]) == ("Renamed", False)
    assert client.delete("/databases/beta").status_code == 204
    body = assert_error(client.get("/tablesdb/beta"), 404, "database_not_found")
    assert "beta" in body["message"]


def test_database_errors(client: httpx.Client) -> None:
    ok(client.post("/tablesdb", json={"databaseId": "dup", "name": "d"}), 201)
    again = client.post("/databases", json={"databaseId": "dup", "name": "d"})
    assert_error(again, 409, "database_already_exists")
    bad_id = client.post("/tablesdb", json={"databaseId": "_x", "name": "d"})
    assert_error(bad_id, 400, "general_argument_invalid")
    long_name = client.post("/tablesdb", json={"databaseId": "ln", "name": "n" * 129})
    assert_error(long_name, 400, "general_argument_invalid")
    missing = assert_error(
        client.post("/tablesdb", json={"name": "d"}), 400, "general_argument_invalid"
    )
    assert missing["message"] == 'Param "databaseId" is not optional.'
    bad_query = client.get("/tablesdb", params={"queries[]": [q("equal", "nope", ["x"])]})
    body = assert_error(bad_query, 400, "general_argument_invalid")
    assert body["message"] == (
        "Invalid `queries` param: Invalid query: Attribute not found in schema: nope"
    )
    cursor = client.get("/tablesdb", params={"queries[]": [q("cursorAfter", values=["zzz"])]})
    assert_error(cursor, 400, "general_cursor_not_found")


def test_tables_and_collections(client: httpx.Client) -> None:
    create_database(client, "tdb")
    made = create_table(
        client, "tdb", "people", permissions=['read("any")', 'write("users")'], rowSecurity=True
    )
    assert list(made) == TABLE_FIELDS
    assert made["$permissions"] == [
        'read("any")',
        'create("users")',
        'update("users")',
        'delete("users")',
    ]
    assert made["rowSecurity"] is True and made["columns"] == [] and made["indexes"] == []
    assert made["databaseId"] == "tdb" and made["bytesMax"] > 0
    collection = ok(client.get("/databases/tdb/collections/people"))
    assert collection["documentSecurity"] is True and collection["attributes"] == []
    assert "rowSecurity" not in collection and "columns" not in collection
    legacy = client.post(
        "/databases/tdb/collections",
        json={"collectionId": "places", "name": "Places", "documentSecurity": False},
    )
    assert ok(legacy, 201)["documentSecurity"] is False
    listed = ok(client.get("/tablesdb/tdb/tables"))
    assert [table["$id"] for table in listed["tables"]] == ["people", "places"]
    secured = client.get(
        "/tablesdb/tdb/tables", params={"queries[]": [q("equal", "rowSecurity", [True])]}
    )
    assert [table["$id"] for table in ok(secured)["tables"]] == ["people"]
    legacy_list = ok(client.get("/databases/tdb/collections", params={"search": "plac"}))
    assert [table["$id"] for table in legacy_list["collections"]] == ["places"]
    updated = ok(client.put("/tablesdb/tdb/tables/places", json={"name": "Spots"}))
    assert updated["name"] == "Spots" and updated["rowSecurity"] is False
    assert updated["$permissions"] == []
    assert client.delete("/databases/tdb/collections/places").status_code == 204
    assert_error(client.get("/tablesdb/tdb/tables/places"), 404, "table_not_found")
    assert_error(client.get("/databases/tdb/collections/places"), 404, "collection_not_found")
    dup = client.post("/tablesdb/tdb/tables", json={"tableId": "people", "name": "p"})
    assert_error(dup, 409, "table_already_exists")
    legacy_dup = client.post(
        "/databases/tdb/collections", json={"collectionId": "people", "name": "p"}
    )
    assert_error(legacy_dup, 409, "collection_already_exists")
    bad_permission = client.post(
        "/tablesdb/tdb/tables", json={"tableId": "x", "name": "x", "permissions": ["read(any)"]}
    )
    assert_error(bad_permission, 400, "general_argument_invalid")
    assert_error(client.get("/tablesdb/nodb/tables"), 404, "database_not_found")


COLUMN_CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "string",
        {"size": 20, "default": "x"},
        {"type": "string", "size": 20, "default": "x", "encrypt": False},
    ),
    ("varchar", {"size": 30}, {"type": "varchar", "size": 30}),
    ("text", {}, {"type": "text"}),
    (
        "integer",
        {"min": -5, "max": 5, "default": 1},
        {"type": "integer", "min": -5, "max": 5, "default": 1},
    ),
    ("integer", {}, {"min": -(2**63), "max": 2**63 - 1}),
    ("float", {"min": 0.5}, {"type": "double", "min": 0.5, "max": 1.7976931348623157e308}),
    ("boolean", {"default": True}, {"type": "boolean", "default": True}),
    (
        "datetime",
        {"default": "2024-01-01"},
        {"type": "datetime", "format": "datetime", "default": "2024-01-01T00:00:00.000+00:00"},
    ),
    ("email", {"default": "a@b.co"}, {"type": "string", "format": "email"}),
    (
        "enum",
        {"elements": ["a", "b"], "default": "b"},
        {"type": "string", "format": "enum", "elements": ["a", "b"]},
    ),
    ("ip", {}, {"type": "string", "format": "ip"}),
    ("url", {"array": True}, {"type": "string", "format": "url", "array": True}),
]


@pytest.mark.parametrize(("kind", "params", "expected"), COLUMN_CASES)
def test_columns_of_every_type(
    client: httpx.Client, kind: str, params: dict[str, Any], expected: dict[str, Any]
) -> None:
    database = f"c{abs(hash((kind, str(params)))) % 10**8}"
    create_database(client, database)
    create_table(client, database, "t")
    path = f"/tablesdb/{database}/tables/t/columns"
    made = ok(client.post(f"{path}/{kind}", json={"key": "v", "required": False, **params}), 202)
    assert made["status"] == "processing" and made["key"] == "v" and made["error"] == ""
    assert {key: made[key] for key in expected} == expected
    assert list(made)[:8] == [
        "key",
        "type",
        "status",
        "error",
        "required",
        "array",
        "$createdAt",
        "$updatedAt",
    ]
    table = wait_available(client, database, "t")
    assert table["columns"][0] == {
        **made,
        "status": "available",
        "$updatedAt": table["columns"][0]["$updatedAt"],
    }
    assert ok(client.get(f"{path}/v"))["status"] == "available"
    legacy = ok(client.get(f"/databases/{database}/collections/t/attributes"))
    assert legacy["total"] == 1 and legacy["attributes"][0]["key"] == "v"


def test_column_errors(client: httpx.Client) -> None:
    create_database(client, "cerr")
    create_table(client, "cerr", "t", [{"key": "n", "type": "integer", "required": False}])
    path = "/tablesdb/cerr/tables/t/columns"
    legacy = "/databases/cerr/collections/t/attributes"
    required_default = {"key": "a", "required": True, "default": 1}
    body = assert_error(
        client.post(f"{path}/integer", json=required_default), 400, "column_default_unsupported"
    )
    assert body["message"] == "Cannot set default value for required column"
    assert_error(
        client.post(f"{legacy}/integer", json=required_default),
        400,
        "attribute_default_unsupported",
    )
    array_default = {"key": "a", "required": False, "array": True, "default": 1}
    assert_error(
        client.post(f"{path}/integer", json=array_default), 400, "column_default_unsupported"
    )
    bad_range = {"key": "a", "required": False, "min": 5, "max": 1}
    assert_error(client.post(f"{path}/integer", json=bad_range), 400, "column_value_invalid")
    out_of_range = {"key": "a", "required": False, "min": 0, "max": 10, "default": 11}
    assert_error(client.post(f"{path}/integer", json=out_of_range), 400, "column_value_invalid")
    assert_error(client.post(f"{legacy}/float", json={**bad_range}), 400, "attribute_value_invalid")
    enum_default = {"key": "a", "required": False, "elements": ["x"], "default": "y"}
    assert_error(client.post(f"{path}/enum", json=enum_default), 400, "column_value_invalid")
    no_size = client.post(f"{path}/string", json={"key": "a", "required": False})
    assert_error(no_size, 400, "general_argument_invalid")
    bad_email = client.post(
        f"{path}/email", json={"key": "a", "required": False, "default": "nope"}
    )
    assert_error(bad_email, 400, "general_argument_invalid")
    duplicate = client.post(f"{path}/integer", json={"key": "n", "required": False})
    assert_error(duplicate, 409, "column_already_exists")
    assert_error(
        client.post(f"{legacy}/integer", json={"key": "n", "required": False}),
        409,
        "attribute_already_exists",
    )
    assert_error(client.get(f"{path}/nope"), 404, "column_not_found")
    assert_error(client.get(f"{legacy}/nope"), 404, "attribute_not_found")
    unknown_type = client.post(f"{path}/blob", json={"key": "a", "required": False})
    assert_error(unknown_type, 404, "general_route_not_found")
    by_type = ok(client.get(path, params={"queries[]": [q("equal", "type", ["integer"])]}))
    assert [column["key"] for column in by_type["columns"]] == ["n"]


def test_delete_column_drops_its_values_and_indexes(client: httpx.Client) -> None:
    create_database(client, "cdel")
    columns = [
        {"key": "a", "type": "string", "size": 8, "required": False},
        {"key": "b", "type": "integer", "required": False},
    ]
    indexes = [{"key": "ab", "type": "key", "columns": ["a", "b"]}]
    create_table(client, "cdel", "t", columns, indexes)
    ok(
        client.post(
            "/tablesdb/cdel/tables/t/rows", json={"rowId": "r", "data": {"a": "x", "b": 1}}
        ),
        201,
    )
    assert client.delete("/tablesdb/cdel/tables/t/columns/a").status_code == 204
    table = ok(client.get("/tablesdb/cdel/tables/t"))
    assert [column["key"] for column in table["columns"]] == ["b"] and table["indexes"] == []
    row = ok(client.get("/tablesdb/cdel/tables/t/rows/r"))
    assert "a" not in row and row["b"] == 1
    assert_error(
        list_rows(client, "cdel", "t", q("equal", "a", ["x"])), 400, "general_query_invalid"
    )


def test_indexes(client: httpx.Client) -> None:
    create_database(client, "idx")
    columns = [
        {"key": "name", "type": "string", "size": 16, "required": False},
        {"key": "n", "type": "integer", "required": False},
    ]
    create_table(client, "idx", "t", columns)
    path = "/tablesdb/idx/tables/t/indexes"
    made = ok(
        client.post(
            path, json={"key": "by_n", "type": "key", "columns": ["n"], "orders": ["desc"]}
        ),
        202,
    )
    assert list(made) == INDEX_FIELDS and made["status"] == "processing"
    assert made["orders"] == ["DESC"] and made["columns"] == ["n"]
    wait_available(client, "idx", "t")
    assert ok(client.get(f"{path}/by_n"))["status"] == "available"
    legacy = ok(client.get("/databases/idx/collections/t/indexes/by_n"))
    assert legacy["attributes"] == ["n"] and "columns" not in legacy
    rows = [
        {"$id": f"r{index}", "name": "Same" if index < 2 else f"n{index}", "n": index}
        for index in range(4)
    ]
    ok(client.post("/tablesdb/idx/tables/t/rows", json={"rows": rows}), 201)
    failed = ok(client.post(path, json={"key": "u", "type": "unique", "columns": ["name"]}), 202)
    assert failed["status"] == "processing"
    table = settle(client, "idx", "t")
    by_key = {index["key"]: index for index in table["indexes"]}
    assert by_key["u"]["status"] == "failed" and by_key["u"]["error"]
    listed = ok(client.get(path, params={"queries[]": [q("equal", "status", ["failed"])]}))
    assert [index["key"] for index in listed["indexes"]] == ["u"]
    duplicate = client.post(path, json={"key": "by_n", "type": "key", "columns": ["name"]})
    assert_error(duplicate, 409, "index_already_exists")
    unknown = client.post(path, json={"key": "x", "type": "key", "columns": ["nope"]})
    assert_error(unknown, 404, "column_not_found")
    bad_type = client.post(path, json={"key": "x", "type": "spatial", "columns": ["n"]})
    assert_error(bad_type, 400, "general_argument_invalid")
    fulltext_on_number = client.post(path, json={"key": "x", "type": "fulltext", "columns": ["n"]})
    assert_error(fulltext_on_number, 400, "general_argument_invalid")
    assert client.delete(f"{path}/u").status_code == 204
    assert_error(client.get(f"{path}/u"), 404, "index_not_found")
    assert_error(client.delete(f"{path}/u"), 404, "index_not_found")
    search = list_rows(client, "idx", "t", q("search", "name", ["same"]))
    assert_error(search, 400, "general_query_invalid")
    ok(client.post(path, json={"key": "ft", "type": "fulltext", "columns": ["name"]}), 202)
    found = ok(list_rows(client, "idx", "t", q("search", "name", ["same"])))
    assert [row["$id"] for row in found["rows"]] == ["r0", "r1"]


def test_schema_routes_need_key_scopes(service: LocalService, client: httpx.Client) -> None:
    create_user(service, "schema-user")
    with session_client(service, "schema-user") as user:
        for response in (
            user.post("/tablesdb", json={"databaseId": "u", "name": "u"}),
            user.get("/tablesdb"),
            user.get("/databases/alpha/collections"),
            user.post("/tablesdb/alpha/tables/t/columns/string", json={"key": "k"}),
        ):
            body = assert_error(response, 401, "general_unauthorized_scope")
            assert "(role: users) missing scopes" in body["message"]


def test_processing_columns_are_not_usable_yet(client: httpx.Client) -> None:
    """While a column is `processing`, rows and indexes cannot use it (the delay is raised for
    this test so that the state lasts)."""
    create_database(client, "proc")
    create_table(client, "proc", "t")
    delay = _schema_store.PROCESSING_SECONDS
    _schema_store.PROCESSING_SECONDS = 60
    try:
        made = client.post(
            "/tablesdb/proc/tables/t/columns/integer", json={"key": "n", "required": False}
        )
        assert ok(made, 202)["status"] == "processing"
        row = client.post("/tablesdb/proc/tables/t/rows", json={"rowId": "r", "data": {"n": 1}})
        body = assert_error(row, 400, "row_invalid_structure")
        assert body["message"] == 'Invalid document structure: Unknown attribute: "n"'
        index = client.post(
            "/tablesdb/proc/tables/t/indexes", json={"key": "i", "type": "key", "columns": ["n"]}
        )
        assert_error(index, 400, "column_not_available")
        legacy = client.post(
            "/databases/proc/collections/t/indexes",
            json={"key": "i", "type": "key", "attributes": ["n"]},
        )
        assert_error(legacy, 400, "attribute_not_available")
    finally:
        _schema_store.PROCESSING_SECONDS = delay


def test_column_limit(client: httpx.Client) -> None:
    create_database(client, "wide")
    for start in range(0, 500, 100):
        columns = [
            {"key": f"c{index}", "type": "integer", "required": False}
            for index in range(start, start + 100)
        ]
        if start == 0:
            create_table(client, "wide", "t", columns)
        else:
            for column in columns:
                path = "/tablesdb/wide/tables/t/columns/integer"
                ok(client.post(path, json={k: v for k, v in column.items() if k != "type"}), 202)
    one_more = {"key": "extra", "required": False}
    response = client.post("/tablesdb/wide/tables/t/columns/integer", json=one_more)
    assert_error(response, 400, "column_limit_exceeded")
    legacy = client.post("/databases/wide/collections/t/attributes/integer", json=one_more)
    assert_error(legacy, 400, "attribute_limit_exceeded")
