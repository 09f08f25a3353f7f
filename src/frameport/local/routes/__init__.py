"""The service's HTTP routes, one module per area, joined in one explicit list."""

from . import (
    account,
    buckets,
    columns,
    databases,
    file_content,
    files,
    functions,
    indexes,
    memberships,
    rows,
    tables,
    teams,
    users,
)
from ._routing import Context, Reply, RouteSpec

ROUTES: tuple[RouteSpec, ...] = (
    *account.ROUTES,
    *buckets.ROUTES,
    *columns.ROUTES,
    *databases.ROUTES,
    *file_content.ROUTES,
    *files.ROUTES,
    *functions.ROUTES,
    *indexes.ROUTES,
    *memberships.ROUTES,
    *rows.ROUTES,
    *tables.ROUTES,
    *teams.ROUTES,
    *users.ROUTES,
)

__all__ = ["ROUTES", "Context", "Reply", "RouteSpec"]
