"""Who may do what to a table's rows (service interface, "Permissions"): API keys bypass
every check; other callers need the table's permission or, with row security, the row's own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ...store._db_terms import Terms
from ...store._rowstore import permission_clause
from ...store._schema_store import DatabaseMeta, TableMeta, load_database, load_table
from ...store._sql import Clause
from ...wire._errors import ServiceError, invalid_param
from ..accounts._caller import Caller
from ..accounts._permissions import ITEM_ACTIONS, check_grantable, is_allowed, normalize_permissions

UNAUTHORIZED = "The current user is not authorized to perform the requested action."


def unauthorized() -> ServiceError:
    return ServiceError("user_unauthorized", UNAUTHORIZED)


def row_not_found(terms: Terms, row_id: str) -> ServiceError:
    """404 `row_not_found` (legacy `document_not_found`)."""
    return ServiceError(
        terms.error("row", "not_found"),
        f"{terms.title('row')} with the requested ID '{row_id}' could not be found.",
    )


def table_allows(caller: Caller, table: TableMeta, action: str) -> bool:
    """Keys always; others when the table's permissions give them `action`."""
    return caller.is_key or is_allowed(table.permissions, action, caller.roles)


def row_allows(caller: Caller, table: TableMeta, permissions: Sequence[str], action: str) -> bool:
    """Table-level `action`, or row security and the row's own `action`
    (service interface, "Permissions")."""
    if table_allows(caller, table, action):
        return True
    return table.row_security and is_allowed(permissions, action, caller.roles)


def permission_filter(caller: Caller, table: TableMeta, action: str) -> list[Clause]:
    """Nothing when the table allows `action`; the row-permission filter with row security;
    401 otherwise."""
    if table_allows(caller, table, action):
        return []
    if table.row_security:
        return [permission_clause(table, caller.roles, action)]
    raise unauthorized()


def requested_permissions(
    caller: Caller, values: Any, param: str = "permissions"
) -> list[str] | None:
    """Row permissions as sent: validated, `write` expanded, only grantable roles; None when
    none were sent."""
    if values is None:
        return None
    if not isinstance(values, list):
        raise invalid_param(param, "Value must be a valid array of permission strings")
    permissions = normalize_permissions(values, ITEM_ACTIONS, param=param)
    check_grantable(permissions, caller)
    return permissions


def require_key(caller: Caller, terms: Terms, what: str) -> None:
    """Bulk creates and upserts are for API keys: 401 `general_unauthorized_scope` otherwise."""
    if not caller.is_key:
        raise ServiceError(
            "general_unauthorized_scope",
            f"Bulk {terms.row} {what} is only available to API keys.",
        )


def database_or_404(conn: sqlite3.Connection, caller: Caller, database_id: str) -> DatabaseMeta:
    """The database; missing, or disabled for a caller without a key → 404."""
    database = load_database(conn, database_id)
    if database is None or (not database.enabled and not caller.is_key):
        raise ServiceError(
            "database_not_found",
            f"Database with the requested ID '{database_id}' could not be found.",
        )
    return database


def table_or_404(
    conn: sqlite3.Connection, caller: Caller, terms: Terms, database_id: str, table_id: str
) -> TableMeta:
    """The table of the database; missing or disabled (for a caller without a key) → 404."""
    database = database_or_404(conn, caller, database_id)
    table = load_table(conn, database.id, table_id)
    if table is None or (not table.enabled and not caller.is_key):
        raise ServiceError(
            terms.error("table", "not_found"),
            f"{terms.title('table')} with the requested ID '{table_id}' could not be found.",
        )
    return table
