"""Table reads and writes: the lazy query (`_query`), its plan (`_plan`), the one pager
(`_pager`), page decoding (`_pages`), parallel `$sequence` ranges (`_parallel`), row writes
(`_writes`) and the Parquet export (`_export`)."""

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
from ._writes import create_table

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
