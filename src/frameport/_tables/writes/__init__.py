"""Writes to tables: any source loaded into a table (`load_rows`: sources, validation, IDs,
batches, checkpoint, transaction, report), and changes by filter (`change_rows`) with
update operators; and a stream of Arrow batches written as a restore writes it
(`write_batches`), through the same sender loop (`_ordered`)."""

from ._batches import WriteCounts, write_batches
from ._changes import ChangeReport, by_id, change_rows, selected_ids
from ._load import DEFAULT_ON_CONFLICT, LoadOptions, LoadResult, load_rows, rows_rejected
from ._operators import UpdateOperator, update_data
from ._report import WriteReport
from ._sending import MAX_ROWS_PER_REQUEST, OnConflict, check_on_conflict

__all__ = [
    "DEFAULT_ON_CONFLICT",
    "MAX_ROWS_PER_REQUEST",
    "ChangeReport",
    "LoadOptions",
    "LoadResult",
    "OnConflict",
    "UpdateOperator",
    "WriteCounts",
    "WriteReport",
    "by_id",
    "change_rows",
    "check_on_conflict",
    "load_rows",
    "rows_rejected",
    "selected_ids",
    "update_data",
    "write_batches",
]
