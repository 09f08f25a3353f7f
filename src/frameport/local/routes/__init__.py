"""The service's HTTP routes, one module per area, joined in one explicit list."""

from . import (
    account,
    buckets,
    columns,
    databases,
    file_content,
    files,
    functions,
    health,
    indexes,
    memberships,
    row_counters,
    rows,
    tables,
    teams,
    transactions,
    users,
)
from ._routing import Context, Reply, RouteSpec

ROUTES: tuple[RouteSpec, ...] = (
    # First: `/v1/tablesdb/transactions` would otherwise match `/v1/tablesdb/{databaseId}`.
    *transactions.ROUTES,
    *account.ROUTES,
    *buckets.ROUTES,
    *columns.ROUTES,
    *databases.ROUTES,
    *file_content.ROUTES,
    *files.ROUTES,
    *functions.ROUTES,
    *health.ROUTES,
    *indexes.ROUTES,
    *memberships.ROUTES,
    *rows.ROUTES,
    *row_counters.ROUTES,
    *tables.ROUTES,
    *teams.ROUTES,
    *users.ROUTES,
)

__all__ = ["ROUTES", "Context", "Reply", "RouteSpec"]
