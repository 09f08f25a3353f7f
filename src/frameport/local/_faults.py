"""Fault injection (off by default): refuse a request, or apply it and drop the answer.

At `rate`, per request, the service either refuses before changing anything (the connection
dropped, a 500, a 503, or a 429 with `Retry-After: 1`) or runs the request and then drops the
connection before answering. Every fault is logged on `frameport.local.faults` with the
request line and kept in `FaultInjector.injected`, so tests can count them.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .wire._errors import ERROR_HEADERS, SERVER_ERROR_MESSAGE, error_body

logger = logging.getLogger("frameport.local.faults")

REFUSALS = ("drop", "500", "503", "429")
APPLIED = "apply_then_drop"
KINDS = (*REFUSALS, APPLIED)


@dataclass(frozen=True)
class InjectedFault:
    """One fault the local service injected: its `kind` ("drop", "500", "503" or "429",
    refused before any change; "apply_then_drop", applied and then the connection dropped)
    and the `request_line` it hit."""

    kind: str
    request_line: str

    @property
    def applied(self) -> bool:
        """Whether the request's change was applied before the connection was dropped."""
        return self.kind == APPLIED


def parse_fault_spec(spec: str) -> tuple[float, int | None]:
    """`"0.2"` or `"0.2:7"` → (rate, seed); raises ValueError with what to write instead."""
    rate_text, _, seed_text = spec.partition(":")
    try:
        rate = float(rate_text)
        seed = int(seed_text) if seed_text else None
    except ValueError:
        raise ValueError(
            f"faults must look like RATE or RATE:SEED, e.g. 0.2:7 (got {spec!r})"
        ) from None
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"the fault rate must be between 0 and 1 (got {rate})")
    return rate, seed


class FaultInjector:
    """ASGI middleware around the service's app."""

    def __init__(self, app: ASGIApp, rate: float, seed: int | None) -> None:
        self.app = app
        self.rate = rate
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.injected: list[InjectedFault] = []

    def _draw(self) -> str | None:
        with self._lock:
            if self._random.random() >= self.rate:
                return None
            return self._random.choice(KINDS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kind = self._draw()
        if kind is None:
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        line = f"{scope['method']} {scope['path']}{'?' + query if query else ''}"
        fault = InjectedFault(kind, line)
        self.injected.append(fault)
        logger.warning("fault %s %s", kind, line)
        if kind == APPLIED:
            await self.app(scope, receive, _discard)
            await _drop(send)
        elif kind == "drop":
            await _drop(send)
        else:
            await _refuse(send, int(kind))


async def _discard(message: Message) -> None:
    return None


async def _drop(send: Send) -> None:
    """Start a response and never finish it: the server closes the connection mid-answer.

    The client reads a status line and then a closed socket, which httpx reports as a
    transport error (`RemoteProtocolError`), never as a response. Returning (rather than
    raising) spares the server's log a traceback per fault.
    """
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", b"4096"), (b"content-type", b"application/json")],
        }
    )


#: Refusal status → the error type and message it is sent with (a 500 says `Server Error`:
#: service interface, "Errors").
_REFUSALS = {
    500: ("general_server_error", SERVER_ERROR_MESSAGE),
    503: ("general_server_error", "Injected fault: the service is unavailable. Try again."),
    429: ("general_rate_limit_exceeded", "Injected fault: too many requests. Try again."),
}


async def _refuse(send: Send, status: int) -> None:
    type_, message = _REFUSALS[status]
    body = json.dumps(error_body(type_, message, status)).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in ERROR_HEADERS.items()),
    ]
    if status == 429:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
