"""The Ray Data source of a table query: its partitions, planned on the driver when the
source is made (so a missing table or a bad filter raises there, before any task runs), each
one read task that reads its range on a worker as an Arrow table with the types of
``to_arrow`` (`read_arrow`). Each task's metadata carries the planner's estimate of its
bytes in Arrow memory, and `estimate_inmemory_data_size` is their sum; its rows are left
unknown (None), because Ray takes the read tasks' rows for the dataset's exact count
(``ds.count()`` returns their sum without reading), and the planner's rows are an estimate.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

import pyarrow as pa
from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata

from .._partition import PartitionSpec, PlannedPartitions, read_arrow

BYTES_PER_PARTITION = 64 * 1024 * 1024
"""Estimated bytes (Arrow memory) per read task when `partitions` is not given."""


class TableDatasource(Datasource):
    """A table query's planned partitions as a Ray Data source, one read task each."""

    def __init__(self, planned: PlannedPartitions, name: str) -> None:
        self._planned = planned
        self._name = name

    def get_name(self) -> str:
        return self._name

    def estimate_inmemory_data_size(self) -> int:
        return sum(spec.bytes for spec in self._planned.specs)

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        """One task per planned range, whatever `parallelism` Ray asks for (the ranges were
        planned for the query's estimated size; pass ``partitions=`` to choose)."""
        schema = self._planned.schema
        return [
            ReadTask(
                partial(_blocks, spec),
                BlockMetadata(
                    num_rows=None, size_bytes=spec.bytes, input_files=None, exec_stats=None
                ),
                schema=schema,
                per_task_row_limit=per_task_row_limit,
            )
            for spec in self._planned.specs
        ]


def _blocks(spec: PartitionSpec) -> Iterable[pa.Table]:
    return [read_arrow(spec)]
