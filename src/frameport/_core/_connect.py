"""A `Connection` made from a client's options: the one construction behind `AsyncClient`,
also used where a connection is rebuilt elsewhere from a reference to a client (a dask
worker), without a client.

>>> connection = connect("http://127.0.0.1:8080/v1", "demo", key="...")   # doctest: +SKIP
>>> with_saved_session(connect("http://127.0.0.1:8080/v1", "demo"))       # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import httpx

from ._auth import Credentials, Secret, load_session
from ._config import (
    DEFAULT_HEADER_PREFIX,
    QUERY_MEMBERS,
    RESPONSE_FORMAT,
    checked_timeout,
    normalized_endpoint,
    user_agent,
)
from ._connection import Connection
from ._transport import KeyThrottle, RetryPolicy, Transport
from ._wire_encoding import Compression, check_compression


def connect(
    endpoint: str,
    project: str,
    *,
    key: str | None = None,
    jwt: str | None = None,
    response_format: str | None = None,
    timeout: float | httpx.Timeout = 60.0,
    retries: int | RetryPolicy = 5,
    query_member: str | None = None,
    header_prefix: str = DEFAULT_HEADER_PREFIX,
    headers: Mapping[str, str] | None = None,
    compression: Compression = "auto",
) -> Connection:
    """A connection to `project` at `endpoint` with the options of `Client` (ValueError for
    one it cannot use); close it with `Connection.aclose`."""
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
        timeout=checked_timeout(timeout),
        retry=policy,
        headers={"User-Agent": user_agent(), **(headers or {})},
        compression=check_compression(compression),
    )
    if key is not None:
        transport.throttle = KeyThrottle()
    return Connection(
        endpoint,
        project,
        transport=transport,
        credentials=Credentials(
            key=None if key is None else Secret(key), jwt=None if jwt is None else Secret(jwt)
        ),
        header_prefix=header_prefix,
        response_format=response_format or RESPONSE_FORMAT,
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
