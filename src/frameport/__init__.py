"""frameport: the service's tables and buckets as DataFrames, Arrow tables and Parquet files.

>>> import frameport as fp
>>> client = fp.Client("http://127.0.0.1:8080/v1", "demo", key="...")  # doctest: +SKIP
>>> people = client.table("crm", "people")  # doctest: +SKIP
>>> people.where(fp.col("age") > 30).to_pandas()  # doctest: +SKIP

`fp.local` (the local service) and `fp.widgets` (notebook widgets) are imported on first use,
so the client itself never loads Starlette or ipywidgets.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ._client import AsyncClient, Client
from ._exceptions import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    FilterError,
    FrameportError,
    FrameportWarning,
    ImpersonationIgnoredWarning,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TransportError,
)
from ._expr import Expr, col
from ._ids import ID
from ._permissions import Permission, Role
from ._transport import RetryPolicy

__version__ = "0.1.0"

_LAZY_SUBMODULES = ("local", "widgets")


def __getattr__(name: str) -> ModuleType:
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ID",
    "APIError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConflictError",
    "Expr",
    "FilterError",
    "FrameportError",
    "FrameportWarning",
    "ImpersonationIgnoredWarning",
    "NotFoundError",
    "Permission",
    "PermissionDeniedError",
    "RateLimitError",
    "RetryPolicy",
    "Role",
    "ServerError",
    "TransportError",
    "__version__",
    "col",
]
