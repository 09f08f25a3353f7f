"""Permission strings `action("role")`: validation, what a caller may grant, access checks."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...wire._errors import ServiceError, invalid_param
from ._caller import Caller

_PERMISSION = re.compile(r'^(?P<action>[a-z]+)\("(?P<role>[^"]+)"\)$')
#: An ID inside a role follows the ID rule: at most 36 characters (a label too).
_ROLE_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,35}"
_ROLE = re.compile(
    rf"^(any|guests|users(/[a-z]+)?|user:{_ROLE_ID}(/[a-z]+)?|"
    rf"team:{_ROLE_ID}(/[^/\"]{{1,81}})?|member:{_ROLE_ID}|label:[A-Za-z0-9]{{1,36}})$"
)

#: Actions accepted on resources (tables and buckets) and on their items (rows and files).
RESOURCE_ACTIONS = ("read", "create", "update", "delete", "write")
ITEM_ACTIONS = ("read", "update", "delete", "write")
_WRITE = {
    RESOURCE_ACTIONS: ("create", "update", "delete"),
    ITEM_ACTIONS: ("update", "delete"),
}


def parse_permission(text: str) -> tuple[str, str] | None:
    match = _PERMISSION.match(text)
    return None if match is None else (match.group("action"), match.group("role"))


def normalize_permissions(
    values: Iterable[str], actions: tuple[str, ...], *, param: str = "permissions"
) -> list[str]:
    """Validate permission strings and expand `write`; 400 `general_argument_invalid` otherwise.

    >>> normalize_permissions(['write("any")'], ITEM_ACTIONS)
    ['update("any")', 'delete("any")']
    """
    result: list[str] = []
    for text in values:
        parsed = parse_permission(text) if isinstance(text, str) else None
        if parsed is None or _ROLE.match(parsed[1]) is None:
            raise invalid_param(
                param,
                f'Permission "{text}" is not valid: use the form action("role"), '
                f"action one of {', '.join(actions)}",
            )
        action, role = parsed
        if action not in actions:
            raise invalid_param(
                param,
                f'Permission "{text}" is not allowed here: the action must be one of '
                f"{', '.join(actions)}",
            )
        expanded = _WRITE[actions] if action == "write" else (action,)
        for one in expanded:
            permission = f'{one}("{role}")'
            if permission not in result:
                result.append(permission)
    return result


def check_grantable(permissions: Iterable[str], caller: Caller) -> None:
    """Non-key callers may grant only roles they hold: else 401 `user_unauthorized`."""
    if caller.is_key:
        return
    for permission in permissions:
        parsed = parse_permission(permission)
        if parsed is not None and parsed[1] not in caller.roles:
            held = ", ".join(sorted(caller.roles))
            raise ServiceError(
                "user_unauthorized",
                f"Permissions must be one of: ({held})",
            )


def is_allowed(permissions: Iterable[str], action: str, roles: frozenset[str]) -> bool:
    """Whether one of `roles` holds `action` in `permissions`."""
    for permission in permissions:
        parsed = parse_permission(permission)
        if parsed is not None and parsed[0] == action and parsed[1] in roles:
            return True
    return False


def default_item_permissions(caller: Caller) -> list[str]:
    """Row/file permissions when none are sent: the signed-in user's own, else none."""
    if caller.role != "users" or caller.user_id is None:
        return []
    role = f"user:{caller.user_id}"
    return [f'read("{role}")', f'update("{role}")', f'delete("{role}")']
