"""Route declarations and the request context handlers receive.

A handler is a plain function `handler(ctx: Context) -> Reply | Response`; each route module
lists its routes in `ROUTES`, built with `route`, and `routes.ROUTES` joins those lists. A
handler runs in a worker thread (SQLite is blocking; GET and HEAD handlers in a pool of their
own, so that they never wait behind writers, and so they must not write); the dispatcher in
`_app` has already resolved the project and the caller, checked the route's scopes, read the
body within its bounds, applied its rate limit and checked that every path parameter is a
valid ID.

>>> def get_account(ctx: Context) -> Reply:
...     return Reply(account_model(ctx.caller.user))
>>> ROUTES = [*route(get_account, "GET", "/v1/account", scopes=("account",))]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..service._ratelimit import RateLimit
from ..service._state import ServiceState
from ..service.accounts._caller import Caller
from ..service.uploads._chunks import FileTarget
from ..store._store import Store
from ..wire._params import Params


@dataclass
class Reply:
    """A handler's answer: a JSON-able body (or prebuilt JSON bytes), a status, headers."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    media_type: str = "application/json"


@dataclass
class Context:
    """One request as a handler sees it."""

    request: Request
    state: ServiceState
    caller: Caller
    params: Params
    path: dict[str, str]
    project: str
    route: RouteSpec
    response_headers: dict[str, str] = field(default_factory=dict)
    set_cookies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def store(self) -> Store:
        return self.state.store

    def header(self, name: str) -> str | None:
        return self.request.headers.get(name)


Handler = Callable[[Context], "Reply | Response"]


@dataclass(frozen=True)
class RouteSpec:
    method: str
    path: str
    handler: Handler
    scopes: tuple[str, ...]
    rate_limit: RateLimit | None
    #: An upload route's checks that need no body, run before the body is read; they return
    #: where its file part goes and how long it may be.
    file_target: Callable[[Context], FileTarget] | None = None

    @property
    def template(self) -> str:
        """The route as the rate limiter names it: `/v1/tablesdb/:databaseId/...`."""
        return self.path.replace("{", ":").replace("}", "")


def route(
    handler: Handler,
    method: str,
    *paths: str,
    scopes: tuple[str, ...] = (),
    rate_limit: RateLimit | None = None,
    file_target: Callable[[Context], FileTarget] | None = None,
) -> list[RouteSpec]:
    """`handler` for `method` on each of `paths` (aliases share one handler)."""
    return [RouteSpec(method, path, handler, scopes, rate_limit, file_target) for path in paths]
