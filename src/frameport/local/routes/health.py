"""/v1/health/version: the service's version, for any caller of a project (no scope needed)."""

from __future__ import annotations

from ..wire._errors import SERVER_VERSION
from ._routing import Context, Reply, RouteSpec, route


def get_version(ctx: Context) -> Reply:
    return Reply({"version": SERVER_VERSION})


ROUTES: list[RouteSpec] = route(get_version, "GET", "/v1/health/version")
