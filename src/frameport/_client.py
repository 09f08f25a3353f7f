"""`AsyncClient`, the only implementation of I/O, and `Client`, its synchronous face.

>>> client = Client("http://127.0.0.1:8080/v1", "demo", key="...")  # doctest: +SKIP
>>> client.account()  # doctest: +SKIP
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Self, TypeVar, Unpack

import httpx
import pyarrow as pa
import pyarrow.compute as pc

from ._backup import BackupReport, Selection
from ._backup import backup as backup_project
from ._backup import restore as restore_project
from ._core import (
    ENDPOINT_ENV,
    ID,
    PROJECT_ENV,
    Credentials,
    Requester,
    SyncFacade,
    connect,
    credentials_from_env,
    delegate,
    forget_session,
    forward_property,
    impersonation_target,
    save_session,
    with_saved_session,
)
from ._core._auth import AuthenticationMethod
from ._core._call_stack import user_frame_depth
from ._core._connect import ClientOptions
from ._core._json import JsonObject
from ._core._sync import AsyncClosing, Closing
from ._exceptions import (
    AuthenticationError,
    FrameportError,
    ImpersonationIgnoredWarning,
    NotFoundError,
)
from ._functions import AsyncFunction, Function, create_function
from ._records import (
    BUCKET_SCHEMA,
    BUCKET_SUMMARY,
    DATABASE_SCHEMA,
    DATABASE_SUMMARY,
    TABLE_SCHEMA,
    TABLE_SUMMARY,
    list_frame,
    list_table,
    summarized,
)
from ._schema import to_pandas
from ._storage import AsyncBucket, Bucket, create_bucket
from ._tables import (
    AsyncTable,
    AsyncTransaction,
    Table,
    Transaction,
    create_database,
    create_table,
    drop_database,
)

if TYPE_CHECKING:
    import pandas as pd

MAX_JWT_DURATION = 3600


def requester_of(client: AsyncClient | Client) -> Requester:
    """The request layer `client` sends through (for integrations that page through lists)."""
    inner = client._async if isinstance(client, Client) else client
    return inner._connection


P = ParamSpec("P")
R = TypeVar("R")


def _with_connection(
    function: Callable[Concatenate[Requester, P], R],
) -> Callable[Concatenate[AsyncClient, P], R]:
    """A client method calling `function` with the client's connection as first argument;
    its signature shows `function`'s other parameters (the connection is not the caller's)."""

    def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return function(self._connection, *args, **kwargs)

    signature = inspect.signature(function)
    _, *parameters = signature.parameters.values()
    own = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = signature.replace(parameters=[own, *parameters])  # type: ignore[attr-defined]
    method.__name__ = method.__qualname__ = function.__name__
    method.__doc__ = function.__doc__
    return method


class AsyncClient(AsyncClosing):
    """A connection to one project of the service, for async code: the methods of `Client`,
    each a coroutine (the factories `table`, `bucket` and `function` excepted), with the same
    options.

    Use ``async with AsyncClient(...) as client:`` or call ``await client.close()``; use one
    AsyncClient per event loop.
    """

    def __init__(self, endpoint: str, project: str, **options: Unpack[ClientOptions]) -> None:
        self._connection = connect(endpoint, project, **options)

    @classmethod
    def from_env(cls, **options: Unpack[ClientOptions]) -> Self:
        """A client configured by FRAMEPORT_ENDPOINT, FRAMEPORT_PROJECT and, if set,
        FRAMEPORT_KEY (preferred) or FRAMEPORT_JWT. `options` are further constructor
        arguments; a key= or jwt= among them is used instead of the environment's."""
        missing = [name for name in (ENDPOINT_ENV, PROJECT_ENV) if not os.environ.get(name)]
        if missing:
            raise ValueError(
                f"Set {' and '.join(missing)} in the environment "
                "(e.g. FRAMEPORT_ENDPOINT=http://127.0.0.1:8080/v1, FRAMEPORT_PROJECT=demo)."
            )
        if options.get("key") is None and options.get("jwt") is None:
            options["key"], options["jwt"] = credentials_from_env()
        return cls(os.environ[ENDPOINT_ENV], os.environ[PROJECT_ENV], **options)

    @classmethod
    def from_saved(cls, endpoint: str, project: str, **options: Unpack[ClientOptions]) -> Self:
        """A client using the session saved by ``login(..., save=True)`` for this endpoint and
        project. `options` are further constructor arguments (not key= or jwt=)."""
        if options.get("key") is not None or options.get("jwt") is not None:
            raise ValueError("from_saved() uses a saved session; do not pass key= or jwt=.")
        client = cls(endpoint, project, **options)
        with_saved_session(client._connection)
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
                stacklevel=1 + user_frame_depth(),
            )
        clone = object.__new__(type(self))
        clone._connection = self._connection.share(replace(self._credentials, impersonation=target))
        return clone

    @property
    def endpoint(self) -> str:
        """The service URL, ending in the version prefix (``http://host:port/v1``)."""
        return self._connection.endpoint

    @property
    def project(self) -> str:
        """The project ID sent with every request."""
        return self._connection.project

    @property
    def header_prefix(self) -> str:
        """The prefix of the service's headers (``"X-Service-"``)."""
        return self._connection.header_prefix

    @property
    def query_member(self) -> str | None:
        """The member name forced for query objects, or None for the default of each path
        (see `query_member_for`)."""
        return self._connection.query_member

    @property
    def authentication(self) -> AuthenticationMethod | None:
        """``"key"``, ``"jwt"``, ``"session"``, or None when the client acts as a guest."""
        return self._credentials.method

    @property
    def _credentials(self) -> Credentials:
        return self._connection.credentials

    @_credentials.setter
    def _credentials(self, credentials: Credentials) -> None:
        self._connection.credentials = credentials

    def query_member_for(self, path: str) -> str:
        """The member naming the field in query objects sent to `path`: the `query_member`
        setting if given, else ``"attribute"`` on ``/databases/...`` paths and ``"column"``
        elsewhere (``/tablesdb/...``)."""
        return self._connection.query_member_for(path)

    def browser_url(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        """A URL a browser can load without headers (e.g. an ``<img>`` source): the project
        goes in the ``project`` query parameter. It never carries a credential, so the resource
        must be readable without one (or carry a resource ``token``).

        >>> client.browser_url("/storage/buckets/b/files/f/view", {"w": 64})  # doctest: +SKIP
        'http://127.0.0.1:8080/v1/storage/buckets/b/files/f/view?project=demo&w=64'
        """
        return self._connection.browser_url(path, params)

    def __repr__(self) -> str:
        fields = f"endpoint={self.endpoint!r}, project={self.project!r}"
        fields += f", authentication={self._credentials.method!r}"
        if self._credentials.impersonation is not None:
            fields += f", impersonating={self._credentials.impersonation[1]!r}"
        return f"{type(self).__name__}({fields})"

    async def login(self, email: str, password: str, *, save: bool = False) -> JsonObject:
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
            save_session(self.endpoint, self.project, self._credentials.session)
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
            forget_session(self.endpoint, self.project, session)

    async def account(self) -> JsonObject:
        """The signed-in user's account record (for an impersonating client: the target's)."""
        account: JsonObject = await self._request_json("GET", "/account")
        return account

    async def create_jwt(self, duration: int | None = None) -> str:
        """A JWT for the signed-in user, valid for `duration` seconds (0..3600; the service's
        default is 900). Pass it as ``Client(endpoint, project, jwt=...)``."""
        body: JsonObject = {}
        if duration is not None:
            if isinstance(duration, bool) or not isinstance(duration, int):
                raise TypeError(f"duration is a whole number of seconds; got {duration!r}.")
            if not 0 <= duration <= MAX_JWT_DURATION:
                raise ValueError(f"duration must be between 0 and 3600 seconds (got {duration}).")
            body["duration"] = duration
        # A duplicate token is harmless, so the create may be retried.
        answer = await self._request_json("POST", "/account/jwts", json=body, idempotent=True)
        return str(answer["jwt"])

    def table(self, database_id: str, table_id: str, *, page_size: int | None = None) -> AsyncTable:
        """The table `table_id` of database `database_id` (``/v1/tablesdb/...``): a lazy query
        for its rows, and the way to write rows. `page_size` is the rows asked for per page
        (default 5000).

        >>> df = await client.table("crm", "people").query("age > 30").to_pandas()  # doctest: +SKIP
        """
        return AsyncTable(self._connection, database_id, table_id, page_size=page_size)

    def collection(
        self, database_id: str, collection_id: str, *, page_size: int | None = None
    ) -> AsyncTable:
        """A collection through the legacy interface (``/v1/databases/.../documents``); the
        same `AsyncTable` API as `table`."""
        return AsyncTable(
            self._connection, database_id, collection_id, legacy=True, page_size=page_size
        )

    def transaction(self, *, ttl: int = 300) -> AsyncTransaction:
        """Writes to tables, of one database or several, written all together or not at
        all: ``with client.transaction() as tx:``, then ``tx.table(db, table)``'s
        `insert`, `upsert`, `load`, and `update` and `delete` (of the rows `where` chooses)
        are staged, and leaving the block commits them. An exception or Ctrl-C in the
        block rolls them back; a client that dies leaves them uncommitted until the
        service drops them, `ttl` seconds (60 to 3600) after the first write. A transaction
        holds 100 operations (a bulk write counts once, or each row for a client signed in
        as a user); a write that does not fit is refused before it is sent
        (`TransactionError`). See the transactions guide.

        >>> with client.transaction() as tx:                         # doctest: +SKIP
        ...     [order] = tx.table("sales", "orders").insert(orders)
        ...     tx.table("sales", "lines").insert(lines.assign(order=order))
        """
        return AsyncTransaction(self._connection, ttl)

    async def create_table(
        self,
        database_id: str,
        table_id: str,
        *,
        schema: pd.DataFrame | Mapping[str, str],
        exist_ok: bool = False,
        name: str | None = None,
        permissions: Sequence[str] | None = None,
        row_security: bool = False,
        progress: bool | None = None,
    ) -> AsyncTable:
        """Create a table whose columns follow `schema` (what a DataFrame's values call for,
        as `frameport.infer_schema` proposes and logged at INFO; a proposal it made; or
        ``{column: "integer" | "float" | "boolean" | "datetime" | "string(size)" | ...[]}``),
        creating the database when it is missing; returns once every column is available.
        A table that already exists raises `ConflictError`, unless `exist_ok` is set and the
        table has every column of `schema` (then it is returned as it is, rows and all).

        >>> people = await client.create_table("crm", "people", schema=df, exist_ok=True)
        ... # doctest: +SKIP
        """
        table = AsyncTable(self._connection, database_id, table_id)
        await create_table(
            self._connection,
            table.location,
            schema,
            exist_ok=exist_ok,
            name=name,
            permissions=permissions,
            row_security=row_security,
            progress=progress,
        )
        return table

    async def drop_table(self, database_id: str, table_id: str) -> None:
        """Delete the table `table_id` of database `database_id` with its rows (the same as
        ``client.table(database_id, table_id).drop()``)."""
        await self.table(database_id, table_id).drop()

    async def databases(self, *, details: bool = False) -> pd.DataFrame:
        """Every database of the project, one row each: ``$id``, ``name``, ``enabled``; with
        `details` also ``$createdAt``, ``$updatedAt``. Needs an API key (signed-in users
        cannot list them). Without `details`, each catalog listing (`tables`, `buckets`,
        ``table.columns()``, ``bucket.list_files()``) keeps the columns that ``print()``
        shows whole in a terminal 80 characters wide.

        >>> client.databases()["$id"].tolist()                          # doctest: +SKIP
        ['crm']
        """
        summary = None if details else DATABASE_SUMMARY
        return await list_frame(
            self._connection, "/tablesdb", "databases", DATABASE_SCHEMA, summary
        )

    async def tables(self, database_id: str, *, details: bool = False) -> pd.DataFrame:
        """Every table of database `database_id`, one row each: ``$id``, ``name``,
        ``columns`` (how many), ``rowSecurity``, ``enabled``; with `details` also
        ``$createdAt``, ``$updatedAt``, ``$permissions``. Each table's own columns:
        ``client.table(db, id).columns()``.

        >>> client.tables("crm")[["$id", "columns"]].to_dict("records")
        [{'$id': 'people', 'columns': 3}]
        """
        path = f"/tablesdb/{ID.custom(database_id)}/tables"
        tables = await list_table(self._connection, path, "tables", TABLE_SCHEMA)
        counts = pc.list_value_length(tables["columns"]).cast(pa.int64())
        tables = tables.set_column(tables.schema.get_field_index("columns"), "columns", counts)
        return to_pandas(summarized(tables, None if details else TABLE_SUMMARY))

    async def buckets(self, *, details: bool = False) -> pd.DataFrame:
        """Every bucket of the project, one row each: ``$id``, ``name``, ``totalSize``
        (bytes), ``maximumFileSize``, ``compression``; with `details` also ``enabled``,
        ``fileSecurity``, ``encryption``, ``antivirus``, ``transformations``,
        ``$createdAt``, ``$updatedAt``, ``$permissions``."""
        summary = None if details else BUCKET_SUMMARY
        return await list_frame(
            self._connection, "/storage/buckets", "buckets", BUCKET_SCHEMA, summary
        )

    async def create_database(
        self, database_id: str, name: str | None = None, *, exist_ok: bool = False
    ) -> JsonObject:
        """Create the database `database_id` (named `name`, default its ID) and return its
        record. `create_table` creates a missing database itself; with `exist_ok`, one that
        already exists is returned as it is instead of raising `ConflictError`."""
        return await create_database(self._connection, database_id, name, exist_ok=exist_ok)

    drop_database = _with_connection(drop_database)

    def bucket(self, bucket_id: str) -> AsyncBucket:
        """The bucket `bucket_id`: uploads, downloads, listings and previews of its files.

        >>> f = await client.bucket("reports").upload_file("big.csv")  # doctest: +SKIP
        """
        return AsyncBucket(self._connection, bucket_id)

    create_bucket = _with_connection(create_bucket)

    def function(self, function_id: str) -> AsyncFunction:
        """The function `function_id`: deploy code to it, list and download deployments."""
        return AsyncFunction(self._connection, function_id)

    create_function = _with_connection(create_function)

    async def backup(
        self,
        target: str | os.PathLike[str],
        *,
        databases: Sequence[str] | None = None,
        buckets: Sequence[str] | None = None,
        functions: Sequence[str] | None = None,
        lag: float = 5.0,
        progress: bool | None = None,
    ) -> BackupReport:
        """Back up the project into the archive at `target` (a folder, or any fsspec URL
        such as ``s3://backups/crm``): the schema of every database and table, every row
        with its ``$`` fields (Parquet), the buckets and their files, and the functions
        with their active code; or only the `databases`, `buckets` and `functions` named
        (by ID). Each table is read up to the ``$sequence`` it had when the backup started,
        and every file written is checked before the manifest is. A second backup into the
        same target stores only what changed, as a new snapshot (the rows updated since the
        last snapshot started, less `lag` seconds for writes in flight then, and the rows and
        files gone or added); a backup killed part-way continues when run again. Users and
        sessions are not backed up (their secrets cannot be read).

        >>> client.backup("backups/crm").summary()                      # doctest: +SKIP
        'full snapshot 20260102T030405Z-1a2b3c of 2 table(s) (1,200 rows, ...'
        """
        selection = Selection(databases, buckets, functions)
        return await backup_project(self._connection, target, selection, lag=lag, progress=progress)

    restore = _with_connection(restore_project)

    async def close(self) -> None:
        """Close the connections (a client made by `impersonate` leaves them to its parent)."""
        await self._connection.aclose()

    async def _request(self, /, method: str, path: str, **options: Any) -> httpx.Response:
        """`Connection.request` (the internal request API, for tests and tools)."""
        return await self._connection.request(method, path, **options)

    async def _request_json(self, /, method: str, path: str, **options: Any) -> Any:
        return await self._connection.request_json(method, path, **options)

    def _stream(
        self, method: str, path: str, **options: Any
    ) -> AbstractAsyncContextManager[httpx.Response]:
        return self._connection.stream(method, path, **options)


class Client(Closing, SyncFacade[AsyncClient], wraps=AsyncClient):
    """A connection to one project of the service, for scripts and notebooks.

    `endpoint` is the service's URL with its version prefix (``http://127.0.0.1:8080/v1``),
    `project` the project ID. Authenticate with an API key (`key`), a user's JWT (`jwt`), or
    a session (`login`); with none of them the client acts as a guest. `from_env` reads all
    three from the environment. The other options (every one a keyword argument; together
    the record `ClientOptions`, which `AsyncClient` takes too):

    - `timeout`: seconds for each read and write (connecting gets at most 10 s), or an
      ``httpx.Timeout`` with every part set.
    - `retries`: how many times a failed idempotent request is sent again (with backoff),
      or a `RetryPolicy`. A refused connection is not retried.
    - `response_format`: the service version whose answer format to ask for.
    - `query_member`: ``"column"`` or ``"attribute"``, the member name of query objects, for
      deployments that read only one of them.
    - `header_prefix`: the prefix of the service's headers (``"X-Service-"``).
    - `headers`: sent with every request (e.g. ``Origin``).
    - `compression`: the ``Accept-Encoding`` of requests. ``"auto"`` asks for no encoding
      while the service answers within 40 ms (near: the wire is not the limit), else for
      zstd, falling back to gzip; ``"off"``, ``"zstd"`` or ``"gzip"`` fix it. A read's
      `explain()` says which it asks for and why.

    Each method runs to completion on frameport's private event-loop thread, so a client
    also works inside Jupyter and ipywidgets callbacks; `AsyncClient` has the same methods as
    coroutines.

    >>> client = Client("http://127.0.0.1:8080/v1", "demo", key="...")   # doctest: +SKIP
    >>> with Client.from_env() as client:                                # doctest: +SKIP
    ...     client.account()
    """

    def __init__(self, endpoint: str, project: str, **options: Unpack[ClientOptions]) -> None:
        self._async = AsyncClient(endpoint, project, **options)

    @classmethod
    def from_env(cls, **options: Unpack[ClientOptions]) -> Self:
        """A client configured by FRAMEPORT_ENDPOINT, FRAMEPORT_PROJECT and, if set,
        FRAMEPORT_KEY or FRAMEPORT_JWT. `options` are further constructor arguments."""
        return cls._from_async(AsyncClient.from_env(**options))

    @classmethod
    def from_saved(cls, endpoint: str, project: str, **options: Unpack[ClientOptions]) -> Self:
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
    drop_table = delegate(AsyncClient.drop_table)
    transaction = delegate(AsyncClient.transaction, Transaction)
    databases = delegate(AsyncClient.databases)
    tables = delegate(AsyncClient.tables)
    buckets = delegate(AsyncClient.buckets)
    create_database = delegate(AsyncClient.create_database)
    drop_database = delegate(AsyncClient.drop_database)
    bucket = delegate(AsyncClient.bucket, Bucket)
    create_bucket = delegate(AsyncClient.create_bucket, Bucket)
    function = delegate(AsyncClient.function, Function)
    create_function = delegate(AsyncClient.create_function, Function)
    backup = delegate(AsyncClient.backup)
    restore = delegate(AsyncClient.restore)

    # The internal request API, for sync code and tests (streaming stays async: `_stream`).
    _request = delegate(AsyncClient._request)
    _request_json = delegate(AsyncClient._request_json)
