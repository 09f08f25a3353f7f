"""Tables: the lazy query and its synchronous face (`_query`), the engine that reads it
(`read/`), and the features built on them, each in a room of its own: Parquet exports
(`export/`), the Delta Lake sync (`delta/`), polars frames and lazy scans (`polars/`), the
engines beyond one process (`engines/`: dask frames, Ray datasets), writes (`writes/`),
transactions over several tables' writes (`_transaction`), the Arrow stream (`_stream`) and
the page-at-a-time view of the table widget (`_browse`)."""

from ._admin import create_database, create_table, drop_database
from ._browse import PagePosition, TableBrowser, TablePage
from ._location import TableLocation
from ._query import AsyncTable, AsyncTableQuery, Table, TableQuery
from ._system import DEFAULT_SYSTEM, System, system_fields
from ._transaction import (
    AsyncTransaction,
    AsyncTransactionQuery,
    AsyncTransactionTable,
    Transaction,
    TransactionQuery,
    TransactionTable,
)
from .polars import explain_scans

__all__ = [
    "DEFAULT_SYSTEM",
    "AsyncTable",
    "AsyncTableQuery",
    "AsyncTransaction",
    "AsyncTransactionQuery",
    "AsyncTransactionTable",
    "PagePosition",
    "System",
    "Table",
    "TableBrowser",
    "TableLocation",
    "TablePage",
    "TableQuery",
    "Transaction",
    "TransactionQuery",
    "TransactionTable",
    "create_database",
    "create_table",
    "drop_database",
    "explain_scans",
    "system_fields",
]
