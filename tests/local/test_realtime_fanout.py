"""Fan-out over real WebSockets: a socket whose client stops reading holds up no other
socket, and once it reads again it gets every frame it was sent, events and replies in the
order they were sent (service interface, "Realtime events")."""

from __future__ import annotations

import json
import socket as tcp
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from callers import key_client
from realtime_helpers import LIMITS, connected, realtime_url, tcp_connection
from tablesdb_helpers import create_database, create_table, ok
from websockets.client import ClientProtocol
from websockets.frames import Frame
from websockets.http11 import Response
from websockets.uri import parse_uri

from frameport.local import LocalService

CHANNEL = "tablesdb.live.tables.open.rows"
ROWS = "/tablesdb/live/tables/open/rows"
NOTE = "x" * 10_000
#: Writes of 100 rows of 10,000 characters: 1 MB of frames to each subscriber per write.
WRITES = 6
#: Room for everything a socket that stops reading is sent here: the kernel and the
#: transport take the first megabytes, and the rest waits in the service.
OUTBOX_BYTES = 16 * 2**20


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService(rate_limit_overrides=LIMITS, max_outbox_bytes=OUTBOX_BYTES) as svc:
        yield svc


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, "live")
        columns = [{"key": "note", "type": "string", "size": 10_000, "required": False}]
        create_table(client, "live", "open", columns, permissions=['read("any")'])
        yield client


class StalledSocket:
    """A realtime connection whose client reads only when told to: it does the handshake,
    then leaves every frame in its small receive buffer until `receive`."""

    def __init__(self, connection: tcp.socket, url: str) -> None:
        self.connection = connection
        self.protocol = ClientProtocol(parse_uri(url), max_size=None)
        self.protocol.send_request(self.protocol.connect())
        self.frames: list[Frame] = []
        self._flush()
        while not self._read():
            pass

    def send(self, message: Any) -> None:
        self.protocol.send_text(json.dumps(message).encode())
        self._flush()

    def receive(self) -> dict[str, Any]:
        while not self.frames:
            self._read()
        decoded: dict[str, Any] = json.loads(bytes(self.frames.pop(0).data))
        return decoded

    def _read(self) -> bool:
        """Read once; whether the handshake's answer has come."""
        data = self.connection.recv(65536)
        assert data, "the service closed the socket"
        self.protocol.receive_data(data)
        answered = False
        for event in self.protocol.events_received():
            if isinstance(event, Response):
                assert event.status_code == 101, event
                answered = True
            elif isinstance(event, Frame):
                self.frames.append(event)
        self._flush()
        return answered or bool(self.frames)

    def _flush(self) -> None:
        self.connection.sendall(b"".join(self.protocol.data_to_send()))


def write_rows(admin: httpx.Client, prefix: str) -> list[str]:
    """`WRITES` writes of 100 big rows; the IDs of the rows, in the order of their events."""
    every = []
    for write in range(WRITES):
        ids = [f"{prefix}{write}-{index:02d}" for index in range(100)]
        ok(admin.post(ROWS, json={"rows": [{"$id": each, "note": NOTE} for each in ids]}), 201)
        every += ids
    return every


def test_a_socket_that_stops_reading_holds_up_no_other_and_loses_nothing_once_it_reads(
    service: LocalService, admin: httpx.Client
) -> None:
    url = realtime_url(service, [("channels[]", CHANNEL)])
    with (
        tcp_connection(service, receive_buffer=4096) as connection,
        connected(service, [("channels[]", CHANNEL)]) as (first, _),
        connected(service, [("channels[]", CHANNEL)]) as (second, _),
    ):
        stalled = StalledSocket(connection, url)
        assert stalled.receive()["type"] == "connected"
        before = write_rows(admin, "a")
        stalled.send({"type": "ping"})  # its pong is queued behind the events before it
        after = write_rows(admin, "b")

        # The readers have every event, in order, while `stalled` has read none of its own.
        for reader in (first, second):
            assert [event["payload"]["$id"] for event in reader.events()] == before + after

        frames = [stalled.receive() for _ in range(len(before) + 1 + len(after))]
        assert [frame["type"] for frame in frames] == ["event"] * len(before) + ["pong"] + [
            "event"
        ] * len(after)
        ids = [frame["data"]["payload"]["$id"] for frame in frames if frame["type"] == "event"]
        assert ids == before + after


def test_sockets_with_the_same_subscription_get_the_same_frame_and_each_its_own_ids(
    service: LocalService, admin: httpx.Client
) -> None:
    with (
        connected(service) as (one, _),
        connected(service) as (two, _),
        connected(service) as (three, _),
    ):
        one.subscribe("shared", [CHANNEL])
        two.subscribe("shared", [CHANNEL])
        three.subscribe("mine", [CHANNEL])
        three.subscribe("rows", ["rows"])
        ok(admin.post(ROWS, json={"rowId": "same", "data": {"note": "n"}}), 201)
        [for_one], [for_two], [for_three] = one.events(), two.events(), three.events()
        assert for_one == for_two
        assert for_one["subscriptions"] == ["shared"]
        assert for_three["subscriptions"] == ["mine", "rows"]
        assert {**for_three, "subscriptions": ["shared"]} == for_one
