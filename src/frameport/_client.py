"""`AsyncClient`, the only implementation of I/O, and `Client`, its synchronous face.

>>> client = Client("http://127.0.0.1:8080/v1", "demo", key="...")  # doctest: +SKIP
>>> client.account()  # doctest: +SKIP

Internal request API for the table, storage and function code (all on `AsyncClient`):

* ``await client._request(method, path, ...) -> httpx.Response`` — one call with the client's
  credentials, retries, throttling and error translation (see its docstring for the rules).
* ``await client._request_json(...)`` — the decoded JSON body (None for 204).
* ``await client._request_bytes(...)`` — the raw body, for a faster JSON or Arrow decoder.
* ``async with client._stream(method, path, ...) as response:`` — a streamed download.
* `queries_param` (from `._transport`) — the ``queries[]`` parameter for query objects.
* ``client._header("ID")`` — a service header name with the configured prefix.
* ``client.query_member_for(path)`` — ``"column"`` or ``"attribute"`` for query objects.

Paths are relative to the endpoint, which already ends in ``/v1``: ``"/account"``,
``"/tablesdb/<db>/tables/<table>/rows"``.
"""

from __future__ import annotations

import importlib.metadata
import math
import os
import platform
import sys
import warnings
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import httpx

from ._core._auth import (
    AuthenticationMethod,
    Credentials,
    Secret,
    forget_session,
    impersonation_target,
    load_session,
    save_session,
    updated_session,
)
from ._core._sync import SyncFacade, delegate, forward_property
from ._core._transport import (
    IDEMPOTENT_METHODS,
    KeyThrottle,
    ReadBack,
    RetryPolicy,
    Transport,
    is_secret_param,
)
from ._exceptions import (
    APIError,
    AuthenticationError,
    FrameportError,
    ImpersonationIgnoredWarning,
    NotFoundError,
    endpoint_version_hint,
    jwt_hint,
    unknown_key_hint,
)
from ._functions import AsyncFunction, Function, create_function
from ._storage import AsyncBucket, Bucket, create_bucket
from ._tables._query import AsyncTable, Table
from ._tables._writes import create_table

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_ENDPOINT_ENV = "FRAMEPORT_ENDPOINT"
PROJECT_ENV = "FRAMEPORT_PROJECT"
KEY_ENV = "FRAMEPORT_KEY"
JWT_ENV = "FRAMEPORT_JWT"

DEFAULT_HEADER_PREFIX = "X-Service-"
#: The response format this client was written against (sent when none is chosen).
RESPONSE_FORMAT = "1.9.5"
#: Seconds allowed for connecting; reads and writes get the client's `timeout`.
CONNECT_TIMEOUT = 10.0
QUERY_MEMBERS = ("column", "attribute")
MAX_JWT_DURATION = 3600


def _normalized_endpoint(endpoint: str) -> str:
    if not isinstance(endpoint, str):
        raise TypeError(f"endpoint is a URL string; got {type(endpoint).__name__}.")
    try:
        url = httpx.URL(endpoint)
    except httpx.InvalidURL as exc:
        raise ValueError(f"endpoint {endpoint!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(
            f"endpoint must be an http(s) URL such as http://127.0.0.1:8080/v1 (got {endpoint!r})."
        )
    if url.userinfo:
        raise ValueError("Do not put credentials in the endpoint URL; pass key= or jwt= instead.")
    if url.query or url.fragment:
        raise ValueError("The endpoint URL takes no query string or fragment.")
    return str(url).rstrip("/")


def _timeout(timeout: float | httpx.Timeout) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        limits = (timeout.connect, timeout.read, timeout.write, timeout.pool)
        if any(limit is None for limit in limits):
            raise ValueError("Every part of the timeout must be finite; none may be None.")
        return timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout is a number of seconds; got {type(timeout).__name__}.")
    if not (0 < timeout < math.inf):
        raise ValueError(f"timeout must be a finite number of seconds > 0 (got {timeout!r}).")
    return httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))


_PACKAGE_DIR = os.path.dirname(__file__) + os.sep


def _stacklevel_outside_package() -> int:
    """The `warnings.warn` stacklevel, for the caller of the caller, naming the first frame
    outside frameport (so a warning points at user code, whether from Client or AsyncClient)."""
    level, frame = 2, sys._getframe(2)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back
    return level


def _refused_as_guest(error: APIError) -> bool:
    """Whether `error` is the service refusing a guest (§2.5: a guest's scopes, or a
    permission check that only callers without a valid key go through)."""
    if error.status != 401:
        return False
    return error.type == "user_unauthorized" or _scope_refused_to_guest(error)


def _scope_refused_to_guest(error: APIError) -> bool:
    """Whether `error` refuses a scope to a caller the service took for a guest."""
    return error.type == "general_unauthorized_scope" and "(role: guests)" in error.message


def credentials_from_env() -> tuple[str | None, str | None]:
    """(key, jwt) from FRAMEPORT_KEY, else FRAMEPORT_JWT: the key wins when both are set
    (`from_env`, the CLI, the fsspec filesystem and dask workers all read them so)."""
    key = os.environ.get(KEY_ENV) or None
    return key, None if key else os.environ.get(JWT_ENV) or None


def _user_agent() -> str:
    try:
        version = importlib.metadata.version("frameport")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"frameport/{version} python/{platform.python_version()} httpx/{httpx.__version__}"


class AsyncClient:
    """A connection to one project of the service; every method is a coroutine.

    Authenticate with an API key (``key=``), a JWT (``jwt=``), or a session (``login()``);
    with none of them the client acts as a guest.

    `timeout` bounds every read and write (seconds; connecting gets at most 10 s) or is an
    ``httpx.Timeout`` with every part set. `retries` is the number of retries of a failed
    idempotent request, or a `RetryPolicy`. `query_member` forces the member name of query
    objects (``"column"`` or ``"attribute"``) for deployments that read only one. Service headers
    start with `header_prefix`. `headers` are sent with every request (e.g. ``Origin``).

    Use ``async with AsyncClient(...) as client:`` or call ``await client.close()``.
    """

    def __init__(
        self,
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
    ) -> None:
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
        self._endpoint = _normalized_endpoint(endpoint)
        self._project = project
        self._prefix = header_prefix
        self._query_member = query_member
        self._base_headers = {
            f"{header_prefix}Project": project,
            f"{header_prefix}Response-Format": response_format or RESPONSE_FORMAT,
        }
        self._credentials = Credentials(
            key=None if key is None else Secret(key), jwt=None if jwt is None else Secret(jwt)
        )
        self._transport = Transport(
            self._endpoint,
            timeout=_timeout(timeout),
            retry=policy,
            headers={"User-Agent": _user_agent(), **(headers or {})},
        )
        if key is not None:
            self._transport.throttle = KeyThrottle()
        self._owns_transport = True

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_env(cls, **options: Any) -> Self:
        """A client configured by FRAMEPORT_ENDPOINT, FRAMEPORT_PROJECT and, if set,
        FRAMEPORT_KEY (preferred) or FRAMEPORT_JWT. `options` are further constructor
        arguments; a key= or jwt= among them is used instead of the environment's."""
        missing = [name for name in (DEFAULT_ENDPOINT_ENV, PROJECT_ENV) if not os.environ.get(name)]
        if missing:
            raise ValueError(
                f"Set {' and '.join(missing)} in the environment "
                "(e.g. FRAMEPORT_ENDPOINT=http://127.0.0.1:8080/v1, FRAMEPORT_PROJECT=demo)."
            )
        if options.get("key") is None and options.get("jwt") is None:
            options["key"], options["jwt"] = credentials_from_env()
        return cls(os.environ[DEFAULT_ENDPOINT_ENV], os.environ[PROJECT_ENV], **options)

    @classmethod
    def from_saved(cls, endpoint: str, project: str, **options: Any) -> Self:
        """A client using the session saved by ``login(..., save=True)`` for this endpoint and
        project. `options` are further constructor arguments (not key= or jwt=)."""
        if options.get("key") is not None or options.get("jwt") is not None:
            raise ValueError("from_saved() uses a saved session; do not pass key= or jwt=.")
        client = cls(endpoint, project, **options)
        session = load_session(client._endpoint, project)
        if session is None:
            raise ValueError(
                f"No session is saved for project {project!r} at {client._endpoint}; "
                "log in once with client.login(email, password, save=True)."
            )
        client._credentials = replace(client._credentials, session=session)
        return client

    def impersonate(
        self, *, user_id: str | None = None, email: str | None = None, phone: str | None = None
    ) -> AsyncClient:
        """A new client acting as another user; give exactly one of `user_id`, `email`, `phone`.

        The service honours it only for a signed-in user (session or JWT) marked as an
        impersonator; for an API key it ignores it, and this warns
        (`ImpersonationIgnoredWarning`). The new client shares this client's connections:
        close this one when done with both.
        """
        target = impersonation_target(user_id, email, phone)
        if self._credentials.method not in ("session", "jwt"):
            warnings.warn(
                ImpersonationIgnoredWarning(
                    "The service ignores impersonation for requests without a signed-in user "
                    f"(this client authenticates with: {self._credentials.method or 'nothing'}); "
                    "log in as an impersonator user or use a JWT to impersonate."
                ),
                stacklevel=_stacklevel_outside_package(),
            )
        clone = self._share(replace(self._credentials, impersonation=target))
        return clone

    def _share(self, credentials: Credentials) -> AsyncClient:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._credentials = credentials
        clone._owns_transport = False
        return clone

    # -- settings ---------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """The service URL, ending in the version prefix (``http://host:port/v1``)."""
        return self._endpoint

    @property
    def project(self) -> str:
        """The project ID sent with every request."""
        return self._project

    @property
    def header_prefix(self) -> str:
        """The prefix of the service's headers (``"X-Service-"``)."""
        return self._prefix

    @property
    def query_member(self) -> str | None:
        """The member name forced for query objects, or None for the default of each path
        (see `query_member_for`)."""
        return self._query_member

    @property
    def authentication(self) -> AuthenticationMethod | None:
        """``"key"``, ``"jwt"``, ``"session"``, or None when the client acts as a guest."""
        return self._credentials.method

    def query_member_for(self, path: str) -> str:
        """The member naming the field in query objects sent to `path`: the `query_member`
        setting if given, else ``"attribute"`` on ``/databases/...`` paths and ``"column"``
        elsewhere (``/tablesdb/...``)."""
        if self._query_member is not None:
            return self._query_member
        relative = path.removeprefix("/v1")
        return "attribute" if relative.startswith("/databases") else "column"

    def browser_url(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        """A URL a browser can load without headers (e.g. an ``<img>`` source): the project
        goes in the ``project`` query parameter. It never carries a credential, so the resource
        must be readable without one (or carry a resource ``token``).

        >>> client.browser_url("/storage/buckets/b/files/f/view", {"w": 64})  # doctest: +SKIP
        'http://127.0.0.1:8080/v1/storage/buckets/b/files/f/view?project=demo&w=64'
        """
        extra = dict(params or {})
        # Resource tokens are made for URLs; API keys, JWTs and sessions are not.
        secret = [name for name in extra if is_secret_param(name) and name != "token"]
        if secret:
            raise ValueError(f"Credentials never go in a URL; remove {', '.join(secret)}.")
        if not path.startswith("/"):
            raise ValueError(
                f"path starts with '/' and is relative to the endpoint (got {path!r})."
            )
        query = httpx.QueryParams({"project": self._project, **extra})
        return f"{self._endpoint}{path}?{query}"

    def _header(self, name: str) -> str:
        """The full name of a service header: ``_header("ID")`` → ``"X-Service-ID"``."""
        return f"{self._prefix}{name}"

    def __repr__(self) -> str:
        fields = f"endpoint={self._endpoint!r}, project={self._project!r}"
        fields += f", authentication={self._credentials.method!r}"
        if self._credentials.impersonation is not None:
            fields += f", impersonating={self._credentials.impersonation[1]!r}"
        return f"{type(self).__name__}({fields})"

    # -- account and session -----------------------------------------------------------------

    async def login(self, email: str, password: str, *, save: bool = False) -> dict[str, Any]:
        """Sign in with e-mail and password and keep the session cookies for later requests.

        Replaces any session this client held. With ``save=True`` the session cookie (not the
        password) is stored in the credential file for `from_saved`. Returns the session
        record; raises `AuthenticationError` for a wrong e-mail or password.
        """
        if self._credentials.key is not None or self._credentials.jwt is not None:
            raise ValueError(
                "This client authenticates with an API key or JWT; log in on a client created "
                "without key= and jwt=."
            )
        if not isinstance(email, str) or not isinstance(password, str):
            raise TypeError("login() takes the e-mail address and the password as strings.")
        self._credentials = replace(self._credentials, session=None)
        session_record = await self._request_json(
            "POST", "/account/sessions/email", json={"email": email, "password": password}
        )
        if self._credentials.session is None:
            raise FrameportError("The service created a session but sent no session cookie.")
        if save:
            save_session(self._endpoint, self._project, self._credentials.session)
        if isinstance(session_record, dict) and session_record.get("secret"):
            session_record["secret"] = ""
        return dict(session_record)

    async def logout(self) -> None:
        """End this client's session on the service and forget its cookies (also the saved
        copy, if it was saved). A session the service already ended is not an error."""
        session = self._credentials.session
        if session is None:
            raise ValueError("This client has no session to end; logout() follows login().")
        try:
            await self._request("DELETE", "/account/sessions/current")
        except (AuthenticationError, NotFoundError) as exc:
            if exc.type not in ("user_session_not_found", "general_unauthorized_scope"):
                raise
        finally:
            self._credentials = replace(self._credentials, session=None)
            forget_session(self._endpoint, self._project, session)

    async def account(self) -> dict[str, Any]:
        """The signed-in user's account record (for an impersonating client: the target's)."""
        account: dict[str, Any] = await self._request_json("GET", "/account")
        return account

    async def create_jwt(self, duration: int | None = None) -> str:
        """A JWT for the signed-in user, valid for `duration` seconds (0..3600; the service's
        default is 900). Pass it as ``Client(endpoint, project, jwt=...)``."""
        body: dict[str, Any] = {}
        if duration is not None:
            if isinstance(duration, bool) or not isinstance(duration, int):
                raise TypeError(f"duration is a whole number of seconds; got {duration!r}.")
            if not 0 <= duration <= MAX_JWT_DURATION:
                raise ValueError(f"duration must be between 0 and 3600 seconds (got {duration}).")
            body["duration"] = duration
        # A duplicate token is harmless, so the create may be retried.
        answer = await self._request_json("POST", "/account/jwts", json=body, idempotent=True)
        return str(answer["jwt"])

    # -- tables ----------------------------------------------------------------------------------

    def table(self, database_id: str, table_id: str, *, page_size: int | None = None) -> AsyncTable:
        """The table `table_id` of database `database_id` (``/v1/tablesdb/...``): a lazy query
        for its rows, and the way to write rows. `page_size` is the rows asked for per page
        (default 5000).

        >>> df = await client.table("crm", "people").query("age > 30").to_pandas()  # doctest: +SKIP
        """
        return AsyncTable(self, database_id, table_id, page_size=page_size)

    def collection(
        self, database_id: str, collection_id: str, *, page_size: int | None = None
    ) -> AsyncTable:
        """A collection through the legacy interface (``/v1/databases/.../documents``); the
        same `AsyncTable` API as `table`."""
        return AsyncTable(self, database_id, collection_id, legacy=True, page_size=page_size)

    async def create_table(
        self,
        database_id: str,
        table_id: str,
        *,
        schema: pd.DataFrame | Mapping[str, str],
        name: str | None = None,
        permissions: Sequence[str] | None = None,
        row_security: bool = False,
    ) -> AsyncTable:
        """Create a table whose columns follow `schema` (a DataFrame's dtypes, or
        ``{column: "integer" | "float" | "boolean" | "datetime" | "string(size)" | ...[]}``),
        creating the database when it is missing; returns once every column is available.

        >>> people = await client.create_table("crm", "people", schema=df)  # doctest: +SKIP
        """
        table = AsyncTable(self, database_id, table_id)
        await create_table(self, table.location, schema, name=name, permissions=permissions,
                           row_security=row_security)  # fmt: skip
        return table

    # -- buckets and functions -------------------------------------------------------------------

    def bucket(self, bucket_id: str) -> AsyncBucket:
        """The bucket `bucket_id`: uploads, downloads, listings and previews of its files.

        >>> f = await client.bucket("reports").upload_file("big.csv")  # doctest: +SKIP
        """
        return AsyncBucket(self, bucket_id)

    create_bucket = create_bucket

    def function(self, function_id: str) -> AsyncFunction:
        """The function `function_id`: deploy code to it, list and download deployments."""
        return AsyncFunction(self, function_id)

    create_function = create_function

    # -- lifecycle -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connections (a client made by `impersonate` leaves them to its parent)."""
        if self._owns_transport:
            await self._transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # -- internal request API ------------------------------------------------------------------

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Any = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        files: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        read_back: str | ReadBack | None = None,
        stream: bool = False,
        timeout: float | httpx.Timeout | None = None,
        authenticate: bool = True,
    ) -> httpx.Response:
        """Send one request to `path` (relative to the endpoint) and return the response.

        Sends the project header, the response-format header and the credentials (unless
        ``authenticate=False``), plus `headers`. Bodies: `json`, or `data` + `files`
        (multipart), or raw `content`; bodies must be bytes-like to be re-sent on a retry.
        `params` may hold lists (repeated names); use `queries_param` for ``queries[]``.

        Retries (`RetryPolicy`): an idempotent request (GET, HEAD, PUT, DELETE, or
        ``idempotent=True`` — e.g. a create with a client-chosen ID) is retried on network
        failures, timeouts and 500/502/503/504; any request is retried on 429 (waiting as the
        service asks) and on failures to connect. When a retried create answers 409 "already
        exists" after an attempt whose outcome was unknown, `read_back` (a path to GET, or an
        async callable returning a response) fetches the resource and its response is
        returned; a retried DELETE answering 404 in that situation returns the 404 response.

        Raises an `APIError` subclass for error statuses and `TransportError` when no answer
        came. With ``stream=True`` the body is not read and the caller must ``aclose()`` the
        response (prefer `_stream`).
        """
        method = method.upper()
        if idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS
        request_headers = dict(self._base_headers)
        if files is None and data is None and content is None:
            request_headers["Content-Type"] = "application/json"
        if authenticate:
            request_headers.update(self._credentials.headers(self._prefix))
        request_headers.update(headers or {})
        read_back_call: ReadBack | None
        if isinstance(read_back, str):
            read_back_path = read_back

            async def read_back_call() -> httpx.Response:
                return await self._request("GET", read_back_path)

        else:
            read_back_call = read_back
        try:
            response = await self._transport.send(
                method,
                path,
                params=params,
                headers=request_headers,
                json=json,
                data=data,
                files=files,
                content=content,
                timeout=None if timeout is None else _timeout(timeout),
                idempotent=idempotent,
                read_back=read_back_call,
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
        self._credentials = replace(
            self._credentials,
            session=updated_session(self._credentials.session, response, self._project),
        )
        return response

    def _hint_for(self, error: APIError, *, authenticated: bool) -> str | None:
        """Advice on the likely cause of `error` when this client's settings explain it: an
        endpoint without /v1, an API key the service does not know (§2.4), or a JWT that
        expired or whose session ended (§2.1)."""
        if error.type == "general_route_not_found":
            if not httpx.URL(self._endpoint).path.endswith("/v1"):
                return endpoint_version_hint(self._endpoint)
        elif authenticated and self._credentials.key is not None and _refused_as_guest(error):
            return unknown_key_hint(self._project)
        elif authenticated and self._credentials.jwt is not None:
            if error.type == "user_jwt_invalid":
                return jwt_hint(refused_as_guest=False)
            # Not `user_unauthorized`: a signed-in user gets it too, for a row it may not read.
            if _scope_refused_to_guest(error):
                return jwt_hint(refused_as_guest=True)
        return None

    async def _request_json(self, method: str, path: str, **options: Any) -> Any:
        """`_request` returning the decoded JSON body (None for an empty body, e.g. 204)."""
        response = await self._request(method, path, **options)
        return response.json() if response.content else None

    async def _request_bytes(self, method: str, path: str, **options: Any) -> bytes:
        """`_request` returning the raw body bytes (e.g. for orjson or pyarrow)."""
        response = await self._request(method, path, **options)
        return response.content

    @asynccontextmanager
    async def _stream(
        self, method: str, path: str, **options: Any
    ) -> AsyncIterator[httpx.Response]:
        """`_request` with the body left unread; read it with ``response.aiter_bytes()``.

        >>> async with client._stream("GET", f"/storage/buckets/{b}/files/{f}/download") as r:
        ...     async for chunk in r.aiter_bytes(): ...               # doctest: +SKIP
        """
        response = await self._request(method, path, stream=True, **options)
        try:
            yield response
        finally:
            await response.aclose()


class Client(SyncFacade[AsyncClient], wraps=AsyncClient):
    """A connection to one project of the service, for scripts and notebooks.

    The same methods and arguments as `AsyncClient`, each run to completion on frameport's
    private event-loop thread (so it also works inside Jupyter and ipywidgets callbacks).

    >>> client = Client("http://127.0.0.1:8080/v1", "demo", key="...")   # doctest: +SKIP
    >>> with Client.from_env() as client:                                # doctest: +SKIP
    ...     client.account()
    """

    def __init__(
        self,
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
    ) -> None:
        self._async = AsyncClient(
            endpoint,
            project,
            key=key,
            jwt=jwt,
            response_format=response_format,
            timeout=timeout,
            retries=retries,
            query_member=query_member,
            header_prefix=header_prefix,
            headers=headers,
        )

    @classmethod
    def from_env(cls, **options: Any) -> Self:
        """A client configured by FRAMEPORT_ENDPOINT, FRAMEPORT_PROJECT and, if set,
        FRAMEPORT_KEY or FRAMEPORT_JWT. `options` are further constructor arguments."""
        return cls._from_async(AsyncClient.from_env(**options))

    @classmethod
    def from_saved(cls, endpoint: str, project: str, **options: Any) -> Self:
        """A client using the session saved by ``login(..., save=True)``."""
        return cls._from_async(AsyncClient.from_saved(endpoint, project, **options))

    def impersonate(
        self, *, user_id: str | None = None, email: str | None = None, phone: str | None = None
    ) -> Client:
        """A new client acting as another user; see `AsyncClient.impersonate`."""
        return Client._from_async(
            self._async.impersonate(user_id=user_id, email=email, phone=phone)
        )

    endpoint = forward_property("endpoint")
    project = forward_property("project")
    header_prefix = forward_property("header_prefix")
    query_member = forward_property("query_member")
    authentication = forward_property("authentication")
    query_member_for = delegate(AsyncClient.query_member_for)
    browser_url = delegate(AsyncClient.browser_url)
    login = delegate(AsyncClient.login)
    logout = delegate(AsyncClient.logout)
    account = delegate(AsyncClient.account)
    create_jwt = delegate(AsyncClient.create_jwt)
    close = delegate(AsyncClient.close)

    table = delegate(AsyncClient.table, Table)
    collection = delegate(AsyncClient.collection, Table)
    create_table = delegate(AsyncClient.create_table, Table)
    bucket = delegate(AsyncClient.bucket, Bucket)
    create_bucket = delegate(AsyncClient.create_bucket, Bucket)
    function = delegate(AsyncClient.function, Function)
    create_function = delegate(AsyncClient.create_function, Function)

    # The internal request API, for sync code and tests (streaming stays async: `_stream`).
    _request = delegate(AsyncClient._request)
    _request_json = delegate(AsyncClient._request_json)
    _request_bytes = delegate(AsyncClient._request_bytes)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
