"""/v1/users: server-side user management, enough for roles and impersonation
(service interface, "Users and teams")."""

from __future__ import annotations

import json
import re
from typing import Any

from ..service._identity import mint_jwt
from ..service.accounts._accounts import NO_IMPERSONATION_BEFORE, insert_user, user_model, user_row
from ..service.realtime._hub import review_user_connections
from ..wire._errors import ServiceError, invalid_param
from ..wire._timefmt import now_text
from ._routing import Context, Reply, RouteSpec, route

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PHONE = re.compile(r"^\+[0-9]{1,15}$")


def validate_email(email: str, name: str = "email") -> str:
    if not _EMAIL.match(email):
        raise invalid_param(name, "Value must be a valid email address")
    return email


def _user_reply(ctx: Context, user: dict[str, Any], status: int = 200) -> Reply:
    """The User model in the caller's response format."""
    before_1_9 = ctx.caller.format_before(NO_IMPERSONATION_BEFORE)
    return Reply(user_model(user, users_api=True, before_1_9=before_1_9), status)


def _get_user(ctx: Context) -> dict[str, Any]:
    user_id = ctx.path["userId"]
    with ctx.store.read() as conn:
        user = user_row(conn, "id", user_id)
    if user is None:
        raise ServiceError("user_not_found", "User with the requested ID could not be found.")
    return user


def create_user(ctx: Context) -> Reply:
    user_id = ctx.params.uid("userId")
    email = ctx.params.string("email")
    email = validate_email(email).lower() if email else None
    phone = ctx.params.string("phone")
    if phone and not _PHONE.match(phone):
        raise invalid_param("phone", "Phone number must start with a '+' and be at most 15 digits.")
    password = ctx.params.string("password", min_length=8, max_length=256)
    name = ctx.params.string("name", default="", max_length=128) or ""
    with ctx.store.write() as conn:
        if user_row(conn, "id", user_id) is not None:
            raise ServiceError(
                "user_already_exists", "A user with the same id already exists in this project."
            )
        if email and user_row(conn, "email", email) is not None:
            raise ServiceError(
                "user_email_already_exists",
                "A user with the same email already exists in this project.",
            )
        if phone and user_row(conn, "phone", phone) is not None:
            raise ServiceError(
                "user_already_exists", "A user with the same phone already exists in this project."
            )
        user = insert_user(conn, user_id, email=email, phone=phone, password=password, name=name)
    return _user_reply(ctx, user, 201)


def get_user(ctx: Context) -> Reply:
    return _user_reply(ctx, _get_user(ctx))


def list_users(ctx: Context) -> Reply:
    with ctx.store.read() as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM users ORDER BY rowid")]
        found = [user for i in ids if (user := user_row(conn, "id", i))]
    users = [_user_reply(ctx, user).body for user in found]
    return Reply({"total": min(len(users), 5000), "users": users})


def _set_flag(ctx: Context, column: str, value: Any) -> Reply:
    user = _get_user(ctx)
    with ctx.store.write() as conn:
        conn.execute(
            f"UPDATE users SET {column} = ?, updated_at = ? WHERE id = ?",
            (value, now_text(), user["id"]),
        )
        updated = user_row(conn, "id", user["id"])
    assert updated is not None
    review_user_connections(ctx.state, user["id"])
    return _user_reply(ctx, updated)


def update_impersonator(ctx: Context) -> Reply:
    return _set_flag(ctx, "impersonator", int(ctx.params.boolean("impersonator", required=True)))


def update_status(ctx: Context) -> Reply:
    return _set_flag(ctx, "status", int(ctx.params.boolean("status", required=True)))


def update_email_verification(ctx: Context) -> Reply:
    verified = int(ctx.params.boolean("emailVerification", required=True))
    return _set_flag(ctx, "email_verification", verified)


def update_labels(ctx: Context) -> Reply:
    labels = ctx.params.string_list("labels", max_items=1000, max_length=36, required=True)
    return _set_flag(ctx, "labels", json.dumps(labels))


def _jwt_session(ctx: Context, user_id: str, wanted: str) -> str:
    """The session a minted JWT names: `wanted`, or the newest one for `recent`; `""` when the
    user has no such session (the service then mints a token that names no session)."""
    with ctx.store.read() as conn:
        if wanted == "recent":
            row = conn.execute(
                "SELECT id FROM sessions WHERE user_id = ? "
                "ORDER BY created_at DESC, rowid DESC LIMIT 1",
                (user_id,),
            ).fetchone()
        else:
            row = conn.execute(
                "SELECT id FROM sessions WHERE user_id = ? AND id = ?", (user_id, wanted)
            ).fetchone()
    return "" if row is None else str(row[0])


def create_user_jwt(ctx: Context) -> Reply:
    """A JWT for one of the user's sessions; with no such session, a JWT naming none, which acts
    as the user until it expires (only a JWT whose session is gone resolves to a guest:
    service interface, "Authentication")."""
    wanted = "recent"
    if ctx.params.has("sessionId"):
        wanted = ctx.params.uid("sessionId", allow_unique=False)
    duration = ctx.params.integer("duration", 900, minimum=0, maximum=3600)
    assert duration is not None
    user = _get_user(ctx)
    session_id = _jwt_session(ctx, user["id"], wanted)
    return Reply({"jwt": mint_jwt(ctx.state, user["id"], session_id, duration)}, 201)


ROUTES: list[RouteSpec] = [
    *route(create_user, "POST", "/v1/users", scopes=("users.write",)),
    *route(get_user, "GET", "/v1/users/{userId}", scopes=("users.read",)),
    *route(list_users, "GET", "/v1/users", scopes=("users.read",)),
    *route(
        update_impersonator, "PATCH", "/v1/users/{userId}/impersonator", scopes=("users.write",)
    ),
    *route(update_status, "PATCH", "/v1/users/{userId}/status", scopes=("users.write",)),
    *route(
        update_email_verification,
        "PATCH",
        "/v1/users/{userId}/verification",
        scopes=("users.write",),
    ),
    *route(update_labels, "PUT", "/v1/users/{userId}/labels", scopes=("users.write",)),
    *route(create_user_jwt, "POST", "/v1/users/{userId}/jwts", scopes=("users.write",)),
]
