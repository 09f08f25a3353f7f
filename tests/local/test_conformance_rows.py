"""Rows and documents, item by item (service interface, "Rows", "Queries", "Query errors",
"Permissions"): the cases the audit found the local service answering differently, over real
HTTP."""

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
    create_user,
    guest_client,
    key_client,
    list_rows,
    ok,
    q,
    row_ids,
    session_client,
)

from frameport.local import LocalService

DB, TABLE, SECURED = "conf", "items", "secured"
COLUMNS = [
    {"key": "name", "type": "string", "size": 32, "required": False},
    {"key": "age", "type": "integer", "required": False},
]
INTERFACES = {
    "tablesdb": (f"/tablesdb/{DB}/tables/{TABLE}/rows", "rows"),
    "legacy": (f"/databases/{DB}/collections/{TABLE}/documents", "documents"),
}


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        with key_client(svc) as admin:
            create_database(admin, DB)
            create_table(admin, DB, TABLE, COLUMNS)
            create_table(admin, DB, SECURED, COLUMNS, rowSecurity=True)
            rows = [{"$id": f"r{index}", "name": f"n{index}", "age": index} for index in range(5)]
            ok(admin.post(INTERFACES["tablesdb"][0], json={"rows": rows}), 201)
        create_user(svc, "writer")
        yield svc


@pytest.fixture
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        yield client


# --- parameters (service interface, "Rows") -------------------------------------------------


@pytest.mark.parametrize("interface", sorted(INTERFACES))
@pytest.mark.parametrize("ttl", [-1, 86401, "soon"])
def test_list_ttl_outside_its_range_is_an_argument_error(
    admin: httpx.Client, interface: str, ttl: Any
) -> None:
    path, _ = INTERFACES[interface]
    body = assert_error(admin.get(path, params={"ttl": ttl}), 400, "general_argument_invalid")
    assert body["message"].startswith("Invalid `ttl` param:")


@pytest.mark.parametrize("ttl", [0, 60, 86400])
def test_list_accepts_a_ttl_in_range(admin: httpx.Client, ttl: int) -> None:
    assert ok(admin.get(INTERFACES["tablesdb"][0], params={"ttl": ttl}))["total"] == 5


@pytest.mark.parametrize("interface", sorted(INTERFACES))
def test_bulk_upsert_requires_its_rows_parameter(admin: httpx.Client, interface: str) -> None:
    path, plural = INTERFACES[interface]
    body = assert_error(admin.put(path, json={}), 400, "general_argument_invalid")
    assert body["message"] == f'Param "{plural}" is not optional.'


# --- value rules: every query is validated, several selects merge (service interface, "Queries")


@pytest.mark.parametrize("method", ["limit", "offset", "cursorAfter"])
def test_a_later_invalid_paging_query_is_still_refused(admin: httpx.Client, method: str) -> None:
    good, bad = {"limit": (2, 0), "offset": (1, -1), "cursorAfter": ("r1", "-bad")}[method]
    response = list_rows(admin, DB, TABLE, q(method, values=[good]), q(method, values=[bad]))
    assert_error(response, 400, "general_query_invalid")


def test_the_first_of_several_limits_wins(admin: httpx.Client) -> None:
    response = list_rows(admin, DB, TABLE, q("limit", values=[2]), q("limit", values=[4]))
    assert row_ids(response) == ["r0", "r1"]


def test_overlapping_select_queries_are_merged(admin: httpx.Client) -> None:
    response = list_rows(
        admin, DB, TABLE, q("select", values=["age"]), q("select", values=["age", "name"])
    )
    row = ok(response)["rows"][0]
    assert {"age", "name", "$id", "$sequence"} <= set(row)


def test_a_duplicate_inside_one_select_is_refused(admin: httpx.Client) -> None:
    response = list_rows(admin, DB, TABLE, q("select", values=["age", "age"]))
    body = assert_error(response, 400, "general_query_invalid")
    assert body["message"] == "Invalid query: Duplicate attributes in select query"


# --- bulk update and delete map query problems to general_query_invalid
# (service interface, "Query errors") ------------------------------------------------------

BAD_QUERIES = [
    json.dumps({"method": "frobnicate"}),
    "{not json",
    q("equal", "nope", [1]),
    q("between", "age", [1]),
    q("limit", values=[0]),
]


@pytest.mark.parametrize("interface", sorted(INTERFACES))
@pytest.mark.parametrize("query", BAD_QUERIES)
def test_bulk_update_and_delete_query_errors(
    admin: httpx.Client, interface: str, query: str
) -> None:
    path, _ = INTERFACES[interface]
    update = admin.patch(path, json={"data": {"age": 1}, "queries": [query]})
    delete = admin.request("DELETE", path, json={"queries": [query]})
    assert_error(update, 400, "general_query_invalid")
    assert_error(delete, 400, "general_query_invalid")
    assert ok(admin.get(INTERFACES["tablesdb"][0]))["total"] == 5


# --- update: a no-op needs read, a change needs update; failures are 401
# (service interface, "Permissions") -------------------------------------------------------


def _secured_row(admin: httpx.Client, row_id: str, permissions: list[str]) -> str:
    path = f"/tablesdb/{DB}/tables/{SECURED}/rows"
    body = {"rowId": row_id, "data": {"name": "same"}, "permissions": permissions}
    ok(admin.post(path, json=body), 201)
    return f"{path}/{row_id}"


def test_no_op_update_without_read_is_401(admin: httpx.Client, service: LocalService) -> None:
    path = _secured_row(admin, "blind", ['update("user:writer")'])
    with session_client(service, "writer") as writer:
        unchanged = writer.patch(path, json={"data": {"name": "same"}})
        changed = writer.patch(path, json={"data": {"name": "other"}})
    assert_error(unchanged, 401, "user_unauthorized")
    assert changed.status_code == 200, changed.text


def test_no_op_update_with_read_only_is_200(admin: httpx.Client, service: LocalService) -> None:
    path = _secured_row(admin, "readable", ['read("user:writer")'])
    with session_client(service, "writer") as writer:
        unchanged = writer.patch(path, json={"data": {"name": "same"}})
        changed = writer.patch(path, json={"data": {"name": "other"}})
    assert ok(unchanged)["name"] == "same"
    assert_error(changed, 401, "user_unauthorized")


# --- path IDs (service interface, "IDs") ---------------------------------------------------

#: Path IDs that break the ID rule: too long, a leading special char, `unique()`.
MALFORMED_IDS = ["x" * 37, "_x", ".x", "-x", "unique()"]


@pytest.mark.parametrize("interface", sorted(INTERFACES))
@pytest.mark.parametrize("method", ["GET", "PATCH", "PUT", "DELETE"])
def test_malformed_row_ids_in_the_path_are_argument_errors(
    admin: httpx.Client, interface: str, method: str
) -> None:
    path, _ = INTERFACES[interface]
    name, missing = ("rowId", "row_not_found")
    if interface == "legacy":
        name, missing = ("documentId", "document_not_found")
    for bad in MALFORMED_IDS:
        response = admin.request(method, f"{path}/{bad}", json={"data": {"age": 1}})
        body = assert_error(response, 400, "general_argument_invalid")
        assert body["message"].startswith(f"Invalid `{name}` param: "), (bad, body)
    assert_error(admin.get(f"{path}/missing"), 404, missing)


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_malformed_database_and_table_ids_of_row_routes(admin: httpx.Client, method: str) -> None:
    for path, name in (
        (f"/tablesdb/_bad/tables/{TABLE}/rows", "databaseId"),
        (f"/tablesdb/{DB}/tables/{'t' * 37}/rows", "tableId"),
        (f"/tablesdb/{DB}/tables/.t/rows/r1", "tableId"),
        (f"/databases/-bad/collections/{TABLE}/documents/r1", "databaseId"),
        (f"/databases/{DB}/collections/_c/documents", "collectionId"),
    ):
        if method == "POST" and path.endswith("r1"):
            continue
        response = admin.request(method, path, json={"data": {"age": 1}})
        body = assert_error(response, 400, "general_argument_invalid")
        assert body["message"].startswith(f"Invalid `{name}` param: "), (path, body)


def test_a_guest_with_a_malformed_row_id_still_meets_the_rate_limit_first(
    service: LocalService,
) -> None:
    # Guests hold `rows.write`; the rate limit comes before parameter validation
    # (service interface, "Rate limits").
    with guest_client(service) as guest:
        response = guest.delete(f"{INTERFACES['tablesdb'][0]}/_bad")
    assert_error(response, 400, "general_argument_invalid")
    assert response.headers["x-ratelimit-limit"] == "60"


# --- response format (service interface, "Response formats") -------------------------------


@pytest.mark.parametrize(
    ("version", "as_text"),
    [("1.8.0", False), ("1.8.99", False), ("1.9", True), ("1.9.0", True), ("9.0.0", True)],
)
def test_sequence_type_follows_the_response_format(
    admin: httpx.Client, version: str, as_text: bool
) -> None:
    headers = {"X-Service-Response-Format": version}
    row = ok(admin.get(f"{INTERFACES['tablesdb'][0]}/r1", headers=headers))
    listed = ok(admin.get(INTERFACES["legacy"][0], headers=headers))["documents"][0]
    for sequence in (row["$sequence"], listed["$sequence"]):
        assert isinstance(sequence, str if as_text else int), (version, sequence)


@pytest.mark.parametrize("interface", sorted(INTERFACES))
def test_a_malformed_transaction_id_is_an_argument_error(
    admin: httpx.Client, interface: str
) -> None:
    path, _ = INTERFACES[interface]
    malformed = admin.get(path, params={"transactionId": "_tx"})
    message = assert_error(malformed, 400, "general_argument_invalid")["message"]
    assert message.startswith("Invalid `transactionId` param: ")
    unknown = admin.delete(f"{path}/r1", params={"transactionId": "tx1"})
    assert_error(unknown, 404, "transaction_not_found")
