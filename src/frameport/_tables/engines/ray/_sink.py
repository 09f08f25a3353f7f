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

from ...._core import run_sync
from ...._exceptions import LoadError
from ..._location import TableLocation
from ...writes import LoadOptions, WriteReport, load_rows
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
        if schema is None:
            return
        wanted: list[str] = []
        for option in (self._options.id_from, self._options.id_hash):
            wanted += [option] if isinstance(option, str) else list(option or [])
        missing = [name for name in wanted if name not in schema.names]
        if missing:
            raise LoadError(
                f"the dataset has no column {', '.join(map(repr, missing))}, which id_from= or "
                f"id_hash= names; its columns: {', '.join(schema.names)}."
            )

    def write(self, blocks: Iterable[pa.Table | pd.DataFrame], ctx: Any) -> WriteReports:
        """Runs on a worker: loads each block, and returns the reports."""
        return run_sync(self._load(blocks))

    async def _load(self, blocks: Iterable[pa.Table | pd.DataFrame]) -> WriteReports:
        connection = self._client.connect()
        try:
            reports = []
            for block in blocks:
                if len(block):
                    result = await load_rows(connection, self._location, block, self._options)
                    reports.append(result.report)
            return reports
        finally:
            await connection.aclose()

    def on_write_complete(self, write_result: Any) -> None:
        """Keeps every task's reports (on the driver)."""
        self.reports = [report for task in write_result.write_returns for report in task]
