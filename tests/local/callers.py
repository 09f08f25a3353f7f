"""Callers of every kind for the local service's tests: key, guest, session, JWT.

The tests speak HTTP to the local service themselves (httpx), so they check the service's
interface rather than the frameport client.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from frameport.local import LocalService

PASSWORD = "correct horse battery"


def project_headers(svc: LocalService) -> dict[str, str]:
    return {"X-Service-Project": svc.project}


def key_client(svc: LocalService) -> httpx.Client:
    """An API-key caller."""
    headers = {**project_headers(svc), "X-Service-Key": svc.key}
    return httpx.Client(base_url=svc.endpoint, headers=headers, timeout=60)


def guest_client(svc: LocalService) -> httpx.Client:
    """A caller with neither a session nor a key."""
    return httpx.Client(base_url=svc.endpoint, headers=project_headers(svc), timeout=60)


def create_user(svc: LocalService, user_id: str, *, impersonator: bool = False) -> str:
    """A user `<user_id>@example.org` with PASSWORD, made with the API key."""
    with key_client(svc) as admin:
        body = {"userId": user_id, "email": f"{user_id}@example.org", "password": PASSWORD}
        response = admin.post("/users", json=body)
        assert response.status_code == 201, response.text
        if impersonator:
            response = admin.patch(f"/users/{user_id}/impersonator", json={"impersonator": True})
            assert response.status_code == 200, response.text
    return user_id


@contextmanager
def session_client(svc: LocalService, user_id: str) -> Iterator[httpx.Client]:
    """A caller signed in as `user_id` with an e-mail session (cookies)."""
    with guest_client(svc) as client:
        response = client.post(
            "/account/sessions/email",
            json={"email": f"{user_id}@example.org", "password": PASSWORD},
        )
        assert response.status_code == 201, response.text
        yield client


@contextmanager
def jwt_client(svc: LocalService, user_id: str) -> Iterator[httpx.Client]:
    """A caller authenticated only by a JWT of `user_id`."""
    with session_client(svc, user_id) as session:
        response = session.post("/account/jwts", json={})
        assert response.status_code == 201, response.text
        token = response.json()["jwt"]
    headers = {**project_headers(svc), "X-Service-JWT": token}
    with httpx.Client(base_url=svc.endpoint, headers=headers, timeout=60) as client:
        yield client


def assert_error(response: httpx.Response, status: int, type_: str) -> dict[str, Any]:
    """The error body, after checking the status, the type and the body's shape."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["type"] == type_, body
    assert body["code"] == status
    assert set(body) == {"message", "code", "type", "version"}
    return body
