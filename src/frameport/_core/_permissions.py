"""Permission and role strings, exactly as the service spells them.

>>> Permission.read(Role.any())
'read("any")'
>>> Permission.update(Role.team("editors", "owner"))
'update("team:editors/owner")'
>>> Permission.write(Role.user("u1", "verified"))
'write("user:u1/verified")'

`Permission.create` gives ``create("<role>")`` (valid on tables and buckets only).
"""

from __future__ import annotations


def _part(value: str, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"A role's {what} is a string; got {type(value).__name__}.")
    if not value:
        raise ValueError(f"A role's {what} must not be empty.")
    return value


class Role:
    """Who a permission is granted to."""

    @staticmethod
    def any() -> str:
        """Everybody, signed in or not: ``any``."""
        return "any"

    @staticmethod
    def guests() -> str:
        """Callers without a session: ``guests``."""
        return "guests"

    @staticmethod
    def users(status: str | None = None) -> str:
        """Every signed-in user (``users``), or those with a status (``users/verified``)."""
        return "users" if status is None else f"users/{_part(status, 'status')}"

    @staticmethod
    def user(id: str, status: str | None = None) -> str:
        """One user (``user:<id>``), optionally only with a status (``user:<id>/<status>``)."""
        role = f"user:{_part(id, 'user ID')}"
        return role if status is None else f"{role}/{_part(status, 'status')}"

    @staticmethod
    def team(id: str, role: str | None = None) -> str:
        """Members of a team (``team:<id>``), or those holding a team role
        (``team:<id>/<role>``)."""
        team = f"team:{_part(id, 'team ID')}"
        return team if role is None else f"{team}/{_part(role, 'team role')}"

    @staticmethod
    def member(id: str) -> str:
        """One team membership: ``member:<membership id>``."""
        return f"member:{_part(id, 'membership ID')}"


def _action(action: str, what: str) -> staticmethod[[str], str]:
    """`Permission`'s method `action`, documented as doing `what`."""

    def permission(role: str) -> str:
        return f'{action}("{_part(role, "string")}")'

    permission.__name__ = action
    permission.__qualname__ = f"Permission.{action}"
    permission.__doc__ = f'``{action}("<role>")``: {what}.'
    return staticmethod(permission)


class Permission:
    """What a role may do with a resource; each method returns the permission string."""

    read = _action("read", "see the resource")
    create = _action("create", "add rows to a table or files to a bucket")
    update = _action("update", "change the resource")
    delete = _action("delete", "remove the resource")
    write = _action("write", "create, update and delete together")
