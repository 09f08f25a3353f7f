"""How a worker (dask, Ray) connects: a `ClientReference` names the endpoint, the project, the
client's settings and where the credentials come from, and makes the worker's `Connection`
(`_core.connect`, the construction `AsyncClient` uses).

>>> ClientReference("http://127.0.0.1:8080/v1", "demo", "env")
ClientReference(endpoint='http://127.0.0.1:8080/v1', project='demo', source='env', ...)

Decisions:

* A reference points at the credentials rather than carrying the secret where it can:
  ``"env"`` (the worker reads FRAMEPORT_KEY or FRAMEPORT_JWT), ``"saved"`` (the worker loads
  the session saved by ``login(..., save=True)`` for the endpoint and project), ``"none"`` (a
  guest). ``credentials="auto"`` picks ``"env"`` when the client's key or JWT is the one in the
  environment, ``"saved"`` when its session is the saved one; otherwise, and with
  ``credentials="embedded"``, the reference carries the client's credentials themselves: they
  never appear in a repr or a dask key, but a pickled reference (inside the task sent to a
  worker) holds them. Set FRAMEPORT_KEY on the workers (and in the driver) to keep secrets out
  of the tasks.
* An impersonating client's target travels beside the credentials, never inside the embedded
  ones, so every source impersonates the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from ..._core import (
    DEFAULT_HEADER_PREFIX,
    JWT_ENV,
    KEY_ENV,
    Connection,
    Credentials,
    Requester,
    connect,
    credentials_from_env,
    load_session,
    with_saved_session,
)
from ..._core._auth import CredentialChoice

CredentialSource = Literal["env", "saved", "embedded", "none"]


@dataclass(frozen=True)
class ClientReference:
    """How a worker makes its connection: where to connect and where its credentials come
    from (see the module docstring)."""

    endpoint: str
    project: str
    source: CredentialSource
    embedded: Credentials | None = field(default=None, repr=False)
    impersonation: tuple[str, str] | None = None
    header_prefix: str = DEFAULT_HEADER_PREFIX
    query_member: str | None = None

    def __repr__(self) -> str:
        return (
            f"ClientReference(endpoint={self.endpoint!r}, project={self.project!r}, "
            f"source={self.source!r}, ...)"
        )

    def __dask_tokenize__(self) -> tuple[object, ...]:
        return (self.endpoint, self.project, self.source, self.impersonation, self.header_prefix)

    def connect(self) -> Connection:
        """A new connection for these settings (close it with ``aclose`` when done)."""
        key = jwt = None
        if self.source == "env":
            key, jwt = credentials_from_env()
            if key is None and jwt is None:
                raise ValueError(
                    f"This worker has neither {KEY_ENV} nor {JWT_ENV} in its environment; "
                    "set it where the workers start, or pass credentials='embedded' to "
                    "to_dask() or fp.ray.read_table()."
                )
        connection = connect(
            self.endpoint,
            self.project,
            key=key,
            jwt=jwt,
            header_prefix=self.header_prefix,
            query_member=self.query_member,
        )
        if self.source == "saved":
            with_saved_session(connection)
        elif self.embedded is not None:
            connection.credentials = self.embedded
        if self.impersonation is not None:
            connection.credentials = replace(
                connection.credentials, impersonation=self.impersonation
            )
        return connection


def client_reference(requester: Requester, choice: CredentialChoice = "auto") -> ClientReference:
    """The `ClientReference` of a client's `requester` for workers; see the module
    docstring."""
    credentials: Credentials = requester.credentials
    if choice not in ("auto", "env", "saved", "embedded"):
        raise ValueError(
            f"credentials must be 'auto', 'env', 'saved' or 'embedded' (got {choice!r})."
        )
    source: CredentialSource = "embedded" if choice == "auto" else choice
    if choice == "auto":
        if credentials.method is None:
            source = "none"
        elif _secret_in_environment(credentials):
            source = "env"
        elif credentials.session is not None and _session_is_saved(requester, credentials):
            source = "saved"
    return ClientReference(
        endpoint=requester.endpoint,
        project=requester.project,
        source=source,
        embedded=replace(credentials, impersonation=None) if source == "embedded" else None,
        impersonation=credentials.impersonation,
        header_prefix=requester.header_prefix,
        query_member=requester.query_member,
    )


def _secret_in_environment(credentials: Credentials) -> bool:
    key, jwt = credentials_from_env()
    if credentials.key is not None:
        return key is not None and credentials.key.reveal() == key
    if credentials.jwt is not None:
        return jwt is not None and credentials.jwt.reveal() == jwt
    return False


def _session_is_saved(requester: Requester, credentials: Credentials) -> bool:
    try:
        saved = load_session(requester.endpoint, requester.project)
    except ValueError:  # a damaged credential file
        return False
    return saved is not None and credentials.session == saved
