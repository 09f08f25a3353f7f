"""The partitions every engine reads: `planned_partitions` plans a query's partitions on the
driver (the partition planner of `read`) and gives one picklable `PartitionSpec` per range;
`read_arrow` reads one on a worker, without a client, through the ordinary read (`TableRead`)
over the worker's own connection (`ClientReference`), as an Arrow table with the types of
``to_arrow``.

Decisions:

* A spec carries the endpoint, the project, the table, the filter in its query-string form
  (``repr(expr)``, which `parse` reads back), the selected columns, the range with its
  estimated rows and bytes, and a reference to the credentials (`ClientReference`).
* Partitions are in ``$sequence`` order and each holds its rows in ``$sequence`` order, so
  the partitions joined are ``to_arrow()`` row for row. A sort on ``$sequence`` descending
  reverses them; any other sort, or `head`, raises ValueError: sort or take rows in the
  engine instead.
* Column selections made in an engine are pushed into the reads: the worker asks the service
  for those columns only.
* Without access to the table's columns (a signed-in user), the schema is inferred from the
  first page of rows, and every partition is cast to it; a partition whose values do not
  fit raises `RowDecodeError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from ..._core import Requester, run_sync
from ..._core._auth import CredentialChoice
from ..._expr import Expr, col, parse
from ..._schema import SYSTEM_SCHEMA, RowDecodeError
from .._location import TableLocation
from ..read import SEQUENCE, Partition, QuerySpec, SequenceRange, TableRead, plan_partitions
from ._reference import ClientReference, client_reference


@dataclass(frozen=True)
class PartitionSpec:
    """Everything a worker needs to read one partition; picklable, secret-free in its repr
    and dask token (see `ClientReference` for what a pickled spec may hold). `rows` and
    `bytes` are the planner's estimates of the partition (bytes: Arrow memory)."""

    client: ClientReference
    location: TableLocation
    condition: str | Expr | None  # the filter's query-string form (an Expr if it has none)
    columns: tuple[str, ...] | None
    range: SequenceRange
    ascending: bool
    schema: pa.Schema
    page_size: int | None = None
    rows: int = 0
    bytes: int = 0

    def __dask_tokenize__(self) -> tuple[object, ...]:
        return (
            self.client.__dask_tokenize__(),
            str(self.location),
            self.location.legacy,
            repr(self.condition),
            self.columns,
            self.range,
            self.ascending,
            self.schema.to_string(),
            self.page_size,
        )


@dataclass(frozen=True)
class PlannedPartitions:
    """A query's partitions and the schema every one is read with."""

    specs: list[PartitionSpec]
    schema: pa.Schema


async def planned_partitions(
    requester: Requester,
    location: TableLocation,
    spec: QuerySpec,
    *,
    caller: str,
    parts: int | None = None,
    rows: int | None = None,
    bytes: int | None = None,
    at_least: int = 1,
    credentials: CredentialChoice = "auto",
    page_size: int | None = None,
) -> PlannedPartitions:
    """One `PartitionSpec` per range of `spec`'s rows (`parts` partitions of equal estimated
    bytes, else partitions of at most `rows` estimated rows or `bytes` estimated bytes, and
    `at_least` of them; one empty partition when no row matches), planned on the driver;
    `caller` names the method in errors."""
    if parts is not None and (isinstance(parts, bool) or not isinstance(parts, int) or parts < 1):
        raise ValueError(f"partitions must be a whole number >= 1 (got {parts!r}).")
    ascending = _partition_order(spec, caller)
    reference = client_reference(requester, credentials)
    read = await TableRead.make(requester, location, spec, page_size=page_size)
    schema = read.plan.output
    if schema is None:  # inferred: from the first page of rows
        first_rows = spec.first(read.plan.page_size)
        first = await TableRead.make(requester, location, first_rows, reading=True)
        schema = (await first.collect(progress=False))[1]
    if parts is not None:
        plan = await plan_partitions(read, parts=parts)
    elif rows is not None:
        plan = await plan_partitions(read, rows=rows, at_least=at_least)
    else:
        plan = await plan_partitions(read, bytes=bytes, at_least=at_least)
    partitions = list(plan.partitions) or [Partition(SequenceRange(0, 0), 0, 0)]
    if not ascending:
        partitions.reverse()
    condition = _portable(spec.condition)
    specs = [
        PartitionSpec(
            reference,
            location,
            condition,
            spec.columns,
            partition.range,
            ascending,
            schema,
            page_size=page_size or spec.page_size,
            rows=partition.rows,
            bytes=partition.bytes,
        )
        for partition in partitions
    ]
    return PlannedPartitions(specs, schema)


def read_arrow(spec: PartitionSpec, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows of one partition as an Arrow table with the types of ``to_arrow`` (only
    `columns`, when the engine asks for fewer). Runs on a worker, outside an event loop."""
    schema = spec.schema
    if columns is not None:
        schema = pa.schema([schema.field(name) for name in columns])
    within = (col(SEQUENCE) > spec.range.after) & (col(SEQUENCE) <= spec.range.upto)
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
    return _conformed(rows, schema)


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


def _partition_order(spec: QuerySpec, caller: str) -> bool:
    """Whether partitions run in ascending ``$sequence`` order; ValueError for what
    partitions by ``$sequence`` cannot express."""
    if spec.head is not None:
        raise ValueError(f"{caller} reads every matching row; drop head() and take rows later.")
    if spec.sequence_order is None:
        raise ValueError(
            f"{caller} partitions rows by $sequence; drop sort() and sort the result "
            "(e.g. ddf.sort_values(...), ds.sort(...)) instead."
        )
    return spec.sequence_order


def _portable(condition: Expr | None) -> str | Expr | None:
    """The filter's query-string form when parsing it gives the same filter back."""
    if condition is None:
        return None
    text = repr(condition)
    try:
        if parse(text).node == condition.node:
            return text
    except Exception:  # not expressible as text: the spec carries the expression itself
        pass
    return condition
