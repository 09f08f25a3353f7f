"""Tables: the lazy query and its synchronous face (`_query`), the engine that reads it
(`read/`), and the features built on them, each in a room of its own: Parquet exports
(`export/`), the Delta Lake sync (`delta/`), polars frames and lazy scans (`polars/`), writes
(`writes/`), the Arrow stream (`_stream`) and the page-at-a-time view of the table widget
(`_browse`)."""

from ._browse import PagePosition, TableBrowser, TablePage
from ._location import TableLocation
from ._query import AsyncTable, AsyncTableQuery, Table, TableQuery
from .polars import explain_scans
from .read import (
    SEQUENCE,
    TOTAL_CAP,
    QuerySpec,
    SequenceRange,
    TableRead,
    decode_page,
    iter_pages,
)
from .writes._rows import create_table

__all__ = [
    "SEQUENCE",
    "TOTAL_CAP",
    "AsyncTable",
    "AsyncTableQuery",
    "PagePosition",
    "QuerySpec",
    "SequenceRange",
    "Table",
    "TableBrowser",
    "TableLocation",
    "TablePage",
    "TableQuery",
    "TableRead",
    "create_table",
    "decode_page",
    "explain_scans",
    "iter_pages",
]
