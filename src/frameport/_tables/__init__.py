"""Table reads and writes: the lazy query (`_query`), its plan (`_plan`), the one pager
(`_pager`), page decoding (`_pages`), parallel `$sequence` ranges (`_parallel`), row writes
(`_writes`) and the Parquet export (`_export`)."""

from ._admin import create_database, create_table, drop_database
from ._location import TableLocation
from ._page_view import PagePosition, TablePage, TablePager
from ._pager import TOTAL_CAP, iter_pages
from ._pages import decode_page
from ._parallel import (
    SEQUENCE,
    SequenceRange,
    sequence_ascending,
    sequence_bounds,
    split_ranges,
)
from ._plan import QuerySpec, make_plan
from ._query import AsyncTable, AsyncTableQuery, Table, TableQuery

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
    "create_database",
    "create_table",
    "decode_page",
    "drop_database",
    "iter_pages",
    "make_plan",
    "sequence_ascending",
    "sequence_bounds",
    "split_ranges",
]
