"""frameport: the service's tables and buckets as DataFrames, Arrow tables and Parquet files.

>>> import frameport as fp
>>> client = fp.Client("http://127.0.0.1:8080/v1", "demo", key="...")  # doctest: +SKIP
>>> people = client.table("crm", "people")  # doctest: +SKIP
>>> people.where(fp.col("age") > 30).to_pandas()  # doctest: +SKIP

The exceptions are imported with the package; the other names together, on the first use of
any of them (`fp.Client`), and `fp.local` and `fp.widgets` each on its own first use. So the
client never loads Starlette or ipywidgets, and the `frameport` command chooses the process's
memory allocators before pyarrow loads.
"""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

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

if _TYPE_CHECKING:
    from ._backup import BackupReport, RestoreReport, VerifyReport
    from ._client import AsyncClient, Client
    from ._core import ID, RetryPolicy
    from ._core._permissions import Permission, Role
    from ._expr import Expr, col
    from ._functions import AsyncFunction, Deployment, Function
    from ._projects import copy, verify
    from ._schema import DTYPE_TABLE, SchemaProposal
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
    from ._tables.writes._infer import infer_schema

__version__ = "0.1.0"
"""This package's version (`frameport --version` prints it too)."""

_LAZY_SUBMODULES = ("local", "widgets")

_EXPORTED_FROM: dict[str, str] = {
    "BackupReport": "_backup",
    "RestoreReport": "_backup",
    "VerifyReport": "_backup",
    "AsyncClient": "_client",
    "Client": "_client",
    "ID": "_core",
    "RetryPolicy": "_core",
    "Permission": "_core._permissions",
    "Role": "_core._permissions",
    "Expr": "_expr",
    "col": "_expr",
    "AsyncFunction": "_functions",
    "Deployment": "_functions",
    "Function": "_functions",
    "copy": "_projects",
    "verify": "_projects",
    "DTYPE_TABLE": "_schema",
    "SchemaProposal": "_schema",
    "scan_table": "_sql",
    "sql": "_sql",
    "AsyncBucket": "_storage",
    "Bucket": "_storage",
    "File": "_storage",
    "AsyncTable": "_tables",
    "AsyncTableQuery": "_tables",
    "Table": "_tables",
    "TableQuery": "_tables",
    "explain_scans": "_tables",
    "ChangeReport": "_tables.writes",
    "UpdateOperator": "_tables.writes",
    "WriteReport": "_tables.writes",
    "append": "_tables.writes",
    "concat": "_tables.writes",
    "decrement": "_tables.writes",
    "divide": "_tables.writes",
    "increment": "_tables.writes",
    "infer_schema": "_tables.writes._infer",
    "multiply": "_tables.writes",
    "now": "_tables.writes",
    "prepend": "_tables.writes",
    "remove": "_tables.writes",
    "toggle": "_tables.writes",
}
"""The module defining each exported name that is imported on first use (of any of them)."""


def load_ipython_extension(ipython: _Any) -> None:
    """``%load_ext frameport``: adds the ``%%fpsql`` cell magic (see the polars, DuckDB and
    SQL guide)."""
    from ._ipython import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> _Any:
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name not in _EXPORTED_FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # All at once, as an eager import would: every exported class says frameport.X from here on.
    for exported, module in _EXPORTED_FROM.items():
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), exported)
        _present_as_frameport(value)
        globals()[exported] = value
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTED_FROM, *_LAZY_SUBMODULES})


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
    "SchemaProposal",
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
    "infer_schema",
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


def _present_as_frameport(value: _Any) -> None:
    """An exported class or function says ``frameport.Client``, not the private module, in
    reprs, tracebacks and documentation."""
    if isinstance(value, type) or callable(value):
        value.__module__ = __name__


for _name in __all__:
    if _name in globals():
        _present_as_frameport(globals()[_name])
