"""Transactions over real HTTP: the endpoints, staging through every row write route with the
service's answers, reads inside a transaction, commits that apply all or nothing, conflicts,
rollback, expiry (on the service's movable clock), the operation limit and who sees which
transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from tablesdb_helpers import (
    assert_error,
    create_database,
    create_table,
    create_user,
    guest_client,
    key_client,
    ok,
    q,
    session_client,
)

from frameport.local import LocalService

DB, TABLE = "txdb", "items"
ROWS = f"/tablesdb/{DB}/tables/{TABLE}/rows"
TX = "/tablesdb/transactions"
COLUMNS = [
    {"key": "name", "type": "string", "size": 64, "required": False},
    {"key": "count", "type": "integer", "required": False},
    {"key": "status", "type": "string", "size": 16, "required": False},
]


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:  # its own: expiry tests move its clock forward
        yield svc


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, DB)
        create_table(
            client, DB, TABLE, COLUMNS, permissions=['read("users")', 'create("users")'],
            rowSecurity=True,
        )  # fmt: skip
        yield client


@pytest.fixture
def fresh(admin: httpx.Client) -> Iterator[None]:
    """An empty table for the test."""
    ok(admin.delete(ROWS))
    yield


def begin(client: httpx.Client, **body: Any) -> str:
    created = ok(client.post(TX, json=body), 201)
    return str(created["$id"])


def transaction(client: httpx.Client, transaction_id: str) -> dict[str, Any]:
    found: dict[str, Any] = ok(client.get(f"{TX}/{transaction_id}"))
    return found


def commit(client: httpx.Client, transaction_id: str) -> httpx.Response:
    return client.patch(f"{TX}/{transaction_id}", json={"commit": True})


def row_names(client: httpx.Client, **params: Any) -> dict[str, Any]:
    rows = ok(client.get(ROWS, params={"queries[]": q("limit", values=[500]), **params}))["rows"]
    return {row["$id"]: row.get("name") for row in rows}


def seed(client: httpx.Client, *rows: dict[str, Any]) -> None:
    ok(client.post(ROWS, json={"rows": list(rows)}), 201)


# --- the endpoints ----------------------------------------------------------------------------


def test_a_transaction_is_pending_with_a_default_ttl_of_300_seconds(admin: httpx.Client) -> None:
    created = ok(admin.post(TX, json={}), 201)
    assert set(created) == {"$id", "$createdAt", "$updatedAt", "status", "operations", "expiresAt"}
    assert created["status"] == "pending" and created["operations"] == 0
    lifetime = datetime.fromisoformat(created["expiresAt"]) - datetime.fromisoformat(
        created["$createdAt"]
    )
    assert lifetime.total_seconds() == 300
    assert transaction(admin, created["$id"]) == created


@pytest.mark.parametrize("ttl", [59, 3601, "soon"])
def test_ttl_outside_60_to_3600_is_refused(admin: httpx.Client, ttl: Any) -> None:
    assert_error(admin.post(TX, json={"ttl": ttl}), 400, "general_argument_invalid")


@pytest.mark.parametrize("ttl", [60, 3600])
def test_ttl_bounds_are_accepted(admin: httpx.Client, ttl: int) -> None:
    created = ok(admin.post(TX, json={"ttl": ttl}), 201)
    lifetime = datetime.fromisoformat(created["expiresAt"]) - datetime.fromisoformat(
        created["$createdAt"]
    )
    assert lifetime.total_seconds() == ttl


def test_list_filters_and_delete(admin: httpx.Client) -> None:
    kept, dropped = begin(admin), begin(admin)
    ok(admin.patch(f"{TX}/{dropped}", json={"rollback": True}))
    listed = ok(admin.get(TX, params={"queries[]": q("equal", "status", ["failed"])}))
    ids = [item["$id"] for item in listed["transactions"]]
    assert dropped in ids and kept not in ids and listed["total"] == len(ids)
    assert admin.delete(f"{TX}/{dropped}").status_code == 204
    assert_error(admin.get(f"{TX}/{dropped}"), 404, "transaction_not_found")
    assert_error(admin.delete(f"{TX}/{dropped}"), 404, "transaction_not_found")


def test_users_see_only_their_own_transactions(service: LocalService, admin: httpx.Client) -> None:
    create_user(service, "txowner")
    create_user(service, "txother")
    with session_client(service, "txowner") as owner, session_client(service, "txother") as other:
        mine = begin(owner)
        theirs = begin(other)
        assert_error(other.get(f"{TX}/{mine}"), 404, "transaction_not_found")
        assert_error(
            other.patch(f"{TX}/{mine}", json={"commit": True}), 404, "transaction_not_found"
        )
        assert_error(other.delete(f"{TX}/{mine}"), 404, "transaction_not_found")
        assert_error(
            other.post(ROWS, json={"rowId": "x", "data": {"name": "x"}, "transactionId": mine}),
            404, "transaction_not_found",
        )  # fmt: skip
        listed = [item["$id"] for item in ok(other.get(TX))["transactions"]]
        assert theirs in listed and mine not in listed
    every = [item["$id"] for item in ok(admin.get(TX, params={"total": False}))["transactions"]]
    assert {mine, theirs} <= set(every)


def test_guests_cannot_use_transactions(service: LocalService) -> None:
    with guest_client(service) as guest:
        assert_error(guest.post(TX, json={}), 401, "user_unauthorized")


def test_commit_or_rollback_exactly_one(admin: httpx.Client) -> None:
    transaction_id = begin(admin)
    for body in ({}, {"commit": True, "rollback": True}, {"commit": False}):
        assert_error(admin.patch(f"{TX}/{transaction_id}", json=body), 400, "general_bad_request")
    empty = ok(commit(admin, transaction_id))
    assert empty["status"] == "committed" and empty["operations"] == 0
    assert_error(commit(admin, transaction_id), 400, "transaction_not_ready")


# --- staging through the row routes -----------------------------------------------------------


def test_every_row_write_route_stages_and_answers_as_the_service(
    admin: httpx.Client, fresh: None
) -> None:
    seed(admin, {"$id": "old", "name": "old", "count": 1, "status": "open"})
    tx = begin(admin)
    body = {"transactionId": tx}
    created = ok(admin.post(ROWS, json={"rowId": "a", "data": {"name": "A"}, **body}), 201)
    assert created == {
        "$id": "a", "$sequence": "", "$tableId": TABLE, "$databaseId": DB, "$createdAt": "",
        "$updatedAt": "", "$permissions": [], "name": "A",
    }  # fmt: skip
    bulk = ok(admin.post(ROWS, json={"rows": [{"$id": "b1"}, {"name": "b2"}], **body}))
    assert bulk == {"total": 2, "rows": []}
    updated = ok(admin.patch(f"{ROWS}/old", json={"data": {"name": "older"}, **body}))
    assert updated["name"] == "older" and updated["count"] == 1 and updated["$sequence"] != ""
    upserted = ok(admin.put(f"{ROWS}/u", json={"data": {"name": "U"}, **body}), 201)
    assert upserted == {"$id": "u", "$tableId": TABLE, "$databaseId": DB, "name": "U"}
    counted = ok(admin.patch(f"{ROWS}/old/count/increment", json={"value": 5, **body}))
    assert counted == {"$id": "old", "$tableId": TABLE, "$databaseId": DB, "count": 5}
    by_queries = {"queries": [q("equal", "status", ["open"])], **body}
    changed = ok(admin.patch(ROWS, json={"data": {"status": "done"}, **by_queries}))
    assert changed == {"total": 0, "rows": []}
    upserts = ok(admin.put(ROWS, json={"rows": [{"$id": "u2", "name": "U2"}], **body}))
    assert upserts == {"total": 1, "rows": []}
    gone = ok(admin.request("DELETE", ROWS, json={"queries": [q("equal", "name", ["zz"])], **body}))
    assert gone == {"total": 0, "rows": []}
    deleted = admin.request("DELETE", f"{ROWS}/a", json=body)
    assert deleted.status_code == 204
    assert transaction(admin, tx)["operations"] == 9
    assert row_names(admin) == {"old": "old"}, "staging wrote to the table"
    assert ok(commit(admin, tx))["status"] == "committed"
    after = ok(admin.get(f"{ROWS}/old"))
    assert (after["name"], after["count"], after["status"]) == ("older", 6, "done")
    names = row_names(admin)
    assert sorted(map(str, names.values())) == ["None", "U", "U2", "b2", "older"]
    assert {"old", "b1", "u", "u2"} <= set(names) and len(names) == 5


@pytest.mark.parametrize(
    ("method", "path", "body", "closed_type"),
    [
        ("POST", ROWS, {"rowId": "s1", "data": {"name": "s"}}, "transaction_not_ready"),
        ("PATCH", f"{ROWS}/base", {"data": {"name": "s"}}, "transaction_not_ready"),
        ("PUT", f"{ROWS}/base", {"data": {"name": "s"}}, "transaction_not_ready"),
        ("DELETE", f"{ROWS}/base", {}, "transaction_not_ready"),
    ],
)
def test_single_routes_answer_404_and_transaction_not_ready(
    admin: httpx.Client, method: str, path: str, body: dict[str, Any], closed_type: str
) -> None:
    seed_base(admin)
    unknown = admin.request(method, path, json={**body, "transactionId": "nosuchtx"})
    assert_error(unknown, 404, "transaction_not_found")
    closed = begin(admin)
    ok(admin.patch(f"{TX}/{closed}", json={"rollback": True}))
    assert_error(
        admin.request(method, path, json={**body, "transactionId": closed}), 400, closed_type
    )


def seed_base(admin: httpx.Client) -> None:
    ok(admin.put(f"{ROWS}/base", json={"data": {"name": "base", "count": 0}}))


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", ROWS, {"rows": [{"name": "s"}]}),
        ("PUT", ROWS, {"rows": [{"$id": "s", "name": "s"}]}),
        ("PATCH", ROWS, {"data": {"name": "s"}}),
        ("DELETE", ROWS, {"queries": []}),
        ("PATCH", f"{ROWS}/base/count/increment", {}),
        ("PATCH", f"{ROWS}/base/count/decrement", {}),
    ],
)
def test_bulk_and_counter_routes_answer_invalid_or_non_pending(
    admin: httpx.Client, method: str, path: str, body: dict[str, Any]
) -> None:
    seed_base(admin)
    closed = begin(admin)
    ok(admin.patch(f"{TX}/{closed}", json={"commit": True}))
    for transaction_id in ("nosuchtx", closed):
        response = admin.request(method, path, json={**body, "transactionId": transaction_id})
        assert_error(response, 400, "general_bad_request")
        assert response.json()["message"] == "Invalid or non-pending transaction"


def test_a_malformed_transaction_id_breaks_the_id_rule(admin: httpx.Client) -> None:
    response = admin.get(ROWS, params={"transactionId": "_bad"})
    assert_error(response, 400, "general_argument_invalid")


def test_update_or_delete_of_an_unknown_row_is_404_when_staging(
    admin: httpx.Client, fresh: None
) -> None:
    tx = begin(admin)
    body = {"transactionId": tx}
    missing = admin.patch(f"{ROWS}/ghost", json={"data": {"name": "g"}, **body})
    assert_error(missing, 404, "row_not_found")
    assert_error(admin.request("DELETE", f"{ROWS}/ghost", json=body), 404, "row_not_found")
    ok(admin.post(ROWS, json={"rowId": "ghost", "data": {"name": "g"}, **body}), 201)
    ok(admin.patch(f"{ROWS}/ghost", json={"data": {"name": "seen"}, **body}))
    staged = ok(admin.patch(f"{ROWS}/nobody/count/increment", json=body))
    assert staged["count"] == 1, "counters do not look at the row when staging"
    failed = commit(admin, tx)
    assert_error(failed, 404, "document_not_found")
    assert transaction(admin, tx)["status"] == "failed"
    assert row_names(admin) == {}


def test_a_user_needs_the_permissions_the_route_needs(
    service: LocalService, admin: httpx.Client, fresh: None
) -> None:
    seed(admin, {"$id": "locked", "name": "locked"})
    create_user(service, "txstager")
    with session_client(service, "txstager") as user:
        tx = begin(user)
        denied = user.patch(f"{ROWS}/locked", json={"data": {"name": "x"}, "transactionId": tx})
        assert_error(denied, 401, "user_unauthorized")
        mine = {"rowId": "mine", "data": {"name": "mine"}, "transactionId": tx}
        created = ok(user.post(ROWS, json=mine), 201)
        assert 'update("user:txstager")' in created["$permissions"]
        bulk = user.post(ROWS, json={"rows": [{"name": "b"}], "transactionId": tx})
        assert_error(bulk, 401, "general_unauthorized_scope")
        staged_bulk = {"action": "bulkCreate", "databaseId": DB, "tableId": TABLE, "data": [{}]}
        refused = user.post(f"{TX}/{tx}/operations", json={"operations": [staged_bulk]})
        assert_error(refused, 401, "user_unauthorized")
        ok(user.patch(f"{ROWS}/mine", json={"data": {"name": "mine2"}, "transactionId": tx}))
        assert ok(commit(user, tx))["status"] == "committed"
        assert ok(user.get(f"{ROWS}/mine"))["name"] == "mine2"


# --- reads inside a transaction ---------------------------------------------------------------


def test_reads_with_the_transaction_see_its_staged_rows(admin: httpx.Client, fresh: None) -> None:
    seed(
        admin, {"$id": "keep", "name": "keep", "count": 1}, {"$id": "drop", "name": "drop"},
        {"$id": "edit", "name": "edit", "count": 2},
    )  # fmt: skip
    tx = begin(admin)
    body = {"transactionId": tx}
    ok(admin.request("DELETE", f"{ROWS}/drop", json=body), 204)
    ok(admin.patch(f"{ROWS}/edit", json={"data": {"name": "edited"}, **body}))
    ok(admin.post(ROWS, json={"rowId": "new", "data": {"name": "zzz", "count": 9}, **body}), 201)
    inside = {"transactionId": tx}
    assert_error(admin.get(f"{ROWS}/drop", params=inside), 404, "row_not_found")
    edited = ok(admin.get(f"{ROWS}/edit", params=inside))
    assert (edited["name"], edited["count"]) == ("edited", 2)
    new = ok(admin.get(f"{ROWS}/new", params={**inside, "queries[]": q("select", values=["name"])}))
    assert new["name"] == "zzz" and "count" not in new and new["$createdAt"] == ""
    only_keep = q("equal", "name", ["keep"])
    listed = ok(admin.get(ROWS, params={**inside, "queries[]": only_keep}))
    assert [row["$id"] for row in listed["rows"]] == ["keep", "new"], "creates come whatever"
    assert listed["total"] == 2
    everything = ok(admin.get(ROWS, params=inside))
    assert {row["$id"]: row["name"] for row in everything["rows"]} == {
        "keep": "keep", "edit": "edited", "new": "zzz",
    }  # fmt: skip
    assert everything["total"] == 3
    outside = ok(admin.get(ROWS))
    assert {row["$id"] for row in outside["rows"]} == {"keep", "drop", "edit"}
    for unknown in ("nosuchtx",):
        as_without = ok(admin.get(ROWS, params={"transactionId": unknown}))
        assert as_without == outside
    ok(admin.patch(f"{TX}/{tx}", json={"rollback": True}))
    assert ok(admin.get(ROWS, params=inside)) == outside, "a closed transaction is not replayed"


# --- commits ----------------------------------------------------------------------------------


def test_a_conflicting_commit_applies_nothing(admin: httpx.Client, fresh: None) -> None:
    seed(admin, {"$id": "shared", "name": "start", "count": 0})
    first, second = begin(admin), begin(admin)
    for tx, name in ((first, "first"), (second, "second")):
        ok(admin.patch(f"{ROWS}/shared", json={"data": {"name": name}, "transactionId": tx}))
    extra = {"rowId": "extra", "data": {"name": "extra"}, "transactionId": second}
    ok(admin.post(ROWS, json=extra), 201)
    ok(admin.patch(f"{ROWS}/shared/count/increment", json={"transactionId": second}))
    assert ok(commit(admin, first))["status"] == "committed"
    conflict = commit(admin, second)
    assert_error(conflict, 409, "transaction_conflict")
    assert transaction(admin, second)["status"] == "failed"
    assert row_names(admin) == {"shared": "first"}
    assert ok(admin.get(f"{ROWS}/shared"))["count"] == 0
    assert_error(commit(admin, second), 400, "transaction_not_ready")
    rollback = admin.patch(f"{TX}/{second}", json={"rollback": True})
    assert_error(rollback, 400, "transaction_not_ready")


def test_a_create_of_an_existing_id_conflicts_at_commit(admin: httpx.Client, fresh: None) -> None:
    tx = begin(admin)
    ok(admin.post(ROWS, json={"rowId": "later", "data": {"name": "tx"}, "transactionId": tx}), 201)
    ok(admin.post(ROWS, json={"rowId": "other", "data": {"name": "tx"}, "transactionId": tx}), 201)
    ok(admin.post(ROWS, json={"rowId": "later", "data": {"name": "direct"}}), 201)
    assert_error(commit(admin, tx), 409, "transaction_conflict")
    assert row_names(admin) == {"later": "direct"}


def test_rows_changed_by_the_transaction_itself_do_not_conflict(
    admin: httpx.Client, fresh: None
) -> None:
    seed(admin, {"$id": "r", "name": "r", "count": 0})
    tx = begin(admin)
    body = {"transactionId": tx}
    for name in ("one", "two", "three"):
        ok(admin.patch(f"{ROWS}/r", json={"data": {"name": name}, **body}))
    ok(admin.put(f"{ROWS}/r", json={"data": {"name": "four"}, **body}), 201)
    ok(admin.request("DELETE", f"{ROWS}/r", json=body), 204)
    ok(admin.put(f"{ROWS}/r", json={"data": {"name": "five"}, **body}), 201)
    assert ok(commit(admin, tx))["status"] == "committed"
    assert row_names(admin) == {"r": "five"}


def test_rollback_fails_the_transaction_and_applies_nothing(
    admin: httpx.Client, fresh: None
) -> None:
    tx = begin(admin)
    ok(admin.post(ROWS, json={"rowId": "rb", "data": {"name": "rb"}, "transactionId": tx}), 201)
    rolled = ok(admin.patch(f"{TX}/{tx}", json={"rollback": True}))
    assert rolled["status"] == "failed"
    assert row_names(admin) == {}
    assert_error(commit(admin, tx), 400, "transaction_not_ready")


def test_expiry_is_410_when_staging_and_committing(
    service: LocalService, admin: httpx.Client, fresh: None
) -> None:
    tx = begin(admin, ttl=60)
    ok(admin.post(ROWS, json={"rowId": "e1", "data": {"name": "e"}, "transactionId": tx}), 201)
    service.advance_clock(61)
    single = admin.post(ROWS, json={"rowId": "e2", "data": {"name": "e"}, "transactionId": tx})
    assert_error(single, 410, "transaction_expired")
    operations = {"operations": [{"action": "delete", "databaseId": DB, "tableId": TABLE,
                                  "rowId": "e1"}]}  # fmt: skip
    assert_error(admin.post(f"{TX}/{tx}/operations", json=operations), 410, "transaction_expired")
    bulk = admin.post(ROWS, json={"rows": [{"$id": "e3"}], "transactionId": tx})
    assert_error(bulk, 410, "transaction_expired")
    assert_error(commit(admin, tx), 410, "transaction_expired")
    rollback = admin.patch(f"{TX}/{tx}", json={"rollback": True})
    assert_error(rollback, 410, "transaction_expired")
    assert transaction(admin, tx)["status"] == "failed", "closed, its staged data purged"
    assert row_names(admin) == {}


def test_at_most_100_operations_and_a_bulk_counts_once(admin: httpx.Client, fresh: None) -> None:
    tx = begin(admin)
    rows = [{"$id": f"b{i}", "name": "b"} for i in range(100)]
    ok(admin.post(ROWS, json={"rows": rows, "transactionId": tx}))
    assert transaction(admin, tx)["operations"] == 1
    creates = [
        {"action": "create", "databaseId": DB, "tableId": TABLE, "rowId": f"c{i}",
         "data": {"name": "c"}}
        for i in range(99)
    ]  # fmt: skip
    staged = ok(admin.post(f"{TX}/{tx}/operations", json={"operations": creates}), 201)
    assert staged["operations"] == 100
    one_more = admin.post(ROWS, json={"rowId": "over", "data": {"name": "o"}, "transactionId": tx})
    assert_error(one_more, 400, "transaction_limit_exceeded")
    assert transaction(admin, tx)["operations"] == 100
    assert ok(commit(admin, tx))["status"] == "committed"
    assert len(row_names(admin)) == 199


def test_the_operations_endpoint_takes_the_ten_actions(admin: httpx.Client, fresh: None) -> None:
    seed(
        admin, {"$id": "r1", "name": "r1", "count": 5}, {"$id": "r3", "name": "r3"},
        {"$id": "open1", "name": "o", "status": "open"},
    )  # fmt: skip
    tx = begin(admin)
    where = {"databaseId": DB, "tableId": TABLE}
    open_rows = [q("equal", "status", ["open"])]
    operations = [
        {"action": "create", **where, "rowId": "r2", "data": {"name": "r2", "count": 1}},
        {"action": "update", **where, "rowId": "r1", "data": {"name": "r1b"}},
        {"action": "upsert", **where, "rowId": "r4", "data": {"name": "r4"}},
        {"action": "delete", **where, "rowId": "r3"},
        {"action": "increment", **where, "rowId": "r1", "data": {"column": "count", "value": 10,
                                                                 "max": 100}},
        {"action": "decrement", **where, "rowId": "r2", "data": {"attribute": "count"}},
        {"action": "bulkCreate", **where, "data": [{"$id": "b1", "name": "x"}, {"name": "y"}]},
        {"action": "bulkUpsert", "databaseId": DB, "collectionId": TABLE,
         "data": [{"$id": "b1", "name": "z"}]},
        {"action": "bulkUpdate", **where,
         "data": {"queries": open_rows, "data": {"status": "done"}}},
        {"action": "bulkDelete", **where, "data": {"queries": [q("equal", "name", ["y"])]}},
    ]  # fmt: skip
    staged = ok(admin.post(f"{TX}/{tx}/operations", json={"operations": operations}), 201)
    assert staged["operations"] == 10
    assert ok(commit(admin, tx))["status"] == "committed"
    rows = {row["$id"]: row for row in ok(admin.get(ROWS))["rows"]}
    assert set(rows) == {"r1", "r2", "r4", "open1", "b1"}
    assert (rows["r1"]["name"], rows["r1"]["count"]) == ("r1b", 15)
    assert rows["r2"]["count"] == 0 and rows["b1"]["name"] == "z"
    assert rows["open1"]["status"] == "done"
    assert rows["r2"]["$permissions"] == [], "the endpoint stores data as sent"


@pytest.mark.parametrize(
    ("operations", "message"),
    [
        ([], "Operations array cannot be empty"),
        ([{"action": "explode", "databaseId": DB, "tableId": TABLE}], "`action` must be"),
        ([{"action": "create", "databaseId": DB, "tableId": TABLE, "data": {}}], "`rowId`"),
        ([{"action": "update", "databaseId": DB, "rowId": "x", "data": {}}], "`tableId`"),
        ([{"action": "create", "databaseId": DB, "tableId": TABLE, "rowId": "x"}], "`data`"),
        ([{"action": "bulkUpdate", "databaseId": DB, "tableId": TABLE, "data": {"data": {}}}],
         "`data.queries`"),
        ([{"action": "increment", "databaseId": DB, "tableId": TABLE, "rowId": "x",
           "data": {"column": "count", "value": "1"}}], "`data.value`"),
        (["not an object"], "JSON object"),
    ],
)  # fmt: skip
def test_operation_shapes_are_checked(
    admin: httpx.Client, operations: list[Any], message: str
) -> None:
    tx = begin(admin)
    response = admin.post(f"{TX}/{tx}/operations", json={"operations": operations})
    assert_error(response, 400, "general_argument_invalid")
    assert message in response.json()["message"]
    assert transaction(admin, tx)["operations"] == 0


def test_the_deprecated_databases_form_is_the_same_store(admin: httpx.Client, fresh: None) -> None:
    legacy = ok(admin.post("/databases/transactions", json={}), 201)["$id"]
    documents = f"/databases/{DB}/collections/{TABLE}/documents"
    body = {"documentId": "d1", "data": {"name": "doc"}, "transactionId": legacy}
    ok(admin.post(documents, json=body), 201)
    assert transaction(admin, legacy)["operations"] == 1
    assert ok(admin.patch(f"/databases/transactions/{legacy}", json={"commit": True}))
    assert row_names(admin) == {"d1": "doc"}


# --- increment, decrement, operators and X-Service-Timestamp -----------------------------------


def test_increment_and_decrement_routes(admin: httpx.Client, fresh: None) -> None:
    seed(admin, {"$id": "n", "name": "n", "count": 5})
    up = ok(admin.patch(f"{ROWS}/n/count/increment", json={"value": 3}))
    assert up["count"] == 8 and up["$id"] == "n"
    assert ok(admin.patch(f"{ROWS}/n/count/decrement", json={}))["count"] == 7
    too_high = admin.patch(f"{ROWS}/n/count/increment", json={"value": 5, "max": 10})
    assert_error(too_high, 400, "column_limit_exceeded")
    too_low = admin.patch(f"{ROWS}/n/count/decrement", json={"value": 8, "min": 0})
    assert_error(too_low, 400, "column_limit_exceeded")
    assert_error(admin.patch(f"{ROWS}/n/name/increment", json={}), 400, "column_type_invalid")
    assert_error(admin.patch(f"{ROWS}/n/nope/increment", json={}), 404, "column_not_found")
    assert_error(admin.patch(f"{ROWS}/ghost/count/increment", json={}), 404, "column_not_found")
    assert ok(admin.get(f"{ROWS}/n"))["count"] == 7


def test_x_service_timestamp_conflicts_on_update_upsert_and_delete(
    admin: httpx.Client, fresh: None
) -> None:
    seed(admin, {"$id": "t", "name": "t"})
    before = {"X-Service-Timestamp": "2000-01-01T00:00:00.000+00:00"}
    after = {"X-Service-Timestamp": "2999-01-01T00:00:00.000+00:00"}
    data = {"data": {"name": "u"}}
    for method in ("PATCH", "PUT", "DELETE"):
        stale = admin.request(method, f"{ROWS}/t", json=data, headers=before)
        assert_error(stale, 409, "row_update_conflict")
    assert ok(admin.patch(f"{ROWS}/t", json=data, headers=after))["name"] == "u"
    ok(admin.put(f"{ROWS}/t", json=data, headers=after))
    assert admin.delete(f"{ROWS}/t", headers=after).status_code == 204
    invalid = admin.delete(f"{ROWS}/t", headers={"X-Service-Timestamp": "yesterday"})
    assert_error(invalid, 400, "general_argument_invalid")


def operator(method: str, *values: Any) -> str:
    return json.dumps({"method": method, "values": list(values)})


OPERATOR_CASES = [
    ("count", 10, operator("increment", 5), 15),
    ("count", 10, operator("increment", 5, 12), 12),
    ("count", 10, operator("decrement", 3), 7),
    ("count", 10, operator("decrement", 30, 0), 0),
    ("count", 10, operator("multiply", 3), 30),
    ("count", 10, operator("divide", 2), 5),
    ("count", 10, operator("modulo", 4), 2),
    ("count", 3, operator("power", 2), 9),
    ("ratio", 1.5, operator("multiply", 2), 3.0),
    ("tags", ["a"], operator("arrayAppend", "b", "c"), ["a", "b", "c"]),
    ("tags", ["a"], operator("arrayPrepend", "z"), ["z", "a"]),
    ("tags", ["a", "c"], operator("arrayInsert", 1, "b"), ["a", "b", "c"]),
    ("tags", ["a", "b", "a"], operator("arrayRemove", "a"), ["b"]),
    ("tags", ["a", "b", "a"], operator("arrayUnique"), ["a", "b"]),
    ("tags", ["a", "b", "c"], operator("arrayIntersect", "b", "c", "d"), ["b", "c"]),
    ("tags", ["a", "b", "c"], operator("arrayDiff", "b"), ["a", "c"]),
    ("scores", [1, 5, 7], operator("arrayFilter", "greaterThan", 3), [5, 7]),
    ("name", "ab", operator("stringConcat", "cd"), "abcd"),
    ("name", "a-b-c", operator("stringReplace", "-", "+"), "a+b+c"),
    ("flag", False, operator("toggle"), True),
    ("when", "2024-01-01T00:00:00.000+00:00", operator("dateAddDays", 2),
     "2024-01-03T00:00:00.000+00:00"),
    ("when", "2024-01-03T00:00:00.000+00:00", operator("dateSubDays", 3),
     "2023-12-31T00:00:00.000+00:00"),
]  # fmt: skip
OPERATOR_COLUMNS = [
    {"key": "name", "type": "string", "size": 64, "required": False},
    {"key": "count", "type": "integer", "required": False},
    {"key": "ratio", "type": "double", "required": False},
    {"key": "flag", "type": "boolean", "required": False},
    {"key": "when", "type": "datetime", "required": False},
    {"key": "tags", "type": "string", "size": 8, "required": False, "array": True},
    {"key": "scores", "type": "integer", "required": False, "array": True},
]


@pytest.fixture(scope="module")
def operators_table(admin: httpx.Client) -> str:
    create_table(admin, DB, "ops", OPERATOR_COLUMNS)
    return f"/tablesdb/{DB}/tables/ops/rows"


@pytest.mark.parametrize(("column", "start", "sent", "expected"), OPERATOR_CASES)
def test_update_operators_apply_to_the_current_value(
    admin: httpx.Client, operators_table: str, column: str, start: Any, sent: str, expected: Any
) -> None:
    ok(admin.put(f"{operators_table}/o", json={"data": {column: start}}))
    updated = ok(admin.patch(f"{operators_table}/o", json={"data": {column: sent}}))
    assert updated[column] == expected


def test_operators_in_upserts_bulk_writes_and_commits(
    admin: httpx.Client, operators_table: str
) -> None:
    ok(admin.put(f"{operators_table}/p", json={"data": {"count": 1, "tags": ["x"]}}))
    bump = {"count": operator("increment", 2)}
    assert ok(admin.put(f"{operators_table}/p", json={"data": bump}))["count"] == 3
    ok(admin.patch(operators_table, json={"data": bump, "queries": [q("equal", "$id", ["p"])]}))
    ok(admin.put(operators_table, json={"rows": [{"$id": "p", **bump}]}))
    tx = begin(admin)
    ok(admin.patch(f"{operators_table}/p", json={"data": bump, "transactionId": tx}))
    ok(commit(admin, tx))
    now = ok(admin.patch(f"{operators_table}/p", json={"data": {"when": operator("dateSetNow")}}))
    assert ok(admin.get(f"{operators_table}/p"))["count"] == 9
    assert now["when"][:4] == now["$updatedAt"][:4]


def test_an_invalid_operator_is_refused(admin: httpx.Client, operators_table: str) -> None:
    ok(admin.put(f"{operators_table}/bad", json={"data": {"name": "x"}}))
    response = admin.patch(f"{operators_table}/bad", json={"data": {"name": operator("toggle")}})
    assert_error(response, 400, "general_argument_invalid")
    assert response.json()["message"].startswith('Invalid operator for attribute "name": ')
