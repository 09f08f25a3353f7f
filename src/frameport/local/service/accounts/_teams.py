"""Teams and memberships as the service models them, and who may see or change them.

A team is readable by its confirmed members (`team:<id>` role) and by API keys; to anyone
else it does not exist (404 `team_not_found`), as the service's team documents grant read to
the team role only. Owners (`team:<id>/owner`) and keys change memberships; a member may also
leave (delete their own membership).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...wire._errors import ServiceError
from ._caller import Caller

_MEMBERSHIP = (
    "SELECT m.id, m.created_at, m.updated_at, m.user_id, u.name, u.email, u.phone, m.team_id, "
    "t.name, m.invited, m.joined, m.confirm, u.accessed_at, m.roles "
    "FROM memberships m JOIN users u ON u.id = m.user_id JOIN teams t ON t.id = m.team_id"
)


def team_not_found() -> ServiceError:
    return ServiceError("team_not_found", "Team with the requested ID could not be found.")


def team_model(conn: sqlite3.Connection, team_id: str) -> dict[str, Any]:
    """The Team model; 404 `team_not_found` when there is no such team."""
    row = conn.execute(
        "SELECT id, name, prefs, created_at, updated_at FROM teams WHERE id = ?", (team_id,)
    ).fetchone()
    if row is None:
        raise team_not_found()
    total = conn.execute(
        "SELECT COUNT(*) FROM memberships WHERE team_id = ? AND confirm = 1", (team_id,)
    ).fetchone()[0]
    return {
        "$id": row[0],
        "$createdAt": row[3],
        "$updatedAt": row[4],
        "name": row[1],
        "total": total,
        "prefs": json.loads(row[2]),
    }


def visible_team(conn: sqlite3.Connection, caller: Caller, team_id: str) -> dict[str, Any]:
    """The Team model if the caller may read the team, else 404 as for a missing team."""
    team = team_model(conn, team_id)
    if not caller.is_key and f"team:{team_id}" not in caller.roles:
        raise team_not_found()
    return team


def is_owner(caller: Caller, team_id: str) -> bool:
    return caller.is_key or f"team:{team_id}/owner" in caller.roles


def membership_model(conn: sqlite3.Connection, team_id: str, membership_id: str) -> dict[str, Any]:
    """The Membership model; 404 `membership_not_found` when the team has no such membership."""
    row = conn.execute(
        f"{_MEMBERSHIP} WHERE m.team_id = ? AND m.id = ?", (team_id, membership_id)
    ).fetchone()
    if row is None:
        raise ServiceError(
            "membership_not_found", "Membership with the requested ID could not be found."
        )
    return _model(row)


def team_memberships(conn: sqlite3.Connection, team_id: str) -> list[dict[str, Any]]:
    """Every membership of a team, oldest first."""
    rows = conn.execute(f"{_MEMBERSHIP} WHERE m.team_id = ? ORDER BY m.rowid", (team_id,))
    return [_model(row) for row in rows]


def _model(row: tuple[Any, ...]) -> dict[str, Any]:
    (
        membership_id,
        created,
        updated,
        user_id,
        user_name,
        email,
        phone,
        team_id,
        team_name,
        invited,
        joined,
        confirm,
        accessed,
        roles,
    ) = row
    return {
        "$id": membership_id,
        "$createdAt": created,
        "$updatedAt": updated,
        "userId": user_id,
        "userName": user_name,
        "userEmail": email or "",
        "userPhone": phone or "",
        "teamId": team_id,
        "teamName": team_name,
        "invited": invited,
        "joined": joined or "",
        "confirm": bool(confirm),
        "mfa": False,
        "userAccessedAt": accessed,
        "roles": json.loads(roles),
    }
