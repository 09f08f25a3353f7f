"""Users, sessions, teams and memberships: storage and the permission roles they confer."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import sqlite3
from typing import Any

from ...wire import _json as request_json
from ...wire._timefmt import now_text

SESSION_DURATION = 31_536_000
SESSIONS_PER_USER = 10
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 64}

USER_COLUMNS = (
    "id, email, phone, name, password_hash, status, labels, email_verification, "
    "phone_verification, impersonator, prefs, password_update, created_at, updated_at, accessed_at"
)


def hash_password(password: str) -> str:
    """A salted scrypt hash, stored as `scrypt$<salt hex>$<hash hex>`."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, **_SCRYPT)
    return f"scrypt${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str | None) -> bool:
    if not stored or not stored.startswith("scrypt$"):
        return False
    _, salt, expected = stored.split("$")
    digest = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt), **_SCRYPT)
    return hmac.compare_digest(digest.hex(), expected)


def hash_secret(secret: str) -> str:
    """Session secrets are random, so one SHA-256 suffices."""
    return hashlib.sha256(secret.encode()).hexdigest()


def encode_session(user_id: str, secret: str) -> str:
    """The cookie value: base64 of `{"id": ..., "secret": ...}` (padding dropped: cookie-safe)."""
    payload = json.dumps({"id": user_id, "secret": secret}, separators=(",", ":")).encode()
    return base64.b64encode(payload).decode().rstrip("=")


def decode_session(value: str) -> tuple[str, str] | None:
    try:
        decoded = request_json.loads(base64.b64decode(value + "=" * (-len(value) % 4)))
    except (ValueError, TypeError):
        return None
    if not isinstance(decoded, dict):
        return None
    user_id, secret = decoded.get("id"), decoded.get("secret")
    if isinstance(user_id, str) and isinstance(secret, str):
        return user_id, secret
    return None


def user_row(conn: sqlite3.Connection, where: str, value: Any) -> dict[str, Any] | None:
    """One user record by `id`, `email` or `phone`, as a dict of its columns."""
    cursor = conn.execute(f"SELECT {USER_COLUMNS} FROM users WHERE {where} = ?", (value,))
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cursor.description], row, strict=True))


#: Optional e-mail facts the service derives from the address; not modelled, always null.
_EMAIL_FACTS = (
    "emailCanonical",
    "emailIsFree",
    "emailIsDisposable",
    "emailIsCorporate",
    "emailIsCanonical",
)
#: Fields the response formats before 1.9.0 do not have (service interface, "Response formats").
IMPERSONATION_FIELDS = ("impersonator", "impersonatorUserId")
NO_IMPERSONATION_BEFORE = (1, 9, 0)


def user_model(
    user: dict[str, Any],
    *,
    impersonator_id: str | None = None,
    users_api: bool = False,
    before_1_9: bool = False,
) -> dict[str, Any]:
    """The Account model, or with `users_api` the User model (service interface, "Models").

    Every listed field is present; optional fields without a value are null. The User
    model's `password`, `hash` and `hashOptions` stay null: hashes are never sent.
    """
    model: dict[str, Any] = {
        "$id": user["id"],
        "$createdAt": user["created_at"],
        "$updatedAt": user["updated_at"],
        "name": user["name"],
        "registration": user["created_at"],
        "status": bool(user["status"]),
        "labels": json.loads(user["labels"]),
        "passwordUpdate": user["password_update"] or "",
        "email": user["email"] or "",
        "phone": user["phone"] or "",
        "emailVerification": bool(user["email_verification"]),
        **dict.fromkeys(_EMAIL_FACTS),
        "phoneVerification": bool(user["phone_verification"]),
        "mfa": False,
        "prefs": json.loads(user["prefs"]),
        "targets": [],
        "accessedAt": user["accessed_at"],
        "impersonator": bool(user["impersonator"]),
        "impersonatorUserId": impersonator_id,
    }
    if users_api:
        model.update(password=None, hash=None, hashOptions=None)
    if before_1_9:
        for name in IMPERSONATION_FIELDS:
            del model[name]
    return model


def insert_user(
    conn: sqlite3.Connection,
    user_id: str,
    *,
    email: str | None,
    phone: str | None,
    password: str | None,
    name: str,
) -> dict[str, Any]:
    now = now_text()
    conn.execute(
        "INSERT INTO users (id, email, phone, name, password_hash, password_update, created_at, "
        "updated_at, accessed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            user_id,
            email,
            phone,
            name,
            hash_password(password) if password else None,
            now if password else None,
            now,
            now,
            now,
        ),
    )
    user = user_row(conn, "id", user_id)
    assert user is not None  # just inserted
    return user


def permission_roles(conn: sqlite3.Connection, user: dict[str, Any]) -> frozenset[str]:
    """The roles a signed-in user holds for `$permissions` checks
    (service interface, "Roles and scopes")."""
    user_id = user["id"]
    verified = (
        "verified" if user["email_verification"] or user["phone_verification"] else ("unverified")
    )
    roles = {"any", "users", f"user:{user_id}", f"users/{verified}", f"user:{user_id}/{verified}"}
    for membership_id, team_id, team_roles in conn.execute(
        "SELECT id, team_id, roles FROM memberships WHERE user_id = ? AND confirm = 1",
        (user_id,),
    ):
        roles.add(f"team:{team_id}")
        roles.add(f"member:{membership_id}")
        roles.update(f"team:{team_id}/{role}" for role in json.loads(team_roles))
    roles.update(f"label:{label}" for label in json.loads(user["labels"]))
    return frozenset(roles)
