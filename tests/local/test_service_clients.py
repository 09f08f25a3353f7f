"""What the service's own clients rely on: a Content-Type on every answer (204 included),
and the team membership routes the `team:` and `member:` roles depend on.

The reference client sends JSON with `Content-Type: application/json` on every call, DELETE
included, and reads the answer's `Content-Type` header before anything else: JSON when it
says so, the raw bytes otherwise. Without the header each of its deletes failed, although the
delete happened.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from callers import assert_error, create_user, key_client, session_client
from tablesdb_helpers import create_database, create_table, wait_available

from frameport.local import LocalService

MEMBERSHIP_FIELDS = {
    "$id", "$createdAt", "$updatedAt", "userId", "userName", "userEmail", "userPhone", "teamId",
    "teamName", "invited", "joined", "confirm", "mfa", "userAccessedAt", "roles",
}  # fmt: skip
TEAM_FIELDS = {"$id", "$createdAt", "$updatedAt", "name", "total", "prefs"}


def reference_call(client: httpx.Client, method: str, path: str, params: dict[str, Any]) -> Any:
    """One call as the reference client makes it, and what it hands back to its caller."""
    headers = {"content-type": "application/json", "x-sdk-name": "Python"}
    if method == "GET":
        response = client.get(path, params=params, headers=headers)
    else:
        response = client.request(method, path, content=json.dumps(params), headers=headers)
    content_type = response.headers["Content-Type"]  # read on every response
    if response.status_code >= 400:
        raise AssertionError(response.text)
    if content_type.startswith("application/json"):
        return response.json()
    return response.content


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(rate_limits=False) as service:
        yield service


@pytest.fixture
def admin(svc: LocalService) -> Iterator[httpx.Client]:
    with key_client(svc) as client:
        yield client


def test_deleting_a_row_answers_204_with_a_content_type(admin: httpx.Client) -> None:
    create_database(admin, "sdk")
    create_table(admin, "sdk", "t", columns=[{"key": "n", "type": "integer", "required": False}])
    wait_available(admin, "sdk", "t")
    rows = "/tablesdb/sdk/tables/t/rows"
    reference_call(admin, "POST", rows, {"rowId": "r1", "data": {"n": 1}})
    assert reference_call(admin, "DELETE", f"{rows}/r1", {}) == b""
    response = admin.delete(f"{rows}/r1")
    assert_error(response, 404, "row_not_found")


def test_deleting_a_file_and_a_bucket_answers_204_with_a_content_type(
    admin: httpx.Client,
) -> None:
    reference_call(admin, "POST", "/storage/buckets", {"bucketId": "sdkb", "name": "sdkb"})
    created = admin.post(
        "/storage/buckets/sdkb/files", files={"file": ("a.txt", b"hello")}, data={"fileId": "f1"}
    )
    assert created.status_code == 201, created.text
    response = admin.delete(
        "/storage/buckets/sdkb/files/f1", headers={"content-type": "application/json"}
    )
    assert response.status_code == 204
    assert "content-type" in response.headers
    assert reference_call(admin, "DELETE", "/storage/buckets/sdkb", {}) == b""


@pytest.fixture(scope="module")
def team(svc: LocalService) -> dict[str, str]:
    """A team `crew` owned by `owner`, with `member` in it; `outsider` is not in it."""
    for user in ("owner", "member", "outsider"):
        create_user(svc, user)
    with session_client(svc, "owner") as owner:
        created = reference_call(owner, "POST", "/teams", {"teamId": "crew", "name": "Crew"})
        assert set(created) == TEAM_FIELDS
    with key_client(svc) as admin:  # a key's membership is confirmed at once
        membership = reference_call(
            admin, "POST", "/teams/crew/memberships", {"userId": "member", "roles": ["deck"]}
        )
    return {"member": membership["$id"]}


def test_memberships_are_listed_with_their_model(svc: LocalService, team: dict[str, str]) -> None:
    with session_client(svc, "member") as member:
        listed = reference_call(member, "GET", "/teams/crew/memberships", {})
    assert listed["total"] == len(listed["memberships"]) == 2
    assert all(set(item) == MEMBERSHIP_FIELDS for item in listed["memberships"])
    assert {item["userId"] for item in listed["memberships"]} == {"owner", "member"}


def test_a_membership_is_read_updated_and_deleted(svc: LocalService, team: dict[str, str]) -> None:
    path = f"/teams/crew/memberships/{team['member']}"
    with session_client(svc, "member") as member:
        got = reference_call(member, "GET", path, {})
        assert set(got) == MEMBERSHIP_FIELDS and got["roles"] == ["deck"]
        refused = member.patch(path, json={"roles": ["captain"]})
        assert_error(refused, 401, "user_unauthorized")
    with session_client(svc, "owner") as owner:
        updated = reference_call(owner, "PATCH", path, {"roles": ["bosun"]})
        assert updated["roles"] == ["bosun"]
        assert reference_call(owner, "DELETE", path, {}) == b""
        assert_error(owner.get(path), 404, "membership_not_found")


def test_a_non_member_cannot_read_a_team_or_its_memberships(
    svc: LocalService, team: dict[str, str]
) -> None:
    with session_client(svc, "outsider") as outsider:
        assert_error(outsider.get("/teams/crew"), 404, "team_not_found")
        assert_error(outsider.get("/teams/crew/memberships"), 404, "team_not_found")
    with session_client(svc, "owner") as owner:
        assert set(reference_call(owner, "GET", "/teams/crew", {})) == TEAM_FIELDS


@pytest.mark.parametrize("path", ["/account/", "/tablesdb/", "/storage/buckets/"])
def test_a_trailing_slash_is_a_missing_route_with_a_body_not_a_bare_redirect(
    admin: httpx.Client, path: str
) -> None:
    response = admin.get(path)
    assert "content-type" in response.headers
    assert_error(response, 404, "general_route_not_found")
