"""Sending stored bytes: whole, or the span a `Range` header asks for
(service interface, "Downloads and previews").

Rules of the service: a missing end, or a span larger than 20,000,000 bytes, is cut to
10 MiB from the start (`end = min(start + 10 MiB - 1, size - 1)`); the unit must be `bytes`,
`start < end` and `end < size`, else 416 `storage_invalid_range`. A header the parser cannot
read counts as no range. `bytes=-N` (the last N bytes) is understood as well. Numbers are
read as the service's 64-bit integers (`header_integer`).

>>> requested_span("bytes=100-", 1000)
ByteSpan(start=100, end=999)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

from starlette.responses import StreamingResponse

from ...wire._errors import ServiceError
from ...wire._params import header_integer

READ_BUFFER = 20_000_000
MAX_OUTPUT_CHUNK = 10 * 1024 * 1024
_BLOCK = 1024 * 1024
_RANGE = re.compile(r"([A-Za-z]+)=([0-9]*)-([0-9]*)")


@dataclass(frozen=True)
class ByteSpan:
    """An inclusive byte span of a stored file."""

    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start + 1


def requested_span(header: str | None, size: int) -> ByteSpan | None:
    """The span `header` asks for under the service's rules; None for no usable range."""
    match = _RANGE.fullmatch(header.strip()) if header else None
    if match is None:
        return None
    unit, first, last = match.groups()
    if not first and not last:
        return None
    if first:
        start, end = header_integer(first), header_integer(last) if last else -1
    else:  # a suffix: the last N bytes
        start, end = max(size - header_integer(last), 0), size - 1
    if end < 0 or end - start > READ_BUFFER:
        end = min(start + MAX_OUTPUT_CHUNK - 1, size - 1)
    if unit != "bytes" or start >= end or end >= size:
        raise ServiceError(
            "storage_invalid_range",
            f"The requested range {header!r} is not satisfiable for {size} bytes: send "
            "`bytes=<start>-<end>` with start < end < size.",
        )
    return ByteSpan(start, end)


def content_disposition(kind: str, name: str) -> str:
    """`attachment; filename="..."` (or `inline`), with an RFC 5987 form for non-ASCII names."""
    printable = "".join(char for char in name if unicodedata.category(char)[0] != "C")
    quoted = printable.replace("\\", "\\\\").replace('"', '\\"')
    if quoted.isascii():
        return f'{kind}; filename="{quoted}"'
    fallback = quoted.encode("ascii", "replace").decode("ascii").replace("?", "_")
    return f"{kind}; filename=\"{fallback}\"; filename*=utf-8''{quote(printable)}"


def stored_bytes_response(
    path: Path,
    range_header: str | None,
    media_type: str,
    headers: Mapping[str, str],
) -> StreamingResponse:
    """200 with the whole file, or 206 with the requested span and its headers."""
    source = open(path, "rb")  # noqa: SIM115  (closed by the body iterator)
    size = path.stat().st_size
    try:
        span = requested_span(range_header, size)
    except ServiceError:
        source.close()
        raise
    sent = dict(headers)
    status = 200
    if span is None:
        span = ByteSpan(0, size - 1)
    else:
        status = 206
        sent["Accept-Ranges"] = "bytes"
        sent["Content-Range"] = f"bytes {span.start}-{span.end}/{size}"
    sent["Content-Length"] = str(span.length)
    return StreamingResponse(
        _read_span(source, span), status_code=status, media_type=media_type, headers=sent
    )


def _read_span(source: BinaryIO, span: ByteSpan) -> Iterator[bytes]:
    with source:
        source.seek(span.start)
        remaining = span.length
        while remaining > 0:
            block = source.read(min(_BLOCK, remaining))
            if not block:
                return
            remaining -= len(block)
            yield block
