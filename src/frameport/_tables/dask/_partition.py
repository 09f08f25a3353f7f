"""One partition of a dask frame: the picklable `PartitionSpec` a worker receives, and
`read_partition`, which reads its range of ``$sequence`` through the ordinary read
(`TableRead`) over the worker's own connection and returns it with the dtypes of
``to_pandas``.

Decisions:

* Column selections made in dask (``ddf[["name"]]``) are pushed into the reads: the worker
  asks the service for those columns only.
* Without access to the table's columns (a signed-in user), the frame's schema was inferred
  from the first page of rows, and every partition is cast to it; a partition whose values
  do not fit raises `RowDecodeError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from ..._core import run_sync
from ..._expr import Expr, col, parse
from ..._schema import SYSTEM_SCHEMA, DtypeBackend, RowDecodeError, to_pandas
from .._location import TableLocation
from ..read import SEQUENCE, QuerySpec, SequenceRange, TableRead
from ._reference import ClientReference


@dataclass(frozen=True)
class PartitionSpec:
    """Everything a worker needs to read one partition; picklable, secret-free in its repr
    and dask token (see `ClientReference` for what a pickled spec may hold)."""

    client: ClientReference
    location: TableLocation
    condition: str | Expr | None  # the filter's query-string form (an Expr if it has none)
    columns: tuple[str, ...] | None
    rows: SequenceRange
    ascending: bool
    schema: pa.Schema
    page_size: int | None = None
    dtype_backend: DtypeBackend = None

    def __dask_tokenize__(self) -> tuple[object, ...]:
        return (
            self.client.__dask_tokenize__(),
            str(self.location),
            self.location.legacy,
            repr(self.condition),
            self.columns,
            self.rows,
            self.ascending,
            self.schema.to_string(),
            self.page_size,
            self.dtype_backend,
        )


def read_partition(spec: PartitionSpec, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The rows of one partition as a DataFrame with the dtypes of ``to_pandas`` (only
    `columns`, when dask asks for fewer). Runs on a dask worker."""
    schema = spec.schema
    if columns is not None:
        schema = pa.schema([schema.field(name) for name in columns])
    within = (col(SEQUENCE) > spec.rows.after) & (col(SEQUENCE) <= spec.rows.upto)
    condition = spec.condition
    if isinstance(condition, str):
        condition = parse(condition)
    query = QuerySpec(page_size=spec.page_size)
    query = query.where(within if condition is None else condition & within)
    if columns is not None or spec.columns is not None:
        wanted = [name for name in schema.names if name not in SYSTEM_SCHEMA.names]
        query = query.select(wanted or ["$id"])
    query = query.sorted_by([SEQUENCE], [spec.ascending])
    query = query.showing([name for name in schema.names if name in SYSTEM_SCHEMA.names])
    rows = run_sync(_read(spec.client, spec.location, query))
    return to_pandas(_conformed(rows, schema), dtype_backend=spec.dtype_backend)


async def _read(client: ClientReference, location: TableLocation, query: QuerySpec) -> pa.Table:
    """The rows of `query`, read over a connection of its own."""
    connection = client.connect()
    try:
        read = await TableRead.make(connection, location, query, reading=True)
        batches, schema = await read.collect(progress=False)
    finally:
        await connection.aclose()
    return pa.Table.from_batches(batches, schema=schema)


def _conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly `schema` (a no-op when the worker read the table's own types)."""
    table = table.select(schema.names)
    if table.schema == schema:
        return table
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise RowDecodeError(
            "a partition's values do not fit the types inferred from the first rows "
            f"({exc}); read with an API key that can read the table's columns"
        ) from exc
