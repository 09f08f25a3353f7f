"""Accounts, sessions, JWTs, users, teams and the general wire conventions, checked over HTTP
(service interface, "Requests", "Authentication", "Accounts and sessions", "Users and teams",
"Models", "Rate limits", "Response formats")."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from callers import (
    PASSWORD,
    assert_error,
    create_user,
    guest_client,
    jwt_client,
    key_client,
    project_headers,
    session_client,
)

from frameport.local import LocalService

DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$")
ACCOUNT_FIELDS = [
    "$id", "$createdAt", "$updatedAt", "name", "registration", "status", "labels",
    "passwordUpdate", "email", "phone", "emailVerification", "emailCanonical", "emailIsFree",
    "emailIsDisposable", "emailIsCorporate", "emailIsCanonical", "phoneVerification", "mfa",
    "prefs", "targets", "accessedAt", "impersonator", "impersonatorUserId",
]  # fmt: skip
USER_FIELDS = [*ACCOUNT_FIELDS, "password", "hash", "hashOptions"]
SESSION_FIELDS = [
    "$id", "$createdAt", "$updatedAt", "userId", "expire", "provider", "providerUid",
    "providerAccessToken", "providerAccessTokenExpiry", "providerRefreshToken", "ip", "osCode",
    "osName", "osVersion", "clientType", "clientCode", "clientName", "clientVersion",
    "clientEngine", "clientEngineVersion", "deviceName", "deviceBrand", "deviceModel",
    "countryCode", "countryName", "current", "factors", "secret", "mfaUpdatedAt",
]  # fmt: skip
TEAM_FIELDS = ["$id", "$createdAt", "$updatedAt", "name", "total", "prefs"]
MEMBERSHIP_FIELDS = [
    "$id", "$createdAt", "$updatedAt", "userId", "userName", "userEmail", "userPhone", "teamId",
    "teamName", "invited", "joined", "confirm", "mfa", "userAccessedAt", "roles",
]  # fmt: skip


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        yield svc


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def jwt_claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def set_cookies(response: httpx.Response) -> dict[str, str]:
    """`Set-Cookie` headers by cookie name, lower-cased."""
    cookies = response.headers.get_list("set-cookie")
    return {cookie.split("=", 1)[0]: cookie.lower() for cookie in cookies}


def cookie_expiry(text: str) -> float:
    expires = re.search(r"expires=([^;]+)", text)
    assert expires is not None, text
    return parsedate_to_datetime(expires.group(1)).timestamp()


# --- general conventions (service interface, "Requests") -----------------------------------


def test_project_from_query_or_body_before_header(service: LocalService) -> None:
    with httpx.Client(base_url=service.endpoint, timeout=60) as client:
        by_query = client.post(
            "/account",
            params={"project": service.project},
            headers={"X-Service-Project": "elsewhere"},
            json={"userId": "pq1", "email": "pq1@example.org", "password": PASSWORD},
        )
        assert ok(by_query, 201)["$id"] == "pq1"
        body = {
            "project": service.project,
            "userId": "pq2",
            "email": "pq2@example.org",
            "password": PASSWORD,
        }
        assert ok(client.post("/account", json=body), 201)["$id"] == "pq2"
        wrong_body = client.post("/account", json={**body, "project": "nope", "userId": "pq3"})
        assert_error(wrong_body, 404, "project_not_found")


def test_a_key_without_a_project_is_project_id_missing(service: LocalService) -> None:
    with httpx.Client(base_url=service.endpoint, timeout=60) as client:
        response = client.get("/users/anyone", headers={"X-Service-Key": service.key})
        assert_error(response, 403, "project_id_missing")


def test_generated_and_custom_ids(service: LocalService) -> None:
    with key_client(service) as admin:
        before = int(time.time())
        user = ok(admin.post("/users", json={"userId": "unique()"}), 201)
        assert re.fullmatch(r"[0-9a-f]{20}", user["$id"])
        assert abs(int(user["$id"][:8], 16) - before) <= 2  # the first 13 digits are the time
        team = ok(admin.post("/teams", json={"teamId": "unique()", "name": "T"}), 201)
        assert re.fullmatch(r"[0-9a-f]{20}", team["$id"]) and team["$id"] != user["$id"]
        longest = "a" + "b.-_" * 8 + "cde"
        assert len(longest) == 36
        assert ok(admin.post("/users", json={"userId": longest}), 201)["$id"] == longest
        for bad in ("a" * 37, ".dot", "-dash", "_under", "has space", "at@sign", ""):
            body = assert_error(
                admin.post("/users", json={"userId": bad}), 400, "general_argument_invalid"
            )
            assert str(body["message"]).startswith("Invalid `userId` param: ")
        bad_team = admin.post("/teams", json={"teamId": "a" * 37, "name": "T"})
        assert_error(bad_team, 400, "general_argument_invalid")


def test_error_bodies_carry_no_cache_headers_and_204_has_no_body(service: LocalService) -> None:
    create_user(service, "nocache")
    with guest_client(service) as guest:
        response = guest.get("/account")
        assert_error(response, 401, "general_unauthorized_scope")
        assert response.json()["version"] == "1.9.6"
        assert response.headers["cache-control"] == "no-cache, no-store, must-revalidate"
        assert response.headers["expires"] == "0" and response.headers["pragma"] == "no-cache"
    with session_client(service, "nocache") as client:
        deleted = client.delete("/account/sessions/current")
        assert deleted.status_code == 204 and deleted.content == b""


def test_scope_error_message(service: LocalService) -> None:
    create_user(service, "scoped")
    with guest_client(service) as guest:
        body = assert_error(guest.get("/account"), 401, "general_unauthorized_scope")
        assert body["message"] == 'User (role: guests) missing scopes (["account"])'
    with session_client(service, "scoped") as client:
        body = assert_error(client.get("/users/scoped"), 401, "general_unauthorized_scope")
        assert body["message"] == 'scoped@example.org (role: users) missing scopes (["users.read"])'


# --- identity (service interface, "Authentication", "Roles and scopes", "Impersonation") ----


def test_debug_fallback_header_says_whether_the_fallback_was_read(service: LocalService) -> None:
    create_user(service, "fallback")
    with session_client(service, "fallback") as client:
        by_cookie = client.get("/account")
        assert by_cookie.headers["x-debug-fallback"] == "false"
        value = client.cookies[f"a_session_{service.project}"]
    with guest_client(service) as guest:
        fallback = {"X-Fallback-Cookies": json.dumps({f"a_session_{service.project}": value})}
        by_fallback = guest.get("/account", headers=fallback)
        assert ok(by_fallback)["$id"] == "fallback"
        assert by_fallback.headers["x-debug-fallback"] == "true"
        other_project = {"X-Fallback-Cookies": json.dumps({"a_session_other": value})}
        assert_error(
            guest.get("/account", headers=other_project), 401, "general_unauthorized_scope"
        )
        by_header = guest.get("/account", headers={"X-Service-Session": value})
        assert by_header.headers["x-debug-fallback"] == "false"


def test_legacy_cookie_alone_is_enough(service: LocalService) -> None:
    create_user(service, "legacyonly")
    with session_client(service, "legacyonly") as client:
        value = client.cookies[f"a_session_{service.project}_legacy"]
    with guest_client(service) as guest:
        guest.cookies.set(f"a_session_{service.project}_legacy", value)
        assert ok(guest.get("/account"))["$id"] == "legacyonly"


def test_cookies_for_a_named_host_and_the_fallback_header(service: LocalService) -> None:
    create_user(service, "named")
    login = {"email": "named@example.org", "password": PASSWORD}
    host = {"Host": "api.example.com"}
    with guest_client(service) as guest:
        same_site = guest.post(
            "/account/sessions/email",
            json=login,
            headers={**host, "Origin": "https://app.example.com"},
        )
    assert same_site.status_code == 201
    assert "x-fallback-cookies" not in same_site.headers
    for text in set_cookies(same_site).values():
        assert "domain=.api.example.com" in text
        assert cookie_expiry(text) > time.time() + 364 * 86400
    with guest_client(service) as guest:
        cross_site = guest.post(
            "/account/sessions/email", json=login, headers={**host, "Origin": "https://other.test"}
        )
    assert cross_site.status_code == 201
    fallback = json.loads(cross_site.headers["x-fallback-cookies"])
    modern = f"a_session_{service.project}"
    assert list(fallback) == [modern]
    assert set_cookies(cross_site)[modern].startswith(f"{modern}={fallback[modern]}".lower())


def test_logout_expires_both_cookies_in_the_past(service: LocalService) -> None:
    create_user(service, "expiring")
    with session_client(service, "expiring") as client:
        response = client.delete("/account/sessions")
    assert response.status_code == 204
    cookies = set_cookies(response)
    assert set(cookies) == {f"a_session_{service.project}", f"a_session_{service.project}_legacy"}
    for text in cookies.values():
        assert text.split(";")[0].endswith("=") or '=""' in text.split(";")[0]
        assert cookie_expiry(text) < time.time()


def test_jwt_payload_duration_and_alias(service: LocalService) -> None:
    create_user(service, "tokens")
    with session_client(service, "tokens") as client:
        default = ok(client.post("/account/jwts"), 201)
        assert list(default) == ["jwt"]
        claims = jwt_claims(default["jwt"])
        assert claims["userId"] == "tokens" and claims["sessionId"]
        assert claims["exp"] - claims["iat"] == 900
        header = json.loads(base64.urlsafe_b64decode(default["jwt"].split(".")[0] + "=="))
        assert header["alg"] == "HS256"
        alias = ok(client.post("/account/jwt", json={"duration": 60}), 201)
        assert jwt_claims(alias["jwt"])["exp"] - jwt_claims(alias["jwt"])["iat"] == 60
        assert_error(
            client.post("/account/jwts", json={"duration": -1}), 400, "general_argument_invalid"
        )
        limited = client.post("/account/jwts")
        assert limited.headers["x-ratelimit-limit"] == "120"
        assert int(limited.headers["x-ratelimit-reset"]) % 60 == 0
    with key_client(service) as admin:
        # A key is no user: it lacks the `account` scope.
        assert_error(admin.post("/account/jwts"), 401, "general_unauthorized_scope")


def test_users_api_mints_jwts(service: LocalService) -> None:
    create_user(service, "minted")
    with key_client(service) as admin:
        token = ok(admin.post("/users/minted/jwts"), 201)["jwt"]
        assert jwt_claims(token)["exp"] - jwt_claims(token)["iat"] == 900
        too_long = admin.post("/users/minted/jwts", json={"duration": 3601})
        assert_error(too_long, 400, "general_argument_invalid")
        assert_error(admin.post("/users/ghost/jwts"), 404, "user_not_found")
    with guest_client(service) as guest:
        assert ok(guest.get("/account", headers={"X-Service-JWT": token}))["$id"] == "minted"
    with session_client(service, "minted") as client:
        assert_error(client.post("/users/minted/jwts"), 401, "general_unauthorized_scope")


def test_users_api_jwt_for_no_session_names_none_and_acts_as_the_user(
    service: LocalService,
) -> None:
    create_user(service, "sessionless")
    with key_client(service) as admin:
        recent = ok(admin.post("/users/sessionless/jwts"), 201)["jwt"]
        unknown = admin.post("/users/sessionless/jwts", json={"sessionId": "nosuchsession"})
        malformed = admin.post("/users/sessionless/jwts", json={"sessionId": "_bad"})
    assert jwt_claims(recent)["sessionId"] == ""
    assert jwt_claims(ok(unknown, 201)["jwt"])["sessionId"] == ""
    message = assert_error(malformed, 400, "general_argument_invalid")["message"]
    assert str(message).startswith("Invalid `sessionId` param: ")
    headers = {"X-Service-JWT": recent}
    with guest_client(service) as guest:
        assert ok(guest.get("/account", headers=headers))["$id"] == "sessionless"
        refused = guest.post("/account/jwts", headers=headers)
        assert_error(refused, 403, "user_jwt_creation_denied")
    with session_client(service, "sessionless") as client:
        # Minting made no session of its own: the sign-in is the user's only one.
        assert ok(client.get("/account/sessions"))["total"] == 1


def test_users_api_jwt_for_a_named_session_ends_with_it(service: LocalService) -> None:
    create_user(service, "namedjwt")
    with session_client(service, "namedjwt") as client:
        session_id = ok(client.get("/account/sessions/current"))["$id"]
        with key_client(service) as admin:
            body = {"sessionId": session_id}
            token = ok(admin.post("/users/namedjwt/jwts", json=body), 201)["jwt"]
        assert jwt_claims(token)["sessionId"] == session_id
        headers = {"X-Service-JWT": token}
        with guest_client(service) as guest:
            assert ok(guest.get("/account", headers=headers))["$id"] == "namedjwt"
            assert client.delete("/account/sessions/current").status_code == 204
            gone = guest.get("/account", headers=headers)
    assert_error(gone, 401, "general_unauthorized_scope")


def test_impersonation_precedence_and_jwt(service: LocalService) -> None:
    for user_id in ("imp-a", "imp-b", "imp-c"):
        create_user(service, user_id)
    create_user(service, "imp-boss", impersonator=True)
    with key_client(service) as admin:
        ok(admin.post("/users", json={"userId": "imp-phone", "phone": "+4712345678"}), 201)
    with jwt_client(service, "imp-boss") as client:
        both = client.get(
            "/account",
            headers={
                "X-Service-Impersonate-User-Email": "imp-b@example.org",
                "X-Service-Impersonate-User-Id": "imp-a",
            },
        )
        assert ok(both)["$id"] == "imp-a" and both.json()["impersonatorUserId"] == "imp-boss"
        by_phone = client.get(
            "/account", headers={"X-Service-Impersonate-User-Phone": "+4712345678"}
        )
        assert ok(by_phone)["$id"] == "imp-phone"
        by_params = client.get(
            "/account", params={"impersonateEmail": "IMP-C@example.org", "impersonatePhone": "x"}
        )
        assert ok(by_params)["$id"] == "imp-c"
        lower = client.get("/account", params={"impersonateuserid": "imp-b"})
        assert ok(lower)["$id"] == "imp-b"
        itself = ok(client.get("/account"))
        assert itself["$id"] == "imp-boss" and itself["impersonatorUserId"] is None


def test_permission_roles_follow_verification_labels_and_memberships(
    service: LocalService,
) -> None:
    create_user(service, "roles")
    with key_client(service) as admin:
        ok(admin.post("/tablesdb", json={"databaseId": "rolesdb", "name": "r"}), 201)
        for table_id, role in (
            ("verified", "users/verified"),
            ("unverified", "user:roles/unverified"),
            ("labelled", "label:vip"),
            ("team", "team:crew2/editor"),
            ("member", "team:crew2"),
        ):
            body = {"tableId": table_id, "name": table_id, "permissions": [f'read("{role}")']}
            ok(admin.post("/tablesdb/rolesdb/tables", json=body), 201)

    def readable() -> set[str]:
        with session_client(service, "roles") as client:
            tables = ("verified", "unverified", "labelled", "team", "member")
            return {
                table
                for table in tables
                if client.get(f"/tablesdb/rolesdb/tables/{table}/rows").status_code == 200
            }

    assert readable() == {"unverified"}
    with key_client(service) as admin:
        ok(admin.patch("/users/roles/verification", json={"emailVerification": True}))
        ok(admin.put("/users/roles/labels", json={"labels": ["vip"]}))
        ok(admin.post("/teams", json={"teamId": "crew2", "name": "Crew"}), 201)
        ok(
            admin.post("/teams/crew2/memberships", json={"userId": "roles", "roles": ["editor"]}),
            201,
        )
    assert readable() == {"verified", "labelled", "team", "member"}


def test_blocked_user_with_a_live_session(service: LocalService) -> None:
    create_user(service, "blockme")
    with session_client(service, "blockme") as client:
        with key_client(service) as admin:
            ok(admin.patch("/users/blockme/status", json={"status": False}))
        assert_error(client.get("/account"), 403, "user_blocked")


# --- account endpoints and models (service interface, "Accounts and sessions", "Models") ----


def test_account_and_user_models_list_every_field(service: LocalService) -> None:
    create_user(service, "fields")
    with session_client(service, "fields") as client:
        account = ok(client.get("/account"))
    assert list(account) == ACCOUNT_FIELDS
    for optional in ("emailCanonical", "emailIsFree", "emailIsDisposable", "emailIsCorporate"):
        assert account[optional] is None
    assert account["emailIsCanonical"] is None and account["impersonatorUserId"] is None
    for name in ("$createdAt", "$updatedAt", "registration", "passwordUpdate", "accessedAt"):
        assert DATETIME.match(account[name]), (name, account[name])
    with key_client(service) as admin:
        user = ok(admin.get("/users/fields"))
        created = ok(admin.post("/users", json={"userId": "fields2", "name": "F"}), 201)
    assert list(user) == USER_FIELDS and list(created) == USER_FIELDS
    assert user["password"] is None and user["hash"] is None and user["hashOptions"] is None
    assert created["passwordUpdate"] == "" and created["email"] == ""
    with guest_client(service) as guest:
        signed_up = guest.post(
            "/account",
            json={"userId": "fields3", "email": "fields3@example.org", "password": PASSWORD},
        )
    assert list(ok(signed_up, 201)) == ACCOUNT_FIELDS


def test_response_format_before_1_9_drops_impersonator_fields(service: LocalService) -> None:
    create_user(service, "oldformat")
    with session_client(service, "oldformat") as client:
        old = ok(client.get("/account", headers={"X-Service-Response-Format": "1.8.1"}))
        assert "impersonator" not in old and "impersonatorUserId" not in old
        current = ok(client.get("/account", headers={"X-Service-Response-Format": "1.9.0"}))
        assert list(current) == ACCOUNT_FIELDS
    with key_client(service) as admin:
        user = ok(admin.get("/users/oldformat", headers={"X-Service-Response-Format": "1.7"}))
        assert "impersonator" not in user and "impersonatorUserId" not in user


def test_newer_response_format_warns(service: LocalService) -> None:
    with key_client(service) as admin:
        newer = admin.get("/users/nobody", headers={"X-Service-Response-Format": "2.0.0"})
        assert_error(newer, 404, "user_not_found")
        assert "2.0.0" in newer.headers["x-service-warning"]
        for version in ("1.9.5", "1.9.6"):
            same = admin.get("/users/nobody", headers={"X-Service-Response-Format": version})
            assert "x-service-warning" not in same.headers
        assert "x-service-warning" not in admin.get("/users/nobody").headers


def test_sessions_get_list_and_delete(service: LocalService) -> None:
    create_user(service, "sessions")
    with session_client(service, "sessions") as first, session_client(service, "sessions") as other:
        current = ok(first.get("/account/sessions/current"))
        assert list(current) == SESSION_FIELDS
        assert current["current"] is True and current["secret"] == ""
        assert current["provider"] == "email" and current["providerUid"] == "sessions@example.org"
        assert current["factors"] == ["password"] and current["userId"] == "sessions"
        for name in ("$createdAt", "$updatedAt", "expire"):
            assert DATETIME.match(current[name])
        other_id = ok(other.get("/account/sessions/current"))["$id"]
        by_id = ok(first.get(f"/account/sessions/{other_id}"))
        assert by_id["$id"] == other_id and by_id["current"] is False
        listed = ok(first.get("/account/sessions"))
        assert listed["total"] == 2 and list(listed) == ["total", "sessions"]
        assert {session["$id"] for session in listed["sessions"]} == {current["$id"], other_id}
        assert_error(first.get("/account/sessions/nope"), 404, "user_session_not_found")
        deleted = first.delete(f"/account/sessions/{other_id}")
        assert deleted.status_code == 204 and "set-cookie" not in deleted.headers
        assert deleted.headers["x-ratelimit-limit"] == "100"
        assert_error(other.get("/account"), 401, "general_unauthorized_scope")
    with guest_client(service) as guest:
        assert_error(guest.get("/account/sessions/current"), 401, "general_unauthorized_scope")


def test_a_key_sees_the_session_secret(service: LocalService) -> None:
    create_user(service, "secretive")
    with key_client(service) as admin:
        made = admin.post(
            "/account/sessions/email",
            json={"email": "secretive@example.org", "password": PASSWORD},
        )
    secret = ok(made, 201)["secret"]
    assert secret and secret == made.cookies[f"a_session_{service.project}"]


def test_email_session_limit_resets_after_success() -> None:
    overrides = {"POST /v1/account/sessions/email": (3, 3600)}
    with LocalService(rate_limit_overrides=overrides) as service:
        create_user(service, "limited")
        wrong = {"email": "limited@example.org", "password": "wrong-password"}
        right = {"email": "LIMITED@example.org", "password": PASSWORD}
        with guest_client(service) as guest:
            first = guest.post("/account/sessions/email", json=wrong)
            assert first.headers["x-ratelimit-remaining"] == "2"
            assert guest.post("/account/sessions/email", json=wrong).status_code == 401
            signed_in = guest.post("/account/sessions/email", json=right)
            assert signed_in.status_code == 201
        with guest_client(service) as guest:
            after = guest.post("/account/sessions/email", json=wrong)
            assert after.headers["x-ratelimit-remaining"] == "2"
            # Another e-mail has its own budget.
            other = {"email": "someone@example.org", "password": "wrong-password"}
            other_budget = guest.post("/account/sessions/email", json=other)
            assert other_budget.headers["x-ratelimit-remaining"] == "2"


# --- users, teams, memberships (service interface, "Users and teams") ----------------------


def test_users_create_rules(service: LocalService) -> None:
    with key_client(service) as admin:
        phone = ok(admin.post("/users", json={"userId": "ph1", "phone": "+4799999999"}), 201)
        assert phone["phone"] == "+4799999999" and phone["email"] == ""
        bad_phone = admin.post("/users", json={"userId": "ph2", "phone": "4799"})
        assert_error(bad_phone, 400, "general_argument_invalid")
        bad_email = admin.post("/users", json={"userId": "ph3", "email": "nope"})
        assert_error(bad_email, 400, "general_argument_invalid")
        upper = ok(admin.post("/users", json={"userId": "ph4", "email": "UP@Example.org"}), 201)
        assert upper["email"] == "up@example.org"
        flagged = ok(admin.patch("/users/ph4/impersonator", json={"impersonator": "true"}))
        assert flagged["impersonator"] is True and list(flagged) == USER_FIELDS
        missing = admin.patch("/users/ph4/impersonator", json={})
        body = assert_error(missing, 400, "general_argument_invalid")
        assert body["message"] == 'Param "impersonator" is not optional.'


def test_team_and_membership_models(service: LocalService) -> None:
    create_user(service, "owner")
    create_user(service, "joiner")
    with session_client(service, "owner") as client:
        team = ok(client.post("/teams", json={"teamId": "band", "name": "Band"}), 201)
        assert list(team) == TEAM_FIELDS and team["total"] == 1 and team["prefs"] == {}
        for name in ("$createdAt", "$updatedAt"):
            assert DATETIME.match(team[name])
        custom = ok(
            client.post("/teams", json={"teamId": "band2", "name": "B", "roles": ["lead"]}), 201
        )
        assert custom["total"] == 1
        invited = client.post("/teams/band/memberships", json={"userId": "joiner", "roles": []})
        membership = ok(invited, 201)
        assert invited.headers["x-ratelimit-limit"] == "10"
        assert membership["confirm"] is False and membership["joined"] == ""
        not_owner = client.post("/teams/band2/memberships", json={"userId": "joiner", "roles": []})
        assert_error(not_owner, 401, "user_unauthorized")
    with key_client(service) as admin:
        made = admin.post(
            "/teams/band/memberships", json={"email": "JOINER@example.org", "roles": ["a", "b"]}
        )
        membership = ok(made, 201)
    assert list(membership) == MEMBERSHIP_FIELDS
    assert membership["confirm"] is True and DATETIME.match(membership["joined"])
    assert membership["userEmail"] == "joiner@example.org" and membership["teamName"] == "Band"
    assert membership["roles"] == ["a", "b"] and DATETIME.match(membership["invited"])
    with key_client(service) as admin:
        long_role = admin.post(
            "/teams/band/memberships", json={"userId": "joiner", "roles": ["r" * 82]}
        )
        assert_error(long_role, 400, "general_argument_invalid")
        no_roles = admin.post("/teams/band/memberships", json={"userId": "joiner"})
        assert_error(no_roles, 400, "general_argument_invalid")
        assert_error(
            admin.post("/teams/nope/memberships", json={"userId": "joiner", "roles": []}),
            404,
            "team_not_found",
        )
        # The body's userId is an ID too: malformed is 400 (even for a missing team), unknown 404.
        for team in ("band", "nope"):
            malformed = admin.post(f"/teams/{team}/memberships", json={"userId": "_x", "roles": []})
            message = assert_error(malformed, 400, "general_argument_invalid")["message"]
            assert str(message).startswith("Invalid `userId` param: ")
        unknown = admin.post("/teams/band/memberships", json={"userId": "ghost", "roles": []})
        assert_error(unknown, 404, "user_not_found")
        long_name = admin.post("/teams", json={"teamId": "x", "name": "n" * 129})
        assert_error(long_name, 400, "general_argument_invalid")
    with guest_client(service) as guest:
        assert_error(
            guest.post("/teams", json={"teamId": "g", "name": "g"}),
            401,
            "general_unauthorized_scope",
        )


def test_routes_without_a_limit_send_no_rate_limit_headers(service: LocalService) -> None:
    create_user(service, "nolimit")
    with session_client(service, "nolimit") as client:
        for response in (client.get("/account"), client.get("/account/sessions")):
            assert response.status_code == 200
            assert not [name for name in response.headers if name.startswith("x-ratelimit")]
    with guest_client(service) as guest:
        signed_up = guest.post(
            "/account",
            json={"userId": "nolimit2", "email": "nl2@example.org", "password": PASSWORD},
            headers=project_headers(service),
        )
        assert signed_up.headers["x-ratelimit-limit"] == "10"
        assert int(signed_up.headers["x-ratelimit-reset"]) % 3600 == 0


def test_scope_is_checked_before_the_rate_limit(tmp_path: Path) -> None:
    overrides = {"DELETE /v1/account/sessions": (1, 3600)}
    with LocalService(data_dir=tmp_path, rate_limit_overrides=overrides) as service:
        create_user(service, "budget")
        with guest_client(service) as guest:
            for _ in range(3):
                refused = guest.delete("/account/sessions")
                assert_error(refused, 401, "general_unauthorized_scope")
                assert not [name for name in refused.headers if name.startswith("x-ratelimit")]
        with session_client(service, "budget") as client:
            # Same IP, same route: the guests' refused calls used up none of its budget.
            signed_out = client.delete("/account/sessions")
    assert signed_out.status_code == 204, signed_out.text
    assert signed_out.headers["x-ratelimit-remaining"] == "0"


def test_session_path_ids_are_validated(service: LocalService) -> None:
    create_user(service, "sessionpaths")
    with session_client(service, "sessionpaths") as client:
        for method in ("GET", "DELETE"):
            response = client.request(method, f"/account/sessions/{'s' * 37}")
            message = assert_error(response, 400, "general_argument_invalid")["message"]
            assert str(message).startswith("Invalid `sessionId` param: ")
        missing = client.get("/account/sessions/valid-but-missing")
        assert_error(missing, 404, "user_session_not_found")


def test_user_and_team_path_ids_are_validated(service: LocalService) -> None:
    with key_client(service) as admin:
        for path, name in (
            ("/users/_bad", "userId"),
            (f"/users/{'u' * 37}/jwts", "userId"),
            ("/teams/-bad", "teamId"),
            ("/teams/.bad/memberships", "teamId"),
        ):
            method = "POST" if path.endswith(("jwts", "memberships")) else "GET"
            body = {"userId": "x", "roles": []} if method == "POST" else None
            response = admin.request(method, path, json=body)
            message = assert_error(response, 400, "general_argument_invalid")["message"]
            assert str(message).startswith(f"Invalid `{name}` param: "), (path, message)
        assert_error(admin.get("/users/valid-but-missing"), 404, "user_not_found")


def test_each_user_keeps_at_most_ten_sessions(service: LocalService) -> None:
    create_user(service, "many")
    login = {"email": "many@example.org", "password": PASSWORD}
    values = []
    with guest_client(service) as guest:
        for _ in range(11):
            made = guest.post("/account/sessions/email", json=login)
            assert made.status_code == 201, made.text
            values.append(made.cookies[f"a_session_{service.project}"])
            guest.cookies.clear()
        oldest = guest.get("/account", headers={"X-Service-Session": values[0]})
        assert_error(oldest, 401, "general_unauthorized_scope")
        newest = guest.get("/account/sessions", headers={"X-Service-Session": values[-1]})
        assert ok(newest)["total"] == 10
