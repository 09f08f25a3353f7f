"""/v1/teams/{teamId}/memberships: list, get, update and delete
(service interface, "Users and teams", "Models").

Creating a membership is in `teams`. Only members see a team's memberships; owners and keys
change roles; owners, keys and the member themselves delete a membership.
"""

from __future__ import annotations

import json

from ..service.accounts._teams import is_owner, membership_model, team_memberships, visible_team
from ..service.realtime._hub import review_user_connections
from ..wire._errors import ServiceError
from ..wire._timefmt import now_text
from ._routing import Context, Reply, RouteSpec, route

MEMBERSHIP = "/v1/teams/{teamId}/memberships/{membershipId}"


def _unauthorized(action: str) -> ServiceError:
    return ServiceError(
        "user_unauthorized", f"The current user is not authorized to {action} this membership."
    )


def list_memberships(ctx: Context) -> Reply:
    ctx.params.queries()  # validated like every list's; filters are not applied here
    with ctx.store.read() as conn:
        visible_team(conn, ctx.caller, ctx.path["teamId"])
        memberships = team_memberships(conn, ctx.path["teamId"])
    return Reply({"total": len(memberships), "memberships": memberships})


def get_membership(ctx: Context) -> Reply:
    with ctx.store.read() as conn:
        visible_team(conn, ctx.caller, ctx.path["teamId"])
        return Reply(membership_model(conn, ctx.path["teamId"], ctx.path["membershipId"]))


def update_membership(ctx: Context) -> Reply:
    team_id, membership_id = ctx.path["teamId"], ctx.path["membershipId"]
    roles = ctx.params.string_list("roles", max_items=100, max_length=81, required=True)
    with ctx.store.write() as conn:
        visible_team(conn, ctx.caller, team_id)
        membership_model(conn, team_id, membership_id)
        if not is_owner(ctx.caller, team_id):
            raise _unauthorized("update")
        conn.execute(
            "UPDATE memberships SET roles = ?, updated_at = ? WHERE id = ?",
            (json.dumps(roles), now_text(), membership_id),
        )
        updated = membership_model(conn, team_id, membership_id)
    review_user_connections(ctx.state, updated["userId"])
    return Reply(updated)


def delete_membership(ctx: Context) -> Reply:
    team_id, membership_id = ctx.path["teamId"], ctx.path["membershipId"]
    with ctx.store.write() as conn:
        visible_team(conn, ctx.caller, team_id)
        membership = membership_model(conn, team_id, membership_id)
        own = membership["userId"] == ctx.caller.user_id
        if not (own or is_owner(ctx.caller, team_id)):
            raise _unauthorized("delete")
        conn.execute("DELETE FROM memberships WHERE id = ?", (membership_id,))
    review_user_connections(ctx.state, membership["userId"])
    return Reply(status=204)


ROUTES: list[RouteSpec] = [
    *route(list_memberships, "GET", "/v1/teams/{teamId}/memberships", scopes=("teams.read",)),
    *route(get_membership, "GET", MEMBERSHIP, scopes=("teams.read",)),
    *route(update_membership, "PATCH", MEMBERSHIP, scopes=("teams.write",)),
    *route(delete_membership, "DELETE", MEMBERSHIP, scopes=("teams.write",)),
]
