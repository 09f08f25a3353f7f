"""The Starlette application: one dispatcher wraps every declared route.

The dispatcher resolves the project and the caller and checks the route's scopes before it
reads a byte of the body. It then reads the parameters (bounded, `_body`; a rate-limit key
may use them, as the e-mail of a sign-in does), applies the route's rate limit and checks
the path's IDs. An upload route instead runs its own checks that need no body (its bucket or
function, the permission, the declared size) after the IDs, and only then reads the body,
streaming the file part to disk within the declared size. Then the handler runs in a worker
thread, and the answer or the error body `{message, code, type, version}` is rendered. That
order is the service's: its scope and rate-limit hooks run before any parameter is
validated.

The body is read first only when it may name the project (the `project` parameter wins over
the header): a JSON or urlencoded body, bounded by the parameter limits, on a request whose
query string names no project and whose header names none or an unknown one. An upload
(multipart) names its project in the header or the query string.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from anyio import CapacityLimiter, to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ._body import RequestBody, read_body
from .routes import ROUTES, Context, Reply, RouteSpec
from .routes.realtime import websocket_route
from .service._identity import resolve_caller
from .service._state import ServiceState
from .service.uploads._chunks import FileTarget
from .wire._errors import ERROR_HEADERS, ServiceError
from .wire._params import Params, check_path_ids, merge_bracket_pairs

logger = logging.getLogger("frameport.local")
T = TypeVar("T")

#: The service's framework sends a Content-Type on every answer, an empty one included, and
#: its clients read it on every response (a JSON type would make them decode the empty body).
EMPTY_BODY_TYPE = "text/html; charset=UTF-8"


def error_response(error: ServiceError, headers: dict[str, str] | None = None) -> Response:
    if error.code == 500 and error.detail != error.message:
        logger.error("%s answered as 500 Server Error: %s", error.type, error.detail)
    merged = {**(headers or {}), **ERROR_HEADERS, **error.headers}
    return Response(
        json.dumps(error.body()),
        status_code=error.code,
        headers=merged,
        media_type="application/json",
    )


def render(reply: Reply | Response, headers: dict[str, str]) -> Response:
    if isinstance(reply, Response):
        reply.headers.update(headers)
        return reply
    if reply.status == 204 or reply.body is None:
        return Response(
            status_code=reply.status,
            headers={**headers, **reply.headers},
            media_type=EMPTY_BODY_TYPE,
        )
    body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
    return Response(
        body,
        status_code=reply.status,
        headers={**headers, **reply.headers},
        media_type=reply.media_type,
    )


def _project_of(request: Request, body_project: object, state: ServiceState) -> str:
    """The request's project: the `project` parameter (query string, then the body of a
    non-GET request), else the header; 401/403/404 when it is missing or unknown."""
    project = request.query_params.get("project")
    if not project and request.method != "GET" and isinstance(body_project, str):
        project = body_project
    project = project or request.headers.get("X-Service-Project")
    if not project and request.headers.get("X-Service-Key"):
        raise ServiceError(
            "project_id_missing", "The project ID is missing. Send it with the API key."
        )
    if not project:
        raise ServiceError(
            "general_access_forbidden",
            "No project ID was specified. Send the X-Service-Project header or the project "
            "query parameter.",
        )
    if project != state.config.project:
        raise ServiceError("project_not_found", "Project with the requested ID could not be found.")
    return project


def _body_names_project(request: Request, state: ServiceState) -> bool:
    """Whether the body must be read to know the project (see the module's note)."""
    if request.method in ("GET", "HEAD") or request.query_params.get("project"):
        return False
    if request.headers.get("content-type", "").startswith("multipart/"):
        return False
    return request.headers.get("X-Service-Project") != state.config.project


def _body_project(body: RequestBody) -> object:
    return dict(body.pairs).get("project")


def _params(request: Request, body: RequestBody) -> Params:
    """The query string and the body's parameters merged."""
    return Params(merge_bracket_pairs([*request.query_params.multi_items(), *body.pairs]))


def _rate_limit(ctx: Context) -> tuple[bool, dict[str, str], str | None]:
    spec = ctx.route
    limit = spec.rate_limit
    if limit is None:
        return True, {}, None
    override = ctx.state.config.rate_limit_overrides.get(f"{spec.method} {spec.path}")
    count, period = override if override else (limit.limit, limit.period)
    parts = [ctx.request.url.hostname or "", spec.template]
    if limit.by_ip:
        parts.append(ctx.caller.ip)
    if limit.by_method:
        parts.append(spec.method)
    if limit.by_user:
        parts.append(ctx.caller.user_id or "")
    if limit.key is not None:
        parts.append(limit.key(ctx))
    if ctx.caller.is_key:  # keys are not limited: their hits must not use up the guests' budget
        parts.append("keys")
    verdict = ctx.state.limiter.hit("|".join(parts), count, period)
    enforced = ctx.state.config.rate_limits and not ctx.caller.is_key
    return verdict.allowed or not enforced, verdict.headers, verdict.counter_key


async def _read_parameters(
    request: Request, ctx: Context, state: ServiceState, target: FileTarget | None = None
) -> RequestBody:
    """The body, read once the project and caller are known; its `project` must agree."""
    body = await read_body(request, target, limit=state.config.max_body_size)
    try:
        _project_of(request, _body_project(body), state)
    except ServiceError:
        body.close()
        raise
    ctx.params = _params(request, body)
    return body


#: Threads for the handlers of reads (GET, HEAD) and of everything else: a write waits for
#: SQLite's single write lock, so more writer threads would only wait, while a read under
#: WAL needs no lock and must never wait for a thread a writer holds.
READ_THREADS, WRITE_THREADS = 40, 8
_READ_METHODS = frozenset({"GET", "HEAD"})


class HandlerThreads:
    """Two pools of worker threads for handlers, readers and writers (created on first use,
    inside the event loop)."""

    def __init__(self) -> None:
        self._limiters: dict[bool, CapacityLimiter] = {}

    async def run(self, method: str, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` in a thread of the pool for `method`."""
        reads = method in _READ_METHODS
        limiter = self._limiters.get(reads)
        if limiter is None:
            limiter = self._limiters[reads] = CapacityLimiter(
                READ_THREADS if reads else WRITE_THREADS
            )
        return await to_thread.run_sync(function, *args, limiter=limiter)


def make_endpoint(
    spec: RouteSpec, state: ServiceState, threads: HandlerThreads
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        headers: dict[str, str] = {}
        body = RequestBody()
        try:
            body_first = _body_names_project(request, state)
            if body_first:
                body = await read_body(request, limit=state.config.max_body_size)
            project = _project_of(request, _body_project(body), state)
            ip = request.client.host if request.client else ""
            caller = await threads.run("GET", resolve_caller, state, request, project, ip)
            headers.update(caller.response_headers)
            ctx = Context(
                request,
                state,
                caller,
                _params(request, body),
                dict(request.path_params),
                project,
                spec,
            )
            if spec.scopes:  # before the rate limit: a refused caller uses up no budget
                caller.require_scope(*spec.scopes)
            if not body_first and spec.file_target is None:  # a rate-limit key may use them
                body = await _read_parameters(request, ctx, state)
            allowed, limit_headers, counter_key = _rate_limit(ctx)
            headers.update(limit_headers)
            if not allowed:
                raise ServiceError(
                    "general_rate_limit_exceeded",
                    "Rate limit for the current endpoint has been exceeded. Please try again "
                    "after some time.",
                )
            check_path_ids(ctx.path)
            if not body_first and spec.file_target is not None:
                target = await threads.run("GET", spec.file_target, ctx)
                body = await _read_parameters(request, ctx, state, target)
            reply = await threads.run(spec.method, spec.handler, ctx)
            if (
                counter_key is not None
                and spec.rate_limit is not None
                and spec.rate_limit.reset_on_success
                and getattr(reply, "status", getattr(reply, "status_code", 0)) == 201
            ):
                state.limiter.reset(counter_key, spec.rate_limit.period)
            response = render(reply, {**headers, **ctx.response_headers})
            for cookie in ctx.set_cookies:
                response.set_cookie(**cookie)
            return response
        except ServiceError as error:
            return error_response(error, headers)
        except ClientDisconnect:  # gone while sending its body: no one to answer
            return Response(status_code=400)
        finally:
            body.close()

    return endpoint


async def not_found(request: Request, exc: Exception) -> Response:
    return error_response(
        ServiceError("general_route_not_found", "The requested route was not found.")
    )


async def server_error(request: Request, exc: Exception) -> Response:
    logger.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(ServiceError("general_unknown", "Server Error"))


def build_app(state: ServiceState, routes: Sequence[RouteSpec] = ROUTES) -> Starlette:
    """The ASGI app of one local service, serving `routes` (fault injection wraps it)."""
    threads = HandlerThreads()
    app = Starlette(
        routes=[
            websocket_route(state),
            *(
                Route(spec.path, make_endpoint(spec, state, threads), methods=[spec.method])
                for spec in routes
            ),
        ],
        exception_handlers={
            HTTPException: not_found,
            Exception: server_error,
        },
    )
    app.router.redirect_slashes = False  # the service answers a 404, never a bare redirect
    app.state.service = state
    return app
