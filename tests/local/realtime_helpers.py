"""Helpers for the realtime tests: a WebSocket client on the `websockets` sync client, the
URLs and credentials of every kind, and a barrier that proves an event did not come.

The barrier is a `ping`: the local service queues a write's event before the write's HTTP
answer is sent, and a connection's frames go out in order, so every event of a write that
has been answered arrives before the `pong` of a ping sent afterwards. What came before the
pong is everything the connection was sent, with no waiting on a clock.
"""

from __future__ import annotations

import json
import socket as tcp
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import httpx
from callers import PASSWORD, guest_client
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from frameport.local import LocalService

#: How long a test waits for a frame that must come before it fails (never asserted on).
RECEIVE_TIMEOUT = 30
#: The service's realtime limits, in windows long enough that no test run crosses into the
#: next one.
LIMITS = {"CONNECT /v1/realtime": (128, 3600), "MESSAGE /v1/realtime": (32, 3600)}


def realtime_url(
    svc: LocalService,
    params: Sequence[tuple[str, str]] | None = None,
    *,
    path: str = "/realtime",
    project: str | None = "",
) -> str:
    """`ws://…/v1/realtime?project=…&…`; `project=None` leaves the project out."""
    base = svc.endpoint.replace("http://", "ws://", 1) + path
    query: list[tuple[str, str]] = []
    if project is not None:
        query.append(("project", project or svc.project))
    query.extend(params or [])
    return f"{base}?{urlencode(query)}" if query else base


class Socket:
    """One realtime connection as a test drives it."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection

    def send(self, message: Any) -> None:
        if not isinstance(message, (str, bytes)):
            message = json.dumps(message, separators=(",", ":"))
        self.connection.send(message)

    def receive(self) -> dict[str, Any]:
        frame = self.connection.recv(timeout=RECEIVE_TIMEOUT)
        decoded: dict[str, Any] = json.loads(frame)
        return decoded

    def request(self, message: Any) -> dict[str, Any]:
        """Send a message and receive the next frame (its reply, when nothing else is due)."""
        self.send(message)
        return self.receive()

    def until_pong(self) -> list[dict[str, Any]]:
        """Every frame sent to this connection until now (see the module's docstring)."""
        self.send({"type": "ping"})
        frames = []
        while (frame := self.receive()) != {"type": "pong"}:
            frames.append(frame)
        return frames

    def events(self) -> list[dict[str, Any]]:
        """The `data` of every event frame sent until now; any other frame fails."""
        frames = self.until_pong()
        assert all(frame["type"] == "event" for frame in frames), frames
        return [frame["data"] for frame in frames]

    def subscribe(
        self, subscription_id: str, channels: Sequence[str], queries: Sequence[str] = ()
    ) -> dict[str, Any]:
        item: dict[str, Any] = {"subscriptionId": subscription_id, "channels": list(channels)}
        if queries:
            item["queries"] = list(queries)
        reply = self.request({"type": "subscribe", "data": [item]})
        assert reply["type"] == "response" and reply["data"]["success"], reply
        return reply

    def closed_with(self) -> int | None:
        """The close code the service closed with, once the frames before it are read."""
        try:
            while True:
                self.connection.recv(timeout=RECEIVE_TIMEOUT)
        except ConnectionClosed as closed:
            return None if closed.rcvd is None else closed.rcvd.code


@contextmanager
def socket(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    max_size: int | None = None,
    **options: Any,
) -> Iterator[Socket]:
    """A connection to `url`; `options` go to the client's `connect` (`sock`, `max_queue`)."""
    with connect(
        url, additional_headers=dict(headers or {}), open_timeout=RECEIVE_TIMEOUT,
        max_size=max_size or 2**24, compression=None, **options,
    ) as connection:  # fmt: skip
        yield Socket(connection)


def tcp_connection(
    svc: LocalService, source: str = "127.0.0.1", receive_buffer: int | None = None
) -> tcp.socket:
    """A TCP connection to the service from the loopback address `source` (any 127.x.y.z
    works on Linux, so a test can be several clients), with a small receive buffer when
    `receive_buffer` is given (set before connecting, so the window stays small)."""
    connection = tcp.socket(tcp.AF_INET, tcp.SOCK_STREAM)
    if receive_buffer is not None:
        connection.setsockopt(tcp.SOL_SOCKET, tcp.SO_RCVBUF, receive_buffer)
    connection.bind((source, 0))
    host, port = svc.endpoint.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)
    connection.connect((host, int(port)))
    return connection


@contextmanager
def connected(
    svc: LocalService,
    params: Sequence[tuple[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
    **options: Any,
) -> Iterator[tuple[Socket, dict[str, Any]]]:
    """A connection and the `data` of its `connected` frame."""
    with socket(realtime_url(svc, params, **options), headers) as ws:
        first = ws.receive()
        assert first["type"] == "connected", first
        yield ws, first["data"]


def query(method: str, attribute: str | None = None, values: Sequence[Any] = ()) -> str:
    """A query string as the web SDK writes it (`attribute`, not `column`)."""
    body: dict[str, Any] = {"method": method}
    if attribute is not None:
        body["attribute"] = attribute
    body["values"] = list(values)
    return json.dumps(body)


def session_of(svc: LocalService, user_id: str) -> str:
    """An encoded session of `user_id` (the value of its session cookie)."""
    with guest_client(svc) as client:
        response = client.post(
            "/account/sessions/email",
            json={"email": f"{user_id}@example.org", "password": PASSWORD},
        )
        assert response.status_code == 201, response.text
        value = client.cookies.get(f"a_session_{svc.project}")
    assert value
    return value


def jwt_of(admin: httpx.Client, user_id: str) -> str:
    """A JWT of `user_id`, minted with the API key as a server-side pipeline would."""
    response = admin.post(f"/users/{user_id}/jwts", json={})
    assert response.status_code == 201, response.text
    token: str = response.json()["jwt"]
    return token
