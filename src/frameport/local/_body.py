"""Reading a request's body within bounds, once its project, caller and route are known.

What one request may take, whatever it sends:

- Parameters (a JSON body, form fields, any part kept in memory): the service's body limit
  (`ServiceConfig.max_body_size`: 16 MiB unless `LocalService(max_body_size=...)` or
  ``frameport serve --max-body-size`` sets another) in all and `MAX_FIELDS` fields, with or
  without a `Content-Length`; more is 413 `general_payload_too_large` with the error body. A
  JSON body is decoded off the event loop within the limits of `wire._json` (what its text
  may decode into).
- The route's file part (the two upload routes): streamed to a file in the route's staging
  directory, never to memory, at most the `FileTarget`'s limit; a longer part is the route's
  own error. A body announcing more than that in `Content-Length` is refused before a byte is
  read.

A refused body is not read: the answer goes out at once, and the server drops the rest of
the body as it arrives (uvicorn reads and discards what follows a complete response).
"""

from __future__ import annotations

import io
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import parse_qsl

from anyio import to_thread
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.datastructures import Headers, UploadFile
from starlette.requests import Request

from .service.uploads._chunks import FileTarget
from .wire import _json as request_json
from .wire._errors import ServiceError

MAX_FIELDS = 1000
#: Bytes of a file part gathered before they are written out (off the event loop).
WRITE_BLOCK = 1024 * 1024


class PayloadTooLarge(ServiceError):
    """413: the parameters are over the limit (answered as the service's proxy does: the statuses
    the service passes through have no 413; service interface, "Errors")."""

    def __init__(self, detail: str) -> None:
        message = f"{detail} Send less per request (e.g. fewer rows at a time)."
        super().__init__("general_payload_too_large", message)
        self.code, self.message = 413, message


def _over_the_limit(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The request body is larger than {limit:,} bytes.")


@dataclass
class RequestBody:
    """The parameters a body carried, as (name, value) pairs; a file part is an `UploadFile`.

    `close` closes the file parts and deletes the files written for them that are still in
    place (a handler moves the one it keeps).
    """

    pairs: list[tuple[str, Any]] = field(default_factory=list)
    written: list[UploadFile] = field(default_factory=list)

    def close(self) -> None:
        for part in self.written:
            part.file.close()
            Path(part.file.name).unlink(missing_ok=True)


async def read_body(
    request: Request, target: FileTarget | None = None, *, limit: int
) -> RequestBody:
    """The body of `request` within the bounds above, `limit` bytes of parameters (GET and
    HEAD have none)."""
    if request.method in ("GET", "HEAD"):
        return RequestBody()
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        return await _MultipartReader(request, target, limit).read()
    raw = await read_limited_body(request, limit)
    if content_type.startswith("application/x-www-form-urlencoded"):
        return RequestBody(_form_pairs(raw))
    if not raw.strip():
        return RequestBody()
    return RequestBody(await to_thread.run_sync(_json_pairs, raw))


def _declared_length(request: Request) -> int | None:
    declared = request.headers.get("content-length", "")
    return int(declared) if declared.isdigit() and len(declared) < 20 else None


async def read_limited_body(request: Request, limit: int) -> bytearray:
    """The whole body, or PayloadTooLarge once it passes `limit` bytes."""
    declared = _declared_length(request)
    if declared is not None and declared > limit:
        raise _over_the_limit(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _over_the_limit(limit)
    return body


def _form_pairs(raw: bytearray) -> list[tuple[str, Any]]:
    try:
        pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except ValueError:  # more fields than max_num_fields
        raise _too_many_fields() from None
    return list(pairs)


def _too_many_fields() -> ServiceError:
    return ServiceError(
        "general_bad_request", f"The form has more than {MAX_FIELDS} fields: send fewer."
    )


def _json_pairs(raw: bytearray) -> list[tuple[str, Any]]:
    try:
        body = request_json.loads(raw)
    except request_json.JSONTooLarge as exc:
        raise ServiceError(
            "general_bad_request",
            f"The request body holds more than a body of its size may ({exc}). Send fewer "
            "objects or arrays per request.",
        ) from None
    except ValueError:
        raise ServiceError(
            "general_bad_request", "The request body is not valid JSON. Send a JSON object."
        ) from None
    if not isinstance(body, dict):
        raise ServiceError("general_bad_request", "The request body must be a JSON object.")
    return list(body.items())


def _malformed(detail: str) -> ServiceError:
    return ServiceError("general_bad_request", f"Malformed form: {detail}")


class _MultipartReader:
    """A multipart body parsed as it streams in (python-multipart's push parser): fields and
    other parts into memory within the parameter budget, the target's part to its file."""

    def __init__(self, request: Request, target: FileTarget | None, limit: int) -> None:
        self.request, self.target = request, target
        self.body = RequestBody()
        self.limit = self.budget = limit
        self.fields = 0
        self.header_name = self.header_value = b""
        self.part_headers: list[tuple[bytes, bytes]] = []
        self.name: str | None = None
        self.filename: str | None = None
        self.data = bytearray()
        self.to_file = False
        self.file: BinaryIO | None = None  # the target's part, once it has begun
        self.file_size = 0
        self.pending = bytearray()
        self.charset = "utf-8"

    async def read(self) -> RequestBody:
        _, options = parse_options_header(self.request.headers.get("content-type"))
        boundary = options.get(b"boundary")
        if not boundary:
            raise _malformed("the Content-Type has no boundary.")
        self.charset = options.get(b"charset", b"utf-8").decode("latin-1")
        limit = self.limit + (self.target.limit if self.target else 0)
        declared = _declared_length(self.request)
        if declared is not None and declared > limit:
            raise self.target.too_long() if self.target else _over_the_limit(self.limit)
        try:
            parser = MultipartParser(boundary, self._callbacks())
            async for chunk in self.request.stream():
                parser.write(chunk)
                if len(self.pending) >= WRITE_BLOCK:
                    await self._write_pending()
            parser.finalize()
            await self._write_pending()
        except BaseException as exc:
            self.body.close()
            if isinstance(exc, FormParserError):
                raise _malformed(str(exc)) from None
            raise
        if self.file is not None:
            self.file.seek(0)
        return self.body

    def _callbacks(self) -> Any:
        return {
            "on_part_begin": self._begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
        }

    def _spend(self, size: int) -> None:
        self.budget -= size
        if self.budget < 0:
            raise _over_the_limit(self.limit)

    def _begin(self) -> None:
        self.part_headers, self.name, self.filename = [], None, None
        self.data, self.to_file = bytearray(), False

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._spend(end - start)
        self.header_name += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._spend(end - start)
        self.header_value += data[start:end]

    def _header_end(self) -> None:
        self.part_headers.append((self.header_name.lower(), self.header_value))
        self.header_name = self.header_value = b""

    def _headers_finished(self) -> None:
        self.fields += 1
        if self.fields > MAX_FIELDS:
            raise _too_many_fields()
        _, options = parse_options_header(dict(self.part_headers).get(b"content-disposition"))
        if b"name" not in options:
            raise _malformed('a part has no Content-Disposition "name".')
        self.name = self._text(options[b"name"])
        self.filename = self._text(options[b"filename"]) if b"filename" in options else None
        target = self.target
        if self.filename is None or target is None or self.name != target.field:
            return
        if self.file is not None:
            raise _malformed(f"send one `{target.field}` part.")
        target.directory.mkdir(parents=True, exist_ok=True)
        written = tempfile.NamedTemporaryFile(dir=target.directory, delete=False)  # noqa: SIM115
        self.file = cast(BinaryIO, written)
        self.to_file = True

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if not self.to_file:
            self._spend(end - start)
            self.data += data[start:end]
            return
        assert self.target is not None  # only the target's part goes to a file
        self.file_size += end - start
        if self.file_size > self.target.limit:
            raise self.target.too_long()
        self.pending += data[start:end]

    def _part_end(self) -> None:
        assert self.name is not None  # set once a part's headers are read
        headers = Headers(raw=self.part_headers)
        if self.to_file:
            assert self.file is not None
            part = UploadFile(
                self.file, size=self.file_size, filename=self.filename, headers=headers
            )
            self.body.written.append(part)
        elif self.filename is not None:  # a file part the route does not store
            kept = io.BytesIO(self.data)
            part = UploadFile(kept, size=len(self.data), filename=self.filename, headers=headers)
        else:
            self.body.pairs.append((self.name, self._text(bytes(self.data))))
            return
        self.body.pairs.append((self.name, part))

    async def _write_pending(self) -> None:
        if self.pending and self.file is not None:
            block, self.pending = bytes(self.pending), bytearray()
            await to_thread.run_sync(self.file.write, block)

    def _text(self, raw: bytes) -> str:
        try:
            return raw.decode(self.charset, "replace")
        except LookupError:  # an unknown charset
            return raw.decode("latin-1")
