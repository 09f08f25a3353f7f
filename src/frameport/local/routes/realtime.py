"""/v1/realtime: the service's realtime WebSocket, as its official web SDK speaks it
(service interface, "Realtime").

Every path starting with `/v1/realtime` is the same socket. The handshake takes the project
(`X-Service-Project`, else `?project=`), identifies the caller (`resolve_realtime_caller`),
counts the connect against 128 a minute per path and IP, and registers the channels of the
URL (`channels[]`, with per-channel slot queries) as subscriptions; then it answers
`connected`. Messages are JSON objects `{type, data}`: `ping`, `authentication`, `subscribe`
and `unsubscribe`, at most 32 a minute, each frame at most 64,000 bytes (uvicorn closes the
socket with 1009 beyond that). Rate limits and the frame limit are off under
`--no-rate-limits`; `rate_limit_overrides` sets the two rates under the names
`CONNECT /v1/realtime` and `MESSAGE /v1/realtime`.

An error is a frame `{"type":"error","data":{"code","message"}}`: 1003 for a malformed
message, 1008 for a policy violation, 1013 for too many messages or connects, or the HTTP
status of an authentication error. After a handshake error, and after a 1008 on a message,
the socket is closed, with the error's code as the close code where it is one (1003, 1008,
1013), else 1008 for a refused caller and 1011 for a failure of the service. Frames go out
through one queue per connection, so replies and events keep their order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..service._accounts import user_model
from ..service._caller import Caller
from ..service._identity import resolve_realtime_caller, session_caller
from ..service._realtime import (
    Subscriber,
    as_list,
    convert_channels,
    url_subscriptions,
)
from ..service._realtime_events import compact_json
from ..service._realtime_queries import (
    SubscriptionQueries,
    SubscriptionQueryError,
    parse_subscription_queries,
)
from ..service._state import ServiceState
from ..wire import _json as request_json
from ..wire._errors import ServiceError
from ..wire._params import UNIQUE, is_uid, nested_bracket_params, unique_id

logger = logging.getLogger("frameport.local.realtime")

REALTIME_PATH = "/v1/realtime{rest:path}"
MAX_FRAME_BYTES = 64_000
#: (limit, window seconds) of connects per path and IP, and of messages per connection, under
#: the names `LocalService(rate_limit_overrides=...)` sets them by.
CONNECT_LIMIT = ("CONNECT /v1/realtime", (128, 60))
MESSAGE_LIMIT = ("MESSAGE /v1/realtime", (32, 60))
MAX_SESSION_LENGTH = 2048
#: Frames waiting for a slow reader; past this the connection is closed with 1013.
MAX_QUEUED_FRAMES = 10_000

FORMAT_INVALID, POLICY_VIOLATION, TOO_MANY = 1003, 1008, 1013
_CLOSE_CODES = frozenset({FORMAT_INVALID, POLICY_VIOLATION, TOO_MANY})
_SERVER_ERROR = "Error: Server Error"


class RealtimeError(Exception):
    """An error frame: `code` is a realtime code (1003, 1008, 1013) or an HTTP status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def from_service(cls, error: ServiceError) -> RealtimeError:
        return cls(error.code, error.message)

    def frame(self) -> str:
        return compact_json({"type": "error", "data": {"code": self.code, "message": self.message}})

    @property
    def close_code(self) -> int:
        if self.code in _CLOSE_CODES:
            return self.code
        return 1011 if self.code >= 500 else POLICY_VIOLATION


def _format_error(message: str) -> RealtimeError:
    return RealtimeError(FORMAT_INVALID, message)


def websocket_route(state: ServiceState) -> WebSocketRoute:
    """The realtime socket of the service whose state is `state`."""

    async def endpoint(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            connection, connected = await _handshake(websocket, state)
        except RealtimeError as error:
            await websocket.send_text(error.frame())
            await websocket.close(error.close_code)
            return
        await connection.serve(connected)

    return WebSocketRoute(REALTIME_PATH, endpoint)


# --- the handshake ---------------------------------------------------------------------------


async def _handshake(
    websocket: WebSocket, state: ServiceState
) -> tuple[RealtimeConnection, dict[str, Any]]:
    """Checks in the service's order: project, caller, connect limit, the URL's channels."""
    project = websocket.headers.get("X-Service-Project") or websocket.query_params.get("project")
    if project != state.config.project:
        raise RealtimeError(POLICY_VIOLATION, "Missing or unknown project ID")
    ip = websocket.client.host if websocket.client else ""
    try:
        caller = await run_in_threadpool(resolve_realtime_caller, state, websocket, project, ip)
    except ServiceError as error:
        raise RealtimeError.from_service(error) from None
    if not _within_limit(state, CONNECT_LIMIT, f"realtime-connect|{websocket.url.path}|{ip}"):
        raise RealtimeError(TOO_MANY, "Too many requests")
    connection = RealtimeConnection(websocket, state, caller, ip)
    params = nested_bracket_params(websocket.query_params.multi_items())
    requested = [item for item in as_list(params.get("channels", [])) if isinstance(item, str)]
    channels = convert_channels(requested, caller.user_id or "")
    mapping: dict[Any, str] = {}
    for slot, (names, texts) in url_subscriptions(channels, params).items():
        try:
            queries = parse_subscription_queries(texts)
        except SubscriptionQueryError as error:
            raise RealtimeError(POLICY_VIOLATION, error.message) from None
        mapping[slot] = unique_id()
        connection.subscriber.subscribe(mapping[slot], names, queries)
    slots_in_order = list(mapping) == list(range(len(mapping)))
    connected = {
        "channels": channels,
        "subscriptions": list(mapping.values())
        if slots_in_order
        else {str(slot): subscription for slot, subscription in mapping.items()},
        "user": connection.account(),
    }
    return connection, connected


def _within_limit(state: ServiceState, limit: tuple[str, tuple[int, int]], key: str) -> bool:
    """Count one hit on `key`; False when over the limit and rate limits are on."""
    name, default = limit
    count, period = state.config.rate_limit_overrides.get(name, default)
    return state.limiter.hit(key, count, period).allowed or not state.config.rate_limits


# --- one connection --------------------------------------------------------------------------

_CLOSE = object()


class RealtimeConnection:
    """An accepted realtime socket: its caller, its `Subscriber` in the hub, its outbox."""

    def __init__(self, websocket: WebSocket, state: ServiceState, caller: Caller, ip: str) -> None:
        self.websocket = websocket
        self.state = state
        self.caller = caller
        self.ip = ip
        self.outbox: asyncio.Queue[Any] = asyncio.Queue()
        self.subscriber = Subscriber(caller.roles, caller.user_id or "", self._queue)
        self._message_counter = f"realtime-messages|{unique_id()}"
        self._handlers: Mapping[str, Callable[[Any], Any]] = {
            "ping": self._ping,
            "authentication": self._authentication,
            "subscribe": self._subscribe,
            "unsubscribe": self._unsubscribe,
        }

    def account(self) -> dict[str, Any] | None:
        return None if self.caller.user is None else user_model(self.caller.user)

    def _queue(self, frame: str) -> None:
        """Queue a frame; a reader that lets MAX_QUEUED_FRAMES pile up is disconnected."""
        if self.outbox.qsize() < MAX_QUEUED_FRAMES:
            self.outbox.put_nowait(frame)
            return
        self.state.realtime.remove(self.subscriber)
        while not self.outbox.empty():
            self.outbox.get_nowait()
        self.outbox.put_nowait(TOO_MANY)
        self.outbox.put_nowait(_CLOSE)

    def _send(self, message: Mapping[str, Any]) -> None:
        self._queue(compact_json(message))

    async def serve(self, connected: Mapping[str, Any]) -> None:
        """Answer `connected`, then read messages until the socket closes."""
        hub = self.state.realtime
        writer = asyncio.create_task(self._write())
        hub.add(self.subscriber)
        self._send({"type": "connected", "data": connected})
        closing = False
        try:
            while not closing:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                closing = await self._answer(message)
        finally:
            hub.remove(self.subscriber)
            if not closing:
                writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)

    async def _write(self) -> None:
        close_code = 1000
        try:
            while True:
                frame = await self.outbox.get()
                if frame is _CLOSE:
                    await self.websocket.close(close_code)
                    return
                if isinstance(frame, int):
                    close_code = frame
                    continue
                await self.websocket.send_text(frame)
        except (WebSocketDisconnect, RuntimeError, OSError):
            return  # the client went away; its frames are lost, as on the service

    async def _answer(self, message: Mapping[str, Any]) -> bool:
        """Handle one message; True when the socket is to be closed."""
        try:
            reply = await self._handle(message)
        except RealtimeError as error:
            self._queue(error.frame())
            if error.code == POLICY_VIOLATION:
                self.outbox.put_nowait(POLICY_VIOLATION)
                self.outbox.put_nowait(_CLOSE)
                return True
            return False
        except Exception:
            logger.exception("realtime message failed")
            self._queue(RealtimeError(500, _SERVER_ERROR).frame())
            return False
        if reply is not None:
            self._send(reply)
        return False

    async def _handle(self, message: Mapping[str, Any]) -> Mapping[str, Any] | None:
        if not _within_limit(self.state, MESSAGE_LIMIT, self._message_counter):
            raise RealtimeError(TOO_MANY, "Too many messages.")
        decoded = _decoded(message)
        kind = decoded.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise _format_error("Message type is not valid.")
        result: Mapping[str, Any] | None = await handler(decoded)
        return result

    # -- the message types --------------------------------------------------------------------

    async def _ping(self, message: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"type": "pong"}

    async def _authentication(self, message: Mapping[str, Any]) -> Mapping[str, Any]:
        """Become the session's user: new roles for every subscription
        (service interface, "Realtime connections")."""
        data = message.get("data")
        if not isinstance(data, dict) or "session" not in data:
            raise _format_error("Payload is not valid. Session is required")
        session = data["session"]
        if not isinstance(session, str) or not 1 <= len(session) <= MAX_SESSION_LENGTH:
            raise _format_error(
                "session: Value must be a valid string and at least 1 chars and no longer "
                f"than {MAX_SESSION_LENGTH} chars"
            )
        try:
            caller = await run_in_threadpool(session_caller, self.state, session, self.ip)
        except ServiceError as error:
            raise RealtimeError.from_service(error) from None
        if caller is None or caller.user is None:
            raise _format_error("Session is not valid.")
        if self.caller.impersonator_id is not None:
            raise _format_error("Cannot re-authenticate on an impersonated connection.")
        self.caller = caller
        self.subscriber.reauthenticate(caller.roles, caller.user_id or "")
        data = {"to": "authentication", "success": True, "user": self.account()}
        return {"type": "response", "data": data}

    async def _subscribe(self, message: Mapping[str, Any]) -> Mapping[str, Any]:
        """Add subscriptions; an ID in use gains the channels; all or nothing
        (service interface, "Realtime messages")."""
        items = _items(message, _subscribe_problem)
        parsed: list[tuple[str, list[str], SubscriptionQueries]] = []
        for item in items:
            subscription_id = item.get("subscriptionId") or unique_id()
            try:
                queries = parse_subscription_queries(as_list(item.get("queries", [])))
            except SubscriptionQueryError as error:
                raise _format_error(error.message) from None
            channels = convert_channels(item["channels"], self.subscriber.user_id)
            parsed.append((subscription_id, channels, queries))
        for subscription_id, channels, queries in parsed:
            self.subscriber.subscribe(subscription_id, channels, queries)
        subscriptions = [
            {"subscriptionId": subscription_id, "channels": channels, "queries": list(q.texts)}
            for subscription_id, channels, q in parsed
        ]
        data = {"to": "subscribe", "success": True, "subscriptions": subscriptions}
        return {"type": "response", "data": data}

    async def _unsubscribe(self, message: Mapping[str, Any]) -> Mapping[str, Any]:
        items = _items(message, _unsubscribe_problem)
        results = [
            {"subscriptionId": item["subscriptionId"],
             "removed": self.subscriber.unsubscribe(item["subscriptionId"])}
            for item in items
        ]  # fmt: skip
        data = {"to": "unsubscribe", "success": True, "subscriptions": results}
        return {"type": "response", "data": data}


# --- reading messages ------------------------------------------------------------------------


def _decoded(message: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object of a text or binary frame; 1003 when it is none with `type` or `data`."""
    text = message.get("text")
    if text is None:
        try:
            text = (message.get("bytes") or b"").decode()
        except UnicodeDecodeError:
            raise _format_error("Message format is not valid.") from None
    try:
        decoded = request_json.loads(text)
    except ValueError:
        raise _format_error("Message format is not valid.") from None
    if not isinstance(decoded, dict) or ("type" not in decoded and "data" not in decoded):
        raise _format_error("Message format is not valid.")
    return decoded


def _list(value: Any) -> list[Any] | None:
    """A JSON array as the service's language sees one: an empty object counts, as does an
    object keyed "0", "1", ... in order."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and list(value) == [str(i) for i in range(len(value))]:
        return list(value.values())
    return None


def _items(message: Mapping[str, Any], problem: Callable[[list[Any]], str | None]) -> list[Any]:
    """The list `data` of a subscribe or unsubscribe message, checked by `problem`."""
    data = message.get("data")
    if data is None:
        raise _format_error("Payload is not valid. Items is required")
    items = _list(data)
    found = "Payload is not valid." if items is None else problem(items)
    if items is None or found is not None:
        raise _format_error(f"items: {found}")
    return [item if isinstance(item, dict) else {} for item in items]


def _subscribe_problem(items: list[Any]) -> str | None:
    for item in items:
        if not isinstance(item, (dict, list)):
            return "Each subscribe payload must be an object."
        payload = item if isinstance(item, dict) else {}
        if "subscriptionId" in payload:
            given = payload["subscriptionId"]
            if given != UNIQUE and not is_uid(given):
                return "subscriptionId is not a valid id."
        if "channels" not in payload:
            return "channels is not present in payload."
        channels = _list(payload["channels"])
        if channels is None:
            return "channels is not a valid array."
        if not all(isinstance(channel, str) for channel in channels):
            return "channels must contain only strings."
        payload["channels"] = channels
        if "queries" in payload and _list(payload["queries"]) is None:
            return "queries is not a valid array."
    return None


def _unsubscribe_problem(items: list[Any]) -> str | None:
    for item in items:
        given = item.get("subscriptionId") if isinstance(item, dict) else None
        if not isinstance(given, str) or not given:
            return "Each unsubscribe payload must include a non-empty subscriptionId."
    return None
