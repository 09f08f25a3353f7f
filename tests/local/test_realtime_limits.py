"""The limits of the realtime socket over real WebSockets: sockets per address and in total,
the connect and message limits, subscriptions and channels, the bound on frames a slow reader
leaves unread; roles that follow the user while a socket is open; disabled tables; and what
the log never shows (service interface, "Realtime connections", "Realtime events")."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from callers import create_user, guest_client, key_client, session_client
from realtime_helpers import (
    LIMITS,
    connected,
    jwt_of,
    realtime_url,
    socket,
    tcp_connection,
)
from served import PROJECT, served
from tablesdb_helpers import create_database, create_table, ok
from websockets.exceptions import ConnectionClosed

from frameport.local import LocalService

COLUMNS = [
    {"key": "text", "type": "string", "size": 64, "required": False},
    {"key": "note", "type": "string", "size": 10_000, "required": False},
]
TABLES = {
    "open": ['read("any")'],
    "crew": ['read("team:crew")'],
    "vip": ['read("label:vip")'],
    "cy": ['read("user:cy")'],
    "dee": ['read("user:dee")'],
}


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService(rate_limit_overrides=LIMITS) as svc:
        yield svc


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, "live")
        for table, permissions in TABLES.items():
            create_table(client, "live", table, COLUMNS, permissions=permissions)
        create_table(client, "live", "off", COLUMNS, permissions=['read("any")'], enabled=False)
        body = {"databaseId": "dark", "name": "dark", "enabled": False}
        ok(client.post("/tablesdb", json=body), 201)
        create_table(client, "dark", "lit", COLUMNS, permissions=['read("any")'])
        for user in ("amy", "cy", "dee"):
            create_user(service, user)
        ok(client.post("/teams", json={"teamId": "crew", "name": "crew"}), 201)
        yield client


def rows(table: str, database: str = "live") -> str:
    return f"/tablesdb/{database}/tables/{table}/rows"


def channel(table: str) -> str:
    return f"tablesdb.live.tables.{table}.rows"


def error(code: int, message: str) -> dict[str, Any]:
    return {"type": "error", "data": {"code": code, "message": message}}


def write(admin: httpx.Client, table: str, row_id: str, database: str = "live") -> None:
    ok(admin.post(rows(table, database), json={"rowId": row_id, "data": {"text": row_id}}), 201)


def cookie_of(client: httpx.Client, service: LocalService) -> dict[str, str]:
    value = client.cookies.get(f"a_session_{service.project}")
    assert value
    return {"Cookie": f"a_session_{service.project}={value}"}


def closed_code(ws: Any) -> int | None:
    """The close code of a socket the service has closed, read as the next thing it sends
    (fails at once when it sends a frame instead)."""
    with pytest.raises(ConnectionClosed) as closed:
        ws.receive()
    return None if closed.value.rcvd is None else closed.value.rcvd.code


# --- sockets per address and in total --------------------------------------------------------

TOO_MANY_SOCKETS = (
    "Too many realtime connections: the service holds at most {} at once. Try again later."
)
TOO_MANY_FROM_ADDRESS = (
    "Too many realtime connections from this address: at most {} may be open at once. "
    "Close one before opening another."
)


def test_sockets_beyond_the_socket_cap_are_refused_while_http_keeps_answering() -> None:
    # By default sockets take at most half the connections: 12 of 24 here.
    with LocalService(max_connections=24) as svc, ExitStack() as stack:
        firsts = []
        for _ in range(30):
            ws = stack.enter_context(socket(realtime_url(svc)))
            firsts.append(ws.receive())
            if firsts[-1]["type"] == "error":
                assert closed_code(ws) == 1013
        with guest_client(svc) as client:
            for _ in range(3):
                assert client.get("/health/version").status_code == 200
        assert [first["type"] for first in firsts] == ["connected"] * 12 + ["error"] * 18
        assert firsts[-1] == error(1013, TOO_MANY_SOCKETS.format(12))


def test_sockets_are_capped_per_address_and_in_total() -> None:
    with LocalService(max_sockets=5, max_sockets_per_ip=3) as svc, ExitStack() as stack:

        def first_frame(source: str) -> dict[str, Any]:
            sock = tcp_connection(svc, source)
            return stack.enter_context(socket(realtime_url(svc), sock=sock)).receive()

        from_one = [first_frame("127.0.0.1") for _ in range(4)]
        assert [frame["type"] for frame in from_one] == ["connected"] * 3 + ["error"]
        assert from_one[-1] == error(1013, TOO_MANY_FROM_ADDRESS.format(3))
        from_two = [first_frame("127.0.0.2") for _ in range(3)]
        assert [frame["type"] for frame in from_two] == ["connected"] * 2 + ["error"]
        assert from_two[-1] == error(1013, TOO_MANY_SOCKETS.format(5))


def test_a_socket_cap_at_or_above_the_connection_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="max_sockets"):
        LocalService(max_connections=20, max_sockets=20).start()


def test_the_129th_connect_from_one_address_is_refused_whatever_the_path() -> None:
    with LocalService(rate_limit_overrides=LIMITS) as svc:
        for index in range(128):
            with socket(realtime_url(svc, path=f"/realtime/{index % 3 * 'x'}")) as ws:
                assert ws.receive()["type"] == "connected"
        with socket(realtime_url(svc, path="/realtime/another-path")) as ws:
            assert ws.receive() == error(1013, "Too many requests")
            assert closed_code(ws) == 1013


# --- messages --------------------------------------------------------------------------------


def test_a_socket_over_its_message_limit_is_closed_with_1013(service: LocalService) -> None:
    with connected(service) as (ws, _):
        for _ in range(33):
            ws.send({"type": "ping"})
        with suppress(ConnectionClosed):
            ws.send({"type": "ping"})  # never answered
        assert [ws.receive() for _ in range(32)] == [{"type": "pong"}] * 32
        assert ws.receive() == error(1013, "Too many messages.")
        assert closed_code(ws) == 1013


def test_an_invalid_utf8_text_frame_closes_with_1007_and_logs_no_traceback(
    service: LocalService, caplog: pytest.LogCaptureFixture
) -> None:
    server_log = logging.getLogger("uvicorn.error")
    server_log.addHandler(caplog.handler)
    try:
        with connected(service) as (ws, _):
            ws.connection.send(b"\xff\xfe", text=True)
            assert closed_code(ws) == 1007
    finally:
        server_log.removeHandler(caplog.handler)
    assert [record for record in caplog.records if record.exc_info] == []


# --- subscriptions and channels --------------------------------------------------------------

TOO_MANY_SUBSCRIPTIONS = (
    "A connection holds at most {} subscriptions; unsubscribe some before subscribing to more."
)
TOO_MANY_CHANNELS = (
    "A subscription lists at most {} channels; split them over several subscriptions."
)


def subscribe_message(items: list[tuple[str, list[str]]]) -> dict[str, Any]:
    data = [{"subscriptionId": sid, "channels": channels} for sid, channels in items]
    return {"type": "subscribe", "data": data}


def test_a_socket_holds_at_most_100_subscriptions_and_an_event_names_only_its_matches(
    service: LocalService, admin: httpx.Client
) -> None:
    with connected(service) as (ws, _):
        at_cap = [(f"s{i}", [f"{channel('open')}.r{i}"]) for i in range(100)]
        reply = ws.request(subscribe_message(at_cap))
        assert reply["type"] == "response" and len(reply["data"]["subscriptions"]) == 100
        one_more = ws.request(subscribe_message([("s100", ["rows"])]))
        assert one_more == error(1003, TOO_MANY_SUBSCRIPTIONS.format(100))
        more_channels = [f"c{i}" for i in range(100)]
        assert ws.request(subscribe_message([("s0", more_channels)])) == error(
            1003, TOO_MANY_CHANNELS.format(100)
        )
        write(admin, "open", "r7")
        (event,) = ws.events()
        assert event["subscriptions"] == ["s7"]
        unsubscribed = ws.request({"type": "unsubscribe", "data": [{"subscriptionId": "s1"}]})
        assert unsubscribed["type"] == "response"
        assert ws.request(subscribe_message([("s100", ["rows"])]))["type"] == "response"


def test_the_subscription_and_channel_caps_are_settable_and_hold_for_the_url() -> None:
    with LocalService(max_subscriptions=2, max_channels=2) as svc:
        url_channels = [("channels[]", name) for name in ("rows", "files", "documents")]
        with socket(realtime_url(svc, url_channels)) as ws:
            assert ws.receive() == error(1008, TOO_MANY_CHANNELS.format(2))
            assert closed_code(ws) == 1008
        with connected(svc) as (ws, _):
            three = [("a", ["rows"]), ("b", ["rows"]), ("c", ["rows"])]
            assert ws.request(subscribe_message(three)) == error(
                1003, TOO_MANY_SUBSCRIPTIONS.format(2)
            )
            assert ws.request(subscribe_message(three[:2]))["type"] == "response"


# --- a slow reader ---------------------------------------------------------------------------


def test_a_socket_that_stops_reading_is_closed_once_its_unsent_frames_pass_the_bound(
    service: LocalService, admin: httpx.Client
) -> None:
    # A small receive window and a client that buffers one frame: unread frames pile up in
    # the service. Each event carries a 10,000-character column; 1 MiB is the bound.
    url = realtime_url(service, [("channels[]", channel("open"))])
    sock = tcp_connection(service, receive_buffer=4096)
    with socket(url, sock=sock, max_queue=1) as ws:
        assert ws.receive()["type"] == "connected"
        note = "x" * 10_000
        for batch in range(4):
            batch_rows = [{"$id": f"w{batch}-{i}", "note": note} for i in range(100)]
            ok(admin.post(rows("open"), json={"rows": batch_rows}), 201)
        with pytest.raises(ConnectionClosed):
            ws.until_pong()
    with connected(service, [("channels[]", channel("open"))]) as (ws, _):
        write(admin, "open", "after-the-slow-reader")
        assert [event["payload"]["$id"] for event in ws.events()] == ["after-the-slow-reader"]


# --- roles follow the user -------------------------------------------------------------------


def test_roles_follow_memberships_under_an_open_socket(
    service: LocalService, admin: httpx.Client
) -> None:
    with session_client(service, "amy") as amy:
        headers = cookie_of(amy, service)
    with connected(service, [("channels[]", channel("crew"))], headers) as (ws, _):
        write(admin, "crew", "before-joining")
        body = {"userId": "amy", "roles": ["member"]}
        membership = ok(admin.post("/teams/crew/memberships", json=body), 201)
        write(admin, "crew", "a-member")
        admin.delete(f"/teams/crew/memberships/{membership['$id']}").raise_for_status()
        write(admin, "crew", "after-leaving")
        assert [event["payload"]["$id"] for event in ws.events()] == ["a-member"]


def test_roles_follow_labels_under_an_open_socket(
    service: LocalService, admin: httpx.Client
) -> None:
    with session_client(service, "amy") as amy:
        headers = cookie_of(amy, service)
    with connected(service, [("channels[]", channel("vip"))], headers) as (ws, _):
        ok(admin.put("/users/amy/labels", json={"labels": ["vip"]}))
        write(admin, "vip", "labelled")
        ok(admin.put("/users/amy/labels", json={"labels": []}))
        write(admin, "vip", "label-removed")
        assert [event["payload"]["$id"] for event in ws.events()] == ["labelled"]


SESSION_ENDED = "The session of this connection has ended. Sign in again and reconnect."


def test_deleting_the_session_closes_the_sockets_it_authenticated(
    service: LocalService, admin: httpx.Client
) -> None:
    params = [("channels[]", channel("cy"))]
    with session_client(service, "cy") as cy, ExitStack() as stack:
        by_cookie, _ = stack.enter_context(connected(service, params, cookie_of(cy, service)))
        token = [("jwt", jwt_of(admin, "cy")), *params]
        by_jwt, _ = stack.enter_context(connected(service, token))
        write(admin, "cy", "signed-in")
        for ws in (by_cookie, by_jwt):
            assert [event["payload"]["$id"] for event in ws.events()] == ["signed-in"]
        cy.delete("/account/sessions/current").raise_for_status()
        write(admin, "cy", "signed-out")
        for ws in (by_cookie, by_jwt):
            assert ws.receive() == error(401, SESSION_ENDED)
            assert closed_code(ws) == 1008


def test_blocking_the_user_closes_their_sockets(service: LocalService, admin: httpx.Client) -> None:
    with session_client(service, "dee") as dee:
        headers = cookie_of(dee, service)
    with connected(service, [("channels[]", channel("dee"))], headers) as (ws, _):
        ok(admin.patch("/users/dee/status", json={"status": False}))
        write(admin, "dee", "while-blocked")
        assert ws.receive() == error(401, "The current user has been blocked.")
        assert closed_code(ws) == 1008


# --- disabled tables -------------------------------------------------------------------------


def test_rows_of_a_disabled_table_or_database_send_no_events(
    service: LocalService, admin: httpx.Client
) -> None:
    with connected(service, [("channels[]", "rows")]) as (ws, _):
        write(admin, "off", "in-a-disabled-table")
        write(admin, "lit", "in-a-disabled-database", database="dark")
        write(admin, "open", "in-an-enabled-table")
        assert [event["payload"]["$id"] for event in ws.events()] == ["in-an-enabled-table"]


# --- the access log --------------------------------------------------------------------------


def test_the_access_log_masks_realtime_jwts(tmp_path: Path) -> None:
    token = "eyJhbGciOiJIUzI1NiJ9.not-logged.signature"
    log = tmp_path / "serve.log"
    unbuffered = {"PYTHONUNBUFFERED": "1"}
    with served(tmp_path / "data", unbuffered, log=log, options=["--access-log"]) as svc:
        ws_url = svc.endpoint.replace("http://", "ws://", 1)
        with socket(f"{ws_url}/realtime?project={PROJECT}&jwt={token}") as ws:
            assert ws.receive()["data"]["code"] == 401
        httpx.get(f"{svc.endpoint}/health/version?jwt={token}&project={PROJECT}")
        text = log.read_text()
    assert f"WebSocket /v1/realtime?project={PROJECT}&jwt=***" in text
    assert f"GET /v1/health/version?jwt=***&project={PROJECT}" in text
    assert token not in text and "not-logged" not in text


def test_a_thousand_idle_sockets_from_one_client_leave_http_answering() -> None:
    # The probe that made every request answer 503, on a service with its default limits: a
    # thousand sockets opened from one address and left idle, each on a path of its own.
    with LocalService() as svc, ExitStack() as held, guest_client(svc) as client:
        firsts = []
        for index in range(1000):
            with ExitStack() as attempt:
                ws = attempt.enter_context(socket(realtime_url(svc, path=f"/realtime/{index}")))
                firsts.append(ws.receive())
                if firsts[-1]["type"] == "connected":
                    held.enter_context(attempt.pop_all())  # kept open and idle
                else:
                    assert closed_code(ws) == 1013
            if index % 250 == 0:
                assert client.get("/health/version").status_code == 200
        assert client.get("/health/version").status_code == 200
        assert [first["type"] for first in firsts] == ["connected"] * 128 + ["error"] * 872


def test_serve_sets_the_socket_limits_from_its_flags(tmp_path: Path) -> None:
    flags = ["--max-sockets-per-ip", "2", "--max-channels", "1"]
    with served(tmp_path / "data", options=flags) as svc, ExitStack() as stack:
        url = f"{svc.endpoint.replace('http://', 'ws://', 1)}/realtime?project={PROJECT}"
        sockets = [stack.enter_context(socket(url)) for _ in range(3)]
        firsts = [ws.receive() for ws in sockets]
        assert [first["type"] for first in firsts] == ["connected", "connected", "error"]
        assert firsts[-1] == error(1013, TOO_MANY_FROM_ADDRESS.format(2))
        two_channels = subscribe_message([("s", ["rows", "files"])])
        assert sockets[0].request(two_channels) == error(1003, TOO_MANY_CHANNELS.format(1))
