"""A `Connection` made from a client's options, with or without a client (a dask worker).

>>> connection = connect("http://127.0.0.1:8080/v1", "demo", key="...")   # doctest: +SKIP
>>> with_saved_session(connect("http://127.0.0.1:8080/v1", "demo"))       # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypedDict, Unpack

import httpx

from ._auth import Credentials, Secret, load_session
from ._config import (
    DEFAULT_HEADER_PREFIX,
    RESPONSE_FORMAT,
    checked_timeout,
    normalized_endpoint,
    user_agent,
)
from ._connection import Connection
from ._queries import QUERY_MEMBERS
from ._transport import RateLimitThrottle, RetryPolicy, Transport
from ._wire_encoding import Compression, check_compression


class ClientOptions(TypedDict, total=False):
    """The options of a client, every one a keyword argument of `Client`, `AsyncClient` and
    `connect` (see `Client` for what each does); `connect` gives the defaults."""

    key: str | None
    jwt: str | None
    response_format: str | None
    timeout: float | httpx.Timeout  # default 60 s
    retries: int | RetryPolicy  # default 5
    query_member: str | None
    header_prefix: str  # default DEFAULT_HEADER_PREFIX
    headers: Mapping[str, str] | None
    compression: Compression  # default "auto"


def connect(endpoint: str, project: str, **options: Unpack[ClientOptions]) -> Connection:
    """A connection to `project` at `endpoint` with the `options` of a client (TypeError for
    an unknown one, ValueError for one it cannot use); close it with `Connection.aclose`."""
    unknown = sorted(set(options) - set(ClientOptions.__annotations__))
    if unknown:
        raise TypeError(
            f"{unknown[0]!r} is not an option of a client; the options are "
            f"{', '.join(ClientOptions.__annotations__)}."
        )
    key, jwt, query_member = options.get("key"), options.get("jwt"), options.get("query_member")
    header_prefix = options.get("header_prefix", DEFAULT_HEADER_PREFIX)
    retries = options.get("retries", 5)
    if not isinstance(project, str) or not project.strip():
        raise ValueError("project must be the project ID, a non-empty string.")
    if key is not None and jwt is not None:
        raise ValueError("Pass either key= (an API key) or jwt= (a user's JWT), not both.")
    if query_member not in (None, *QUERY_MEMBERS):
        raise ValueError(
            f"query_member must be 'column', 'attribute' or None (got {query_member!r})."
        )
    if not isinstance(header_prefix, str) or not header_prefix:
        raise ValueError("header_prefix must be a non-empty string such as 'X-Service-'.")
    policy = retries if isinstance(retries, RetryPolicy) else RetryPolicy(retries=retries)
    endpoint = normalized_endpoint(endpoint)
    transport = Transport(
        endpoint,
        timeout=checked_timeout(options.get("timeout", 60.0)),
        retry=policy,
        headers={"User-Agent": user_agent(), **(options.get("headers") or {})},
        compression=check_compression(options.get("compression", "auto")),
    )
    if key is not None:
        transport.throttle = RateLimitThrottle(for_key=True)
    return Connection(
        endpoint,
        project,
        transport=transport,
        credentials=Credentials(
            key=None if key is None else Secret(key), jwt=None if jwt is None else Secret(jwt)
        ),
        header_prefix=header_prefix,
        response_format=options.get("response_format") or RESPONSE_FORMAT,
        query_member=query_member,
    )


def with_saved_session(connection: Connection) -> Connection:
    """`connection`, now sending the session saved by ``login(..., save=True)`` for its
    endpoint and project; ValueError when none is saved."""
    session = load_session(connection.endpoint, connection.project)
    if session is None:
        raise ValueError(
            f"No session is saved for project {connection.project!r} at "
            f"{connection.endpoint}; log in once with client.login(email, password, save=True)."
        )
    connection.credentials = replace(connection.credentials, session=session)
    return connection
