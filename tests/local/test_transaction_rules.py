"""The rules staged data keeps before it reaches a commit: a user's timestamps are dropped as
the row routes drop them, values are checked against their columns when staged, a
transaction holds a bounded number of bytes, and an expired transaction is closed, loses its
staged data and is forgotten later (on the service's movable clock).
"""

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
    ok,
    session_client,
)

from frameport.local import LocalService

DB, TABLE = "rulesdb", "items"
ROWS = f"/tablesdb/{DB}/tables/{TABLE}/rows"
TX = "/tablesdb/transactions"
WHERE = {"databaseId": DB, "tableId": TABLE}
COLUMNS = [
    {"key": "name", "type": "string", "size": 16, "required": False},
    {"key": "count", "type": "integer", "required": False},
]
LATE = "2099-01-01T00:00:00.000+00:00"
EARLY = "2001-01-01T00:00:00.000+00:00"


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    """Its own service, with a small staging bound; tests move its clock forward."""
    with LocalService(max_transaction_bytes=4096) as svc, key_client(svc) as client:
        create_database(client, DB)
        allowed = ['read("users")', 'create("users")', 'update("users")']
        create_table(client, DB, TABLE, COLUMNS, permissions=allowed)
        yield svc


@pytest.fixture
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        yield client


def begin(client: httpx.Client, **body: Any) -> str:
    return str(ok(client.post(TX, json=body), 201)["$id"])


def stage(client: httpx.Client, transaction_id: str, *operations: dict[str, Any]) -> httpx.Response:
    return client.post(f"{TX}/{transaction_id}/operations", json={"operations": list(operations)})


def commit(client: httpx.Client, transaction_id: str) -> dict[str, Any]:
    committed: dict[str, Any] = ok(client.patch(f"{TX}/{transaction_id}", json={"commit": True}))
    return committed


def test_a_users_staged_timestamps_are_not_applied(
    service: LocalService, admin: httpx.Client
) -> None:
    ok(admin.post(ROWS, json={"rowId": "stamped", "data": {"name": "before"}}), 201)
    create_user(service, "stamper")
    with session_client(service, "stamper") as user:
        tx = begin(user)
        stamps = {"$createdAt": EARLY, "$updatedAt": LATE}
        ok(stage(user, tx,
                 {"action": "create", **WHERE, "rowId": "mine", "data": {"name": "m", **stamps}},
                 {"action": "update", **WHERE, "rowId": "stamped",
                  "data": {"name": "after", **stamps}}), 201)  # fmt: skip
        committed_at = commit(user, tx)["$updatedAt"]
    for row_id in ("mine", "stamped"):
        row = ok(admin.get(f"{ROWS}/{row_id}"))
        assert row["$updatedAt"] <= committed_at, f"{row_id}: a user's $updatedAt was applied"
        assert row["$createdAt"] != EARLY, f"{row_id}: a user's $createdAt was applied"
    key_tx = begin(admin)
    key_stamps = {"$createdAt": EARLY, "$updatedAt": EARLY}
    ok(stage(admin, key_tx, {"action": "create", **WHERE, "rowId": "keyed",
                             "data": {"name": "k", **key_stamps}}), 201)  # fmt: skip
    commit(admin, key_tx)
    keyed = ok(admin.get(f"{ROWS}/keyed"))
    assert (keyed["$createdAt"], keyed["$updatedAt"]) == (EARLY, EARLY), "a key's are honoured"


@pytest.mark.parametrize(
    "operation",
    [
        {"action": "create", **WHERE, "rowId": "long", "data": {"name": "x" * 17}},
        {"action": "create", **WHERE, "rowId": "typed", "data": {"count": "many"}},
        {"action": "upsert", **WHERE, "rowId": "odd", "data": {"colour": "red"}},
        {"action": "bulkCreate", **WHERE, "data": [{"name": "ok"}, {"name": "y" * 17}]},
        {"action": "bulkUpdate", **WHERE, "data": {"queries": [], "data": {"count": 1.5}}},
    ],
)
def test_staged_data_that_breaks_a_column_rule_is_refused_when_staged(
    admin: httpx.Client, operation: dict[str, Any]
) -> None:
    tx = begin(admin)
    assert_error(stage(admin, tx, operation), 400, "row_invalid_structure")
    assert ok(admin.get(f"{TX}/{tx}"))["operations"] == 0


def test_the_row_routes_refuse_a_staged_value_over_its_limit_too(admin: httpx.Client) -> None:
    tx = begin(admin)
    too_long = {"rowId": "r", "data": {"name": "z" * 17}, "transactionId": tx}
    assert_error(admin.post(ROWS, json=too_long), 400, "row_invalid_structure")
    bulk = {"rows": [{"name": "z" * 17}], "transactionId": tx}
    assert_error(admin.post(ROWS, json=bulk), 400, "row_invalid_structure")
    ok(admin.post(ROWS, json={"rowId": "increased", "data": {"count": 1}}), 201)
    operator = '{"method":"increment","values":[1]}'
    staged = admin.patch(
        f"{ROWS}/increased", json={"data": {"count": operator}, "transactionId": tx}
    )
    assert staged.status_code == 200, "operators are applied at commit, not parsed when staged"
    assert ok(admin.get(f"{TX}/{tx}"))["operations"] == 1


def test_a_transaction_holds_a_bounded_number_of_staged_bytes(admin: httpx.Client) -> None:
    tx = begin(admin)
    rows = [{"$id": f"b{i}", "name": "n" * 16} for i in range(80)]  # 1.8 KB an operation
    ok(stage(admin, tx, {"action": "bulkCreate", **WHERE, "data": rows[:40]},
             {"action": "bulkCreate", **WHERE, "data": rows[40:]}), 201)  # fmt: skip
    more = [{"$id": f"c{i}", "name": "n" * 16} for i in range(40)]
    refused = admin.post(ROWS, json={"rows": more, "transactionId": tx})
    message = assert_error(refused, 400, "transaction_limit_exceeded")["message"]
    assert "4,096 bytes" in message
    assert ok(admin.get(f"{TX}/{tx}"))["operations"] == 2
    assert commit(admin, tx)["status"] == "committed"
    assert ok(admin.get(f"{ROWS}/b79"))["name"] == "n" * 16


def test_an_expired_transaction_is_purged_and_refuses_every_staging(
    service: LocalService, admin: httpx.Client
) -> None:
    ok(admin.post(ROWS, json={"rowId": "counted", "data": {"count": 0}}), 201)
    tx = begin(admin, ttl=60)
    ok(admin.post(ROWS, json={"rowId": "ghost", "data": {"name": "g"}, "transactionId": tx}), 201)
    inside = {"transactionId": tx}
    assert ok(admin.get(f"{ROWS}/ghost", params=inside))["name"] == "g"
    service.advance_clock(61)
    refusals = [
        admin.post(ROWS, json={"rowId": "g2", "data": {"name": "g"}, **inside}),
        admin.post(ROWS, json={"rows": [{"name": "g"}], **inside}),
        admin.put(ROWS, json={"rows": [{"$id": "g3", "name": "g"}], **inside}),
        admin.patch(ROWS, json={"data": {"name": "g"}, **inside}),
        admin.request("DELETE", ROWS, json={"queries": [], **inside}),
        admin.patch(f"{ROWS}/counted/count/increment", json=inside),
        stage(admin, tx, {"action": "delete", **WHERE, "rowId": "counted"}),
    ]
    for refused in refusals:
        assert_error(refused, 410, "transaction_expired")
    assert_error(admin.get(f"{ROWS}/ghost", params=inside), 404, "row_not_found")
    closed = ok(admin.get(f"{TX}/{tx}"))
    assert (closed["status"], closed["operations"]) == ("failed", 0), "its staged data is gone"
    assert_error(admin.patch(f"{TX}/{tx}", json={"commit": True}), 410, "transaction_expired")
    service.advance_clock(3600)
    begin(admin)  # any transaction request purges
    assert_error(admin.get(f"{TX}/{tx}"), 404, "transaction_not_found")
    bulk = admin.post(ROWS, json={"rows": [{"name": "g"}], **inside})
    assert_error(bulk, 400, "general_bad_request")
    assert_error(admin.get(f"{ROWS}/ghost"), 404, "row_not_found")
