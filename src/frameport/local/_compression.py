"""Compressed answers, by the service's rules (service interface, "Compression").

`CompressedAnswers` wraps the service's ASGI app. An answer is compressed when the route set
no `Content-Encoding`, it is not a file (no `Content-Disposition`), its type is textual
(JSON, text, HTML, XML, JavaScript, SVG; not CSV), its body is longer than 1024 bytes, and the
request's `Accept-Encoding` chooses an encoding (`choose_encoding`). The compressed answer
carries `Content-Encoding`, `Vary: Accept-Encoding` and the compressed `Content-Length`.

>>> choose_encoding("gzip, deflate, br")
'gzip'
>>> choose_encoding("gzip;q=0.5, zstd") , choose_encoding("*"), choose_encoding("identity, gzip")
('zstd', None, None)
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import brotli
import zstandard
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Bodies of at most this many bytes go plain.
MINIMUM_SIZE = 1024
#: Bodies longer than this are compressed in a worker thread, off the event loop (zlib,
#: zstd and brotli release the GIL while they work).
THREAD_FROM = 64 * 1024
COMPRESSIBLE_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "text/xml",
        "application/javascript",
        "text/javascript",
        "text/plain",
        "text/html",
        "text/css",
        "image/svg+xml",
    }
)


def _gzip(body: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(body) + compressor.flush()


def _raw_deflate(body: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(body) + compressor.flush()


def _zstd(body: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(body)


def _brotli(body: bytes) -> bytes:
    return bytes(brotli.compress(body, quality=4))


#: `Content-Encoding` → the compressor at the service's level; `identity` means none.
ENCODERS: dict[str, Callable[[bytes], bytes] | None] = {
    "zstd": _zstd,
    "br": _brotli,
    "gzip": _gzip,
    "deflate": _raw_deflate,
    "identity": None,
}


def _weight(parameters: list[str]) -> float:
    """The `q` of one entry: 1 when absent, 0 when not a number."""
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value.strip())
            except ValueError:
                return 0.0
    return 1.0


def choose_encoding(accept_encoding: str) -> str | None:
    """The encoding an `Accept-Encoding` value selects, None for no compression.

    The supported entries are sorted by `q`, highest first, keeping the client's order among
    equals; the first wins. `identity` winning means none; `*` is not understood; `q=0` is
    not a refusal, only the lowest rank.
    """
    entries = []
    for entry in accept_encoding.split(","):
        name, *parameters = entry.split(";")
        name = name.strip().lower()
        if name in ENCODERS:
            entries.append((name, _weight(parameters)))
    if not entries:
        return None
    chosen = sorted(entries, key=lambda entry: -entry[1])[0][0]
    return None if chosen == "identity" else chosen


def _compressible(headers: Headers) -> bool:
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    return (
        media_type in COMPRESSIBLE_TYPES
        and "content-encoding" not in headers
        and "content-disposition" not in headers
    )


class CompressedAnswers:
    """The ASGI layer that compresses the service's answers (see the module's rules)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        encoding = choose_encoding(Headers(scope=scope).get("accept-encoding", ""))
        if encoding is None:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        parts: list[bytes] = []

        async def hold(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if _compressible(Headers(raw=message["headers"])):
                    start = message
                else:
                    await send(message)
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                await self._send_whole(start, b"".join(parts), encoding, send)

        await self.app(scope, receive, hold)

    async def _send_whole(self, start: Message, body: bytes, encoding: str, send: Send) -> None:
        encode = ENCODERS[encoding]
        if len(body) > MINIMUM_SIZE and encode is not None:
            if len(body) > THREAD_FROM:
                body = await run_in_threadpool(encode, body)
            else:
                body = encode(body)
            headers = MutableHeaders(scope=start)
            headers["Content-Encoding"] = encoding
            headers["Content-Length"] = str(len(body))
            headers.add_vary_header("Accept-Encoding")
        await send(start)
        await send({"type": "http.response.body", "body": body})
