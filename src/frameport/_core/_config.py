"""Client settings: environment variable names, defaults, and the checks of endpoint and timeout.

>>> normalized_endpoint("http://127.0.0.1:8080/v1/")
'http://127.0.0.1:8080/v1'
"""

from __future__ import annotations

import importlib.metadata
import math
import os
import platform
from pathlib import Path

import httpx

ENDPOINT_ENV = "FRAMEPORT_ENDPOINT"
PROJECT_ENV = "FRAMEPORT_PROJECT"
KEY_ENV = "FRAMEPORT_KEY"
JWT_ENV = "FRAMEPORT_JWT"

DEFAULT_HEADER_PREFIX = "X-Service-"
#: The response format this client was written against (sent when none is chosen).
RESPONSE_FORMAT = "1.9.5"
#: The port `frameport serve` listens on unless given another.
LOCAL_SERVICE_PORT = 8080
#: Seconds allowed for connecting; reads and writes get the client's `timeout`.
CONNECT_TIMEOUT = 10.0
CACHE_DIR_ENV = "FRAMEPORT_CACHE_DIR"


def normalized_endpoint(endpoint: str) -> str:
    """`endpoint` checked to be an http(s) URL without credentials, query or fragment, and
    without a trailing slash."""
    if not isinstance(endpoint, str):
        raise TypeError(f"endpoint is a URL string; got {type(endpoint).__name__}.")
    try:
        url = httpx.URL(endpoint)
    except httpx.InvalidURL as exc:
        raise ValueError(f"endpoint {endpoint!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(
            f"endpoint must be an http(s) URL such as http://127.0.0.1:8080/v1 (got {endpoint!r})."
        )
    if url.userinfo:
        raise ValueError("Do not put credentials in the endpoint URL; pass key= or jwt= instead.")
    if url.query or url.fragment:
        raise ValueError("The endpoint URL takes no query string or fragment.")
    return str(url).rstrip("/")


def checked_timeout(timeout: float | httpx.Timeout) -> httpx.Timeout:
    """`timeout` (seconds, or an ``httpx.Timeout`` with every part set) as an ``httpx.Timeout``
    whose connect part is at most `CONNECT_TIMEOUT`."""
    if isinstance(timeout, httpx.Timeout):
        limits = (timeout.connect, timeout.read, timeout.write, timeout.pool)
        if any(limit is None for limit in limits):
            raise ValueError("Every part of the timeout must be finite; none may be None.")
        return timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout is a number of seconds; got {type(timeout).__name__}.")
    if not (0 < timeout < math.inf):
        raise ValueError(f"timeout must be a finite number of seconds > 0 (got {timeout!r}).")
    return httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))


def credentials_from_env() -> tuple[str | None, str | None]:
    """(key, jwt) from FRAMEPORT_KEY, else FRAMEPORT_JWT: the key wins when both are set
    (`from_env`, the CLI, the fsspec filesystem and dask workers all read them so)."""
    key = os.environ.get(KEY_ENV) or None
    return key, None if key else os.environ.get(JWT_ENV) or None


def user_agent() -> str:
    """frameport's ``User-Agent``: its version, Python's and httpx's."""
    try:
        version = importlib.metadata.version("frameport")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"frameport/{version} python/{platform.python_version()} httpx/{httpx.__version__}"


def default_cache_dir() -> Path:
    """frameport's cache directory (not created here)."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen).expanduser()
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "frameport"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "frameport"
