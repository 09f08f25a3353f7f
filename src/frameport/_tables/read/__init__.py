"""The table engine: one read of a table query (`TableRead`), from its plan to Arrow batches.

`_table_read` (the read) → `_ranged` (in ranges of ``$sequence``, as many at once as the
controller says, through the fan-in of `_core._fan_in`) → `_serial` (a plan's pages: settled,
sorted, projected) and `_strategy` (serial or ranged, and why) → `_probes` (one-row requests)
→ `_plan` (the query resolved against the table's columns) → `_kinds`, `_ranges`, `_cursor`
(the cursor loop) → `_decode` (page bodies to Arrow); `_system` says which ``$`` fields a
read shows.
"""

from ._cursor import (
    READ_POOL,
    TOTAL_CAP,
    check_page_size,
    decoded,
    describe_total,
    fetch_page,
    iter_pages,
)
from ._decode import decode_page
from ._kinds import filter_columns
from ._plan import QuerySpec, column_models
from ._ranges import SEQUENCE, SequenceRange
from ._rechunk import rechunk
from ._serial import learn_columns
from ._strategy import Parallel
from ._system import ALL_SYSTEM, DEFAULT_SYSTEM, System, system_fields
from ._table_read import TableRead, table_last_sequence

__all__ = [
    "ALL_SYSTEM",
    "DEFAULT_SYSTEM",
    "READ_POOL",
    "SEQUENCE",
    "TOTAL_CAP",
    "Parallel",
    "QuerySpec",
    "SequenceRange",
    "System",
    "TableRead",
    "check_page_size",
    "column_models",
    "decode_page",
    "decoded",
    "describe_total",
    "fetch_page",
    "filter_columns",
    "iter_pages",
    "learn_columns",
    "rechunk",
    "system_fields",
    "table_last_sequence",
]
