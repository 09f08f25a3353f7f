"""Databases, tables, columns and indexes checked over HTTP, through both interfaces
(service interface, "IDs", "Dates and lists", "The catalog",
"Columns", "Models", "Rate limits", "Error types")."""

from __future__ import annotations

import re
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
    ok,
    q,
    session_client,
    wait_available,
)

from frameport.local import LocalService

DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$")
COMMON = ["key", "type", "status", "error", "required", "array", "$createdAt", "$updatedAt"]
#: Route type, extra create parameters → the model's fields beyond the common part
#: (service interface, "Models").
MODEL_FIELDS: list[tuple[str, dict[str, Any], set[str]]] = [
    ("string", {"size": 10}, {"size", "default", "encrypt"}),
    ("varchar", {"size": 10}, {"size", "default", "encrypt"}),
    ("text", {}, {"default", "encrypt"}),
    ("mediumtext", {}, {"default", "encrypt"}),
    ("longtext", {}, {"default", "encrypt"}),
    ("integer", {}, {"min", "max", "default"}),
    ("float", {}, {"min", "max", "default"}),
    ("boolean", {}, {"default"}),
    ("datetime", {}, {"format", "default"}),
    ("email", {}, {"format", "default"}),
    ("ip", {}, {"format", "default"}),
    ("url", {}, {"format", "default"}),
    ("enum", {"elements": ["a"]}, {"format", "elements", "default"}),
]


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        yield svc


@pytest.fixture(scope="module")
def client(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as admin:
        yield admin


def assert_dates(model: dict[str, Any]) -> None:
    for name in ("$createdAt", "$updatedAt"):
        assert DATETIME.match(model[name]), (name, model[name])


# --- IDs (service interface, "IDs") ---------------------------------------------------------


def test_generated_ids(client: httpx.Client) -> None:
    database = ok(client.post("/tablesdb", json={"databaseId": "unique()", "name": "u"}), 201)
    assert re.fullmatch(r"[0-9a-f]{20}", database["$id"])
    path = f"/tablesdb/{database['$id']}/tables"
    table = ok(client.post(path, json={"tableId": "unique()", "name": "t"}), 201)
    assert re.fullmatch(r"[0-9a-f]{20}", table["$id"]) and table["databaseId"] == database["$id"]
    legacy = f"/databases/{database['$id']}/collections"
    collection = ok(client.post(legacy, json={"collectionId": "unique()", "name": "c"}), 201)
    assert len(collection["$id"]) == 20 and collection["$id"] != table["$id"]


def test_id_rules_for_created_ids_and_keys(client: httpx.Client) -> None:
    longest = "d" * 36
    create_database(client, longest)
    for bad in ("d" * 37, ".d", "-d", "_d", "d/d", "d d"):
        response = client.post("/tablesdb", json={"databaseId": bad, "name": "x"})
        body = assert_error(response, 400, "general_argument_invalid")
        assert str(body["message"]).startswith("Invalid `databaseId` param: ")
    tables = f"/tablesdb/{longest}/tables"
    create_table(client, longest, "t" * 36)
    too_long = client.post(tables, json={"tableId": "t" * 37, "name": "x"})
    assert_error(too_long, 400, "general_argument_invalid")
    legacy = client.post(
        f"/databases/{longest}/collections", json={"collectionId": "-c", "name": "x"}
    )
    assert str(assert_error(legacy, 400, "general_argument_invalid")["message"]).startswith(
        "Invalid `collectionId` param: "
    )
    columns = f"{tables}/{'t' * 36}/columns"
    ok(client.post(f"{columns}/boolean", json={"key": "k" * 36, "required": False}), 202)
    for bad_key in ("k" * 37, "unique()", "_k"):
        response = client.post(f"{columns}/boolean", json={"key": bad_key, "required": False})
        body = assert_error(response, 400, "general_argument_invalid")
        assert str(body["message"]).startswith("Invalid `key` param: ")
    indexes = f"{tables}/{'t' * 36}/indexes"
    wait_available(client, longest, "t" * 36)
    bad_index = client.post(indexes, json={"key": "i" * 37, "type": "key", "columns": ["k" * 36]})
    assert_error(bad_index, 400, "general_argument_invalid")


def test_path_ids_are_validated(client: httpx.Client) -> None:
    create_database(client, "paths")
    create_table(client, "paths", "t", [{"key": "n", "type": "integer", "required": False}])
    bad = "x" * 37
    for path, name in (
        (f"/tablesdb/{bad}", "databaseId"),
        ("/databases/_bad", "databaseId"),
        (f"/tablesdb/{bad}/tables", "databaseId"),
        (f"/tablesdb/paths/tables/{bad}", "tableId"),
        ("/databases/paths/collections/.c", "collectionId"),
        (f"/tablesdb/paths/tables/t/columns/{bad}", "key"),
        ("/databases/paths/collections/t/attributes/-n", "key"),
        (f"/tablesdb/paths/tables/t/indexes/{bad}", "key"),
    ):
        body = assert_error(client.get(path), 400, "general_argument_invalid")
        assert str(body["message"]).startswith(f"Invalid `{name}` param: "), (path, body)
    assert_error(client.delete(f"/tablesdb/paths/tables/{bad}"), 400, "general_argument_invalid")
    valid_but_missing = client.get("/tablesdb/paths/tables/missing")
    assert_error(valid_but_missing, 404, "table_not_found")


# --- list envelopes (service interface, "Dates and lists") ---------------------------------


def test_list_envelopes_and_totals(client: httpx.Client) -> None:
    create_database(client, "lists")
    columns = [{"key": f"c{n}", "type": "integer", "required": False} for n in range(3)]
    indexes = [{"key": f"i{n}", "type": "key", "columns": [f"c{n}"]} for n in range(3)]
    for table_id in ("a", "b", "c"):
        create_table(client, "lists", table_id, columns, indexes)
    limit = q("limit", values=[1])
    for path, plural in (
        ("/tablesdb/lists/tables", "tables"),
        ("/databases/lists/collections", "collections"),
        ("/tablesdb/lists/tables/a/columns", "columns"),
        ("/databases/lists/collections/a/attributes", "attributes"),
        ("/tablesdb/lists/tables/a/indexes", "indexes"),
        ("/databases/lists/collections/a/indexes", "indexes"),
    ):
        listed = ok(client.get(path, params={"queries[0]": limit}))
        assert list(listed) == ["total", plural], path
        assert listed["total"] == 3 and len(listed[plural]) == 1, path
        uncounted = ok(client.get(path, params={"total": "false"}))
        assert uncounted["total"] == 0 and len(uncounted[plural]) == 3, path
    databases = ok(client.get("/databases", params={"queries[]": [q("equal", "name", ["lists"])]}))
    assert list(databases) == ["total", "databases"] and databases["total"] == 1
    assert databases["databases"][0]["type"] == "tablesdb"


def test_column_list_filters(client: httpx.Client) -> None:
    create_database(client, "colfilter")
    columns = [
        {"key": "small", "type": "integer", "required": False, "max": 100},
        {"key": "big", "type": "integer", "required": True},
        {"key": "names", "type": "string", "size": 5, "required": False, "array": True},
    ]
    create_table(client, "colfilter", "t", columns)
    path = "/tablesdb/colfilter/tables/t/columns"

    def keys(*queries: str) -> list[str]:
        listed = ok(client.get(path, params={"queries[]": list(queries)}))
        return [column["key"] for column in listed["columns"]]

    assert keys(q("equal", "size", [4])) == ["small"]
    assert keys(q("equal", "size", [8])) == ["big"]
    assert keys(q("equal", "required", [True])) == ["big"]
    assert keys(q("equal", "array", [True])) == ["names"]
    assert keys(q("equal", "status", ["available"]), q("equal", "error", [""])) == [
        "small",
        "big",
        "names",
    ]
    bad = client.get(path, params={"queries[]": [q("equal", "elements", ["x"])]})
    body = assert_error(bad, 400, "general_argument_invalid")
    assert str(body["message"]).startswith("Invalid `queries` param: Invalid query: ")


# --- models (service interface, "The catalog", "Columns", "Models") ------------------------


def test_database_and_table_models(client: httpx.Client) -> None:
    database = ok(client.post("/databases", json={"databaseId": "models", "name": "M"}), 201)
    assert database["type"] == "legacy" and database["status"] is None
    assert_dates(database)
    off = ok(
        client.post("/tablesdb", json={"databaseId": "off", "name": "O", "enabled": "false"}), 201
    )
    assert off["enabled"] is False
    table = create_table(
        client,
        "models",
        "t",
        [{"key": "n", "type": "integer", "required": False}],
        [{"key": "i", "type": "key", "columns": ["n"]}],
        permissions=['create("any")', 'read("users")'],
    )
    assert_dates(table)
    assert table["$permissions"] == ['create("any")', 'read("users")']
    assert table["rowSecurity"] is False and table["enabled"] is True
    assert isinstance(table["bytesMax"], int) and isinstance(table["bytesUsed"], int)
    assert_dates(table["columns"][0])
    assert_dates(table["indexes"][0])
    assert table["indexes"][0]["lengths"] == [] and table["indexes"][0]["orders"] == []
    collection = ok(client.get("/databases/models/collections/t"))
    assert list(collection) == [
        "$id", "$createdAt", "$updatedAt", "$permissions", "databaseId", "name", "enabled",
        "documentSecurity", "attributes", "indexes", "bytesMax", "bytesUsed",
    ]  # fmt: skip
    assert collection["indexes"][0]["attributes"] == ["n"]


@pytest.mark.parametrize(("kind", "params", "extra"), MODEL_FIELDS)
def test_column_models_list_their_fields(
    client: httpx.Client, kind: str, params: dict[str, Any], extra: set[str]
) -> None:
    database = f"m{kind}"
    create_database(client, database)
    create_table(client, database, "t")
    path = f"/tablesdb/{database}/tables/t/columns/{kind}"
    made = ok(client.post(path, json={"key": "v", "required": False, **params}), 202)
    assert list(made)[:8] == COMMON and set(made) == set(COMMON) | extra
    assert made["default"] is None and made["array"] is False
    assert_dates(made)
    legacy_path = f"/databases/{database}/collections/t/attributes/{kind}"
    legacy = ok(client.post(legacy_path, json={"key": "w", "required": False, **params}), 202)
    assert set(legacy) == set(made) and legacy["status"] == "processing"


def test_column_parameter_bounds(client: httpx.Client) -> None:
    create_database(client, "bounds")
    create_table(client, "bounds", "t")
    path = "/tablesdb/bounds/tables/t/columns"

    def post(kind: str, **params: Any) -> httpx.Response:
        return client.post(f"{path}/{kind}", json={"key": "v", "required": False, **params})

    for kind, params in (
        ("string", {"size": 0}),
        ("string", {"size": 1_073_741_825}),
        ("varchar", {"size": 16_382}),
        ("enum", {"elements": [f"e{n}" for n in range(101)]}),
        ("enum", {"elements": ["x" * 256]}),
        ("enum", {"elements": []}),
        ("integer", {"min": 2**63}),
        ("datetime", {"default": "yesterday"}),
        ("ip", {"default": "300.1.1.1"}),
        ("url", {"default": "no url"}),
    ):
        assert_error(post(kind, **params), 400, "general_argument_invalid")
    missing = client.post(f"{path}/boolean", json={"key": "v"})
    assert assert_error(missing, 400, "general_argument_invalid")["message"] == (
        'Param "required" is not optional.'
    )
    assert_error(post("float", min=0, max=1, default=2.5), 400, "column_value_invalid")
    assert_error(post("float", min=2.0, max=1.0), 400, "column_value_invalid")
    array_default = post("string", size=5, array=True, default="x")
    body = assert_error(array_default, 400, "column_default_unsupported")
    assert body["message"] == "Cannot set default value for array columns"
    encrypted = ok(post("string", size=150, encrypt=True), 202)
    assert encrypted["encrypt"] is True
    biggest = client.post(
        f"{path}/string", json={"key": "big", "required": False, "size": 1_073_741_824}
    )
    assert ok(biggest, 202)["size"] == 1_073_741_824


def test_table_create_limits_and_names(client: httpx.Client) -> None:
    create_database(client, "tlimits")
    path = "/tablesdb/tlimits/tables"
    too_many = [{"key": f"c{n}", "type": "boolean", "required": False} for n in range(101)]
    response = client.post(path, json={"tableId": "t", "name": "t", "columns": too_many})
    assert_error(response, 400, "general_argument_invalid")
    long_name = client.post(path, json={"tableId": "t", "name": "n" * 129})
    assert_error(long_name, 400, "general_argument_invalid")
    missing = client.post(path, json={"tableId": "t"})
    assert assert_error(missing, 400, "general_argument_invalid")["message"] == (
        'Param "name" is not optional.'
    )
    assert_error(
        client.post("/databases/nodb/collections", json={"collectionId": "c", "name": "c"}),
        404,
        "database_not_found",
    )


# --- scopes, visibility, headers
# (service interface, "Roles and scopes", "Permissions", "Rate limits") -------------------


def test_schema_scopes_and_messages(service: LocalService, client: httpx.Client) -> None:
    create_database(client, "scopes")
    create_table(client, "scopes", "t")
    create_user(service, "schema-reader")
    with session_client(service, "schema-reader") as user:
        tables = user.post("/tablesdb/scopes/tables", json={"tableId": "x", "name": "x"})
        body = assert_error(tables, 401, "general_unauthorized_scope")
        assert body["message"] == (
            "schema-reader@example.org (role: users) missing scopes "
            '(["tables.write","collections.write"])'
        )
        legacy = user.get("/databases/scopes/collections/t/attributes")
        body = assert_error(legacy, 401, "general_unauthorized_scope")
        assert body["message"].endswith('missing scopes (["collections.read","attributes.read"])')
        indexes = user.get("/tablesdb/scopes/tables/t/indexes")
        assert_error(indexes, 401, "general_unauthorized_scope")
        assert_error(user.get("/tablesdb/scopes"), 401, "general_unauthorized_scope")


def test_disabled_table_is_hidden_from_non_keys(
    service: LocalService, client: httpx.Client
) -> None:
    create_database(client, "hidden")
    create_table(client, "hidden", "t", permissions=['read("any")'], enabled=False)
    assert ok(client.get("/tablesdb/hidden/tables/t"))["enabled"] is False
    assert ok(client.get("/tablesdb/hidden/tables/t/rows"))["total"] == 0
    create_user(service, "hidden-user")
    with session_client(service, "hidden-user") as user:
        body = assert_error(user.get("/tablesdb/hidden/tables/t/rows"), 404, "table_not_found")
        assert "'t'" in body["message"]
        legacy = user.get("/databases/hidden/collections/t/documents")
        assert_error(legacy, 404, "collection_not_found")


def test_schema_routes_send_no_rate_limit_headers(client: httpx.Client) -> None:
    created = client.post("/tablesdb", json={"databaseId": "nolimit", "name": "n"})
    for response in (created, client.get("/tablesdb"), client.get("/tablesdb/nolimit/tables")):
        assert response.status_code in (200, 201)
        assert not [name for name in response.headers if name.startswith("x-ratelimit")]
