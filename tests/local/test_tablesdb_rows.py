"""Rows and documents through HTTP: the Row model, every write path and its errors
(service interface, "Rows", "Models")."""

from __future__ import annotations

import json
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

DB, TABLE = "rdb", "things"
ROWS = f"/tablesdb/{DB}/tables/{TABLE}/rows"
DOCUMENTS = f"/databases/{DB}/collections/{TABLE}/documents"
COLUMNS = [
    {"key": "name", "type": "string", "size": 16, "required": True},
    {"key": "age", "type": "integer", "required": False, "min": 0, "max": 150},
    {"key": "nick", "type": "string", "size": 16, "required": False, "default": "anon"},
    {"key": "score", "type": "double", "required": False},
    {"key": "active", "type": "boolean", "required": False},
    {"key": "born", "type": "datetime", "required": False},
    {"key": "email", "type": "string", "format": "email", "required": False},
    {
        "key": "color",
        "type": "string",
        "format": "enum",
        "elements": ["red", "green"],
        "required": False,
    },
    {"key": "ip", "type": "string", "format": "ip", "required": False},
    {"key": "site", "type": "string", "format": "url", "required": False},
    {"key": "tags", "type": "string", "size": 8, "required": False, "array": True},
]
SYSTEM = ["$id", "$sequence", "$tableId", "$databaseId", "$createdAt", "$updatedAt", "$permissions"]


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        yield svc


@pytest.fixture(scope="module")
def client(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as admin:
        create_database(admin, DB)
        create_table(admin, DB, TABLE, COLUMNS)
        yield admin


def create(client: httpx.Client, row_id: str, **data: Any) -> httpx.Response:
    return client.post(ROWS, json={"rowId": row_id, "data": data})


def test_row_model_and_defaults(client: httpx.Client) -> None:
    row = ok(
        create(
            client,
            "m1",
            name="Ada",
            score=0.1 + 0.2,
            active=False,
            born="2024-03-01T10:00:00+01:00",
            tags=["a", "b"],
        ),
        201,
    )
    assert list(row) == SYSTEM + [column["key"] for column in COLUMNS]
    assert row["$id"] == "m1" and row["$tableId"] == TABLE and row["$databaseId"] == DB
    assert isinstance(row["$sequence"], str) and row["$sequence"].isdigit()
    assert row["$permissions"] == []
    assert row["nick"] == "anon" and row["age"] is None and row["active"] is False
    assert row["score"] == 0.30000000000000004
    assert row["born"] == "2024-03-01T09:00:00.000+00:00"
    assert row["tags"] == ["a", "b"]
    assert row["$createdAt"].endswith("+00:00") and row["$createdAt"] == row["$updatedAt"]
    old = client.get(f"{ROWS}/m1", headers={"X-Service-Response-Format": "1.8.0"})
    assert ok(old)["$sequence"] == int(row["$sequence"])
    document = ok(client.get(f"{DOCUMENTS}/m1"))
    assert document["$collectionId"] == TABLE and "$tableId" not in document
    assert {key: value for key, value in document.items() if key != "$collectionId"} == {
        key: value for key, value in row.items() if key != "$tableId"
    }


@pytest.mark.parametrize(
    "value", [0.1, 1e-300, 5e-324, 1.7976931348623157e308, -2.5, 123456789.123456789, 3.0]
)
def test_floats_round_trip_exactly(client: httpx.Client, value: float) -> None:
    row_id = f"f{abs(hash(value)) % 10**9}"
    assert ok(create(client, row_id, name="f", score=value), 201)["score"] == value
    assert ok(client.get(f"{ROWS}/{row_id}"))["score"] == value


def test_internal_keys_are_stripped_and_times_honoured_for_keys(client: httpx.Client) -> None:
    data = {
        "name": "x",
        "$sequence": "999",
        "$databaseId": "other",
        "$tableId": "other",
        "$collectionId": "other",
        "$createdAt": "2001-01-01T00:00:00.000+00:00",
    }
    row = ok(client.post(ROWS, json={"rowId": "i1", "data": data}), 201)
    assert row["$databaseId"] == DB and row["$tableId"] == TABLE and row["$sequence"] != "999"
    assert row["$createdAt"] == "2001-01-01T00:00:00.000+00:00"
    as_text = client.post(ROWS, json={"rowId": "i2", "data": json.dumps({"name": "json"})})
    assert ok(as_text, 201)["name"] == "json"
    inside = {"name": "p", "$permissions": ['read("any")'], "$id": "ignored"}
    row = ok(client.post(ROWS, json={"rowId": "i3", "data": inside}), 201)
    assert row["$id"] == "i3" and row["$permissions"] == ['read("any")']
    param_wins = {"rowId": "i4", "data": inside, "permissions": []}
    assert ok(client.post(ROWS, json=param_wins), 201)["$permissions"] == []


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("2024-02-29T23:59:59.999+00:00", "2024-02-29T23:59:59.999+00:00"),
        ("0001-01-01T00:00:00.000+00:00", "0001-01-01T00:00:00.000+00:00"),
        ("2024-03-01T01:00:00.000+02:00", "2024-02-29T23:00:00.000+00:00"),
        ("2024-03-01T00:00:00Z", "2024-03-01T00:00:00.000+00:00"),
        ("2023-02-29T00:00:00.000+00:00", None),  # not a day of 2023
        ("2024-01-01T24:00:00.000+00:00", None),
    ],
)
def test_given_times_are_checked_and_kept_in_the_service_form(
    client: httpx.Client, given: str, kept: str | None
) -> None:
    row_id = f"t{abs(hash(given)) % 10**9}"
    data = {"name": "t", "$createdAt": given, "$updatedAt": given}
    answer = client.post(ROWS, json={"rowId": row_id, "data": data})
    if kept is None:
        assert answer.status_code == 400
        assert answer.json()["message"].endswith('Attribute "$createdAt" has invalid type.')
        assert client.get(f"{ROWS}/{row_id}").status_code == 404
        return
    row = ok(answer, 201)
    assert row["$createdAt"] == row["$updatedAt"] == kept
    assert ok(client.get(f"{ROWS}/{row_id}"))["$createdAt"] == kept


STRUCTURE_ERRORS = [
    ({"name": "x", "nope": 1}, 'Invalid document structure: Unknown attribute: "nope"'),
    ({"age": 3}, 'Invalid document structure: Missing required attribute "name"'),
    ({"name": None}, 'Invalid document structure: Missing required attribute "name"'),
    ({"name": 5}, None),
    ({"name": "x" * 17}, None),
    ({"name": "x", "age": 151}, None),
    ({"name": "x", "age": 1.5}, None),
    ({"name": "x", "age": True}, None),
    ({"name": "x", "score": "1"}, None),
    ({"name": "x", "active": "true"}, None),
    ({"name": "x", "born": "soon"}, None),
    ({"name": "x", "email": "not-an-email"}, None),
    ({"name": "x", "color": "blue"}, None),
    ({"name": "x", "ip": "300.1.1.1"}, None),
    ({"name": "x", "site": "no url"}, None),
    ({"name": "x", "tags": "a"}, 'Invalid document structure: Attribute "tags" must be an array'),
    ({"name": "x", "tags": ["a", 1]}, None),
    ({"name": "x", "$foo": 1}, 'Invalid document structure: Unknown attribute: "$foo"'),
]


@pytest.mark.parametrize(("data", "message"), STRUCTURE_ERRORS)
def test_invalid_structure(client: httpx.Client, data: dict[str, Any], message: str | None) -> None:
    body = assert_error(
        client.post(ROWS, json={"rowId": "bad", "data": data}), 400, "row_invalid_structure"
    )
    assert body["message"].startswith("Invalid document structure: ")
    if message is not None:
        assert body["message"] == message
    legacy = client.post(DOCUMENTS, json={"documentId": "bad", "data": data})
    assert_error(legacy, 400, "document_invalid_structure")


def test_create_parameter_rules(client: httpx.Client) -> None:
    both = {"rowId": "x", "data": {"name": "x"}, "rows": [{"name": "y"}]}
    assert_error(client.post(ROWS, json=both), 400, "general_bad_request")
    assert_error(client.post(ROWS, json={"rowId": "x"}), 400, "row_missing_data")
    body = assert_error(client.post(ROWS, json={"data": {"name": "x"}}), 400, "row_missing_data")
    assert body["message"] == "Row ID is required when creating a single row."
    legacy = assert_error(
        client.post(DOCUMENTS, json={"data": {"name": "x"}}), 400, "document_missing_data"
    )
    assert legacy["message"] == "Document ID is required when creating a single document."
    with_id = {"rowId": "x", "rows": [{"name": "y"}]}
    assert_error(client.post(ROWS, json=with_id), 400, "general_bad_request")
    with_permissions = {"permissions": ['read("any")'], "rows": [{"name": "y"}]}
    assert_error(client.post(ROWS, json=with_permissions), 400, "general_bad_request")
    bad_id = client.post(ROWS, json={"rowId": "-bad", "data": {"name": "x"}})
    assert_error(bad_id, 400, "general_argument_invalid")
    create_permission = {"rowId": "cp", "data": {"name": "x"}, "permissions": ['create("any")']}
    assert_error(client.post(ROWS, json=create_permission), 400, "general_argument_invalid")
    ok(create(client, "dup", name="x"), 201)
    assert_error(create(client, "dup", name="x"), 409, "row_already_exists")
    legacy_dup = client.post(DOCUMENTS, json={"documentId": "dup", "data": {"name": "x"}})
    assert_error(legacy_dup, 409, "document_already_exists")
    generated = ok(client.post(ROWS, json={"rowId": "unique()", "data": {"name": "g"}}), 201)
    assert len(generated["$id"]) == 20


def test_missing_database_and_table(client: httpx.Client) -> None:
    body = assert_error(client.get("/tablesdb/nodb/tables/t/rows"), 404, "database_not_found")
    assert "nodb" in body["message"]
    body = assert_error(client.get(f"/tablesdb/{DB}/tables/nope/rows"), 404, "table_not_found")
    assert body["message"] == "Table with the requested ID 'nope' could not be found."
    legacy = client.get(f"/databases/{DB}/collections/nope/documents")
    assert_error(legacy, 404, "collection_not_found")


def test_bulk_create(client: httpx.Client) -> None:
    rows = [{"$id": "b1", "name": "one", "$permissions": ['read("any")']}, {"name": "two"}]
    body = ok(client.post(ROWS, json={"rows": rows}), 201)
    assert body["total"] == 2
    assert [row["name"] for row in body["rows"]] == ["one", "two"]
    assert body["rows"][0]["$id"] == "b1" and body["rows"][0]["$permissions"] == ['read("any")']
    assert len(body["rows"][1]["$id"]) == 20
    too_many = [{"name": f"n{index}"} for index in range(101)]
    assert_error(client.post(ROWS, json={"rows": too_many}), 400, "general_argument_invalid")
    clash = [{"$id": "b3", "name": "x"}, {"$id": "b1", "name": "x"}]
    assert_error(client.post(ROWS, json={"rows": clash}), 409, "row_already_exists")
    assert_error(client.get(f"{ROWS}/b3"), 404, "row_not_found")
    documents = ok(client.post(DOCUMENTS, json={"documents": [{"name": "d"}]}), 201)
    assert documents["total"] == 1 and documents["documents"][0]["$collectionId"] == TABLE


def test_get_update_upsert_delete(client: httpx.Client) -> None:
    ok(create(client, "u1", name="before", age=5), 201)
    updated = ok(client.patch(f"{ROWS}/u1", json={"data": {"age": 6}}))
    assert updated["age"] == 6 and updated["name"] == "before"
    assert updated["$updatedAt"] >= updated["$createdAt"]
    permissions = ok(client.patch(f"{ROWS}/u1", json={"permissions": ['write("any")']}))
    assert permissions["$permissions"] == ['update("any")', 'delete("any")']
    assert permissions["age"] == 6
    assert_error(client.patch(f"{ROWS}/u1", json={}), 400, "row_missing_payload")
    assert_error(client.patch(f"{DOCUMENTS}/u1", json={}), 400, "document_missing_payload")
    body = assert_error(
        client.patch(f"{ROWS}/none", json={"data": {"age": 1}}), 404, "row_not_found"
    )
    assert body["message"] == "Row with the requested ID 'none' could not be found."
    required = client.patch(f"{ROWS}/u1", json={"data": {"name": None}})
    assert_error(required, 400, "row_invalid_structure")
    created = client.put(f"{ROWS}/u2", json={"data": {"name": "upserted"}})
    assert ok(created)["name"] == "upserted"
    replaced = ok(client.put(f"{ROWS}/u2", json={"data": {"name": "again", "age": 9}}))
    assert (replaced["name"], replaced["age"]) == ("again", 9)
    legacy = ok(client.put(f"{DOCUMENTS}/u2", json={"data": {"age": 10}}))
    assert legacy["age"] == 10 and legacy["name"] == "again"
    assert client.delete(f"{ROWS}/u2").status_code == 204
    assert_error(client.get(f"{ROWS}/u2"), 404, "row_not_found")
    assert_error(client.delete(f"{ROWS}/u2"), 404, "row_not_found")
    assert_error(client.get(f"{DOCUMENTS}/u2"), 404, "document_not_found")


def test_bulk_upsert_update_and_delete(client: httpx.Client) -> None:
    rows = [{"$id": f"k{index}", "name": "bulk", "age": index} for index in range(6)]
    ok(client.post(ROWS, json={"rows": rows[:3]}), 201)
    upserted = ok(client.put(ROWS, json={"rows": [{**row, "nick": "up"} for row in rows]}))
    assert upserted["total"] == 6 and {row["nick"] for row in upserted["rows"]} == {"up"}
    updated = client.patch(
        ROWS,
        json={
            "data": {"nick": "old"},
            "queries": [q("greaterThan", "age", [2]), q("equal", "name", ["bulk"])],
        },
    )
    assert [row["$id"] for row in ok(updated)["rows"]] == ["k3", "k4", "k5"]
    assert [row["nick"] for row in ok(updated)["rows"]] == ["old"] * 3
    bad = client.patch(ROWS, json={"data": {"nick": "x"}, "queries": [q("equal", "nope", [1])]})
    assert_error(bad, 400, "general_query_invalid")
    deleted = client.request("DELETE", ROWS, json={"queries": [q("equal", "nick", ["old"])]})
    assert ok(deleted)["total"] == 3 and {row["age"] for row in ok(deleted)["rows"]} == {3, 4, 5}
    remaining = row_ids(list_rows(client, DB, TABLE, q("equal", "name", ["bulk"])))
    assert remaining == ["k0", "k1", "k2"]


def test_unique_index_is_enforced(client: httpx.Client) -> None:
    ok(
        client.post(
            f"/tablesdb/{DB}/tables/{TABLE}/indexes",
            json={"key": "email_unique", "type": "unique", "columns": ["email"]},
        ),
        202,
    )
    wait_available(client, DB, TABLE)
    ok(create(client, "e1", name="e", email="Ann@example.org"), 201)
    clash = create(client, "e2", name="e", email="ann@EXAMPLE.org")
    assert_error(clash, 409, "row_unique_constraint_violation")
    ok(create(client, "e3", name="e", email="bob@example.org"), 201)
    update_clash = client.patch(f"{ROWS}/e3", json={"data": {"email": "ANN@example.org"}})
    assert_error(update_clash, 409, "row_unique_constraint_violation")
    legacy = client.post(
        DOCUMENTS, json={"documentId": "e4", "data": {"name": "e", "email": "ann@example.org"}}
    )
    assert_error(legacy, 409, "document_unique_constraint_violation")
    ok(create(client, "e5", name="e"), 201)
    ok(create(client, "e6", name="e"), 201)


def test_update_conflict_with_timestamp(client: httpx.Client) -> None:
    row = ok(create(client, "t1", name="t"), 201)
    stale = {"X-Service-Timestamp": "2000-01-01T00:00:00.000+00:00"}
    conflict = client.patch(f"{ROWS}/t1", json={"data": {"age": 1}}, headers=stale)
    assert_error(conflict, 409, "row_update_conflict")
    assert_error(client.delete(f"{ROWS}/t1", headers=stale), 409, "row_update_conflict")
    fresh = {"X-Service-Timestamp": row["$updatedAt"]}
    assert ok(client.patch(f"{ROWS}/t1", json={"data": {"age": 1}}, headers=fresh))["age"] == 1


def test_an_unknown_transaction_reads_as_none_and_writes_as_not_found(
    client: httpx.Client,
) -> None:
    assert ok(client.get(ROWS, params={"transactionId": "tx1"})) == ok(client.get(ROWS))
    staged = client.post(ROWS, json={"rowId": "tx", "data": {"name": "x"}, "transactionId": "tx1"})
    assert_error(staged, 404, "transaction_not_found")


def test_legacy_and_tablesdb_serve_the_same_rows(client: httpx.Client) -> None:
    ok(client.post(DOCUMENTS, json={"documentId": "l1", "data": {"name": "legacy"}}), 201)
    rows = ok(list_rows(client, DB, TABLE, q("equal", "name", ["legacy"])))
    documents = ok(client.get(DOCUMENTS, params={"queries[]": [q("equal", "name", ["legacy"])]}))
    assert rows["total"] == documents["total"] == 1
    assert rows["rows"][0]["$id"] == documents["documents"][0]["$id"] == "l1"
