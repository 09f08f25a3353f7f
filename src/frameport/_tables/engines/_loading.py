"""Writes from a worker (Ray's sink, Spark's writer): `load_on_worker` loads sources (Arrow
tables or batch readers, pandas frames) into a table through the load's write path
(`load_rows`, as ``table.load``) over the worker's own connection; `check_id_columns`
refuses, on the driver, data without the ID columns the options name; `combined_report`
adds the workers' reports into one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import pandas as pd

from ..._core import Connection, run_sync
from ..._exceptions import LoadError
from .._location import TableLocation
from ..writes import LoadOptions, LoadResult, WriteReport, load_rows


class Connects(Protocol):
    """What makes a worker's connection: a `ClientReference`, a Spark source's options."""

    def connect(self) -> Connection: ...


def load_on_worker(
    client: Connects,
    location: TableLocation,
    sources: Iterable[object],
    options: LoadOptions,
) -> list[LoadResult]:
    """Runs on a worker, outside an event loop: one load per source (a source of no rows is
    left out), over one connection. The sources are taken here, not on the event loop: a
    lazy iterable (Ray's blocks, made as they are taken) may run a frameport read itself."""
    connection = run_sync(_connected(client))
    try:
        return [
            run_sync(load_rows(connection, location, source, options))
            for source in sources
            if _has_rows(source)
        ]
    finally:
        run_sync(connection.aclose())


async def _connected(client: Connects) -> Connection:
    return client.connect()


def _has_rows(source: object) -> bool:
    return not hasattr(source, "__len__") or len(source) > 0  # a reader: unknown, loaded


def check_id_columns(options: LoadOptions, names: Sequence[str], what: str) -> None:
    """A `LoadError` when `what` (e.g. "the dataset"), of the columns `names`, lacks a
    column ``id_from=`` or ``id_hash=`` names."""
    wanted: list[str] = []
    for option in (options.id_from, options.id_hash):
        wanted += [option] if isinstance(option, str) else list(option or [])
    missing = [name for name in wanted if name not in names]
    if missing:
        raise LoadError(
            f"{what} has no column {', '.join(map(repr, missing))}, which id_from= or "
            f"id_hash= names; its columns: {', '.join(names)}."
        )


def combined_report(reports: Iterable[WriteReport]) -> WriteReport:
    """The reports of several loads as one: their counts added up, their rejected rows
    together, `seconds` the longest (the loads ran side by side)."""
    total = WriteReport()
    rejected = []
    for report in reports:
        total.written += report.written
        total.skipped += report.skipped
        total.replaced += report.replaced
        total.batches += report.batches
        total.retries += report.retries
        total.seconds = max(total.seconds, report.seconds)
        total.rerun_safe = total.rerun_safe and report.rerun_safe
        if len(report.rejected):
            rejected.append(report.rejected)
    if rejected:
        total.rejected = pd.concat(rejected, ignore_index=True)
    return total
