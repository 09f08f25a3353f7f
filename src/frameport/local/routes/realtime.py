"""/v1/realtime: the service's realtime WebSocket, as its official web SDK speaks it
(service interface, "Realtime").

Every path starting with `/v1/realtime` is the same socket. A socket beyond the service's
cap, or beyond the cap for its address, is refused first (`RealtimeLimits`: sockets stay
below the HTTP connection cap, so HTTP keeps capacity they cannot take). The handshake takes
the project (`X-Service-Project`, else `?project=`), counts the connect against 128 a minute
per address (whatever the path after `/v1/realtime`), identifies the caller
(`resolve_realtime_caller`), and registers the channels of the URL (`channels[]`, with
per-channel slot queries) as subscriptions; then it answers `connected`. Messages are JSON
objects `{type, data}`: `ping`, `authentication`, `subscribe` and `unsubscribe`, at most 32 a
minute (the next one closes the socket with 1013, unanswered), each frame at most 64,000
bytes (uvicorn closes the socket with 1009 beyond that). A socket holds at most
`max_subscriptions` subscriptions of at most `max_channels` channels each. Rate limits and
the frame limit are off under `--no-rate-limits`; `rate_limit_overrides` sets the two rates
under the names `CONNECT /v1/realtime` and `MESSAGE /v1/realtime`.

An error is a frame `{"type":"error","data":{"code","message"}}`: 1003 for a malformed
message, 1008 for a policy violation, 1013 for too many messages, connects or sockets, or
the HTTP status of an authentication error. After a handshake error, after a 1008 or 1013 on
a message, and when the user's session ends or the user is blocked, the socket is closed,
with the error's code as the close code where it is one (1003, 1008, 1013), else 1008 for a
refused caller and 1011 for a failure of the service. Frames go out in order through one
queue per connection, so replies and events keep their order: written at once while the
socket takes them, queued while it does not (a reader slower than its frames), and a reader
that leaves more than `max_outbox_bytes` of them unread is disconnected. A slow reader holds
up no one else: an event is written to every socket that takes it, and queued for the
others.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..service._identity import resolve_realtime_caller, session_caller
from ..service._state import ServiceState
from ..service.accounts._accounts import user_model
from ..service.accounts._caller import Caller
from ..service.realtime._events import compact_json
from ..service.realtime._hub import (
    Ending,
    RealtimeLimits,
    Subscriber,
    as_list,
    convert_channels,
    url_subscriptions,
)
from ..service.realtime._queries import (
    SubscriptionQueries,
    SubscriptionQueryError,
    parse_subscription_queries,
)
from ..wire import _json as request_json
from ..wire._errors import ServiceError
from ..wire._params import UNIQUE, is_uid, nested_bracket_params, unique_id

logger = logging.getLogger("frameport.local.realtime")

REALTIME_PATH = "/v1/realtime{rest:path}"
#: The scope extension through which the server lets the application abort a socket,
#: `{"abort": callable}` (`_connections.GuardedWebSocketProtocol` provides it).
ABORT_EXTENSION = "frameport.abort"
#: The scope extension through which the server writes text frames at once,
#: `{"send_texts": callable}` (see `_connections.GuardedWebSocketProtocol.send_texts`).
SEND_EXTENSION = "frameport.send_texts"
#: Characters of queued frames written at once when a socket takes frames again.
SEND_BATCH = 64 * 1024
MAX_FRAME_BYTES = 64_000
#: (limit, window seconds) of connects per IP, and of messages per connection, under the
#: names `LocalService(rate_limit_overrides=...)` sets them by.
CONNECT_LIMIT = ("CONNECT /v1/realtime", (128, 60))
MESSAGE_LIMIT = ("MESSAGE /v1/realtime", (32, 60))
MAX_SESSION_LENGTH = 2048
#: Seconds a closing socket has to take its last frames before it is aborted.
CLOSE_GRACE = 10.0

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
    sockets = OpenSockets(state.config.realtime)

    async def endpoint(websocket: WebSocket) -> None:
        ip = websocket.client.host if websocket.client else ""
        refusal = sockets.take(ip)
        await websocket.accept()
        if refusal is not None:
            await _refuse(websocket, refusal)
            return
        try:
            try:
                connection, connected = await _handshake(websocket, state, ip)
            except RealtimeError as error:
                await _refuse(websocket, error)
                return
            await connection.serve(connected)
        finally:
            sockets.release(ip)

    return WebSocketRoute(REALTIME_PATH, endpoint)


async def _refuse(websocket: WebSocket, error: RealtimeError) -> None:
    """Send the error frame, then close with its code (a client already gone is no error)."""
    with suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.send_text(error.frame())
        await websocket.close(error.close_code)


class OpenSockets:
    """The realtime sockets open now, in total and by address, against their caps (counted
    on the event loop, from before the handshake until the socket closes)."""

    def __init__(self, limits: RealtimeLimits) -> None:
        if limits.max_sockets is None:
            raise ValueError("max_sockets is set when the service starts (see _server)")
        self.total_cap = limits.max_sockets
        self.address_cap = limits.max_sockets_per_ip
        self.total = 0
        self.by_address: Counter[str] = Counter()

    def take(self, address: str) -> RealtimeError | None:
        """Count a new socket from `address`, or the error that refuses it."""
        if self.total >= self.total_cap:
            return RealtimeError(
                TOO_MANY,
                f"Too many realtime connections: the service holds at most {self.total_cap} "
                "at once. Try again later.",
            )
        if self.by_address[address] >= self.address_cap:
            return RealtimeError(
                TOO_MANY,
                "Too many realtime connections from this address: at most "
                f"{self.address_cap} may be open at once. Close one before opening another.",
            )
        self.total += 1
        self.by_address[address] += 1
        return None

    def release(self, address: str) -> None:
        self.total -= 1
        self.by_address[address] -= 1
        if not self.by_address[address]:
            del self.by_address[address]


# --- the handshake ---------------------------------------------------------------------------


async def _handshake(
    websocket: WebSocket, state: ServiceState, ip: str
) -> tuple[RealtimeConnection, dict[str, Any]]:
    """Checks in order: project, connect limit (one count per address, whatever the path),
    caller, the URL's channels."""
    project = websocket.headers.get("X-Service-Project") or websocket.query_params.get("project")
    if project != state.config.project:
        raise RealtimeError(POLICY_VIOLATION, "Missing or unknown project ID")
    if not _within_limit(state, CONNECT_LIMIT, f"realtime-connect|{ip}"):
        raise RealtimeError(TOO_MANY, "Too many requests")
    try:
        caller = await run_in_threadpool(resolve_realtime_caller, state, websocket, project, ip)
    except ServiceError as error:
        raise RealtimeError.from_service(error) from None
    connection = RealtimeConnection(websocket, state, caller, ip)
    params = nested_bracket_params(websocket.query_params.multi_items())
    requested = [item for item in as_list(params.get("channels", [])) if isinstance(item, str)]
    channels = convert_channels(requested, caller.user_id or "")
    slots = url_subscriptions(channels, params)
    _check_room(
        state.config.realtime,
        {},
        [(str(slot), names) for slot, (names, _) in slots.items()],
        POLICY_VIOLATION,
    )
    mapping: dict[Any, str] = {}
    for slot, (names, texts) in slots.items():
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


def _check_room(
    limits: RealtimeLimits,
    held: Mapping[str, Mapping[str, Any]],
    added: list[tuple[str, list[str]]],
    code: int,
) -> None:
    """RealtimeError `code` unless a connection holding `held` (ID → channels) can add the
    subscriptions `added` (ID, channels; an ID in use gains its channels) within the caps."""
    after = {sid: set(held.get(sid, ())) for sid, _ in added}
    for subscription_id, channels in added:
        after[subscription_id].update(channels)
    if len(held) + sum(sid not in held for sid in after) > limits.max_subscriptions:
        raise RealtimeError(
            code,
            f"A connection holds at most {limits.max_subscriptions} subscriptions; "
            "unsubscribe some before subscribing to more.",
        )
    if any(len(channels) > limits.max_channels for channels in after.values()):
        raise RealtimeError(
            code,
            f"A subscription lists at most {limits.max_channels} channels; split them over "
            "several subscriptions.",
        )


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
        self.outbox: deque[Any] = deque()
        self._outbox_bytes = 0
        self._wake = asyncio.Event()
        self._in_flight = False
        extension = websocket.scope.get("extensions", {}).get(SEND_EXTENSION)
        self._send_texts: Callable[[list[str]], bool] | None = (
            None if extension is None else extension["send_texts"]
        )
        self._closing = False
        self._grace: asyncio.TimerHandle | None = None
        self.subscriber = Subscriber(caller, self._queue, self._end)
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
        """Send a frame, written at once when nothing is waiting before it and the socket
        takes it, else queued (none once the socket is closing); a reader that leaves more
        than `max_outbox_bytes` unread is disconnected at once: its frames are dropped and
        the socket aborted, since a close frame would wait behind the unread ones."""
        if self._closing or (not self.outbox and self._write_now([frame])):
            return
        self._outbox_bytes += len(frame)
        if self._outbox_bytes <= self.state.config.realtime.max_outbox_bytes:
            self._put(frame)
            return
        self._closing = True
        self.state.realtime.remove(self.subscriber)
        self.outbox.clear()
        self._outbox_bytes = 0
        if not self._abort():
            self._put(TOO_MANY)
            self._put(_CLOSE)

    def _put(self, item: Any) -> None:
        self.outbox.append(item)
        self._wake.set()

    def _write_now(self, frames: list[str]) -> bool:
        """Write `frames` at once, unless a frame is being sent before them or the socket
        takes no more for now; whether they were written."""
        return not self._in_flight and self._send_texts is not None and self._send_texts(frames)

    def _abort(self) -> bool:
        """Abort the socket where the server allows it (see `_connections`); whether it did."""
        extension = self.websocket.scope.get("extensions", {}).get(ABORT_EXTENSION)
        if extension is None:
            return False
        extension["abort"]()
        return True

    def _close_after(self, error: RealtimeError) -> None:
        """Queue `error`'s frame, then the close with its code; nothing is queued after. The
        socket has `CLOSE_GRACE` seconds to take them, then it is aborted."""
        self._queue(error.frame())
        if not self._closing:
            self._closing = True
            self._put(error.close_code)
            self._put(_CLOSE)
            self._grace = asyncio.get_running_loop().call_later(CLOSE_GRACE, self._abort)

    def _end(self, ending: Ending) -> None:
        """Close the socket with an error: the hub has dropped it (its user changed)."""
        self._close_after(RealtimeError(*ending))

    def _send(self, message: Mapping[str, Any]) -> None:
        self._queue(compact_json(message))

    async def serve(self, connected: Mapping[str, Any]) -> None:
        """Answer `connected`, then read messages until the socket closes."""
        hub = self.state.realtime
        writer = asyncio.create_task(self._write())
        hub.add(self.subscriber)
        self._send({"type": "connected", "data": connected})
        try:
            while not self._closing:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                await self._answer(message)
        finally:
            hub.remove(self.subscriber)
            if not self._closing:
                writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            if self._grace is not None:
                self._grace.cancel()

    async def _write(self) -> None:
        """Send the queued frames in order: as many at once as the socket takes, else one
        through ASGI, which waits until the socket takes it; then the close, if queued."""
        close_code = 1000
        try:
            while True:
                if not self.outbox:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                first = self.outbox[0]
                if first is _CLOSE:
                    await self.websocket.close(close_code)
                    return
                if isinstance(first, int):
                    close_code = self.outbox.popleft()
                    continue
                batch = self._leading_frames()
                if self._write_now(batch):
                    for frame in batch:
                        self.outbox.popleft()
                        self._outbox_bytes -= len(frame)
                    continue
                self.outbox.popleft()
                self._outbox_bytes -= len(first)
                self._in_flight = True
                try:
                    await self.websocket.send_text(first)
                finally:
                    self._in_flight = False
        except (WebSocketDisconnect, RuntimeError, OSError):
            return  # the client went away; its frames are lost, as on the service

    def _leading_frames(self) -> list[str]:
        """The text frames at the head of the outbox, up to `SEND_BATCH` characters (at least
        one frame)."""
        batch: list[str] = []
        size = 0
        for item in self.outbox:
            if not isinstance(item, str) or (batch and size + len(item) > SEND_BATCH):
                break
            batch.append(item)
            size += len(item)
        return batch

    async def _answer(self, message: Mapping[str, Any]) -> None:
        """Handle one message; a policy violation or one message too many closes the socket."""
        try:
            reply = await self._handle(message)
        except RealtimeError as error:
            if error.code in (POLICY_VIOLATION, TOO_MANY):
                self._close_after(error)
            else:
                self._queue(error.frame())
            return
        except Exception:
            logger.exception("realtime message failed")
            self._queue(RealtimeError(500, _SERVER_ERROR).frame())
            return
        if reply is not None:
            self._send(reply)

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
        self.subscriber.reauthenticate(caller)
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
        added = [(subscription_id, channels) for subscription_id, channels, _ in parsed]
        _check_room(
            self.state.config.realtime, self.subscriber.subscriptions, added, FORMAT_INVALID
        )
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
            {
                "subscriptionId": item["subscriptionId"],
                "removed": self.subscriber.unsubscribe(item["subscriptionId"]),
            }
            for item in items
        ]
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
