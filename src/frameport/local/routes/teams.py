"""/v1/teams and memberships: enough for the `team:` and `member:` roles
(service interface, "Users and teams")."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..service._ratelimit import RateLimit
from ..service.accounts._accounts import user_row
from ..service.accounts._teams import is_owner, membership_model, team_model, visible_team
from ..service.realtime._hub import review_user_connections
from ..wire._errors import ServiceError, invalid_param
from ..wire._params import unique_id
from ..wire._timefmt import now_text
from ._routing import Context, Reply, RouteSpec, route


def _insert_membership(
    conn: sqlite3.Connection, team_id: str, user: dict[str, Any], roles: list[str], confirm: bool
) -> dict[str, Any]:
    membership_id, now = unique_id(), now_text()
    conn.execute(
        "INSERT INTO memberships (id, team_id, user_id, roles, confirm, invited, joined, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            membership_id,
            team_id,
            user["id"],
            json.dumps(roles),
            int(confirm),
            now,
            now if confirm else None,
            now,
            now,
        ),
    )
    return membership_model(conn, team_id, membership_id)


def _roles(ctx: Context, default: list[str] | None) -> list[str]:
    roles = ctx.params.string_list("roles", max_items=100, max_length=81, required=default is None)
    return roles if roles is not None else list(default or [])


def create_team(ctx: Context) -> Reply:
    team_id = ctx.params.uid("teamId")
    name = ctx.params.required_string("name", max_length=128)
    roles = _roles(ctx, ["owner"])
    now = now_text()
    with ctx.store.write() as conn:
        try:
            conn.execute(
                "INSERT INTO teams (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (team_id, name, now, now),
            )
        except sqlite3.IntegrityError:
            raise ServiceError(
                "team_already_exists", "Team with the requested ID already exists."
            ) from None
        if ctx.caller.user is not None and not ctx.caller.is_key:
            _insert_membership(conn, team_id, ctx.caller.user, roles, True)
        team = team_model(conn, team_id)
    review_user_connections(ctx.state, ctx.caller.user_id or "")
    return Reply(team, 201)


def get_team(ctx: Context) -> Reply:
    with ctx.store.read() as conn:
        return Reply(visible_team(conn, ctx.caller, ctx.path["teamId"]))


def _member_named(ctx: Context) -> tuple[str, str]:
    """The user a new membership is for, as (users column, value): `userId` (a valid ID),
    else `email` (lower-cased), else `phone`."""
    user_id = ctx.params.string("userId")
    if user_id:
        return "id", ctx.params.uid("userId", allow_unique=False)
    email = ctx.params.string("email")
    if email:
        return "email", email.lower()
    phone = ctx.params.string("phone")
    if phone:
        return "phone", phone
    raise invalid_param("userId", "Send one of userId, email or phone.")


def create_membership(ctx: Context) -> Reply:
    team_id = ctx.path["teamId"]
    roles = _roles(ctx, None)
    column, value = _member_named(ctx)
    with ctx.store.write() as conn:
        team_model(conn, team_id)
        user = user_row(conn, column, value)
        if user is None:
            raise ServiceError("user_not_found", "User with the requested ID could not be found.")
        if ctx.caller.user_id is not None and not is_owner(ctx.caller, team_id):
            raise ServiceError(
                "user_unauthorized",
                "The current user is not authorized to add members to this team.",
            )
        membership = _insert_membership(conn, team_id, user, roles, ctx.caller.is_key)
    review_user_connections(ctx.state, user["id"])
    return Reply(membership, 201)


ROUTES: list[RouteSpec] = [
    *route(create_team, "POST", "/v1/teams", scopes=("teams.write",)),
    *route(get_team, "GET", "/v1/teams/{teamId}", scopes=("teams.read",)),
    *route(
        create_membership,
        "POST",
        "/v1/teams/{teamId}/memberships",
        scopes=("teams.write",),
        rate_limit=RateLimit(10, 3600),
    ),
]
