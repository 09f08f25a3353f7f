"""Tables: the lazy query and its synchronous face (`_query`), the engine that reads it
(`read/`), and the features built on them, each in a room of its own: Parquet exports
(`export/`), the Delta Lake sync (`delta/`), polars frames and lazy scans (`polars/`), writes
(`writes/`), the Arrow stream (`_stream`) and the page-at-a-time view of the table widget
(`_browse`)."""

from ._browse import PagePosition, TablePage, TablePager
from ._location import TableLocation
from ._query import AsyncTable, AsyncTableQuery, Table, TableQuery
from .read._cursor import TOTAL_CAP, iter_pages
from .read._decode import decode_page
from .read._plan import QuerySpec, make_plan
from .read._ranged import (
    SEQUENCE,
    SequenceRange,
    sequence_ascending,
    sequence_bounds,
    split_ranges,
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
    "TableLocation",
    "TablePage",
    "TablePager",
    "TableQuery",
    "create_table",
    "decode_page",
    "iter_pages",
    "make_plan",
    "sequence_ascending",
    "sequence_bounds",
    "split_ranges",
]
