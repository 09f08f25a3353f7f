"""Who may do what with rows (service interface, "Permissions"): keys, sessions, JWTs, guests and
impersonation."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from tablesdb_helpers import (
    assert_error,
    create_database,
    create_table,
    create_user,
    guest_client,
    jwt_client,
    key_client,
    list_rows,
    ok,
    project_headers,
    q,
    row_ids,
    session_client,
)

from frameport.local import LocalService

DB = "sec"
COLUMNS = [{"key": "note", "type": "string", "size": 32, "required": False}]


def rows_path(table: str) -> str:
    return f"/tablesdb/{DB}/tables/{table}/rows"


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService(rate_limits=False) as svc:
        yield svc


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, DB)
        everyone = ['read("any")', 'create("users")', 'update("users")', 'delete("users")']
        create_table(client, DB, "open", COLUMNS, permissions=everyone)
        create_table(
            client, DB, "private", COLUMNS, permissions=['create("users")'], rowSecurity=True
        )
        create_table(client, DB, "readonly", COLUMNS, permissions=['read("any")'])
        create_table(client, DB, "locked", COLUMNS)
        create_table(client, DB, "off", COLUMNS, permissions=['read("any")'], enabled=False)
        for table in ("locked", "readonly", "off"):
            ok(client.post(rows_path(table), json={"rowId": "r1", "data": {"note": "n"}}), 201)
        for user in ("alice", "bob"):
            create_user(service, user)
        create_user(service, "carol", impersonator=True)
        yield client


@pytest.fixture(scope="module")
def alice(service: LocalService, admin: httpx.Client) -> Iterator[httpx.Client]:
    with session_client(service, "alice") as client:
        yield client


@pytest.fixture(scope="module")
def bob(service: LocalService, admin: httpx.Client) -> Iterator[httpx.Client]:
    with session_client(service, "bob") as client:
        yield client


@pytest.fixture(scope="module")
def guest(service: LocalService, admin: httpx.Client) -> Iterator[httpx.Client]:
    with guest_client(service) as client:
        yield client


def test_keys_see_everything(admin: httpx.Client) -> None:
    assert row_ids(list_rows(admin, DB, "locked")) == ["r1"]
    assert ok(admin.get(f"{rows_path('off')}/r1"))["$id"] == "r1"
    patched = admin.patch(f"{rows_path('locked')}/r1", json={"data": {"note": "k"}})
    assert ok(patched)["note"] == "k"


def test_guests(guest: httpx.Client) -> None:
    assert row_ids(list_rows(guest, DB, "readonly")) == ["r1"]
    assert_error(list_rows(guest, DB, "locked"), 401, "user_unauthorized")
    assert_error(guest.get(f"{rows_path('locked')}/r1"), 404, "row_not_found")
    assert_error(guest.get(f"{rows_path('off')}/r1"), 404, "table_not_found")
    create = guest.post(rows_path("open"), json={"rowId": "g", "data": {"note": "g"}})
    assert_error(create, 401, "user_unauthorized")
    update = guest.patch(f"{rows_path('readonly')}/r1", json={"data": {"note": "changed"}})
    assert_error(update, 401, "user_unauthorized")
    assert_error(guest.delete(f"{rows_path('readonly')}/r1"), 401, "user_unauthorized")
    no_op = guest.patch(f"{rows_path('readonly')}/r1", json={"data": {"note": "n"}})
    assert ok(no_op)["note"] == "n"
    legacy = guest.get(f"/databases/{DB}/collections/locked/documents/r1")
    assert_error(legacy, 404, "document_not_found")


def test_row_security_and_default_permissions(
    admin: httpx.Client, alice: httpx.Client, bob: httpx.Client
) -> None:
    made = ok(alice.post(rows_path("private"), json={"rowId": "a1", "data": {"note": "mine"}}), 201)
    assert made["$permissions"] == [
        'read("user:alice")',
        'update("user:alice")',
        'delete("user:alice")',
    ]
    ok(bob.post(rows_path("private"), json={"rowId": "b1", "data": {"note": "bob's"}}), 201)
    shared = {"rowId": "a2", "data": {"note": "shared"}, "permissions": ['read("users")']}
    ok(alice.post(rows_path("private"), json=shared), 201)
    assert row_ids(list_rows(alice, DB, "private")) == ["a1", "a2"]
    body = ok(list_rows(bob, DB, "private"))
    assert [row["$id"] for row in body["rows"]] == ["b1", "a2"] and body["total"] == 2
    assert row_ids(list_rows(admin, DB, "private")) == ["a1", "b1", "a2"]
    assert_error(bob.get(f"{rows_path('private')}/a1"), 404, "row_not_found")
    assert ok(bob.get(f"{rows_path('private')}/a2"))["note"] == "shared"
    bob_update = bob.patch(f"{rows_path('private')}/a2", json={"data": {"note": "bob was here"}})
    assert_error(bob_update, 401, "user_unauthorized")
    assert_error(bob.delete(f"{rows_path('private')}/a1"), 401, "user_unauthorized")
    assert (
        ok(alice.patch(f"{rows_path('private')}/a1", json={"data": {"note": "x"}}))["note"] == "x"
    )
    assert alice.delete(f"{rows_path('private')}/a1").status_code == 204


def test_permissions_a_user_may_grant(alice: httpx.Client) -> None:
    foreign = {"rowId": "f1", "data": {"note": "x"}, "permissions": ['read("user:bob")']}
    body = assert_error(alice.post(rows_path("open"), json=foreign), 401, "user_unauthorized")
    assert body["message"].startswith("Permissions must be one of: (")
    create_action = {"rowId": "f2", "data": {"note": "x"}, "permissions": ['create("any")']}
    assert_error(alice.post(rows_path("open"), json=create_action), 400, "general_argument_invalid")
    own = {
        "rowId": "f3",
        "data": {"note": "x"},
        "permissions": ['read("any")', 'write("user:alice")'],
    }
    assert ok(alice.post(rows_path("open"), json=own), 201)["$permissions"] == [
        'read("any")',
        'update("user:alice")',
        'delete("user:alice")',
    ]
    bulk = alice.post(rows_path("open"), json={"rows": [{"note": "x"}]})
    assert_error(bulk, 401, "general_unauthorized_scope")
    upsert_bulk = alice.put(rows_path("open"), json={"rows": [{"note": "x"}]})
    assert_error(upsert_bulk, 401, "general_unauthorized_scope")


def test_list_filtering_keeps_paging_and_total(service: LocalService, admin: httpx.Client) -> None:
    create_table(admin, DB, "many", COLUMNS, permissions=['create("users")'], rowSecurity=True)
    create_user(service, "dave")
    rows = [
        {
            "$id": f"m{index:02d}",
            "note": str(index),
            "$permissions": ['read("user:dave")'] if index % 3 == 0 else [],
        }
        for index in range(60)
    ]
    ok(admin.post(rows_path("many"), json={"rows": rows}), 201)
    expected = [row["$id"] for row in rows if row["$permissions"]]
    with session_client(service, "dave") as dave:
        collected: list[str] = []
        cursor: list[str] = []
        while True:
            body = ok(list_rows(dave, DB, "many", q("limit", values=[7]), *cursor))
            assert body["total"] == 20
            page = [row["$id"] for row in body["rows"]]
            if not page:
                break
            collected += page
            cursor = [q("cursorAfter", values=[page[-1]])]
        assert collected == expected
        assert ok(list_rows(dave, DB, "many", q("offset", values=[18])))["total"] == 20
        assert row_ids(list_rows(dave, DB, "many", q("offset", values=[18]))) == expected[18:]
        hidden = list_rows(
            dave, DB, "many", q("cursorAfter", values=["m01"]), q("limit", values=[2])
        )
        assert row_ids(hidden) == ["m03", "m06"]


def test_bulk_update_and_delete_touch_only_permitted_rows(
    service: LocalService, admin: httpx.Client
) -> None:
    create_table(admin, DB, "bulk", COLUMNS, permissions=['read("any")'], rowSecurity=True)
    create_user(service, "erin")
    rows = [
        {
            "$id": "mine",
            "note": "a",
            "$permissions": ['update("user:erin")', 'delete("user:erin")'],
        },
        {"$id": "theirs", "note": "a"},
    ]
    ok(admin.post(rows_path("bulk"), json={"rows": rows}), 201)
    with session_client(service, "erin") as erin:
        updated = erin.patch(rows_path("bulk"), json={"data": {"note": "b"}})
        assert [row["$id"] for row in ok(updated)["rows"]] == ["mine"]
        deleted = erin.request("DELETE", rows_path("bulk"), json={"queries": []})
        assert [row["$id"] for row in ok(deleted)["rows"]] == ["mine"]
    assert row_ids(list_rows(admin, DB, "bulk")) == ["theirs"]
    assert ok(admin.get(f"{rows_path('bulk')}/theirs"))["note"] == "a"


def test_jwt_and_impersonation(service: LocalService, alice: httpx.Client) -> None:
    ok(alice.post(rows_path("private"), json={"rowId": "j1", "data": {"note": "jwt"}}), 201)
    with jwt_client(service, "alice") as token:
        assert "j1" in row_ids(list_rows(token, DB, "private"))
        ok(token.post(rows_path("private"), json={"rowId": "j2", "data": {"note": "by jwt"}}), 201)
        assert ok(token.get(f"{rows_path('private')}/j2"))["$permissions"][0] == (
            'read("user:alice")'
        )
    with session_client(service, "carol") as carol:
        assert "j1" not in row_ids(list_rows(carol, DB, "private"))
        as_alice = {"X-Service-Impersonate-User-Id": "alice"}
        found = ok(carol.get(rows_path("private"), headers=as_alice))["rows"]
        assert {"j1", "j2"} <= {row["$id"] for row in found}


def test_disabled_database_is_hidden_from_non_keys(
    service: LocalService, admin: httpx.Client
) -> None:
    create_database(admin, "dark")
    create_table(admin, "dark", "t", COLUMNS, permissions=['read("any")'])
    ok(admin.put("/tablesdb/dark", json={"name": "dark", "enabled": False}))
    with guest_client(service) as guest:
        assert_error(guest.get("/tablesdb/dark/tables/t/rows"), 404, "database_not_found")
    assert ok(admin.get("/tablesdb/dark/tables/t/rows"))["total"] == 0


def test_rate_limits_for_users_not_keys() -> None:
    overrides = {
        "POST /v1/tablesdb/{databaseId}/tables/{tableId}/rows": (2, 60),
        "DELETE /v1/tablesdb/{databaseId}/tables/{tableId}/rows/{rowId}": (1, 60),
    }
    with LocalService(rate_limit_overrides=overrides) as svc:
        with key_client(svc) as admin:
            create_database(admin, DB)
            create_table(
                admin,
                DB,
                "open",
                COLUMNS,
                permissions=['read("any")', 'create("users")', 'delete("users")'],
            )
            for index in range(4):
                body = {"rowId": f"k{index}", "data": {"note": "key"}}
                created = admin.post(rows_path("open"), json=body)
                assert created.status_code == 201
                assert created.headers["X-RateLimit-Limit"] == "2"
        create_user(svc, "rl")
        with session_client(svc, "rl") as user:
            for index in range(2):
                made = user.post(
                    rows_path("open"), json={"rowId": f"u{index}", "data": {"note": "x"}}
                )
                assert made.status_code == 201
                assert made.headers["X-RateLimit-Remaining"] == str(1 - index)
            third = user.post(rows_path("open"), json={"rowId": "u2", "data": {"note": "x"}})
            assert_error(third, 429, "general_rate_limit_exceeded")
            assert user.delete(f"{rows_path('open')}/u0").status_code == 204
            assert_error(user.delete(f"{rows_path('open')}/u1"), 429, "general_rate_limit_exceeded")
            listed = user.get(rows_path("open"))
            assert listed.status_code == 200 and "X-RateLimit-Limit" not in listed.headers
        with httpx.Client(base_url=svc.endpoint, headers=project_headers(svc)) as anonymous:
            first = anonymous.post(rows_path("open"), json={"rowId": "g", "data": {"note": "x"}})
            assert_error(first, 401, "user_unauthorized")
