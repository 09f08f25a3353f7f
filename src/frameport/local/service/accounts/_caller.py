"""Who is calling: the role, the permission roles held and the scopes granted
(service interface, "Roles and scopes")."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...wire._errors import SERVER_VERSION, ServiceError

PROJECT_SCOPES = frozenset(
    {
        "users.read", "users.write", "sessions.read", "sessions.write", "teams.read",
        "teams.write", "databases.read", "databases.write", "tables.read", "tables.write",
        "columns.read", "columns.write", "indexes.read", "indexes.write", "rows.read",
        "rows.write", "buckets.read", "buckets.write", "files.read", "files.write",
        "functions.read", "functions.write", "collections.read", "collections.write",
        "attributes.read", "attributes.write", "documents.read", "documents.write",
    }
)  # fmt: skip  # a set of names, several a line
KEY_SCOPES = PROJECT_SCOPES | {"global", "health.read", "graphql"}
GUEST_SCOPES = frozenset(
    {
        "global", "public", "home", "console", "graphql", "sessions.write", "documents.read",
        "documents.write", "rows.read", "rows.write", "embeddings.write", "files.read",
        "files.write", "locale.read", "avatars.read", "executions.write",
    }
)  # fmt: skip  # a set of names, several a line
USER_SCOPES = GUEST_SCOPES | {
    "account", "teams.read", "teams.write", "executions.read", "targets.read", "targets.write",
    "subscribers.read", "subscribers.write", "projects.read", "presences.read", "presences.write",
}  # fmt: skip  # a set of names, several a line


def parse_format(text: str) -> tuple[int, int, int]:
    """A response-format version as three numbers, missing parts 0 (`"1.9"` → `(1, 9, 0)`)."""
    numbers = [int(part) for part in re.findall(r"\d+", text)[:3]]
    major, minor, patch = numbers + [0] * (3 - len(numbers))
    return major, minor, patch


SERVER_FORMAT = parse_format(SERVER_VERSION)

ROLE_LABELS = {"keys": "Keys", "users": "Users", "guests": "Guests"}


@dataclass(frozen=True)
class Caller:
    """The acting identity of one request.

    `role` is `keys`, `users` or `guests`; `roles` are the permission roles held (for
    `$permissions` checks); `user` is the user record (the impersonated one while
    impersonating) and `session_id` the session the request came with, if any.
    """

    role: str
    scopes: frozenset[str]
    roles: frozenset[str] = frozenset({"any", "guests"})
    user: dict[str, Any] | None = None
    session_id: str | None = None
    via_jwt: bool = False
    impersonator_id: str | None = None
    ip: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    response_format: tuple[int, int, int] = SERVER_FORMAT
    response_headers: dict[str, str] = field(default_factory=dict)

    @property
    def is_key(self) -> bool:
        """Keys bypass every row and file permission check."""
        return self.role == "keys"

    def format_before(self, version: tuple[int, int, int]) -> bool:
        """Whether the requested `X-Service-Response-Format` is older than `version`
        (service interface, "Response formats")."""
        return self.response_format < version

    @property
    def user_id(self) -> str | None:
        return None if self.user is None else str(self.user["id"])

    def require_scope(self, *accepted: str) -> None:
        """401 `general_unauthorized_scope` unless the caller holds one of `accepted`."""
        if any(scope in self.scopes for scope in accepted):
            return
        who = (self.user or {}).get("email") or "User"
        label = ROLE_LABELS.get(self.role, self.role).lower()
        compact = json.dumps(list(accepted), separators=(",", ":"))
        raise ServiceError(
            "general_unauthorized_scope",
            f"{who} (role: {label}) missing scopes ({compact})",
        )


def key_caller(ip: str = "") -> Caller:
    return Caller(role="keys", scopes=KEY_SCOPES, roles=frozenset({"any"}), ip=ip)


def guest_caller(ip: str = "") -> Caller:
    return Caller(role="guests", scopes=GUEST_SCOPES, ip=ip)
