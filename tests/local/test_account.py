"""The local service's accounts, sessions, JWTs, impersonation, errors and rate limits."""

from __future__ import annotations

import json
import time

import httpx
from callers import PASSWORD, guest_client, key_client, project_headers, session_client
from callers import assert_error as assert_error_body

from frameport.local import LocalService


def guest(svc: LocalService) -> httpx.Client:
    return guest_client(svc)


def make_user(svc: LocalService, user_id: str, **extra: object) -> dict[str, object]:
    with key_client(svc) as admin:
        body = {"userId": user_id, "email": f"{user_id}@example.org", "password": PASSWORD}
        response = admin.post("/users", json={**body, **extra})
    assert response.status_code == 201, response.text
    return dict(response.json())


signed_in = session_client


def assert_error(response: httpx.Response, status: int, type_: str) -> dict[str, object]:
    body = assert_error_body(response, status, type_)
    assert response.headers["cache-control"] == "no-cache, no-store, must-revalidate"
    return body


def test_sign_up_and_duplicates(service: LocalService) -> None:
    with guest(service) as client:
        created = client.post(
            "/account",
            json={"userId": "unique()", "email": "Ada@Example.org", "password": PASSWORD},
        )
        assert created.status_code == 201
        assert created.json()["email"] == "ada@example.org"
        assert len(created.json()["$id"]) == 20
        assert "scrypt" not in created.text and PASSWORD not in created.text
        again = client.post(
            "/account", json={"userId": "other", "email": "ada@example.org", "password": PASSWORD}
        )
        assert_error(again, 409, "user_already_exists")
        short = client.post(
            "/account", json={"userId": "x1", "email": "x1@example.org", "password": "short"}
        )
        assert_error(short, 400, "general_argument_invalid")
        missing = client.post("/account", json={"userId": "x2", "password": PASSWORD})
        body = assert_error(missing, 400, "general_argument_invalid")
        assert body["message"] == 'Param "email" is not optional.'
        bad_id = client.post(
            "/account", json={"userId": "_bad", "email": "b@example.org", "password": PASSWORD}
        )
        assert "Invalid `userId` param" in str(
            assert_error(bad_id, 400, "general_argument_invalid")["message"]
        )


def test_session_cookies_carry_the_listed_attributes(service: LocalService) -> None:
    make_user(service, "cookies")
    with guest(service) as client:
        response = client.post(
            "/account/sessions/email",
            json={"email": "cookies@example.org", "password": PASSWORD},
        )
    assert response.status_code == 201
    assert response.json()["secret"] == ""
    cookies = response.headers.get_list("set-cookie")
    by_name = {c.split("=", 1)[0]: c.lower() for c in cookies}
    modern, legacy = f"a_session_{service.project}", f"a_session_{service.project}_legacy"
    assert set(by_name) == {modern, legacy}
    for text in by_name.values():
        assert "httponly" in text and "path=/" in text and "expires=" in text
        assert "domain=" not in text  # requested by IP address
        assert "secure" not in text  # plain http
    assert "samesite=none" in by_name[modern]
    assert "samesite" not in by_name[legacy]
    assert (
        by_name[modern].split(";")[0].split("=", 1)[1]
        == by_name[legacy].split(";")[0].split("=", 1)[1]
    )


def test_account_by_cookie_fallback_header_and_jwt(service: LocalService) -> None:
    user = make_user(service, "reader")
    with signed_in(service, "reader") as client:
        assert client.get("/account").json()["$id"] == user["$id"]
        value = client.cookies[f"a_session_{service.project}"]
        token = client.post("/account/jwts", json={}).json()["jwt"]
    fallback = {"X-Fallback-Cookies": json.dumps({f"a_session_{service.project}": value})}
    with guest(service) as other:
        assert other.get("/account", headers=fallback).json()["$id"] == user["$id"]
        assert other.get("/account", headers={"X-Service-Session": value}).status_code == 200
        by_jwt = other.get("/account", headers={"X-Service-JWT": token})
        assert by_jwt.json()["$id"] == user["$id"]
        assert_error(
            other.post("/account/jwts", headers={"X-Service-JWT": token}),
            403,
            "user_jwt_creation_denied",
        )
        signed, signature = token.rsplit(".", 1)
        other_first = "B" if signature[0] == "A" else "A"  # a first character's 6 bits all count
        forged = f"{signed}.{other_first}{signature[1:]}"
        broken = other.get("/account", headers={"X-Service-JWT": forged})
        assert str(assert_error(broken, 401, "user_jwt_invalid")["message"]).startswith(
            "Failed to verify JWT."
        )
    with signed_in(service, "reader") as both:
        assert_error(
            both.get("/account", headers={"X-Service-JWT": token}), 403, "user_jwt_and_cookie_set"
        )


def test_jwt_expires(service: LocalService) -> None:
    make_user(service, "brief")
    with signed_in(service, "brief") as client:
        token = client.post("/account/jwts", json={"duration": 1}).json()["jwt"]
        assert_error(
            client.post("/account/jwts", json={"duration": 3601}), 400, "general_argument_invalid"
        )
    service.advance_clock(2)  # past the JWT's one second, on the service's clock
    with guest(service) as other:
        assert_error(
            other.get("/account", headers={"X-Service-JWT": token}), 401, "user_jwt_invalid"
        )


def test_guest_and_wrong_credentials(service: LocalService) -> None:
    make_user(service, "wrong")
    with guest(service) as client:
        assert_error(client.get("/account"), 401, "general_unauthorized_scope")
        bad = client.post(
            "/account/sessions/email", json={"email": "wrong@example.org", "password": "nope-nope"}
        )
        body = assert_error(bad, 401, "user_invalid_credentials")
        assert "nope-nope" not in json.dumps(body)
        assert_error(client.post("/account/jwts"), 401, "general_unauthorized_scope")
    with signed_in(service, "wrong") as client:
        again = client.post(
            "/account/sessions/email", json={"email": "wrong@example.org", "password": PASSWORD}
        )
        assert_error(again, 401, "user_session_already_exists")


def test_logout_clears_cookies_and_ends_the_session(service: LocalService) -> None:
    make_user(service, "leaver")
    with signed_in(service, "leaver") as client:
        token = client.post("/account/jwts").json()["jwt"]
        value = client.cookies[f"a_session_{service.project}"]
        response = client.delete("/account/sessions/current")
    assert response.status_code == 204
    assert response.headers["x-fallback-cookies"] == "[]"
    assert len(response.headers.get_list("set-cookie")) == 2
    with guest(service) as other:
        assert_error(
            other.get("/account", headers={"X-Service-Session": value}),
            401,
            "general_unauthorized_scope",
        )
        # A valid JWT whose session was deleted makes the caller a guest.
        assert_error(
            other.get("/account", headers={"X-Service-JWT": token}),
            401,
            "general_unauthorized_scope",
        )
    make_user(service, "leaver2")
    with signed_in(service, "leaver2") as second:
        assert_error(second.delete("/account/sessions/nope"), 404, "user_session_not_found")


def test_impersonation_rules(service: LocalService) -> None:
    target = make_user(service, "target", name="Target")
    boss = make_user(service, "boss")
    make_user(service, "plain")
    with key_client(service) as admin:
        flagged = admin.patch(f"/users/{boss['$id']}/impersonator", json={"impersonator": True})
        assert flagged.json()["impersonator"] is True
        # A key has no user: the headers have no effect.
        ignored = admin.get("/account", headers={"X-Service-Impersonate-User-Id": "target"})
        assert_error(ignored, 401, "general_unauthorized_scope")
    with signed_in(service, "boss") as client:
        seen = client.get("/account", headers={"X-Service-Impersonate-User-Id": "target"}).json()
        assert seen["$id"] == target["$id"] and seen["impersonatorUserId"] == "boss"
        by_email = client.get(
            "/account", headers={"X-Service-Impersonate-User-Email": "TARGET@example.org"}
        ).json()
        assert by_email["$id"] == "target"
        by_param = client.get("/account", params={"impersonateUserId": "target"}).json()
        assert by_param["$id"] == "target"
        unknown = client.get("/account", headers={"X-Service-Impersonate-User-Id": "ghost"})
        assert unknown.json()["$id"] == "boss"
        # While impersonating, the caller gains users.read.
        read = client.get("/users/plain", headers={"X-Service-Impersonate-User-Id": "target"})
        assert read.status_code == 200
        assert_error(client.get("/users/plain"), 401, "general_unauthorized_scope")
    with signed_in(service, "plain") as client:
        ignored = client.get("/account", headers={"X-Service-Impersonate-User-Id": "target"})
        assert ignored.json()["$id"] == "plain"


def test_users_and_teams_need_their_scopes(service: LocalService) -> None:
    make_user(service, "member")
    with key_client(service) as admin:
        assert_error(
            admin.post("/users", json={"userId": "member", "email": "m2@example.org"}),
            409,
            "user_already_exists",
        )
        assert_error(
            admin.post("/users", json={"userId": "m3", "email": "member@example.org"}),
            409,
            "user_email_already_exists",
        )
        assert_error(admin.get("/users/ghost"), 404, "user_not_found")
        team = admin.post("/teams", json={"teamId": "crew", "name": "Crew"})
        assert team.status_code == 201
        joined = admin.post(
            "/teams/crew/memberships", json={"userId": "member", "roles": ["editor"]}
        )
        assert joined.status_code == 201 and joined.json()["confirm"] is True
        assert_error(admin.get("/teams/none"), 404, "team_not_found")
        assert_error(
            admin.post("/teams", json={"teamId": "crew", "name": "x"}), 409, "team_already_exists"
        )
    with signed_in(service, "member") as client:
        assert_error(
            client.post("/users", json={"userId": "nope"}), 401, "general_unauthorized_scope"
        )
    with key_client(service) as admin:
        admin.patch("/users/member/status", json={"status": False})
    with guest(service) as client:
        blocked = client.post(
            "/account/sessions/email", json={"email": "member@example.org", "password": PASSWORD}
        )
        assert_error(blocked, 403, "user_blocked")


def test_projects_routes_and_bodies(service: LocalService) -> None:
    with httpx.Client(base_url=service.endpoint) as client:
        assert_error(client.get("/account"), 401, "general_access_forbidden")
        assert_error(
            client.get("/account", headers={"X-Service-Project": "nope"}), 404, "project_not_found"
        )
        assert_error(
            client.get("/nowhere", headers=project_headers(service)), 404, "general_route_not_found"
        )
        assert_error(
            client.put("/account", headers=project_headers(service)), 404, "general_route_not_found"
        )
    with key_client(service) as admin:
        malformed = admin.post(
            "/users", content=b"{not json", headers={"Content-Type": "application/json"}
        )
        assert_error(malformed, 400, "general_bad_request")
        assert_error(admin.post("/users", json=[1, 2]), 400, "general_bad_request")
    # An unknown key silently makes the caller a guest.
    with guest(service) as client:
        unknown_key = client.get("/users/member", headers={"X-Service-Key": "standard_nope"})
        assert_error(unknown_key, 401, "general_unauthorized_scope")


def test_rate_limits_and_headers() -> None:
    with LocalService(rate_limit_overrides={"POST /v1/account": (3, 3600)}) as service:
        check_rate_limits(service)


def check_rate_limits(service: LocalService) -> None:
    with guest(service) as client:
        seen = []
        for number in range(4):
            response = client.post(
                "/account",
                json={
                    "userId": f"rl{number}",
                    "email": f"rl{number}@example.org",
                    "password": PASSWORD,
                },
            )
            seen.append(response)
        assert [r.status_code for r in seen[:1]] == [201]
        remaining = [int(r.headers["x-ratelimit-remaining"]) for r in seen]
        assert all(r.headers["x-ratelimit-limit"] == "3" for r in seen)
        assert remaining[-1] == 0
        assert_error(seen[-1], 429, "general_rate_limit_exceeded")
        reset = int(seen[0].headers["x-ratelimit-reset"])
        assert reset % 3600 == 0 and reset > time.time()
        # Routes without a limit send no rate-limit headers.
        assert "x-ratelimit-limit" not in client.get("/account").headers
    with key_client(service) as admin:
        # Keys are not limited, but still see the headers.
        for number in range(5):
            response = admin.post(
                "/account",
                json={"userId": f"k{number}", "email": f"k{number}@ex.org", "password": PASSWORD},
            )
            assert response.status_code == 201
            assert "x-ratelimit-remaining" in response.headers


def test_data_persists_across_restarts(tmp_path: object) -> None:
    with LocalService(data_dir=str(tmp_path)) as first:
        make_user(first, "durable")
        key = first.key
    with LocalService(data_dir=str(tmp_path)) as second:
        assert second.key == key
        with key_client(second) as admin:
            assert admin.get("/users/durable").status_code == 200
