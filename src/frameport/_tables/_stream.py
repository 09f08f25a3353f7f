"""A table query as an Arrow stream: a `pyarrow.RecordBatchReader` that fetches pages as the
consumer reads them, behind the Arrow PyCapsule interface (``__arrow_c_stream__``).

Any engine that reads Arrow streams takes a query as it is, without pandas:

>>> pa.table(query); pl.DataFrame(query)                              # doctest: +SKIP
>>> duckdb.sql("select city, count(*) from query group by city")      # doctest: +SKIP

The batches come from the query's read (`TableRead.stream`), driven step by step on
frameport's loop thread (`iterate_sync`). A consumer that pauses pauses the read: each range
running ahead of it stops with two pages waiting (`_core._fan_in.ITEMS_AHEAD`), one more
decoded and held back and the next one fetched: about four pages per range, in a window of
at most `READ_CAP` ranges (fewer when pages are large: `READ_BUDGET`). The schema is the
query's result schema; with types inferred from the rows it is the first batch's (the read
already holds pages back until every column has a type).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING

import pyarrow as pa

from .._core._memory import release_free_memory
from .._core._sync import iterate_sync, run_sync
from ._location import TableLocation
from .read import QuerySpec, TableRead

if TYPE_CHECKING:
    from .._core import Requester


def record_batch_reader(
    requester: Requester, location: TableLocation, spec: QuerySpec, *, progress: bool | None = None
) -> pa.RecordBatchReader:
    """A reader of the rows of `spec` on the table at `location`, batch by batch, with the
    same schema as `to_arrow()`."""
    read = run_sync(TableRead.make(requester, location, spec, reading=True))
    batches = _trimming(iterate_sync(read.stream(progress)))
    first = next(batches, None)
    if first is None:
        return pa.RecordBatchReader.from_batches(read.result_schema([]), iter(()))
    return pa.RecordBatchReader.from_batches(first.schema, chain([first], batches))


TRIM_EVERY = 8
"""Batches handed out between two `release_free_memory` calls."""


def _trimming(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`batches`, giving the page memory the read freed back to the system every few batches:
    a consumer that keeps the batches (``pa.table``) holds no more than a collecting read."""
    for number, batch in enumerate(batches, 1):
        if number % TRIM_EVERY == 0:
            release_free_memory()
        yield batch
