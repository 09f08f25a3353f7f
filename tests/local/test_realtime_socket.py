"""The realtime socket over real WebSockets: the handshake, authentication at connect and
in-band, the messages, malformed frames and the frame limit
(service interface, "Realtime connections", "Realtime messages"); the other limits are in
test_realtime_limits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from callers import create_user, key_client
from realtime_helpers import (
    LIMITS,
    connected,
    jwt_of,
    query,
    realtime_url,
    session_of,
    socket,
)
from tablesdb_helpers import create_database, create_table, ok

from frameport.local import LocalService

PRIVATE_ROWS = "/tablesdb/chat/tables/private/rows"
PUBLIC_ROWS = "/tablesdb/chat/tables/public/rows"


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService(rate_limit_overrides=LIMITS) as svc:
        yield svc


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, "chat")
        columns = [{"key": "text", "type": "string", "size": 64, "required": False}]
        create_table(client, "chat", "private", columns, permissions=['read("user:amy")'])
        create_table(client, "chat", "public", columns, permissions=['read("any")'])
        for user in ("amy", "bo"):
            create_user(service, user)
        create_user(service, "root", impersonator=True)
        yield client


def cookie(service: LocalService, user: str, suffix: str = "") -> dict[str, str]:
    return {"Cookie": f"a_session_{service.project}{suffix}={session_of(service, user)}"}


def error(code: int, message: str) -> dict[str, Any]:
    return {"type": "error", "data": {"code": code, "message": message}}


# --- the handshake ---------------------------------------------------------------------------


def test_connected_lists_the_url_channels_and_one_subscription_per_slot(
    service: LocalService,
) -> None:
    with connected(service) as (_, info):
        assert info == {"channels": [], "subscriptions": [], "user": None}
    params = [("channels[0]", "rows"), ("channels[1]", "files"), ("channels[2]", "account.x")]
    with connected(service, params, path="/realtime/any/path") as (ws, info):
        assert info["channels"] == ["rows", "files"] and info["user"] is None
        assert len(info["subscriptions"]) == 1
        assert ws.until_pong() == []
    slotted = [("channels[]", "rows"), ("rows[3][]", query("equal", "text", ["x"]))]
    with connected(service, slotted) as (_, info):
        assert list(info["subscriptions"]) == ["3"]


@pytest.mark.parametrize(
    ("params", "headers"),
    [([], {}), ([("project", "elsewhere")], {}), ([], {"X-Service-Project": "elsewhere"})],
)
def test_a_missing_or_unknown_project_is_a_policy_violation_that_closes(
    service: LocalService, params: list[tuple[str, str]], headers: dict[str, str]
) -> None:
    with socket(realtime_url(service, params, project=None), headers) as ws:
        assert ws.receive() == error(1008, "Missing or unknown project ID")
        assert ws.closed_with() == 1008


def test_the_project_header_wins_over_the_query(service: LocalService) -> None:
    header = {"X-Service-Project": service.project}
    with connected(service, [("project", "elsewhere")], header, project=None) as (_, info):
        assert info["channels"] == []


def test_an_invalid_url_query_is_a_policy_violation(service: LocalService) -> None:
    params = [("channels[]", "rows"), ("rows[0][]", query("contains", "text", ["x"]))]
    with socket(realtime_url(service, params)) as ws:
        assert ws.receive() == error(
            1008,
            "Invalid query: Query method 'contains' is not supported in Realtime queries. "
            "Allowed: equal, notEqual, lessThan, lessThanEqual, greaterThan, "
            "greaterThanEqual, isNull, isNotNull, and, or, select",
        )
        assert ws.closed_with() == 1008


# --- authentication at connect ---------------------------------------------------------------


def test_every_way_of_signing_in_at_connect(service: LocalService, admin: httpx.Client) -> None:
    session = session_of(service, "amy")
    ways: list[tuple[list[tuple[str, str]], dict[str, str]]] = [
        ([], {"Cookie": f"a_session_{service.project}={session}"}),
        ([], {"Cookie": f"a_session_{service.project}_legacy={session}"}),
        ([], {"X-Service-Session": session}),
        ([], {"X-Fallback-Cookies": json.dumps({f"a_session_{service.project}": session})}),
        ([], {"X-Service-JWT": jwt_of(admin, "amy")}),
        ([("jwt", jwt_of(admin, "amy"))], {}),
    ]
    for params, headers in ways:
        with connected(service, [("channels[]", "rows"), *params], headers) as (ws, info):
            assert info["user"]["$id"] == "amy", headers
            ok(admin.post(PRIVATE_ROWS, json={"data": {"text": "hi"}, "rowId": "unique()"}), 201)
            assert [event["payload"]["text"] for event in ws.events()] == ["hi"]


@pytest.mark.usefixtures("admin")  # its users
def test_the_first_source_wins(service: LocalService) -> None:
    headers = {**cookie(service, "amy"), "X-Service-Session": session_of(service, "bo")}
    with connected(service, headers=headers) as (_, info):
        assert info["user"]["$id"] == "amy"


def test_refused_credentials_answer_an_error_and_close(
    service: LocalService, admin: httpx.Client
) -> None:
    refused = [
        ({"X-Service-JWT": "not.a.jwt"}, 401),
        ({**cookie(service, "amy"), "X-Service-JWT": jwt_of(admin, "bo")}, 403),
        ({**cookie(service, "amy"), "X-Service-Key": "k", "X-Service-User": "amy"}, 403),
    ]
    for headers, code in refused:
        with socket(realtime_url(service), headers) as ws:
            frame = ws.receive()
            assert frame["type"] == "error" and frame["data"]["code"] == code, frame
            assert ws.closed_with() == 1008


@pytest.mark.usefixtures("admin")  # its users
def test_an_impersonator_connects_as_the_user_it_names(service: LocalService) -> None:
    headers = {**cookie(service, "root"), "X-Service-Impersonate-User-Id": "amy"}
    with connected(service, headers=headers) as (ws, info):
        assert info["user"]["$id"] == "amy"
        reply = ws.request(
            {"type": "authentication", "data": {"session": session_of(service, "bo")}}
        )
        assert reply == error(1003, "Cannot re-authenticate on an impersonated connection.")


# --- in-band authentication ------------------------------------------------------------------


def test_a_connection_that_authenticates_after_connecting_gets_the_users_events(
    service: LocalService, admin: httpx.Client
) -> None:
    params = [("channels[]", "rows"), ("channels[]", "account")]
    with connected(service, params) as (ws, info):
        assert info["user"] is None and info["channels"] == ["rows", "account"]
        ok(admin.post(PRIVATE_ROWS, json={"rowId": "before", "data": {"text": "a"}}), 201)
        ok(admin.post(PUBLIC_ROWS, json={"rowId": "public", "data": {"text": "b"}}), 201)
        assert [event["payload"]["$id"] for event in ws.events()] == ["public"]
        ws.subscribe("mine", ["account.update", "tablesdb.chat.tables.private.rows"])
        reply = ws.request(
            {"type": "authentication", "data": {"session": session_of(service, "amy")}}
        )
        assert reply["type"] == "response"
        assert reply["data"]["to"] == "authentication" and reply["data"]["success"] is True
        assert reply["data"]["user"]["$id"] == "amy"
        ok(admin.post(PRIVATE_ROWS, json={"rowId": "after", "data": {"text": "c"}}), 201)
        (event,) = ws.events()
        assert event["payload"]["$id"] == "after"
        assert event["subscriptions"] == [info["subscriptions"][0], "mine"]
        again = ws.request({"type": "subscribe", "data": [{"channels": ["account.delete"]}]})
        assert again["data"]["subscriptions"][0]["channels"] == ["account.amy.delete"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (None, "Payload is not valid. Session is required"),
        ({}, "Payload is not valid. Session is required"),
        ({"session": 5}, "session: Value must be a valid string and at least 1 chars and no "
                         "longer than 2048 chars"),
        ({"session": "x" * 2049}, "session: Value must be a valid string and at least 1 chars "
                                  "and no longer than 2048 chars"),
        ({"session": "bm90IGEgc2Vzc2lvbg"}, "Session is not valid."),
    ],
)  # fmt: skip
def test_a_bad_authentication_message_is_1003_and_the_socket_stays(
    service: LocalService, data: Any, message: str
) -> None:
    with connected(service) as (ws, _):
        sent: dict[str, Any] = {"type": "authentication"}
        if data is not None:
            sent["data"] = data
        assert ws.request(sent) == error(1003, message)
        assert ws.request({"type": "ping"}) == {"type": "pong"}


# --- subscribe and unsubscribe ---------------------------------------------------------------


def test_subscribe_is_additive_and_unsubscribe_keeps_the_socket(
    service: LocalService, admin: httpx.Client
) -> None:
    with connected(service) as (ws, _):
        first = ws.subscribe(
            "s1", ["tablesdb.chat.tables.public.rows"], [query("equal", "text", ["x"])]
        )
        assert first["data"]["subscriptions"] == [
            {"subscriptionId": "s1", "channels": ["tablesdb.chat.tables.public.rows"],
             "queries": ['{"method":"equal","attribute":"text","values":["x"]}']}
        ]  # fmt: skip
        ws.subscribe("s1", ["files"])
        generated = ws.request({"type": "subscribe", "data": [{"channels": ["rows"]}]})
        other = generated["data"]["subscriptions"][0]["subscriptionId"]
        assert generated["data"]["subscriptions"][0]["queries"] == []
        ok(admin.post(PUBLIC_ROWS, json={"rowId": "s-x", "data": {"text": "x"}}), 201)
        ok(admin.post(PUBLIC_ROWS, json={"rowId": "s-y", "data": {"text": "y"}}), 201)
        assert [event["subscriptions"] for event in ws.events()] == [["s1", other], [other]]
        reply = ws.request(
            {"type": "unsubscribe", "data": [{"subscriptionId": "s1"}, {"subscriptionId": "no"}]}
        )
        assert reply == {
            "type": "response",
            "data": {"to": "unsubscribe", "success": True, "subscriptions": [
                {"subscriptionId": "s1", "removed": True},
                {"subscriptionId": "no", "removed": False},
            ]},
        }  # fmt: skip
        ok(admin.post(PUBLIC_ROWS, json={"rowId": "s-z", "data": {"text": "x"}}), 201)
        assert [event["subscriptions"] for event in ws.events()] == [[other]]


def test_a_subscribe_with_a_bad_query_changes_nothing(
    service: LocalService, admin: httpx.Client
) -> None:
    with connected(service) as (ws, _):
        items = [
            {"subscriptionId": "good", "channels": ["rows"]},
            {"subscriptionId": "bad", "channels": ["rows"], "queries": [query("limit", None, [1])]},
        ]
        reply = ws.request({"type": "subscribe", "data": items})
        assert reply == error(
            1003,
            "Invalid query: Query method 'limit' is not supported in Realtime queries. "
            "Allowed: equal, notEqual, lessThan, lessThanEqual, greaterThan, "
            "greaterThanEqual, isNull, isNotNull, and, or, select",
        )
        select = [query("select", None, ["text"])]
        reply = ws.request(
            {"type": "subscribe", "data": [{"channels": ["rows"], "queries": select}]}
        )
        assert reply["data"]["code"] == 1003 and "select(" in reply["data"]["message"]
        ok(admin.post(PUBLIC_ROWS, json={"rowId": "q-1", "data": {"text": "x"}}), 201)
        assert ws.events() == []


# --- malformed frames ------------------------------------------------------------------------

INVALID_ITEMS = "items: {}"


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ("not json", "Message format is not valid."),
        ("[1, 2]", "Message format is not valid."),
        ("7", "Message format is not valid."),
        ('{"kind": "ping"}', "Message format is not valid."),
        (b"\xff\xfe", "Message format is not valid."),
        ('{"type": "dance"}', "Message type is not valid."),
        ('{"type": ["ping"]}', "Message type is not valid."),
        ('{"data": []}', "Message type is not valid."),
        ('{"type": "subscribe"}', "Payload is not valid. Items is required"),
        ('{"type": "subscribe", "data": "rows"}', "items: Payload is not valid."),
        ('{"type": "subscribe", "data": [5]}',
         "items: Each subscribe payload must be an object."),
        ('{"type": "subscribe", "data": [{}]}', "items: channels is not present in payload."),
        ('{"type": "subscribe", "data": [{"channels": "rows"}]}',
         "items: channels is not a valid array."),
        ('{"type": "subscribe", "data": [{"channels": [1]}]}',
         "items: channels must contain only strings."),
        ('{"type": "subscribe", "data": [{"channels": [], "queries": "x"}]}',
         "items: queries is not a valid array."),
        ('{"type": "subscribe", "data": [{"channels": [], "subscriptionId": "-x"}]}',
         "items: subscriptionId is not a valid id."),
        ('{"type": "subscribe", "data": [{"channels": ["rows"], "queries": ["{"]}]}',
         "Invalid query: Syntax error"),
        ('{"type": "unsubscribe"}', "Payload is not valid. Items is required"),
        ('{"type": "unsubscribe", "data": [{"subscriptionId": ""}]}',
         "items: Each unsubscribe payload must include a non-empty subscriptionId."),
    ],
)  # fmt: skip
def test_each_malformed_frame_is_a_1003_and_the_socket_stays_open(
    service: LocalService, frame: str | bytes, message: str
) -> None:
    with connected(service) as (ws, _):
        assert ws.request(frame) == error(1003, message)
        assert ws.request({"type": "ping"}) == {"type": "pong"}


def test_ping_answers_pong_without_data(service: LocalService) -> None:
    with connected(service) as (ws, _):
        ws.connection.send('{"type":"ping"}')
        assert ws.connection.recv(timeout=30) == '{"type":"pong"}'


# --- limits ----------------------------------------------------------------------------------


def test_frames_up_to_64000_bytes_are_read_and_a_longer_one_closes(service: LocalService) -> None:
    padding = 64_000 - len('{"type":"ping","data":""}')
    with connected(service) as (ws, _):
        assert ws.request({"type": "ping", "data": "x" * padding}) == {"type": "pong"}
        ws.send(json.dumps({"type": "ping", "data": "x" * (padding + 1)}, separators=(",", ":")))
        assert ws.closed_with() == 1009


def test_no_rate_limits_switches_the_realtime_limits_off() -> None:
    with LocalService(rate_limits=False) as relaxed:
        url = realtime_url(relaxed, path="/realtime/unlimited")
        for _ in range(129):
            with socket(url) as ws:
                assert ws.receive()["type"] == "connected"
        with connected(relaxed) as (ws, _):
            for _ in range(40):
                assert ws.request({"type": "ping"}) == {"type": "pong"}
            big = {"type": "ping", "data": "x" * 100_000}
            assert ws.request(big) == {"type": "pong"}
