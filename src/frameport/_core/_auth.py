"""Credentials: API key, JWT, session cookies, impersonation, and the saved-session file.

Every secret is held in a `Secret`, whose repr and str never show the value; it is revealed only
when request headers are built. The credential file keeps session cookies (never passwords) in
the user's config directory with 0600 permissions.
"""

from __future__ import annotations

import contextlib
import email.utils
import hmac
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx

from ._atomic import replace_json
from ._json import JsonObject

#: Environment variable naming the directory of the credential file (absolute path).
CONFIG_DIR_ENV = "FRAMEPORT_CONFIG_DIR"
CREDENTIAL_FILE_NAME = "credentials.json"
FALLBACK_COOKIES_HEADER = "X-Fallback-Cookies"

#: Header suffix (after the prefix, e.g. ``X-Service-``) for each way to name a user.
IMPERSONATION_HEADERS = {
    "user_id": "Impersonate-User-Id",
    "email": "Impersonate-User-Email",
    "phone": "Impersonate-User-Phone",
}

AuthenticationMethod = Literal["key", "jwt", "session"]

CredentialChoice = Literal["auto", "env", "saved", "embedded"]
"""Where a worker elsewhere (a dask worker) gets the client's credentials from: a reference
to the environment (``"env"``) or the saved session (``"saved"``), the credentials
themselves (``"embedded"``), or the best available (``"auto"``)."""


class Secret:
    """A credential whose value never appears in repr() or str(); `reveal()` returns it.

    >>> Secret("s3cr3t")
    Secret('***')
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"A credential is a string; got {type(value).__name__}.")
        if not value:
            raise ValueError("A credential must not be empty.")
        self._value = value

    def reveal(self) -> str:
        """The secret value, for building a request header."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash(self._value)


def session_cookie_names(project: str) -> tuple[str, str]:
    """The two session cookie names of a project: ``a_session_<p>`` and ``..._legacy``."""
    return f"a_session_{project}", f"a_session_{project}_legacy"


@dataclass(frozen=True)
class Session:
    """A signed-in session: the session cookies, and the X-Fallback-Cookies value if the service
    sent one."""

    cookies: Mapping[str, Secret] = field(default_factory=dict)
    fallback: Secret | None = None

    def headers(self) -> dict[str, str]:
        """``Cookie`` (both session cookies) and ``X-Fallback-Cookies`` when known."""
        headers: dict[str, str] = {}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{n}={v.reveal()}" for n, v in self.cookies.items())
        if self.fallback is not None:
            headers[FALLBACK_COOKIES_HEADER] = self.fallback.reveal()
        return headers

    def to_json(self) -> JsonObject:
        return {
            "cookies": {name: value.reveal() for name, value in self.cookies.items()},
            "fallback": None if self.fallback is None else self.fallback.reveal(),
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Session:
        cookies = {str(n): Secret(str(v)) for n, v in dict(data.get("cookies") or {}).items()}
        fallback = data.get("fallback")
        return cls(cookies, Secret(str(fallback)) if fallback else None)


def _parse_set_cookie(header: str) -> tuple[str, str, bool]:
    """(name, value, expired) of one Set-Cookie header."""
    first, *attributes = header.split(";")
    name, _, value = first.partition("=")
    expired = False
    for attribute in attributes:
        key, _, setting = attribute.partition("=")
        key, setting = key.strip().lower(), setting.strip()
        try:
            if key == "max-age":
                expired = expired or int(setting) <= 0
            elif key == "expires":
                expires = email.utils.parsedate_to_datetime(setting).timestamp()
                expired = expired or expires <= time.time()
        except (TypeError, ValueError):
            continue
    return name.strip(), value.strip().strip('"'), expired


def _fallback_has_session(raw: str, cookie_name: str) -> bool:
    try:
        cookies = json.loads(raw)
    except ValueError:
        return False
    return isinstance(cookies, dict) and bool(cookies.get(cookie_name))


def updated_session(
    current: Session | None, response: httpx.Response, project: str
) -> Session | None:
    """The session after `response`: session cookies set or cleared by Set-Cookie, and the
    X-Fallback-Cookies header kept (or forgotten when the service sends ``[]``)."""
    names = session_cookie_names(project)
    cookies = dict(current.cookies) if current else {}
    fallback = current.fallback if current else None
    changed = False
    for header in response.headers.get_list("set-cookie"):
        name, value, expired = _parse_set_cookie(header)
        if name not in names:
            continue
        changed = True
        if expired or not value:
            cookies.pop(name, None)
        else:
            cookies[name] = Secret(value)
    raw_fallback = response.headers.get(FALLBACK_COOKIES_HEADER)
    if raw_fallback is not None:
        changed = True
        fallback = Secret(raw_fallback) if _fallback_has_session(raw_fallback, names[0]) else None
    if not changed:
        return current
    if not cookies and fallback is None:
        return None
    return Session(cookies, fallback)


def impersonation_target(
    user_id: str | None, email: str | None, phone: str | None
) -> tuple[str, str]:
    """(header suffix, value) for the one impersonation argument given; ValueError otherwise."""
    given = {
        name: value
        for name, value in (("user_id", user_id), ("email", email), ("phone", phone))
        if value is not None
    }
    if len(given) != 1:
        raise ValueError(
            "impersonate() takes exactly one of user_id=, email= or phone= "
            f"(got {', '.join(given) or 'none'})."
        )
    ((name, value),) = given.items()
    if not isinstance(value, str) or not value:
        raise TypeError(f"impersonate({name}=...) takes a non-empty string.")
    return IMPERSONATION_HEADERS[name], value


@dataclass(frozen=True)
class Credentials:
    """How a client authenticates: at most one of an API key, a JWT and a session, plus an
    optional impersonation target (header suffix, value)."""

    key: Secret | None = None
    jwt: Secret | None = None
    session: Session | None = None
    impersonation: tuple[str, str] | None = None

    @property
    def method(self) -> AuthenticationMethod | None:
        """``"key"``, ``"jwt"``, ``"session"``, or None for an anonymous (guest) client."""
        if self.key is not None:
            return "key"
        if self.jwt is not None:
            return "jwt"
        if self.session is not None:
            return "session"
        return None

    def headers(self, prefix: str) -> dict[str, str]:
        """The request headers carrying these credentials (header names start with `prefix`)."""
        headers: dict[str, str] = {}
        if self.key is not None:
            headers[f"{prefix}Key"] = self.key.reveal()
        if self.jwt is not None:
            headers[f"{prefix}JWT"] = self.jwt.reveal()
        if self.session is not None:
            headers.update(self.session.headers())
        if self.impersonation is not None:
            suffix, target = self.impersonation
            headers[f"{prefix}{suffix}"] = target
        return headers


def config_dir() -> Path:
    """The directory of the credential file: $FRAMEPORT_CONFIG_DIR, else
    $XDG_CONFIG_HOME/frameport, else ~/.config/frameport. Never the working directory."""
    explicit = os.environ.get(CONFIG_DIR_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_absolute():
            raise ValueError(f"Set {CONFIG_DIR_ENV} to an absolute path (got {explicit!r}).")
        return path
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "frameport"


def credential_file() -> Path:
    return config_dir() / CREDENTIAL_FILE_NAME


def _session_key(endpoint: str, project: str) -> str:
    return f"{project}@{endpoint}"


def _read_credential_file(path: Path) -> JsonObject:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"sessions": {}}
    with contextlib.suppress(ValueError):
        data = json.loads(text)
        if isinstance(data, dict) and isinstance(data.get("sessions"), dict):
            return data
    raise ValueError(f"The credential file {path} is damaged; delete it and log in again.")


def _write_credential_file(path: Path, data: JsonObject) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    replace_json(path, data, indent=1, sort_keys=True, durable=True)


def save_session(endpoint: str, project: str, session: Session) -> Path:
    """Store `session` for (endpoint, project) in the credential file (mode 0600)."""
    path = credential_file()
    data = _read_credential_file(path)
    data["sessions"][_session_key(endpoint, project)] = {
        **session.to_json(),
        "saved_at": int(time.time()),
    }
    _write_credential_file(path, data)
    return path


def load_session(endpoint: str, project: str) -> Session | None:
    entry = _read_credential_file(credential_file())["sessions"].get(
        _session_key(endpoint, project)
    )
    return Session.from_json(entry) if isinstance(entry, dict) else None


def forget_session(endpoint: str, project: str, session: Session) -> None:
    """Remove the saved entry for (endpoint, project) if it holds `session`."""
    path = credential_file()
    data = _read_credential_file(path)
    key = _session_key(endpoint, project)
    entry = data["sessions"].get(key)
    if isinstance(entry, dict) and Session.from_json(entry).cookies == session.cookies:
        del data["sessions"][key]
        _write_credential_file(path, data)
