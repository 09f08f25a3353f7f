"""/v1/account: sign-up, e-mail sessions, the current account, JWTs
(service interface, "Accounts and sessions", "Authentication")."""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..service._identity import mint_jwt, session_cookie_names
from ..service._ratelimit import RateLimit
from ..service.accounts._accounts import (
    NO_IMPERSONATION_BEFORE,
    SESSION_DURATION,
    SESSIONS_PER_USER,
    encode_session,
    hash_secret,
    insert_user,
    user_model,
    user_row,
    verify_password,
)
from ..service.realtime._hub import review_user_connections
from ..wire._errors import ServiceError
from ..wire._params import unique_id
from ..wire._timefmt import from_timestamp, now_text
from ._routing import Context, Reply, RouteSpec, route
from .users import validate_email

_DOMAINLESS = ("localhost",)
#: Cleared cookies expire this many seconds in the past.
COOKIE_CLEAR_AGE = 3600


def _is_ip(host: str) -> bool:
    return host.replace(".", "").isdigit() or ":" in host


def account_reply(ctx: Context, user: dict[str, Any], status: int = 200) -> Reply:
    """The Account model in the caller's response format."""
    model = user_model(
        user,
        impersonator_id=ctx.caller.impersonator_id,
        before_1_9=ctx.caller.format_before(NO_IMPERSONATION_BEFORE),
    )
    return Reply(model, status)


def require_user(ctx: Context) -> dict[str, Any]:
    """The signed-in user; guests never get here because the `account` scope stops them."""
    if ctx.caller.user is None:
        raise ServiceError("user_unauthorized", "The current user is not authorized.")
    return ctx.caller.user


def create_account(ctx: Context) -> Reply:
    user_id = ctx.params.uid("userId")
    email = validate_email(ctx.params.required_string("email")).lower()
    password = ctx.params.string("password", required=True, min_length=8, max_length=256)
    name = ctx.params.string("name", default="", max_length=128) or ""
    with ctx.store.write() as conn:
        if user_row(conn, "id", user_id) is not None or user_row(conn, "email", email):
            raise ServiceError(
                "user_already_exists",
                "A user with the same id, email, or phone already exists in this project.",
            )
        user = insert_user(conn, user_id, email=email, phone=None, password=password, name=name)
    return account_reply(ctx, user, 201)


def session_model(
    session_id: str, user: dict[str, Any], expire: float, ip: str, secret: str, created: str
) -> dict[str, Any]:
    """The Session model (service interface, "Models")."""
    return {
        "$id": session_id,
        "$createdAt": created,
        "$updatedAt": created,
        "userId": user["id"],
        "expire": from_timestamp(expire),
        "provider": "email",
        "providerUid": user["email"] or "",
        "providerAccessToken": "",
        "providerAccessTokenExpiry": "",
        "providerRefreshToken": "",
        "ip": ip,
        "osCode": "",
        "osName": "",
        "osVersion": "",
        "clientType": "",
        "clientCode": "",
        "clientName": "",
        "clientVersion": "",
        "clientEngine": "",
        "clientEngineVersion": "",
        "deviceName": "",
        "deviceBrand": "",
        "deviceModel": "",
        "countryCode": "--",
        "countryName": "Unknown",
        "current": True,
        "factors": ["password"],
        "secret": secret,
        "mfaUpdatedAt": "",
    }


def _cookie_domain(ctx: Context) -> str | None:
    host = ctx.request.url.hostname or ""
    if host in _DOMAINLESS or _is_ip(host):
        return None
    return f".{host}"


def set_session_cookies(ctx: Context, value: str, expire: float) -> None:
    """Both cookies, with the attributes the service gives them
    (service interface, "Authentication")."""
    secure = ctx.request.url.scheme == "https"
    modern, legacy = session_cookie_names(ctx.project)
    common: dict[str, Any] = {
        "value": value,
        "expires": datetime.fromtimestamp(expire, UTC),
        "path": "/",
        "domain": _cookie_domain(ctx),
        "secure": secure,
        "httponly": True,
    }
    ctx.set_cookies.append({"key": legacy, **common, "samesite": None})
    ctx.set_cookies.append({"key": modern, **common, "samesite": "none"})


def _registrable(host: str) -> str:
    """The registrable domain of `host`, approximated as its last two labels (no suffix list)."""
    if host in _DOMAINLESS or _is_ip(host):
        return host
    return ".".join(host.rstrip(".").split(".")[-2:])


def _same_site(ctx: Context) -> bool:
    """Whether the request's Origin (or Referer) is on the API host's registrable domain."""
    origin = ctx.header("Origin") or ctx.header("Referer")
    if not origin:
        return True
    origin_host = (urlsplit(origin).hostname or "").lower()
    return _registrable(origin_host) == _registrable((ctx.request.url.hostname or "").lower())


def _start_session(conn: sqlite3.Connection, ctx: Context, user: dict[str, Any]) -> Reply:
    session_id, secret = unique_id(), secrets.token_hex(64)
    expire = time.time() + SESSION_DURATION
    now = now_text()
    conn.execute(
        "INSERT INTO sessions (id, user_id, secret_hash, expire, ip, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (session_id, user["id"], hash_secret(secret), expire, ctx.caller.ip, now, now),
    )
    conn.execute(
        "DELETE FROM sessions WHERE user_id = ? AND id NOT IN "
        "(SELECT id FROM sessions WHERE user_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?)",
        (user["id"], user["id"], SESSIONS_PER_USER),
    )
    value = encode_session(user["id"], secret)
    set_session_cookies(ctx, value, expire)
    if not _same_site(ctx):
        ctx.response_headers["X-Fallback-Cookies"] = json.dumps(
            {session_cookie_names(ctx.project)[0]: value}
        )
    shown = value if ctx.caller.is_key else ""
    return Reply(session_model(session_id, user, expire, ctx.caller.ip, shown, now), 201)


def _email_key(ctx: Context) -> str:
    email = ctx.params.raw("email")
    return email.lower() if isinstance(email, str) else ""


def create_email_session(ctx: Context) -> Reply:
    email = ctx.params.required_string("email").lower()
    password = ctx.params.required_string("password")
    if ctx.caller.role == "users":
        raise ServiceError(
            "user_session_already_exists",
            "Creation of a session is prohibited when a session is active.",
        )
    with ctx.store.write() as conn:
        user = user_row(conn, "email", email)
        if user is None or not verify_password(password, user["password_hash"]):
            raise ServiceError(
                "user_invalid_credentials",
                "Invalid credentials. Please check the email and password.",
            )
        if not user["status"]:
            raise ServiceError("user_blocked", "The current user has been blocked.")
        reply = _start_session(conn, ctx, user)
    review_user_connections(ctx.state, user["id"])  # the oldest session may have gone
    return reply


def get_account(ctx: Context) -> Reply:
    return account_reply(ctx, require_user(ctx))


def _clear_cookies(ctx: Context) -> None:
    set_session_cookies(ctx, "", time.time() - COOKIE_CLEAR_AGE)
    ctx.response_headers["X-Fallback-Cookies"] = "[]"


def _named_session(ctx: Context) -> str | None:
    """The session ID of the path; ``current`` names the request's own session."""
    wanted = ctx.path["sessionId"]
    return ctx.caller.session_id if wanted == "current" else wanted


def _session_not_found() -> ServiceError:
    return ServiceError("user_session_not_found", "The current user session could not be found.")


def delete_sessions(ctx: Context) -> Reply:
    """Sign out of the path's session (`current`: the request's own) or, without one, of
    every session of the user."""
    user = require_user(ctx)
    every = "sessionId" not in ctx.path
    session_id = None if every else _named_session(ctx)
    with ctx.store.write() as conn:
        deleted = conn.execute(
            "DELETE FROM sessions WHERE user_id = ? AND (? OR id = ?)",
            (user["id"], every, session_id),
        ).rowcount
    if not deleted and not every:
        raise _session_not_found()
    review_user_connections(ctx.state, user["id"])
    if every or session_id == ctx.caller.session_id:
        _clear_cookies(ctx)
    return Reply(status=204)


_SESSION_COLUMNS = "id, expire, ip, created_at"


def _session_reply(ctx: Context, user: dict[str, Any], row: tuple[Any, ...]) -> dict[str, Any]:
    session_id, expire, ip, created = row
    model = session_model(session_id, user, expire, ip, "", created)
    model["current"] = session_id == ctx.caller.session_id
    return model


def list_sessions(ctx: Context) -> Reply:
    user = require_user(ctx)
    with ctx.store.read() as conn:
        rows = conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE user_id = ? AND expire > ? "
            "ORDER BY created_at, rowid",
            (user["id"], time.time()),
        ).fetchall()
    sessions = [_session_reply(ctx, user, row) for row in rows]
    return Reply({"total": len(sessions), "sessions": sessions})


def get_session(ctx: Context) -> Reply:
    """One session of the user; `current` names the request's own session."""
    user = require_user(ctx)
    session_id = _named_session(ctx)
    with ctx.store.read() as conn:
        row = conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ? AND user_id = ? AND expire > ?",
            (session_id, user["id"], time.time()),
        ).fetchone()
    if row is None:
        raise _session_not_found()
    return Reply(_session_reply(ctx, user, row))


def _jwt_key(ctx: Context) -> str:
    return ctx.caller.user_id or ""


def create_jwt(ctx: Context) -> Reply:
    user = require_user(ctx)
    duration = ctx.params.integer("duration", 900, minimum=0, maximum=3600)
    assert duration is not None
    if ctx.caller.via_jwt:
        raise ServiceError(
            "user_jwt_creation_denied",
            "Creating a JWT from a JWT is not allowed. Sign in with a session first.",
        )
    if ctx.caller.session_id is None:
        raise _session_not_found()
    return Reply({"jwt": mint_jwt(ctx.state, user["id"], ctx.caller.session_id, duration)}, 201)


_SIGN_IN = ("sessions.write",)
_ACCOUNT = ("account",)
ROUTES: list[RouteSpec] = [
    *route(create_account, "POST", "/v1/account", scopes=_SIGN_IN, rate_limit=RateLimit(10, 3600)),
    *route(
        create_email_session,
        "POST",
        "/v1/account/sessions/email",
        "/v1/account/sessions",
        scopes=_SIGN_IN,
        rate_limit=RateLimit(10, 3600, key=_email_key, by_ip=False, reset_on_success=True),
    ),
    *route(get_account, "GET", "/v1/account", scopes=_ACCOUNT),
    *route(
        delete_sessions,
        "DELETE",
        "/v1/account/sessions/{sessionId}",
        "/v1/account/sessions",
        scopes=_ACCOUNT,
        rate_limit=RateLimit(100, 3600),
    ),
    *route(list_sessions, "GET", "/v1/account/sessions", scopes=_ACCOUNT),
    *route(get_session, "GET", "/v1/account/sessions/{sessionId}", scopes=_ACCOUNT),
    *route(
        create_jwt,
        "POST",
        "/v1/account/jwts",
        "/v1/account/jwt",
        scopes=_ACCOUNT,
        rate_limit=RateLimit(120, 60, key=_jwt_key, by_ip=False),
    ),
]
