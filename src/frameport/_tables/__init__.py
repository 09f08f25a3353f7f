"""Tables: the lazy query and its synchronous face (`_query`), the engine that reads it
(`read/`), and the features built on them, each in a room of its own: Parquet exports
(`export/`), the Delta Lake sync (`delta/`), polars frames and lazy scans (`polars/`), writes
(`writes/`), the Arrow stream (`_stream`) and the page-at-a-time view of the table widget
(`_browse`)."""

from ._browse import PagePosition, TableBrowser, TablePage
from ._location import TableLocation
from ._query import AsyncTable, AsyncTableQuery, Table, TableQuery
from .polars import explain_scans
from .writes._rows import create_table

__all__ = [
    "AsyncTable",
    "AsyncTableQuery",
    "PagePosition",
    "Table",
    "TableBrowser",
    "TableLocation",
    "TablePage",
    "TableQuery",
    "create_table",
    "explain_scans",
]
