"""Slow and idle connections: read timeouts and a cap on connections, at the HTTP protocol;
the WebSocket protocol's additions; and what the server's log leaves out.

uvicorn times out idle keep-alive connections and answers 503 beyond `limit_concurrency`,
but it waits for a request head and a body without limit, and keeps accepting connections
until the process runs out of file descriptors (then asyncio logs every failed accept, which
once wrote 301 MB of log in 35 s). `guarded_protocol` adds, on top of uvicorn's HTTP/1.1
protocol:

- a **header timeout**: a request head must arrive whole within `header_timeout` seconds of
  the connection (or of its first byte, on a kept-alive connection), else the connection is
  closed; bytes trickling in do not extend it;
- a **body timeout**: a body must arrive within `body_timeout` seconds plus one second per
  `MIN_BODY_RATE` bytes received (Apache's mod_reqtimeout rule), else the connection is
  closed and the handler sees the client gone: a stalled body, or one dripping in, is cut,
  while an upload at 500 bytes/s or more never is;
- a **cap**: beyond `max_connections` open connections, the one that has waited longest
  for a request head (a slow or idle one) is closed to make room, as nginx reuses its idle
  connections; when every connection is busy with a request, uvicorn's `limit_concurrency`
  answers the newcomer's request 503 and closes it.

`default_max_connections` derives the cap from the descriptors the process may open, and
`default_max_sockets` the realtime sockets' share of it: half, so that HTTP keeps the other
half whatever sockets do (a socket holds its connection for as long as it is open).

`GuardedWebSocketProtocol` is uvicorn's WebSocket protocol with three additions: an invalid
UTF-8 text frame closes the socket with 1007 without a traceback in the log, the
application may abort a socket (`ABORT_EXTENSION` in the scope), which a socket whose
reader has stopped needs: its close frame would wait behind the unread ones, and it may
write text frames at once without a round through ASGI (`SEND_EXTENSION`), which realtime's
fan-out needs: an event goes to every subscribed socket in one pass of the event loop.

`quiet_repeats` keeps the server's per-connection warnings (a malformed request, a refusal
at the cap, a failed accept) from flooding the log: a warning that repeats is written at
most once a second; `mask_secrets` keeps JWTs in query strings out of it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import State

from .routes.realtime import ABORT_EXTENSION, SEND_EXTENSION

#: Descriptors kept beyond two per connection (its socket, and a file a download may hold
#: open): a pass of accepts (`BACKLOG`), the SQLite connections of the worker threads (two
#: descriptors each), and the service's own files.
RESERVED_DESCRIPTORS = 256
MAX_CONNECTIONS = 1000
#: Bytes per second a body must keep up, on average, after its first `body_timeout` seconds.
MIN_BODY_RATE = 500
#: The listen queue: how many connections may wait to be accepted, and so the most that
#: asyncio accepts at once before the cap sees them.
BACKLOG = 64


@dataclass(frozen=True)
class ConnectionLimits:
    """What `guarded_protocol` enforces; see the module's note."""

    max_connections: int
    header_timeout: float
    body_timeout: float


def default_max_connections() -> int:
    """Half the descriptors left after `RESERVED_DESCRIPTORS` (at most `MAX_CONNECTIONS`, at
    least 16): 384 under the usual limit of 1,024."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return min(MAX_CONNECTIONS, max(16, (soft - RESERVED_DESCRIPTORS) // 2))


def default_max_sockets(max_connections: int) -> int:
    """The realtime sockets open at once when not set: half the connection cap."""
    return max(1, max_connections // 2)


def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with the timeouts and the cap of `limits`."""

    class Guarded(GuardedH11Protocol):
        pass

    Guarded.limits = limits
    return Guarded


class GuardedH11Protocol(H11Protocol):
    """H11Protocol plus the deadlines and the cap above (made by `guarded_protocol`)."""

    limits: ClassVar[ConnectionLimits]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._deadline_kind = ""
        self._body_started, self._body_bytes = 0.0, 0
        self.waiting_since = self.loop.time()
        self._watch()
        if len(self.connections) > self.limits.max_connections:
            self._make_room()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch(received=len(data))

    def on_response_complete(self) -> None:
        self.waiting_since = self.loop.time()
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._cancel()  # the WebSocket protocol takes the connection over
        super().handle_websocket_upgrade(event)

    def waiting_for_head(self) -> bool:
        """Whether no request is in progress: the connection waits for a request head."""
        return (
            self.conn.their_state is h11.IDLE
            and (self.cycle is None or self.cycle.response_complete)
            and not self.transport.is_closing()
        )

    def _watch(self, *, received: int = 0) -> None:
        """Arm the deadline that applies now: the head's (not extended by its bytes), the
        body's (extended by each byte at `MIN_BODY_RATE`), or none while the handler works."""
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            self._cancel()
        elif self.conn.their_state is h11.SEND_BODY:
            if self._deadline_kind != "body":
                self._body_started, self._body_bytes = self.loop.time(), 0
            self._body_bytes += received
            allowance = self.limits.body_timeout + self._body_bytes / MIN_BODY_RATE
            self._arm("body", self._body_started + allowance - self.loop.time())
        elif self.waiting_for_head():
            if self.timeout_keep_alive_task is not None:  # idle: uvicorn's keep-alive rules
                self._cancel()
            elif self._deadline_kind != "head":
                self._arm("head", self.limits.header_timeout)
        else:
            self._cancel()

    def _arm(self, kind: str, seconds: float) -> None:
        self._cancel()
        self._deadline_kind = kind
        self._deadline = self.loop.call_later(seconds, self.close_slow)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._deadline_kind = None, ""

    def close_slow(self) -> None:
        """Close the connection (its deadline passed, or it makes room for a new one)."""
        self._cancel()
        if not self.transport.is_closing() and self.transport.get_protocol() is self:
            self.transport.close()

    def _make_room(self) -> None:
        """Close the connection that has waited longest for a request head, if any."""
        waiting = [
            other
            for other in self.connections
            if isinstance(other, GuardedH11Protocol) and other is not self
            if other.waiting_for_head()
        ]
        if waiting:
            min(waiting, key=lambda other: other.waiting_since).close_slow()


#: The loggers of uvicorn's connection warnings and of asyncio's failed accepts.
CONNECTION_LOGGERS = ("uvicorn.error", "asyncio")


class RepeatedMessages(logging.Filter):
    """Lets a message through at most once every `interval` seconds (by its text before
    formatting, so the same warning about another connection counts as a repeat)."""

    def __init__(self, interval: float = 1.0) -> None:
        super().__init__()
        self.interval = interval
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        key = str(record.msg)
        if now - self._last.get(key, -self.interval) < self.interval:
            return False
        if len(self._last) > 1000:  # templates, so few; bounded all the same
            self._last.clear()
        self._last[key] = now
        return True


def quiet_repeats() -> None:
    """Install `RepeatedMessages` on the connection loggers (once per process)."""
    _install(RepeatedMessages, CONNECTION_LOGGERS)


def _install(kind: type[logging.Filter], names: tuple[str, ...]) -> None:
    """Add a `kind` filter to each logger named, unless it has one."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(each, kind) for each in logger.filters):
            logger.addFilter(kind())


#: The close code of a text frame that is not UTF-8 (RFC 6455: inconsistent data).
INVALID_PAYLOAD = 1007


class GuardedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, abortable by the application, closing on invalid UTF-8
    without a traceback (see the module's note)."""

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # set once the handshake is accepted
        if scope is not None:
            scope["extensions"][ABORT_EXTENSION] = {"abort": self.transport.abort}
            scope["extensions"][SEND_EXTENSION] = {"send_texts": self.send_texts}

    def send_receive_event_to_app(self) -> None:
        if self.curr_msg_data_type == "text" and not self.close_sent and not _utf8(self.frames):
            self.frames = []
            self.conn.send_close(INVALID_PAYLOAD, "A text frame must be UTF-8.")
            self.handle_parser_exception()
            return
        super().send_receive_event_to_app()

    def send_texts(self, frames: Sequence[str]) -> bool:
        """Write `frames` as text frames in one write, if the socket is open and its
        transport takes more (not paused); whether it did (else nothing is written, and the
        ASGI send, which waits until the transport drains, is the way)."""
        if (
            self.close_sent
            or self.disconnected
            or not self.writable.is_set()
            or self.transport.is_closing()
            or self.conn.state is not State.OPEN
        ):
            return False
        extensions = self.conn.extensions
        self.transport.write(
            b"".join(
                Frame(Opcode.TEXT, frame.encode()).serialize(mask=False, extensions=extensions)
                for frame in frames
            )
        )
        return True


def _utf8(frames: list[bytes]) -> bool:
    try:
        (frames[0] if len(frames) == 1 else b"".join(frames)).decode()
    except UnicodeDecodeError:
        return False
    return True


#: Query parameters whose values are secrets: a realtime JWT (`?jwt=`), a recovery secret.
_SECRET_QUERY_VALUE = re.compile(r"([?&](?:jwt|secret)=)[^&\s\"]*", re.IGNORECASE)
#: uvicorn's access log, and the log of its WebSocket handshakes.
REQUEST_LOGGERS = ("uvicorn.access", "uvicorn.error")


class MaskedSecrets(logging.Filter):
    """Replaces the value of a secret query parameter in a record's arguments by `***`."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _SECRET_QUERY_VALUE.sub(r"\1***", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
        return True


def mask_secrets() -> None:
    """Install `MaskedSecrets` on the request loggers (once per process)."""
    _install(MaskedSecrets, REQUEST_LOGGERS)
