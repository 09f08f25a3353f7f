"""Resolving the acting identity of a request in the service's order, and of a realtime
connection (service interface, "Authentication", "Impersonation", "Realtime connections")."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from typing import Any

import jwt
from starlette.requests import HTTPConnection, Request

from ..wire import _json as request_json
from ..wire._errors import SERVER_VERSION, ServiceError
from ._state import ServiceState
from .accounts._accounts import decode_session, hash_secret, permission_roles, user_row
from .accounts._caller import (
    SERVER_FORMAT,
    USER_SCOPES,
    Caller,
    guest_caller,
    key_caller,
    parse_format,
)

JWT_MAX_AGE = 3600
_IMPERSONATION = (
    ("id", "X-Service-Impersonate-User-Id", "impersonateUserId"),
    ("email", "X-Service-Impersonate-User-Email", "impersonateEmail"),
    ("phone", "X-Service-Impersonate-User-Phone", "impersonatePhone"),
)


def session_cookie_names(project: str) -> tuple[str, str]:
    return f"a_session_{project}", f"a_session_{project}_legacy"


def mint_jwt(state: ServiceState, user_id: str, session_id: str, duration: int) -> str:
    now = int(state.clock.now())
    payload = {"userId": user_id, "sessionId": session_id, "iat": now, "exp": now + duration}
    return jwt.encode(payload, state.jwt_secret, algorithm="HS256")


def _session_value(request: HTTPConnection, project: str) -> tuple[str | None, bool]:
    """The encoded session sent with `request`, and whether `X-Fallback-Cookies` was consulted
    (the cookies and `X-Service-Session` were absent)."""
    for name in session_cookie_names(project):
        value = request.cookies.get(name)
        if value:
            return value, False
    value = request.headers.get("X-Service-Session")
    if value:
        return value, False
    fallback = request.headers.get("X-Fallback-Cookies")
    if not fallback:
        return None, True
    try:
        decoded = request_json.loads(fallback)
    except ValueError:
        return None, True
    found = decoded.get(session_cookie_names(project)[0]) if isinstance(decoded, dict) else None
    return (found if isinstance(found, str) and found else None), True


def _format_headers(request: Request) -> tuple[tuple[int, int, int], dict[str, str]]:
    """The requested response format (newest when absent) and its warning, if any
    (service interface, "Response formats")."""
    wanted = request.headers.get("X-Service-Response-Format")
    if not wanted:
        return SERVER_FORMAT, {}
    requested = parse_format(wanted)
    if requested <= SERVER_FORMAT:
        return requested, {}
    warning = (
        f"The requested response format {wanted} is newer than the server version "
        f"{SERVER_VERSION}; responses use the server's newest format."
    )
    return requested, {"X-Service-Warning": warning}


def _active_session(
    conn: sqlite3.Connection, user_id: str, session_id: str | None, secret: str | None
) -> str | None:
    """The ID of a live session of `user_id` matching the ID or the secret."""
    if session_id is not None:
        row = conn.execute(
            "SELECT id FROM sessions WHERE id = ? AND user_id = ? AND expire > ?",
            (session_id, user_id, time.time()),
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT id FROM sessions WHERE user_id = ? AND secret_hash = ? AND expire > ?",
            (user_id, hash_secret(secret or ""), time.time()),
        ).fetchone()
    return None if row is None else str(row[0])


def _user_caller(
    conn: sqlite3.Connection, user: dict[str, Any], session_id: str | None, via_jwt: bool, ip: str
) -> Caller:
    if not user["status"]:
        raise ServiceError("user_blocked", "The current user has been blocked.")
    return Caller(
        role="users",
        scopes=USER_SCOPES,
        roles=permission_roles(conn, user),
        user=user,
        session_id=session_id,
        via_jwt=via_jwt,
        ip=ip,
    )


def _jwt_caller(conn: sqlite3.Connection, claims: dict[str, Any], ip: str) -> Caller | None:
    """The user a verified JWT names, or None (a guest) when the user or the token's session
    is gone; a token minted with no session (`sessionId` empty) needs none."""
    user_id, session_id = str(claims.get("userId") or ""), str(claims.get("sessionId") or "")
    user = user_row(conn, "id", user_id) if user_id else None
    if user is None:
        return None
    if session_id and _active_session(conn, user_id, session_id, None) is None:
        return None
    return _user_caller(conn, user, session_id or None, True, ip)


def resolve_caller(state: ServiceState, request: Request, project: str, ip: str) -> Caller:
    """The caller of `request`: session user, JWT user, API key or guest, with the requested
    response format and the headers that say how the request was read."""
    value, fallback_read = _session_value(request, project)
    response_format, headers = _format_headers(request)
    headers["X-Debug-Fallback"] = "true" if fallback_read else "false"
    caller = _identify(state, request, project, ip, value)
    return replace(caller, response_format=response_format, response_headers=headers)


def _identify(
    state: ServiceState, request: Request, project: str, ip: str, value: str | None
) -> Caller:
    with state.store.read() as conn:
        caller = _session_caller(conn, value, ip)
        token = request.headers.get("X-Service-JWT")
        if token:
            caller = _jwt_bearer(state, conn, token, caller, ip)
        key = request.headers.get("X-Service-Key")
        if key and key == state.key:
            return key_caller(ip)
        if caller is None:
            return guest_caller(ip)
        return _impersonated(conn, request, caller)


def _session_caller(conn: sqlite3.Connection, value: str | None, ip: str) -> Caller | None:
    """The user of an encoded session value, if it names a live session of an existing user."""
    decoded = decode_session(value) if value else None
    if decoded is None:
        return None
    user = user_row(conn, "id", decoded[0])
    session_id = _active_session(conn, decoded[0], None, decoded[1]) if user else None
    if user is None or session_id is None:
        return None
    return _user_caller(conn, user, session_id, False, ip)


def _jwt_bearer(
    state: ServiceState, conn: sqlite3.Connection, token: str, caller: Caller | None, ip: str
) -> Caller | None:
    """The user a JWT names: 403 beside a session user, 401 when it fails verification."""
    if caller is not None:
        raise ServiceError(
            "user_jwt_and_cookie_set",
            "JWT and cookie are set at the same time. Use only one of them.",
        )
    try:
        # Times are checked below, on the service's clock (which a test may move forward).
        claims = jwt.decode(
            token,
            state.jwt_secret,
            algorithms=["HS256"],
            options={"require": ["exp", "iat"], "verify_exp": False, "verify_iat": False},
        )
        issued, expires = int(claims["iat"]), int(claims["exp"])
    except (jwt.PyJWTError, TypeError, ValueError) as exc:
        raise ServiceError("user_jwt_invalid", f"Failed to verify JWT. {exc}") from None
    now = int(state.clock.now())
    if now >= expires:
        raise ServiceError("user_jwt_invalid", "Failed to verify JWT. Signature has expired")
    if issued > now:
        raise ServiceError(
            "user_jwt_invalid", "Failed to verify JWT. The token is not yet valid (iat)"
        )
    if now - issued > JWT_MAX_AGE:
        raise ServiceError("user_jwt_invalid", "Failed to verify JWT. Token too old.")
    return _jwt_caller(conn, claims, ip)


def resolve_realtime_caller(
    state: ServiceState, connection: HTTPConnection, project: str, ip: str
) -> Caller:
    """The caller of a realtime handshake (service interface, "Realtime connections"), first
    match winning: a session (cookie, `X-Service-Session`, `X-Fallback-Cookies`), then a JWT
    (`X-Service-JWT` or `?jwt=`).
    An API key is not recognised: its holder connects as a guest. A user's personal account
    key (`X-Service-Key` with `X-Service-User`) is refused beside a session user; the local
    service has no account keys, so otherwise it leaves the caller a guest."""
    value, _ = _session_value(connection, project)
    with state.store.read() as conn:
        caller = _session_caller(conn, value, ip)
        token = connection.headers.get("X-Service-JWT") or connection.query_params.get("jwt")
        if token:
            caller = _jwt_bearer(state, conn, token, caller, ip)
        account_key = connection.headers.get("X-Service-Key")
        if account_key and connection.headers.get("X-Service-User") and caller is not None:
            raise ServiceError(
                "user_api_key_and_session_set",
                "API key and session used in the same request. Use either `setSession` or "
                "`setKey`. Learn about which authentication method to use in the SSR docs.",
            )
        if caller is None:
            return guest_caller(ip)
        return _impersonated(conn, connection, caller)


def session_caller(state: ServiceState, value: str, ip: str) -> Caller | None:
    """The user of an encoded session, for a realtime `authentication` message; None when
    the session is not valid."""
    with state.store.read() as conn:
        return _session_caller(conn, value, ip)


def _impersonated(conn: sqlite3.Connection, request: HTTPConnection, caller: Caller) -> Caller:
    """Switch to the impersonated user when the real user is an impersonator
    (service interface, "Impersonation")."""
    assert caller.user is not None
    if not caller.user["impersonator"]:
        return caller
    for column, header, param in _IMPERSONATION:
        wanted = request.headers.get(header) or request.query_params.get(param)
        if param == "impersonateUserId" and not wanted:
            wanted = request.query_params.get("impersonateuserid")
        if not wanted:
            continue
        target = user_row(conn, column, wanted.lower() if column == "email" else wanted)
        if target is None:
            return caller
        return Caller(
            role="users",
            scopes=caller.scopes | {"users.read"},
            roles=permission_roles(conn, target),
            user=target,
            session_id=caller.session_id,
            via_jwt=caller.via_jwt,
            impersonator_id=caller.user_id,
            ip=caller.ip,
        )
    return caller
