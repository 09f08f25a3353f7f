"""The service's realtime socket, spoken as its web SDK speaks it: one WebSocket to
``/v1/realtime``, one subscription, heartbeats, and a clear end when the socket drops.

The caller's session or JWT goes in the handshake's headers (``Cookie``,
``X-Fallback-Cookies``, ``X-Service-JWT``), never in the URL, which carries the project only.
An API key is not sent: the service does not take it there (its holder would be a guest).
Events carry no ID and nothing is replayed (the service's design): whoever needs every change
catches up over REST after a `SocketDropped`.

>>> socket = await RealtimeSocket.open(connection, ["tablesdb.D.tables.T.rows"])  # doctest: +SKIP
>>> event = await socket.next_event(timeout=20.0)                                 # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection, connect

from .._exceptions import AuthenticationError, FrameportError
from ._connection import Connection
from ._ids import ID
from ._json import JsonObject

log = logging.getLogger("frameport.realtime")

# websockets logs a handshake's headers (credentials among them) at DEBUG. Its logger here is
# one nobody can lower: not registered, so `logging.getLogger` never returns it; it passes
# what it does log to "frameport.realtime".
_socket_log = logging.Logger("frameport.realtime.socket", logging.INFO)
_socket_log.parent = log

OPEN_TIMEOUT = 30.0
"""Seconds a handshake and the first answers (`connected`, the subscription) may take."""

MAX_FRAME = 16 * 1024 * 1024
"""The largest frame taken from the service (an event holds one row)."""

RECONNECT_DELAYS = ((1, 0.0), (5, 1.0), (15, 5.0), (100, 10.0))
"""(attempts below, seconds) before a reconnect: the web SDK's schedule (1 s, then 5 s, then
10 s, then 60 s), but the first attempt at once, so a cut costs no second."""


TOO_MANY = 1013
"""The error code of too many connects or messages: a reason to wait, not to give up."""


class SocketDropped(Exception):
    """The socket closed or stopped answering; what was published meanwhile is lost."""


def reconnect_delay(attempt: int) -> float:
    """Seconds to wait before reconnect `attempt` (from 0; the count starts anew once a
    socket opens)."""
    for below, seconds in RECONNECT_DELAYS:
        if attempt < below:
            return seconds
    return 60.0


def realtime_url(connection: Connection) -> str:
    """The socket's URL: the endpoint's, ``ws`` for ``http``, with the project only."""
    endpoint = connection.endpoint
    scheme, rest = endpoint.split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/realtime?project={connection.project}"


class RealtimeSocket:
    """One open realtime socket with one subscription; its events are read in the order they
    came (`next_event`). Close it with `close`."""

    def __init__(self, socket: ClientConnection, subscription: str) -> None:
        self._socket = socket
        self.subscription = subscription
        self._events: asyncio.Queue[JsonObject | SocketDropped] = asyncio.Queue()
        self._pong = asyncio.Event()
        self._getter: asyncio.Future[JsonObject | SocketDropped] | None = None
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, connection: Connection, channels: Sequence[str]) -> RealtimeSocket:
        """Connect with `connection`'s session or JWT and subscribe to `channels`; returns
        once the service confirmed the subscription. `SocketDropped` when the service cannot
        be reached or the socket closes first; `AuthenticationError` when the service took
        the caller for a guest although a session or JWT was sent (it ended or expired);
        `FrameportError` when it refused the socket."""
        credentials = replace(connection.credentials, key=None, impersonation=None)
        headers = {
            connection.header("Project"): connection.project,
            **credentials.headers(connection.header_prefix),
        }
        try:
            socket = await connect(
                realtime_url(connection),
                additional_headers=headers,
                open_timeout=OPEN_TIMEOUT,
                ping_interval=None,  # the service's own heartbeat is a message (`heartbeat`)
                max_size=MAX_FRAME,
                logger=_socket_log,
            )
        except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
            raise SocketDropped(f"could not open the realtime socket: {exc}") from None
        opened = cls(socket, ID.unique())
        try:
            async with asyncio.timeout(OPEN_TIMEOUT):
                await opened._handshake(signed_in=credentials.method is not None, channels=channels)
        except BaseException:
            await opened.close()
            raise
        opened._reader = asyncio.create_task(opened._read())
        return opened

    async def _handshake(self, *, signed_in: bool, channels: Sequence[str]) -> None:
        connected = await self._answer("connected")
        if signed_in and not connected.get("user"):
            raise AuthenticationError(
                "The realtime service took this client for a guest: its session or JWT is no "
                "longer valid. Sign in again (or mint a new JWT) and start again.",
                status=401,
                type="user_unauthorized",
                method="GET",
                url="/v1/realtime",
            )
        subscription = {"subscriptionId": self.subscription, "channels": list(channels)}
        await self._socket.send(json.dumps({"type": "subscribe", "data": [subscription]}))
        await self._answer("response")

    async def _answer(self, kind: str) -> JsonObject:
        """The data of the next message of type `kind` (events before it are kept)."""
        while True:
            message = await self._receive()
            if message is None:
                raise SocketDropped("the realtime socket closed during its handshake")
            data = message.get("data")
            if message.get("type") == "event" and isinstance(data, dict):
                self._events.put_nowait(data)
            elif message.get("type") == kind:
                return data if isinstance(data, dict) else {}

    async def _receive(self) -> JsonObject | None:
        """The next message (errors raised), or None once the socket closed."""
        try:
            text = await self._socket.recv()
        except websockets.exceptions.ConnectionClosed:
            return None
        message = json.loads(text)
        if not isinstance(message, dict):
            return {}
        if message.get("type") == "error":
            _raise_refusal(message.get("data"))
        return message

    async def _read(self) -> None:
        """Queue events and note pongs until the socket closes; then queue its end."""
        reason = "the realtime socket closed"
        try:
            while (message := await self._receive()) is not None:
                data = message.get("data")
                if message.get("type") == "event" and isinstance(data, dict):
                    self._events.put_nowait(data)
                elif message.get("type") == "pong":
                    self._pong.set()
        except (FrameportError, ValueError) as exc:
            reason = f"the realtime socket ended: {exc}"
        except OSError as exc:
            reason = f"the realtime socket failed: {exc}"
        self._events.put_nowait(SocketDropped(reason))

    async def next_event(self, timeout: float) -> JsonObject | None:
        """The data of the next event (its ``payload``, ``events``, ``timestamp``), or None
        when none came within `timeout` seconds; `SocketDropped` once the socket ended.
        Waiting is cut short safely: no event is lost to a timeout or a cancellation."""
        if self._getter is None:
            self._getter = asyncio.ensure_future(self._events.get())
        done, _ = await asyncio.wait({self._getter}, timeout=max(timeout, 0.0))
        if not done:
            return None
        item = self._getter.result()
        self._getter = None
        if isinstance(item, SocketDropped):
            self._events.put_nowait(item)  # every later call says so too
            raise item
        return item

    def pending(self) -> list[JsonObject]:
        """The events already received and not read yet (up to the socket's end)."""
        taken: list[JsonObject] = []
        while not self._events.empty() and self._getter is None:
            item = self._events.get_nowait()
            if isinstance(item, SocketDropped):
                self._events.put_nowait(item)
                break
            taken.append(item)
        return taken

    async def heartbeat(self, timeout: float) -> None:
        """Send a ping and wait for its pong; `SocketDropped` when none came within
        `timeout` seconds (the socket is then closed). Events keep arriving meanwhile."""
        self._pong.clear()
        try:
            await self._socket.send(json.dumps({"type": "ping"}))
            async with asyncio.timeout(timeout):
                await self._pong.wait()
        except (TimeoutError, websockets.exceptions.ConnectionClosed):
            await self.close()
            raise SocketDropped("the realtime socket missed a heartbeat") from None

    async def close(self) -> None:
        """Close the socket (a normal close, 1000) and stop reading it."""
        if self._getter is not None:
            self._getter.cancel()
            self._getter = None
        try:
            async with asyncio.timeout(OPEN_TIMEOUT):
                await self._socket.close()
        except (OSError, TimeoutError):
            pass  # the network is gone; the socket is dropped all the same
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)


def _raise_refusal(data: Mapping[str, Any] | Any) -> None:
    """Raise the error an error frame stands for: `SocketDropped` for too many connects or
    messages (1013: try again later), else `FrameportError`."""
    code = data.get("code") if isinstance(data, Mapping) else None
    message = data.get("message") if isinstance(data, Mapping) else None
    if code == TOO_MANY:
        raise SocketDropped(f"the realtime service asks to wait: {message}")
    raise FrameportError(
        f"The realtime service refused the socket: {message or 'no reason given'} "
        f"(code {code}). Check the project ID and the client's credentials."
    )
