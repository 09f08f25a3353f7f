"""Reading a request body with a size limit, so no JSON body can take the memory.

A body longer than `MAX_BODY_BYTES` (multipart uploads aside: their parts are spooled to
disk) is refused with 413 and the error body, `general_payload_too_large`. The refused
bytes are read and dropped, never kept, so the client sees the answer rather than a reset
connection, and the service's memory does not grow with the body.
"""

from __future__ import annotations

from starlette.requests import Request

from .wire._errors import ServiceError

#: 16 MiB: a bulk write of 100 rows of 160 KB each still fits.
MAX_BODY_BYTES = 16 * 1024 * 1024


class PayloadTooLarge(ServiceError):
    """413: the body is over the limit (answered as the service's proxy does, not as §1.5's
    pass-through list would, which has no 413)."""

    def __init__(self, limit: int) -> None:
        message = (
            f"The request body is larger than {limit:,} bytes. Send less per request "
            "(e.g. fewer rows at a time)."
        )
        super().__init__("general_payload_too_large", message)
        self.code, self.message = 413, message


async def refuse_declared_oversize(request: Request, limit: int = MAX_BODY_BYTES) -> None:
    """PayloadTooLarge when the `Content-Length` header announces more than `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        await drain(request)
        raise PayloadTooLarge(limit)


async def read_limited_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body, or PayloadTooLarge once it passes `limit` bytes."""
    await refuse_declared_oversize(request, limit)
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            await drain(request)
            raise PayloadTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


async def drain(request: Request) -> None:
    """Read the rest of the body and drop it."""
    async for _ in request.stream():
        pass
