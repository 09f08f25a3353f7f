"""frameport: the service's tables and buckets as DataFrames, Arrow tables and Parquet files.

>>> import frameport as fp
>>> client = fp.Client("http://127.0.0.1:8080/v1", "demo", key="...")  # doctest: +SKIP
>>> people = client.table("crm", "people")  # doctest: +SKIP
>>> people.where(fp.col("age") > 30).to_pandas()  # doctest: +SKIP

The exceptions are imported with the package; the other names together, on the first use of
any of them (`fp.Client`), and `fp.local`, `fp.ray`, `fp.spark` and `fp.widgets` each on its
own first use. So the client never loads Starlette, Ray, pyspark or ipywidgets, and the
`frameport` command chooses the process's memory allocators before pyarrow loads.
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
    TransactionError,
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
    from ._tables import (
        AsyncTable,
        AsyncTableQuery,
        AsyncTransaction,
        AsyncTransactionQuery,
        AsyncTransactionTable,
        Table,
        TableQuery,
        Transaction,
        TransactionQuery,
        TransactionTable,
        explain_scans,
    )
    from ._tables.changes import AsyncChanges, AsyncLiveTable, Changes, ChangesStatus, LiveTable
    from ._tables.writes import ChangeReport, WriteReport
    from ._tables.writes._infer import infer_schema
    from ._tables.writes._operators import (
        UpdateOperator,
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

_LAZY_SUBMODULES = ("local", "ray", "spark", "widgets")

_EXPORTS = {
    "_backup": "BackupReport RestoreReport VerifyReport",
    "_client": "AsyncClient Client",
    "_core": "ID RetryPolicy",
    "_core._permissions": "Permission Role",
    "_expr": "Expr col",
    "_functions": "AsyncFunction Deployment Function",
    "_projects": "copy verify",
    "_schema": "DTYPE_TABLE SchemaProposal",
    "_sql": "scan_table sql",
    "_storage": "AsyncBucket Bucket File",
    "_tables": "AsyncTable AsyncTableQuery AsyncTransaction AsyncTransactionQuery "
    "AsyncTransactionTable Table TableQuery Transaction TransactionQuery TransactionTable "
    "explain_scans",
    "_tables.changes": "AsyncChanges AsyncLiveTable Changes ChangesStatus LiveTable",
    "_tables.writes": "ChangeReport WriteReport",
    "_tables.writes._infer": "infer_schema",
    "_tables.writes._operators": "UpdateOperator append concat decrement divide increment "
    "multiply now prepend remove toggle",
}
"""The names imported on first use (of any of them), by the module defining them."""
_EXPORTED = {name for names in _EXPORTS.values() for name in names.split()}


def load_ipython_extension(ipython: _Any) -> None:
    """``%load_ext frameport``: adds the ``%%fpsql`` cell magic (see the polars, DuckDB and
    SQL guide)."""
    from ._ipython import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> _Any:
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name not in _EXPORTED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # All at once, as an eager import would: every exported class says frameport.X from here on.
    for module, names in _EXPORTS.items():
        imported = _importlib.import_module(f"{__name__}.{module}")
        for exported in names.split():
            _present_as_frameport(value := getattr(imported, exported))
            globals()[exported] = value
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTED, *_LAZY_SUBMODULES})


__all__ = [
    "DTYPE_TABLE",
    "ID",
    "APIError",
    "ArchiveError",
    "AsyncBucket",
    "AsyncChanges",
    "AsyncClient",
    "AsyncFunction",
    "AsyncLiveTable",
    "AsyncTable",
    "AsyncTableQuery",
    "AsyncTransaction",
    "AsyncTransactionQuery",
    "AsyncTransactionTable",
    "AuthenticationError",
    "BackupReport",
    "BadRequestError",
    "Bucket",
    "ChangeReport",
    "Changes",
    "ChangesStatus",
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
    "LiveTable",
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
    "Transaction",
    "TransactionError",
    "TransactionQuery",
    "TransactionTable",
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
