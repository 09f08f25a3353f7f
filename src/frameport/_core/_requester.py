"""`Requester`: what the engines (tables, storage, functions, transfers) need to talk to the
service. They type against this protocol, never against the client; `Connection` implements it.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import httpx

from ._auth import Credentials
from ._transport import ReadBack, RetryPolicy, Settle
from ._wire_encoding import WireEncoding


class Requester(Protocol):
    """Requests to one project with the client's credentials, retries and error mapping."""

    credentials: Credentials

    @property
    def endpoint(self) -> str: ...
    @property
    def project(self) -> str: ...
    @property
    def header_prefix(self) -> str: ...
    @property
    def response_format(self) -> str: ...
    @property
    def query_member(self) -> str | None: ...
    @property
    def retry(self) -> RetryPolicy: ...
    def header(self, name: str) -> str: ...
    def wire_encoding(self) -> WireEncoding: ...
    def query_member_for(self, path: str) -> str: ...
    def browser_url(self, path: str, params: Mapping[str, Any] | None = None) -> str: ...
    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Any = None,
        json: object = None,
        data: Mapping[str, Any] | None = None,
        files: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        read_back: str | ReadBack | None = None,
        settle: Settle | None = None,
        stream: bool = False,
        timeout: float | httpx.Timeout | None = None,
        authenticate: bool = True,
    ) -> httpx.Response: ...
    async def request_json(self, method: str, path: str, **options: Any) -> Any: ...
    async def request_bytes(self, method: str, path: str, **options: Any) -> bytes: ...
    def stream(
        self, method: str, path: str, **options: Any
    ) -> AbstractAsyncContextManager[httpx.Response]: ...
