"""A table query as an Arrow stream: a `pyarrow.RecordBatchReader` that fetches pages as the
consumer reads them, behind the Arrow PyCapsule interface (``__arrow_c_stream__``).

Any engine that reads Arrow streams takes a query as it is, without pandas:

>>> pa.table(query); pl.DataFrame(query)                              # doctest: +SKIP
>>> duckdb.sql("select city, count(*) from query group by city")      # doctest: +SKIP

The batches come from the query's async batch iterator, driven step by step on frameport's
loop thread (`iterate_sync`), so memory holds about one page at a time. The schema is the
query's result schema; with types inferred from the rows it is the first batch's (the batch
iterator already holds pages back until every column has a type).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from itertools import chain
from typing import TYPE_CHECKING, cast

import pyarrow as pa

from .._core._sync import iterate_sync, run_sync

if TYPE_CHECKING:
    from ._query import AsyncTableQuery


def record_batch_reader(
    query: AsyncTableQuery, *, progress: bool | None = None
) -> pa.RecordBatchReader:
    """A reader of the query's rows, batch by batch, with the same schema as `to_arrow()`."""
    stream = cast(AsyncIterator[pa.RecordBatch], query.iter_batches(arrow=True, progress=progress))
    batches = iterate_sync(stream)
    first = next(batches, None)
    if first is None:
        return pa.RecordBatchReader.from_batches(run_sync(query.schema()), iter(()))
    return pa.RecordBatchReader.from_batches(first.schema, chain([first], batches))
