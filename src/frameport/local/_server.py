"""Running the local service: `LocalService` in a thread, or `serve` in the foreground."""

from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import uvicorn

from ._app import build_app
from ._compression import CompressedAnswers
from ._connections import (
    BACKLOG,
    ConnectionLimits,
    GuardedWebSocketProtocol,
    default_max_connections,
    default_max_sockets,
    guarded_protocol,
    mask_secrets,
    quiet_repeats,
)
from ._date import DatedAnswers
from ._distance import DistanceSimulator, check_distance, parse_latency
from ._faults import FaultInjector, InjectedFault, parse_fault_spec
from ._key_file import drop_other_key, keep_key
from .routes.realtime import MAX_FRAME_BYTES
from .service._open import open_state
from .service._state import (
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_MAX_FILE_SIZE,
    ServiceConfig,
    ServiceState,
)
from .service.realtime._hub import RealtimeLimits
from .service.transactions._lifecycle import DEFAULT_MAX_TRANSACTION_BYTES

__all__ = ["LocalService", "ServiceConfig", "make_app", "serve"]

if TYPE_CHECKING:
    from starlette.types import ASGIApp


def make_app(state: ServiceState) -> tuple[ASGIApp, FaultInjector | None]:
    """The service's ASGI app, its answers dated by the service's clock (`_date`), with
    compressed answers, fault injection and a simulated distance when the config asks."""
    app: ASGIApp = build_app(state)
    if state.config.compression:
        app = CompressedAnswers(app)
    injector = None
    if state.config.faults:
        rate, seed = parse_fault_spec(state.config.faults)
        app = injector = FaultInjector(app, rate, seed)
    latency, bandwidth = state.config.latency, state.config.bandwidth
    if latency is not None or bandwidth is not None:
        app = DistanceSimulator(app, parse_latency(latency or 0), bandwidth)
    return DatedAnswers(app, state.clock), injector


def _uvicorn_config(
    app: ASGIApp, config: ServiceConfig, host: str, port: int, *, access_log: bool = False
) -> uvicorn.Config:
    """uvicorn's settings, with the connection limits of `_connections`; `access_log` prints
    uvicorn's line per request on stdout.

    WebSocket frames are limited to 64,000 bytes as on the service (uvicorn's 16 MiB without
    rate limits) and never compressed (the service has no permessage-deflate). Secrets in
    query strings are masked in the log."""
    limits = ConnectionLimits(
        config.max_connections or default_max_connections(),
        config.header_timeout,
        config.body_timeout,
    )
    frames = MAX_FRAME_BYTES if config.rate_limits else 16 * 1024 * 1024
    settings = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info" if access_log else "warning",
        access_log=access_log,
        lifespan="off",
        timeout_keep_alive=30,
        date_header=False,
        ws=GuardedWebSocketProtocol,
        ws_max_size=frames,
        ws_per_message_deflate=False,
        http=guarded_protocol(limits),
        backlog=BACKLOG,
        # uvicorn counts the connection asking: the cap's own connection is still served.
        limit_concurrency=limits.max_connections + 1,
    )
    quiet_repeats()  # after uvicorn has configured its loggers
    mask_secrets()
    return settings


def settle_socket_cap(config: ServiceConfig) -> None:
    """Set the realtime socket cap when not given (half the connection cap); ValueError
    unless it stays below the connection cap, so that HTTP keeps connections sockets cannot
    take."""
    sockets = config.realtime.max_sockets
    connections = config.max_connections or default_max_connections()
    if sockets is None:
        config.realtime = replace(config.realtime, max_sockets=default_max_sockets(connections))
    elif sockets >= connections:
        raise ValueError(
            f"max_sockets ({sockets}) must be below max_connections ({connections}), so that "
            "HTTP requests keep connections realtime sockets cannot take; lower max_sockets "
            "or raise max_connections"
        )


class LocalService:
    """The local service on a free loopback port, in a background thread.

    >>> with LocalService() as svc:
    ...     client = svc.client()
    ...     client.endpoint == svc.endpoint
    True

    `faults="0.2:7"` injects faults at 20 % with seed 7 (see `faults`);
    `rate_limit_overrides={"POST /v1/account/jwts": (5, 2)}` sets (limit, window seconds).
    `max_body_size` (bytes, default 16 MiB) bounds a request's parameters (see `_body`).
    `latency=50` (milliseconds, or `"50:10"` with 10 ms of jitter) delays every answer and
    `bandwidth=100` caps each connection at 100 Mbit/s, as for a distant service (see
    `_distance`). Answers are compressed as the service compresses them unless
    `compression=False` (see `_compression`). `max_connections` (default: from the process's
    descriptor limit), `header_timeout` and `body_timeout` (seconds) bound slow connections
    (see `_connections`). `max_transaction_bytes` (default 256 MiB) bounds the JSON staged in
    one transaction. Realtime sockets: `max_sockets` open at once (default: half of
    `max_connections`), `max_sockets_per_ip` (128), `max_subscriptions` per socket (100),
    `max_channels` per subscription (100), `max_outbox_bytes` of frames a slow reader may
    leave unread before its socket is closed (1 MiB); see `RealtimeLimits`.
    """

    def __init__(
        self,
        *,
        project: str = "demo",
        key: str | None = None,
        data_dir: str | Path | None = None,
        rate_limits: bool = True,
        rate_limit_overrides: Mapping[str, tuple[int, int]] | None = None,
        faults: str | None = None,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        max_transaction_bytes: int = DEFAULT_MAX_TRANSACTION_BYTES,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        latency: str | float | None = None,
        bandwidth: float | None = None,
        max_connections: int | None = None,
        header_timeout: float = 10.0,
        body_timeout: float = 20.0,
        compression: bool = True,
        max_sockets: int | None = None,
        max_sockets_per_ip: int = RealtimeLimits.max_sockets_per_ip,
        max_subscriptions: int = RealtimeLimits.max_subscriptions,
        max_channels: int = RealtimeLimits.max_channels,
        max_outbox_bytes: int = RealtimeLimits.max_outbox_bytes,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        if data_dir is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="frameport-local-")
            data_dir = self._tempdir.name
        self.config = ServiceConfig(
            data_dir=Path(data_dir),
            project=project,
            key=key,
            rate_limits=rate_limits,
            rate_limit_overrides=dict(rate_limit_overrides or {}),
            faults=faults,
            max_file_size=max_file_size,
            max_transaction_bytes=max_transaction_bytes,
            max_body_size=max_body_size,
            latency=latency,
            bandwidth=bandwidth,
            max_connections=max_connections,
            header_timeout=header_timeout,
            body_timeout=body_timeout,
            compression=compression,
            realtime=RealtimeLimits(
                max_sockets, max_sockets_per_ip, max_subscriptions, max_channels, max_outbox_bytes
            ),
        )
        check_distance(self.config)
        settle_socket_cap(self.config)
        self._host, self._port = host, port
        self._state: ServiceState | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._injector: FaultInjector | None = None
        self.endpoint = ""

    def __repr__(self) -> str:
        return f"LocalService(endpoint={self.endpoint!r}, project={self.project!r})"

    @property
    def project(self) -> str:
        """The project the service serves (default "demo")."""
        return self.config.project

    @property
    def key(self) -> str:
        """The API key holding every scope."""
        if self._state is None:
            raise RuntimeError("start the service first: use `with LocalService() as svc:`")
        return self._state.key

    @property
    def data_dir(self) -> Path:
        """Where the SQLite file and the uploaded files are kept."""
        return self.config.data_dir

    @property
    def faults(self) -> list[InjectedFault]:
        """The faults injected so far (empty when fault injection is off)."""
        return [] if self._injector is None else list(self._injector.injected)

    @property
    def rows_served(self) -> int:
        """How many rows the service has sent in row listings since it started."""
        return 0 if self._state is None else self._state.rows_served

    def rows_served_from(self, database_id: str, table_id: str) -> int:
        """How many rows of one table the service has sent in row listings since it started."""
        return 0 if self._state is None else self._state.rows_served_by_table[database_id, table_id]

    def advance_clock(self, seconds: float) -> None:
        """Move the service's clock `seconds` forward: transactions expire and rows are
        stamped by it, so a test can see a transaction expire without waiting."""
        if self._state is None:
            raise RuntimeError("start the service first: use `with LocalService() as svc:`")
        self._state.clock.advance(seconds)

    def start(self) -> LocalService:
        """Start serving in a background thread; returns once requests are answered."""
        self._state = open_state(self.config)
        app, self._injector = make_app(self._state)
        # proto IPPROTO_TCP: asyncio sets TCP_NODELAY only then (else Nagle adds ~40 ms).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        port = sock.getsockname()[1]
        self._server = uvicorn.Server(_uvicorn_config(app, self.config, self._host, port))
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            daemon=True,
            name="frameport-local-service",
        )
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the local service failed to start; see the log above")
            threading.Event().wait(0.01)
        self.endpoint = f"http://{self._host}:{port}/v1"
        return self

    def stop(self) -> None:
        """Stop serving, close the database and remove a temporary data directory."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        if self._state is not None:
            self._state.close()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def client(self, **options: Any) -> Any:
        """An API-key `frameport.Client` for this service.

        Typed `Any`: the local service imports nothing of the client at module level.
        """
        from .._client import Client

        return Client(self.endpoint, self.project, key=self.key, **options)

    def __enter__(self) -> LocalService:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _settle_key(state: ServiceState, config: ServiceConfig) -> str:
    """Where the API key is, for the start banner; never the key itself, which a captured
    output or log would hand to anyone who reads it. A generated (or kept) key goes to the
    owner-only key file; a given one is used as it is, and writes no file."""
    if config.key is not None:
        drop_other_key(config.data_dir, config.key)
        return "the one given with --key or FRAMEPORT_KEY (no key file)"
    path = keep_key(config.data_dir, state.key)
    return f"in {path} (owner only; `frameport serve --print-key --data {config.data_dir}`)"


def serve(config: ServiceConfig, host: str, port: int, *, access_log: bool = False) -> None:
    """Run the service in the foreground until interrupted (`frameport serve`); with
    `access_log`, one line per request."""
    settle_socket_cap(config)
    config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # new: the owner's only
    state = open_state(config)
    app, _ = make_app(state)
    print(f"frameport local service on http://{host}:{port}/v1")
    print(f"  project: {config.project}")
    print(f"  API key: {_settle_key(state, config)}")
    print(f"  data:    {config.data_dir}", flush=True)
    if config.latency is not None or config.bandwidth is not None:
        cap = "no cap" if config.bandwidth is None else f"{config.bandwidth:g} Mbit/s a connection"
        print(f"  distance: {config.latency or 0} ms latency, {cap}")
    if not config.compression:
        print("  compression: off")
    try:
        uvicorn.Server(_uvicorn_config(app, config, host, port, access_log=access_log)).run()
    finally:
        state.close()
