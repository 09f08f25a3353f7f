"""The Ray Data sink of a table: each write task loads its blocks through the load's write
path (`load_rows`, as ``table.load``) over the worker's own connection, and returns the
reports, which the sink keeps on the driver (`reports`). With `id_from` or `id_hash` a task
run again (Ray retries a task whose worker died) or a whole write run again meets the rows
already written instead of duplicating them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
import pyarrow as pa
from ray.data.datasource import Datasink

from ..._location import TableLocation
from ...writes import LoadOptions, WriteReport
from .._loading import check_id_columns, load_on_worker
from .._reference import ClientReference

WriteReports = list[WriteReport]


class TableDatasink(Datasink[WriteReports]):
    """Writes a dataset's blocks into a table, each through the load's write path."""

    def __init__(
        self, client: ClientReference, location: TableLocation, options: LoadOptions
    ) -> None:
        options.check()
        self._client = client
        self._location = location
        self._options = options
        self.reports: WriteReports = []

    def get_name(self) -> str:
        return f"frameport({self._location})"

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        """Refuses, on the driver, a dataset without the ID columns the options name."""
        if schema is not None:
            check_id_columns(self._options, schema.names, "the dataset")

    def write(self, blocks: Iterable[pa.Table | pd.DataFrame], ctx: Any) -> WriteReports:
        """Runs on a worker: loads each block, and returns the reports."""
        results = load_on_worker(self._client, self._location, blocks, self._options)
        return [result.report for result in results]

    def on_write_complete(self, write_result: Any) -> None:
        """Keeps every task's reports (on the driver)."""
        self.reports = [report for task in write_result.write_returns for report in task]
