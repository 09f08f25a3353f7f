"""frameport: the service's tables and buckets as DataFrames, Arrow tables and Parquet files.

>>> import frameport as fp
>>> client = fp.Client("http://127.0.0.1:8080/v1", "demo", key="...")  # doctest: +SKIP
>>> people = client.table("crm", "people")  # doctest: +SKIP
>>> people.where(fp.col("age") > 30).to_pandas()  # doctest: +SKIP

`fp.local` (the local service) and `fp.widgets` (notebook widgets) are imported on first use,
so the client itself never loads Starlette or ipywidgets.
"""

import importlib as _importlib
from types import ModuleType as _ModuleType
from typing import Any as _Any

from ._backup import BackupReport, RestoreReport, VerifyReport
from ._client import AsyncClient, Client
from ._core import ID, RetryPolicy
from ._core._permissions import Permission, Role
from ._exceptions import (
    APIError,
    ArchiveError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    DeploymentError,
    DownloadVerificationError,
    FileFormatError,
    FilterError,
    FrameportError,
    FrameportWarning,
    ImpersonationIgnoredWarning,
    LoadError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ResumeError,
    RowDecodeError,
    RowsRejectedError,
    SchemaChangeError,
    ServerError,
    SQLError,
    TransportError,
    UploadVerificationError,
    VerificationError,
)
from ._expr import Expr, col
from ._functions import AsyncFunction, Deployment, Function
from ._projects import copy, verify
from ._schema import DTYPE_TABLE
from ._sql import scan_table, sql
from ._storage import AsyncBucket, Bucket, File
from ._tables import AsyncTable, AsyncTableQuery, Table, TableQuery, explain_scans
from ._tables.writes import (
    ChangeReport,
    UpdateOperator,
    WriteReport,
    append,
    concat,
    decrement,
    divide,
    increment,
    multiply,
    now,
    prepend,
    remove,
    toggle,
)

__version__ = "0.1.0"
"""This package's version (`frameport --version` prints it too)."""

_LAZY_SUBMODULES = ("local", "widgets")


def load_ipython_extension(ipython: _Any) -> None:
    """``%load_ext frameport``: adds the ``%%fpsql`` cell magic (see the polars, DuckDB and
    SQL guide)."""
    from ._ipython import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> _ModuleType:
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DTYPE_TABLE",
    "ID",
    "APIError",
    "ArchiveError",
    "AsyncBucket",
    "AsyncClient",
    "AsyncFunction",
    "AsyncTable",
    "AsyncTableQuery",
    "AuthenticationError",
    "BackupReport",
    "BadRequestError",
    "Bucket",
    "ChangeReport",
    "Client",
    "ConflictError",
    "Deployment",
    "DeploymentError",
    "DownloadVerificationError",
    "Expr",
    "File",
    "FileFormatError",
    "FilterError",
    "FrameportError",
    "FrameportWarning",
    "Function",
    "ImpersonationIgnoredWarning",
    "LoadError",
    "NotFoundError",
    "Permission",
    "PermissionDeniedError",
    "RateLimitError",
    "RestoreReport",
    "ResumeError",
    "RetryPolicy",
    "Role",
    "RowDecodeError",
    "RowsRejectedError",
    "SQLError",
    "SchemaChangeError",
    "ServerError",
    "Table",
    "TableQuery",
    "TransportError",
    "UpdateOperator",
    "UploadVerificationError",
    "VerificationError",
    "VerifyReport",
    "WriteReport",
    "__version__",
    "append",
    "col",
    "concat",
    "copy",
    "decrement",
    "divide",
    "explain_scans",
    "increment",
    "load_ipython_extension",
    "multiply",
    "now",
    "prepend",
    "remove",
    "scan_table",
    "sql",
    "toggle",
    "verify",
]


def _present_as_frameport() -> None:
    """Exported classes and functions say ``frameport.Client``, not the private module, in
    reprs, tracebacks and documentation."""
    for name in __all__:
        value = globals()[name]
        if isinstance(value, type) or callable(value):
            value.__module__ = __name__


_present_as_frameport()
