"""The ``Date`` header of every answer, read from the service's clock when the answer starts.

uvicorn's own header is refreshed once a second and can lag the clock rows are stamped by by
up to a second; a client that reads the service's time from it (a watermark of changed rows)
then reads again rows it had. The service's header is its clock, rounded down to the second.
"""

from __future__ import annotations

import email.utils
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from .service._clock import ServiceClock


class DatedAnswers:
    """`app` with a ``Date`` header from `clock` on each HTTP answer."""

    def __init__(self, app: ASGIApp, clock: ServiceClock) -> None:
        self.app = app
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def dated(message: Message) -> None:
            if message["type"] == "http.response.start":
                stamp = email.utils.formatdate(int(self.clock.now()), usegmt=True).encode()
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                message = {**message, "headers": [*headers, (b"date", stamp)]}
            await send(message)

        await self.app(scope, receive, dated)
