"""One project's endpoint, headers and credentials: what every engine receives (as
`Requester`), never the client.

>>> body = await connection.request_json("GET", "/account")            # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

import httpx

from .._exceptions import (
    APIError,
    endpoint_version_hint,
    jwt_hint,
    missing_credentials_hint,
    unknown_key_hint,
)
from ._auth import Credentials, updated_session
from ._config import checked_timeout
from ._transport import (
    IDEMPOTENT_METHODS,
    ReadBack,
    RetryPolicy,
    Settle,
    Transport,
    is_secret_param,
)
from ._wire_encoding import WireEncoding


def _refused_as_guest(error: APIError) -> bool:
    """Whether `error` is the service refusing a guest (a guest's scopes, or a permission check
    that only callers without a valid key go through)."""
    if error.status != 401:
        return False
    return error.type == "user_unauthorized" or _scope_refused_to_guest(error)


def _scope_refused_to_guest(error: APIError) -> bool:
    """Whether `error` refuses a scope to a caller the service took for a guest."""
    return error.type == "general_unauthorized_scope" and "(role: guests)" in error.message


@dataclass(eq=False, repr=False)
class Connection:
    """Requests to one project of the service with one set of credentials, keeping the
    session cookie the service sets. `endpoint` ends in the version prefix
    (``http://host:port/v1``); `query_member` forces the member name of query objects (None:
    each path's default). A connection closes its transport only if it `owns_transport`.
    """

    endpoint: str
    project: str
    _: KW_ONLY
    transport: Transport
    credentials: Credentials
    header_prefix: str
    response_format: str
    query_member: str | None = None
    owns_transport: bool = True

    def share(self, credentials: Credentials) -> Connection:
        """A connection with other `credentials` over the same transport (which this one
        keeps: closing the new one leaves it open)."""
        return replace(self, credentials=credentials, owns_transport=False)

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of the transport (also followed by downloads that resume)."""
        return self.transport.retry

    def wire_encoding(self) -> WireEncoding:
        """The encoding answers are asked for now, and why (see `Transport.wire_encoding`)."""
        return self.transport.wire_encoding()

    def header(self, name: str) -> str:
        """The full name of a service header: ``header("ID")`` → ``"X-Service-ID"``."""
        return f"{self.header_prefix}{name}"

    def query_member_for(self, path: str) -> str:
        """The member naming the field in query objects sent to `path`: the `query_member`
        setting if given, else ``"attribute"`` on ``/databases/...`` paths and ``"column"``
        elsewhere (``/tablesdb/...``)."""
        if self.query_member is not None:
            return self.query_member
        relative = path.removeprefix("/v1")
        return "attribute" if relative.startswith("/databases") else "column"

    def browser_url(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        """A URL a browser can load without headers: the project goes in the ``project`` query
        parameter, and it never carries a credential (a resource ``token`` excepted)."""
        extra = dict(params or {})
        # Resource tokens are made for URLs; API keys, JWTs and sessions are not.
        secret = [name for name in extra if is_secret_param(name) and name != "token"]
        if secret:
            raise ValueError(f"Credentials never go in a URL; remove {', '.join(secret)}.")
        if not path.startswith("/"):
            raise ValueError(
                f"path starts with '/' and is relative to the endpoint (got {path!r})."
            )
        query = httpx.QueryParams({"project": self.project, **extra})
        return f"{self.endpoint}{path}?{query}"

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Any = None,
        json: object = None,
        data: Mapping[str, Any] | None = None,
        files: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        read_back: str | ReadBack | None = None,
        settle: Settle | None = None,
        stream: bool = False,
        timeout: float | httpx.Timeout | None = None,
        authenticate: bool = True,
    ) -> httpx.Response:
        """Send one request to `path` (relative to the endpoint) and return the response.

        Bodies: `json`, or `data` + `files` (multipart), or raw `content`; bodies must be
        bytes-like to be re-sent on a retry.
        `params` may hold lists (repeated names); use `queries_param` for ``queries[]``.

        Retries (`RetryPolicy`): an idempotent request (GET, HEAD, PUT, DELETE, or
        ``idempotent=True``, e.g. a create with a client-chosen ID) is retried on network
        failures, timeouts and 500/502/503/504; any request on 429 (waiting as the service
        asks) and on failures to connect. After an attempt whose outcome was unknown, a create
        answering 409 "already exists" returns what `read_back` (a path to GET, or an async
        callable) fetches, and a DELETE answering 404 returns that response. A request not
        safe to send twice is retried with a `settle` probe, run before each resend after a
        lost answer: the response to use if that attempt took effect, or None to resend.

        Raises an `APIError` subclass for error statuses and `TransportError` when no answer
        came. With ``stream=True`` the body is not read and the caller must ``aclose()`` the
        response (prefer `stream`).
        """
        method = method.upper()
        if idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS
        request_headers = {
            self.header("Project"): self.project,
            self.header("Response-Format"): self.response_format,
        }
        if files is None and data is None and content is None:
            request_headers["Content-Type"] = "application/json"
        if authenticate:
            request_headers.update(self.credentials.headers(self.header_prefix))
        request_headers.update(headers or {})
        if isinstance(read_back, str):
            read_back = functools.partial(self.request, "GET", read_back)
        try:
            response = await self.transport.send(
                method,
                path,
                params=params,
                headers=request_headers,
                json=json,
                data=data,
                files=files,
                content=content,
                timeout=None if timeout is None else checked_timeout(timeout),
                idempotent=idempotent,
                read_back=read_back,
                settle=settle,
                stream=stream,
            )
        except APIError as error:
            if error.hint is None:
                error.hint = self._hint_for(error, authenticated=authenticate)
            raise
        if not stream:
            # httpx binds a response and its stream to each other; the body is read, so drop
            # the stream: the body is then freed with the response, not by a later full GC.
            response.stream = httpx.ByteStream(b"")
        self.credentials = replace(
            self.credentials,
            session=updated_session(self.credentials.session, response, self.project),
        )
        return response

    def _hint_for(self, error: APIError, *, authenticated: bool) -> str | None:
        """Advice on the likely cause of `error` when this connection's settings explain it: an
        endpoint without /v1, no credentials at all, an API key the service does not know, or a
        JWT that expired or whose session ended."""
        if error.type == "general_route_not_found":
            if not httpx.URL(self.endpoint).path.endswith("/v1"):
                return endpoint_version_hint(self.endpoint)
        elif authenticated and self.credentials.method is None and _refused_as_guest(error):
            return missing_credentials_hint()
        elif authenticated and self.credentials.key is not None and _refused_as_guest(error):
            return unknown_key_hint(self.project)
        elif authenticated and self.credentials.jwt is not None:
            if error.type == "user_jwt_invalid":
                return jwt_hint(refused_as_guest=False)
            # Not `user_unauthorized`: a signed-in user gets it too, for a row it may not read.
            if _scope_refused_to_guest(error):
                return jwt_hint(refused_as_guest=True)
        return None

    async def request_json(self, method: str, path: str, **options: Any) -> Any:
        """`request` returning the decoded JSON body (None for an empty body, e.g. 204)."""
        response = await self.request(method, path, **options)
        return response.json() if response.content else None

    async def request_bytes(self, method: str, path: str, **options: Any) -> bytes:
        """`request` returning the raw body bytes (e.g. for pyarrow's JSON reader)."""
        response = await self.request(method, path, **options)
        return response.content

    @asynccontextmanager
    async def stream(self, method: str, path: str, **options: Any) -> AsyncIterator[httpx.Response]:
        """`request` with the body left unread; read it with ``response.aiter_bytes()``.

        >>> async with connection.stream("GET", f"/storage/buckets/{b}/files/{f}/download") as r:
        ...     async for chunk in r.aiter_bytes(): ...               # doctest: +SKIP
        """
        response = await self.request(method, path, stream=True, **options)
        try:
            yield response
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        """Close the transport's connections, if this connection owns them."""
        if self.owns_transport:
            await self.transport.aclose()


Requester = Connection
"""What the engines (tables, storage, functions, transfers) need to talk to the service."""
