"""A distant service, simulated: every answer waits a latency, every connection a bandwidth.

`DistanceSimulator` wraps the service's ASGI app. Per request it draws a delay uniformly from
``latency ± jitter`` and holds the answer's start back by it (the round trip of a service
that far away). With a bandwidth it paces both directions of each connection: the request
body is taken in, and the answer's body sent out, no faster than that many megabits per
second. HTTP/1.1 carries one request at a time per connection, so pacing each exchange paces
its connection.

>>> parse_latency("50:10")
Distance(latency=0.05, jitter=0.01)
>>> LocalService(latency="50:10", bandwidth=100)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from .service._state import ServiceConfig

PACING_CHUNK = 64 * 1024
"""Bytes sent (or taken in) between two pauses of a bandwidth-capped connection."""


@dataclass(frozen=True)
class Distance:
    """Seconds each answer waits: `latency` ± up to `jitter`."""

    latency: float
    jitter: float = 0.0


def parse_latency(spec: str | float) -> Distance:
    """`"50"`, `"50:10"` or `50` (milliseconds, then jitter in milliseconds) → a `Distance`;
    raises ValueError saying what to write instead."""
    text = str(spec)
    latency_text, _, jitter_text = text.partition(":")
    try:
        latency = float(latency_text)
        jitter = float(jitter_text) if jitter_text else 0.0
    except ValueError:
        raise ValueError(
            f"latency must look like MS or MS:JITTER_MS, e.g. 50:10 (got {text!r})"
        ) from None
    if not 0 <= jitter <= latency:
        raise ValueError(
            f"latency and jitter must be milliseconds >= 0, the jitter at most the latency "
            f"(got {text!r})"
        )
    return Distance(latency / 1000, jitter / 1000)


def check_bandwidth(megabits: float) -> float:
    """`megabits` (per second, per connection) if it is a positive number."""
    if isinstance(megabits, bool) or not isinstance(megabits, int | float) or megabits <= 0:
        raise ValueError(f"bandwidth must be megabits per second > 0 (got {megabits!r})")
    return float(megabits)


class _Pacer:
    """Lets `size` bytes through no faster than `bytes_per_second` since the first byte."""

    def __init__(self, bytes_per_second: float) -> None:
        self._rate = bytes_per_second
        self._started: float | None = None
        self._passed = 0

    async def wait_for(self, size: int) -> None:
        loop = asyncio.get_running_loop()
        if self._started is None:
            self._started = loop.time()
        self._passed += size
        due = self._started + self._passed / self._rate
        if due > loop.time():
            await asyncio.sleep(due - loop.time())


class DistanceSimulator:
    """ASGI middleware: the app's answers as if it were `distance` away, over connections of
    at most `bandwidth` megabits per second (None: no cap). `seed` fixes the jitter."""

    def __init__(
        self,
        app: ASGIApp,
        distance: Distance,
        bandwidth: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.app = app
        self.distance = distance
        self.bytes_per_second = None if bandwidth is None else check_bandwidth(bandwidth) * 1e6 / 8
        self._random = random.Random(seed)

    def delay(self) -> float:
        """The seconds the next answer waits."""
        latency, jitter = self.distance.latency, self.distance.jitter
        return max(0.0, latency + self._random.uniform(-jitter, jitter))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        delay = self.delay()
        rate = self.bytes_per_second
        incoming = None if rate is None else _Pacer(rate)
        outgoing = None if rate is None else _Pacer(rate)

        async def paced_receive() -> Message:
            message = await receive()
            if incoming is not None and message["type"] == "http.request":
                await incoming.wait_for(len(message.get("body", b"")))
            return message

        async def distant_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                await asyncio.sleep(delay)
            elif message["type"] == "http.response.body" and outgoing is not None:
                await _send_paced(send, message, outgoing)
                return
            await send(message)

        await self.app(scope, paced_receive, distant_send)


async def _send_paced(send: Send, message: Message, pacer: _Pacer) -> None:
    """`message` (a body part) sent in pieces of `PACING_CHUNK` bytes at the pacer's rate."""
    body: bytes = message.get("body", b"")
    more = bool(message.get("more_body", False))
    if not body:
        await send(message)
        return
    for start in range(0, len(body), PACING_CHUNK):
        piece = body[start : start + PACING_CHUNK]
        await pacer.wait_for(len(piece))
        last = start + PACING_CHUNK >= len(body)
        await send({"type": "http.response.body", "body": piece, "more_body": more or not last})


def check_distance(config: ServiceConfig) -> None:
    """Raise ValueError (saying what to write) when the config's latency or bandwidth is not
    one `DistanceSimulator` takes."""
    if config.latency is not None:
        parse_latency(config.latency)
    if config.bandwidth is not None:
        check_bandwidth(config.bandwidth)
