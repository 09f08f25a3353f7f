"""HTTP exchange with the service: timeouts, retries with backoff, rate-limit throttling, logging,
and the one place where httpx errors and error statuses become frameport exceptions. Only
`Connection.request` calls `Transport.send`; nothing else talks to httpx.

Every attempt is logged at DEBUG on the ``frameport`` logger as
``"<METHOD> <redacted path> -> <status> (<seconds> s)"``, the record carrying `http_method`,
`http_path`, `http_status` (None when no answer came), `elapsed`, `attempt`,
`rate_limit_remaining` and `rate_limit_reset`; retries and rate-limit waits at INFO. No secret
(key, JWT, cookie, password, token) is ever part of a record or of an exception: a filter on
httpx's and httpcore's loggers masks secret query values and ``Set-Cookie`` and
``X-Fallback-Cookies`` values in what they log.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import logging
import os
import random
import re
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any
from urllib.parse import unquote

import httpx

from .._exceptions import APIError, RateLimitError, TransportError, api_error_class
from ._config import LOCAL_SERVICE_PORT
from ._json import JsonObject
from ._wire_encoding import FAR_ROUND_TRIP, Compression, WireEncoding, choose_wire_encoding

logger = logging.getLogger("frameport")

#: Methods that are safe to send twice: they are retried without being asked.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
#: Statuses after which an idempotent request is sent again.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Query parameter names whose values never appear in logs or exceptions.
SECRET_PARAMS = frozenset({"key", "jwt", "secret", "password", "session", "token", "cookie"})

#: A callable that fetches an existing resource, used after a retried create answered 409.
ReadBack = Callable[[], Awaitable[httpx.Response]]
#: A callable that says, before a request is sent again, whether an attempt whose answer was
#: lost took effect: its answer then, or None to send the request again.
Settle = Callable[[], Awaitable[httpx.Response | None]]


def is_secret_param(name: str) -> bool:
    """Whether a query parameter named `name` carries a credential."""
    return name.lower().removesuffix("[]") in SECRET_PARAMS


def redact_url(url: httpx.URL | str, *, origin: bool = True) -> str:
    """`url` readable and safe to show: no user info, secret query values replaced by ``***``,
    the query decoded. With ``origin=False`` only the path and query are returned."""
    url = httpx.URL(url)
    query = "&".join(
        f"{name}={'***' if is_secret_param(name) else value}"
        for name, value in url.params.multi_items()
    )
    target = unquote(url.raw_path.split(b"?", 1)[0].decode("ascii")) + (
        f"?{query}" if query else ""
    )
    if not origin:
        return target
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}{target}"


_SECRET_NAMES = "|".join(sorted(SECRET_PARAMS))
_SECRET_QUERY_VALUE = re.compile(
    rf"([?&](?:{_SECRET_NAMES})(?:\[\]|%5B%5D)?=)[^&\s\"'#]*", re.IGNORECASE
)
_SECRET_HEADER_VALUE = re.compile(
    r"(\(b'(?:set-cookie|x-fallback-cookies)', b)('[^']*'|\"[^\"]*\")", re.IGNORECASE
)


def redact_text(text: str) -> str:
    """`text` with secret query values and session-cookie header values replaced by ``***``."""
    text = _SECRET_QUERY_VALUE.sub(r"\1***", text)
    return _SECRET_HEADER_VALUE.sub(r"\1'***'", text)


class RedactingFilter(logging.Filter):
    """Masks credentials in log records of other libraries (see `redact_text`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


for _name in ("httpx", "httpcore.http11", "httpcore.http2", "httpcore.connection"):
    logging.getLogger(_name).addFilter(RedactingFilter())


def queries_param(queries: Iterable[str | Mapping[str, Any]]) -> dict[str, list[str]]:
    """The ``queries[]`` request parameter for a list of query objects (or JSON strings).

    >>> queries_param([{"method": "limit", "values": [10]}])
    {'queries[]': ['{"method":"limit","values":[10]}']}

    Merge it into `params` of `Connection.request`; httpx repeats the name for each item.
    """
    encoded = [
        query
        if isinstance(query, str)
        else json.dumps(query, separators=(",", ":"), ensure_ascii=False)
        for query in queries
    ]
    return {"queries[]": encoded}


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a request is retried.

    `retries` is the number of attempts after the first. Backoff before retry *n* (0-based) is
    uniformly random in ``[0, min(backoff_max, backoff * 2**n)]`` ("full jitter"). When the
    service names a wait (Retry-After, X-RateLimit-Reset) it is honoured, but a wait longer than
    `max_wait` seconds is not: the error is raised instead.
    """

    retries: int = 5
    backoff: float = 0.2
    backoff_max: float = 8.0
    max_wait: float = 90.0

    def __post_init__(self) -> None:
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or self.retries < 0:
            raise ValueError(f"retries must be an integer >= 0 (got {self.retries!r}).")
        for name in ("backoff", "backoff_max", "max_wait"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"RetryPolicy.{name} must be a number >= 0.")

    def backoff_delay(self, retry: int) -> float:
        """A jittered delay before retry number `retry` (0 for the first retry)."""
        return random.uniform(0, min(self.backoff_max, self.backoff * 2**retry))


def _header_float(response: httpx.Response, name: str) -> float | None:
    try:
        return float(response.headers.get(name, ""))
    except ValueError:
        return None


def service_wait(response: httpx.Response) -> float | None:
    """Seconds the service asked the caller to wait (Retry-After, or X-RateLimit-Reset on a 429),
    None when it did not say."""
    waits: list[float] = []
    retry_after = response.headers.get("retry-after")
    seconds = _header_float(response, "retry-after")
    if retry_after is not None and seconds is None:
        with contextlib.suppress(TypeError, ValueError):
            seconds = email.utils.parsedate_to_datetime(retry_after).timestamp() - time.time()
    if seconds is not None:
        waits.append(seconds)
    reset = _header_float(response, "x-ratelimit-reset")
    if response.status_code == 429 and reset is not None:
        waits.append(reset - time.time())
    return max(0.0, *waits) if waits else None


class RateLimitThrottle:
    """Holds back requests to a route whose rate limit the service reported as spent.

    Routes are keyed by method and path. After an answer with ``X-RateLimit-Remaining: 0``
    (or a 429), the next request to the route waits until ``X-RateLimit-Reset``. Concurrent
    requests already under way are not counted: the throttle avoids 429s for sequential use.
    An API key's throttle (`for_key`) heeds only 429s: the service sends rate-limit headers to
    keys too but does not enforce them (service interface, "Rate limits").
    """

    #: Seconds added to the reset time, so a request never lands just before the window ends.
    MARGIN = 0.05

    def __init__(self, *, for_key: bool = False) -> None:
        self._resume_at: dict[str, float] = {}
        self._for_key = for_key

    def wait_seconds(self, route: str) -> float:
        """How long a request to `route` must wait now (0 when it may go)."""
        wait = self._resume_at.get(route, 0.0) - time.time()
        if wait <= 0:
            self._resume_at.pop(route, None)
            return 0.0
        return wait

    def observe(self, route: str, response: httpx.Response) -> None:
        """Learn from the rate-limit headers of an answer to `route`."""
        remaining = _header_float(response, "x-ratelimit-remaining")
        reset = _header_float(response, "x-ratelimit-reset")
        if response.status_code == 429:
            wait = service_wait(response)
            if wait is not None:
                self._resume_at[route] = time.time() + wait + self.MARGIN
        elif self._for_key:
            return
        elif remaining is not None and remaining <= 0 and reset is not None:
            self._resume_at[route] = reset + self.MARGIN
        elif remaining is not None:
            self._resume_at.pop(route, None)


def _ssl_context(endpoint: str) -> ssl.SSLContext:
    """The SSL context of a client of `endpoint`, made once per process and setting: loading
    the certificates takes tens of milliseconds, which every new client would pay again."""
    https = endpoint.lower().startswith("https:")
    return _cached_ssl_context(
        https, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    )


@functools.cache
def _cached_ssl_context(https: bool, cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    if not https:  # no TLS connection is opened (redirects are not followed): trust nothing
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return httpx.create_ssl_context()  # reads SSL_CERT_FILE and SSL_CERT_DIR (or certifi)


def _describe(exc: httpx.HTTPError) -> str:
    return f"{type(exc).__name__}: {str(exc) or 'no detail'}"


def _refused(exc: BaseException) -> bool:
    """Whether the httpx error `exc` is a refused connection: nothing listens there."""
    cause: BaseException | None = exc
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConnectionRefusedError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def unreachable_hint(endpoint: str, *, refused: bool) -> str:
    """The advice when no connection to `endpoint` could be made; for a service on this
    machine, the command that starts one there."""
    url = httpx.URL(endpoint)
    why = "the connection was refused" if refused else "no connection could be made"
    advice = f"Is the service running at {endpoint} ({why})?"
    if url.host in ("localhost", "127.0.0.1", "::1"):
        port = url.port or (443 if url.scheme == "https" else 80)
        option = "" if port == LOCAL_SERVICE_PORT else f" --port {port}"
        return f"{advice} Start a local one with `frameport serve{option}`."
    return f"{advice} Check the endpoint and the network."


# Failures that happen before the request leaves: retrying cannot apply a change twice.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_RETRYABLE_FAILURES = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class TranslatedStream(httpx.AsyncByteStream):
    """A response body whose read errors come out as `TransportError`, like a request's: a
    connection dropped or timed out while the body streams is mapped here, not by callers."""

    def __init__(self, stream: httpx.AsyncByteStream, method: str, url: str) -> None:
        self._stream = stream
        self._method = method
        self._url = url

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        except httpx.HTTPError as exc:
            raise TransportError(
                f"{self._method} {self._url} broke off while the body was read: {_describe(exc)}",
                method=self._method,
                url=self._url,
            ) from exc

    async def aclose(self) -> None:
        await self._stream.aclose()


class Transport:
    """Sends requests to one service endpoint with retries, throttling and error translation.

    The httpx client (keep-alive pool, finite timeouts) is made on first use, in the event
    loop that uses it, and again once that loop has ended (a second ``asyncio.run``) or the
    process has forked. A request without ``Accept-Encoding`` gets `wire_encoding`'s choice
    for `compression` and the fastest answer so far (`round_trip`).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        timeout: httpx.Timeout,
        retry: RetryPolicy,
        headers: Mapping[str, str],
        compression: Compression = "auto",
    ) -> None:
        self.endpoint = endpoint
        self.compression = compression
        self.round_trip: float | None = None  # seconds of the fastest answer so far
        self.timeout = timeout
        self.retry = retry
        self._headers = dict(headers)
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = os.getpid()
        self._closed = False
        self._service_warnings: set[str] = set()
        self.throttle = RateLimitThrottle()

    def _client(self) -> httpx.AsyncClient:
        if self._closed:
            raise ValueError("This frameport client is closed; create a new client.")
        loop = asyncio.get_running_loop()
        if self._pid != os.getpid():
            # Forked: the pool's connections and event loop belong to the parent process.
            self._http, self._loop, self._pid = None, None, os.getpid()
        if self._http is not None and self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed():
                raise RuntimeError(
                    "This AsyncClient is bound to another running event loop; create one "
                    "AsyncClient per event loop, or use the synchronous Client."
                )
            self._http = None  # its event loop has ended, and its connections with it
        if self._http is None:
            self._http = httpx.AsyncClient(
                base_url=self.endpoint + "/",
                timeout=self.timeout,
                headers=self._headers,
                # Session cookies are kept by the client's credentials, not by httpx.
                cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
                follow_redirects=False,
                verify=_ssl_context(self.endpoint),
            )
            self._loop = loop
        return self._http

    async def aclose(self) -> None:
        """Close the connection pool; later requests raise ValueError."""
        self._closed = True
        http, self._http = self._http, None
        if http is not None and self._loop is asyncio.get_running_loop():
            await http.aclose()

    def near(self) -> bool:
        """Whether an answer has come within `FAR_ROUND_TRIP` (the service is near)."""
        return self.round_trip is not None and self.round_trip < FAR_ROUND_TRIP

    def wire_encoding(self) -> WireEncoding:
        """The encoding answers are asked for now, and why."""
        return choose_wire_encoding(self.compression, self.round_trip)

    async def send(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        idempotent: bool,
        read_back: ReadBack | None = None,
        settle: Settle | None = None,
        stream: bool = False,
        **body: Any,
    ) -> httpx.Response:
        """`Connection.request`'s exchange (see it for the retry rules and errors); `body`
        holds the keyword arguments of ``httpx.AsyncClient.build_request``."""
        http = self._client()
        retry = 0
        ambiguous = False  # an earlier attempt may have reached the service and acted
        named = [*self._headers, *(headers or {})]
        if not any(name.lower() == "accept-encoding" for name in named):
            accept = {"Accept-Encoding": self.wire_encoding().accept_encoding}
            headers = {**(headers or {}), **accept}
        idempotent = idempotent or settle is not None
        while True:
            if ambiguous and settle is not None:
                settled = await settle()
                if settled is not None:
                    return settled
            request = http.build_request(
                method,
                path.lstrip("/"),
                headers=headers,
                timeout=timeout if timeout is not None else self.timeout,
                **body,
            )
            route = f"{method} {request.url.path}"
            await self._wait_for_route(route, request)
            started = time.perf_counter()
            try:
                response = await http.send(request, stream=stream)
            except httpx.HTTPError as exc:
                failure = _describe(exc)
                self._log_attempt(request, None, time.perf_counter() - started, retry, failure)
                sent = not isinstance(exc, _NOT_SENT)
                refused = _refused(exc)  # nothing listens: asking again changes nothing
                may_retry = isinstance(exc, _RETRYABLE_FAILURES) and (idempotent or not sent)
                if may_retry and not refused and retry < self.retry.retries:
                    ambiguous = ambiguous or sent
                    await self._sleep_before_retry(request, retry, failure, None)
                    retry += 1
                    continue
                redacted = redact_url(request.url)
                connecting = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                attempts = f"{retry + 1} attempt{'s' if retry else ''}"
                raise TransportError(
                    f"{method} {redacted} failed after {attempts}: {failure}.",
                    method=method,
                    url=redacted,
                    attempts=retry + 1,
                    hint=unreachable_hint(self.endpoint, refused=refused) if connecting else None,
                ) from exc
            elapsed = time.perf_counter() - started
            self._log_attempt(request, response, elapsed, retry, None)
            if self.round_trip is None or elapsed < self.round_trip:
                self.round_trip = elapsed
            self._report_service_warning(response)
            self.throttle.observe(route, response)
            status = response.status_code
            if status < 400:
                if stream and isinstance(response.stream, httpx.AsyncByteStream):
                    response.stream = TranslatedStream(
                        response.stream, method, redact_url(request.url)
                    )
                return response
            if stream:
                await response.aread()
                await response.aclose()
            wait = service_wait(response)
            may_retry = status in RETRY_STATUSES and (idempotent or status == 429)
            patient = wait is None or wait <= self.retry.max_wait
            if may_retry and patient and retry < self.retry.retries:
                ambiguous = ambiguous or status >= 500
                await self._sleep_before_retry(request, retry, f"status {status}", wait)
                retry += 1
                continue
            return await self._settle_error(response, ambiguous, read_back)

    @staticmethod
    async def _settle_error(
        response: httpx.Response, ambiguous: bool, read_back: ReadBack | None
    ) -> httpx.Response:
        """Raise the error of `response`, unless an earlier attempt with an unknown outcome
        explains it: a create that answers "already exists" is read back, and a delete that
        answers 404 returns that response."""
        error = api_error(response)
        created_before = error.status == 409 and error.type.endswith("already_exists")
        if ambiguous and created_before and read_back is not None:
            target = redact_url(response.request.url, origin=False)
            logger.info("%s %s: made by an earlier attempt; reading it back", error.method, target)
            return await read_back()
        if ambiguous and error.status == 404 and error.method == "DELETE":
            return response
        raise error

    async def _wait_for_route(self, route: str, request: httpx.Request) -> None:
        wait = self.throttle.wait_seconds(route)
        if wait <= 0:
            return
        if wait > self.retry.max_wait:
            url = redact_url(request.url)
            raise RateLimitError(
                f"The rate limit of this route is spent for another {wait:.0f} s "
                "(X-RateLimit-Remaining was 0); try again later.",
                status=429,
                type="general_rate_limit_exceeded",
                method=request.method,
                url=url,
                retry_after=wait,
            )
        logger.info(
            "%s %s: rate limit spent, waiting %.2f s for the next window",
            request.method,
            redact_url(request.url, origin=False),
            wait,
        )
        await asyncio.sleep(wait)

    async def _sleep_before_retry(
        self, request: httpx.Request, retry: int, reason: str, asked_wait: float | None
    ) -> None:
        delay = self.retry.backoff_delay(retry)
        if asked_wait is not None:
            delay = asked_wait + delay / 4
        logger.info(
            "%s %s: %s; retry %d of %d in %.2f s",
            request.method,
            redact_url(request.url, origin=False),
            reason,
            retry + 1,
            self.retry.retries,
            delay,
        )
        await asyncio.sleep(delay)

    def _report_service_warning(self, response: httpx.Response) -> None:
        """Log each distinct ``X-Service-Warning`` once (e.g. a response format the service
        does not know)."""
        for warning in response.headers.get("x-service-warning", "").split(";"):
            warning = warning.strip()
            if warning and warning not in self._service_warnings:
                self._service_warnings.add(warning)
                logger.warning("The service warns: %s", warning)

    @staticmethod
    def _log_attempt(
        request: httpx.Request,
        response: httpx.Response | None,
        elapsed: float,
        attempt: int,
        failure: str | None,
    ) -> None:
        if not logger.isEnabledFor(logging.DEBUG):
            return
        path = redact_url(request.url, origin=False)
        fields: JsonObject = {
            "http_method": request.method,
            "http_path": path,
            "http_status": None if response is None else response.status_code,
            "elapsed": elapsed,
            "attempt": attempt,
            "rate_limit_remaining": None,
            "rate_limit_reset": None,
        }
        if response is not None:
            for name in ("remaining", "reset"):
                fields[f"rate_limit_{name}"] = _header_float(response, f"x-ratelimit-{name}")
        outcome = failure if response is None else str(response.status_code)
        logger.debug("%s %s -> %s (%.3f s)", request.method, path, outcome, elapsed, extra=fields)


def api_error(response: httpx.Response) -> APIError:
    """The frameport exception for an error response (its body must have been read)."""
    method = response.request.method
    url = redact_url(response.request.url)
    status = response.status_code
    error_type, message = "", ""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        error_type = str(body.get("type") or "")
        message = str(body.get("message") or "")
    if not message:
        message = response.reason_phrase or "error"
    cls = api_error_class(status)
    extra: dict[str, Any] = {}
    if issubclass(cls, RateLimitError):
        extra["retry_after"] = service_wait(response)
    return cls(message, status=status, type=error_type, method=method, url=url, **extra)
