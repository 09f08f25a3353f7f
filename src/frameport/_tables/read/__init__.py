"""The table engine: one read of a table query (`TableRead`), from its plan to Arrow batches,
and the partition planner over it (`_planner`: ranges of ``$sequence`` sized by estimated rows
and bytes, for the engines and the resumable export).

`_planner` → `_table_read` (the read: its opening, made and closed here) → `_ranged` (in ranges of
``$sequence``, as many at once as the controller says, through the fan-in of
`_core._fan_in`) → `_serial` (a plan's pages: settled, sorted, projected) and `_strategy`
(serial or ranged, and why) → `_probes` (one-row requests and the read's `Opening`) →
`_plan` (the query resolved against the table's columns) → `_kinds`, `_ranges`,
`_prefetch` (pages fetched ahead of their decoding, through `_core._pages`' cursor loop),
decoded by `_tables._decode`.
"""

from ._plan import QuerySpec, column_models
from ._planner import Partition, PartitionPlan, plan_partitions
from ._prefetch import READ_POOL
from ._ranges import SEQUENCE, SequenceRange
from ._strategy import Obstacle
from ._table_read import TableRead, table_last_sequence

__all__ = [
    "READ_POOL",
    "SEQUENCE",
    "Obstacle",
    "Partition",
    "PartitionPlan",
    "QuerySpec",
    "SequenceRange",
    "TableRead",
    "column_models",
    "plan_partitions",
    "table_last_sequence",
]
