"""The Starlette application: one dispatcher wraps every declared route.

The dispatcher resolves the project, parses the parameters, resolves the caller, checks the
route's scopes, applies its rate limit, checks the path's IDs, runs the handler in a worker
thread and renders the answer or the error body `{message, code, type, version}`. That order
is the service's: its scope and rate-limit hooks run before any parameter is validated.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._body import read_limited_body, refuse_declared_oversize
from .routes import ROUTES, Context, Reply, RouteSpec
from .service._identity import resolve_caller
from .service._state import ServiceState
from .wire import _json as request_json
from .wire._errors import ERROR_HEADERS, ServiceError
from .wire._params import Params, check_path_ids, merge_bracket_pairs

logger = logging.getLogger("frameport.local")

#: The service's framework sends a Content-Type on every answer, an empty one included, and
#: its clients read it on every response (a JSON type would make them decode the empty body).
EMPTY_BODY_TYPE = "text/html; charset=UTF-8"


def error_response(error: ServiceError, headers: dict[str, str] | None = None) -> Response:
    if error.code == 500 and error.detail != error.message:
        logger.error("%s answered as 500 Server Error: %s", error.type, error.detail)
    merged = {**(headers or {}), **ERROR_HEADERS, **error.headers}
    return Response(
        json.dumps(error.body()), status_code=error.code, headers=merged,
        media_type="application/json",
    )  # fmt: skip


def render(reply: Reply | Response, headers: dict[str, str]) -> Response:
    if isinstance(reply, Response):
        reply.headers.update(headers)
        return reply
    if reply.status == 204 or reply.body is None:
        return Response(
            status_code=reply.status, headers={**headers, **reply.headers},
            media_type=EMPTY_BODY_TYPE,
        )  # fmt: skip
    body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
    return Response(
        body, status_code=reply.status, headers={**headers, **reply.headers},
        media_type=reply.media_type,
    )  # fmt: skip


async def read_params(request: Request) -> Params:
    """Query string and body merged; a malformed body is a 400 `general_bad_request`."""
    pairs: list[tuple[str, Any]] = list(request.query_params.multi_items())
    content_type = request.headers.get("content-type", "")
    if request.method not in ("GET", "HEAD"):
        if content_type.startswith("multipart/form-data") or content_type.startswith(
            "application/x-www-form-urlencoded"
        ):
            if not content_type.startswith("multipart/"):
                await refuse_declared_oversize(request)
            try:
                form = await request.form(max_files=10, max_fields=1000)
            except HTTPException as exc:  # Starlette's answer to a malformed form
                raise ServiceError("general_bad_request", f"Malformed form: {exc.detail}") from None
            pairs.extend(form.multi_items())
        else:
            raw = await read_limited_body(request)
            if raw.strip():
                try:
                    body = request_json.loads(raw)
                except ValueError:
                    raise ServiceError(
                        "general_bad_request",
                        "The request body is not valid JSON. Send a JSON object.",
                    ) from None
                if not isinstance(body, dict):
                    raise ServiceError(
                        "general_bad_request", "The request body must be a JSON object."
                    )
                pairs.extend(body.items())
    return Params(merge_bracket_pairs(pairs))


def _project_of(request: Request, params: Params, state: ServiceState) -> str:
    project = request.query_params.get("project")
    if not project and request.method != "GET":
        body_project = params.raw("project")
        project = body_project if isinstance(body_project, str) else None
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


def make_endpoint(spec: RouteSpec, state: ServiceState) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        headers: dict[str, str] = {}
        try:
            params = await read_params(request)
            project = _project_of(request, params, state)
            ip = request.client.host if request.client else ""
            caller = await run_in_threadpool(resolve_caller, state, request, project, ip)
            headers.update(caller.response_headers)
            ctx = Context(request, state, caller, params, dict(request.path_params), project, spec)
            if spec.scopes:  # before the rate limit: a refused caller uses up no budget
                caller.require_scope(*spec.scopes)
            allowed, limit_headers, counter_key = _rate_limit(ctx)
            headers.update(limit_headers)
            if not allowed:
                raise ServiceError(
                    "general_rate_limit_exceeded",
                    "Rate limit for the current endpoint has been exceeded. Please try again "
                    "after some time.",
                )
            check_path_ids(ctx.path)
            reply = await run_in_threadpool(spec.handler, ctx)
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
        finally:
            await _close_uploads(request)

    return endpoint


async def _close_uploads(request: Request) -> None:
    form = getattr(request, "_form", None)
    if form is not None:
        for _, value in form.multi_items():
            if isinstance(value, UploadFile):
                await value.close()


async def not_found(request: Request, exc: Exception) -> Response:
    return error_response(
        ServiceError("general_route_not_found", "The requested route was not found.")
    )


async def server_error(request: Request, exc: Exception) -> Response:
    logger.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(ServiceError("general_unknown", "Server Error"))


def build_app(state: ServiceState, routes: Sequence[RouteSpec] = ROUTES) -> Starlette:
    """The ASGI app of one local service, serving `routes` (fault injection wraps it)."""
    app = Starlette(
        routes=[
            Route(spec.path, make_endpoint(spec, state), methods=[spec.method], name=None)
            for spec in routes
        ],
        exception_handlers={
            HTTPException: not_found,
            Exception: server_error,
        },
    )
    app.router.redirect_slashes = False  # the service answers a 404, never a bare redirect
    app.state.service = state
    return app
