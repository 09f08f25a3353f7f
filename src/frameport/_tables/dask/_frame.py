"""The dask frame of a table query: ``query.to_dask(partitions=8)`` asks the service for the
first and last ``$sequence`` under the filter and cuts that span into `partitions` ranges
(`TableRead.ranges`), then builds the frame with ``dask.dataframe.from_map`` over one
`PartitionSpec` per range. Nothing else is read until dask computes; `meta` is an empty frame
with the dtypes of ``to_pandas``.

>>> ddf = people.query("age > 30").select("name", "age").to_dask(partitions=8)  # doctest: +SKIP
>>> ddf.groupby("age").size().compute()                                        # doctest: +SKIP

Decisions:

* A spec carries the endpoint, the project, the table, the filter in its query-string form
  (``repr(expr)``, which `parse` reads back), the selected columns and the range, and a
  reference to the credentials (`ClientReference`).
* Partitions are in ``$sequence`` order and each holds its rows in ``$sequence`` order, so
  ``ddf.compute()`` is ``to_pandas()`` row for row (``reset_index(drop=True)``: every
  partition has its own RangeIndex). A sort on ``$sequence`` descending reverses them; any
  other sort, or `head`, raises ValueError: sort or take rows with dask instead.
* Dask's string conversion is off for these frames (``str`` columns stay ``str``, lists stay
  Python lists in ``object`` columns). Dask cannot infer a Parquet type for an ``object``
  column (``$permissions``, arrays), so write with the query's Arrow schema:
  ``ddf.to_parquet(dir, schema=query.schema())``, or build the frame with
  ``dtype_backend="pyarrow"``, whose columns dask writes as they are.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from ..._core import Requester
from ..._core._auth import CredentialChoice
from ..._expr import Expr, parse
from ..._schema import DtypeBackend, to_pandas
from .._location import TableLocation
from ..read import QuerySpec, SequenceRange, TableRead
from ._partition import PartitionSpec, read_partition
from ._reference import client_reference

if TYPE_CHECKING:
    import dask.dataframe as dd

ROWS_PER_PARTITION = 250_000
"""``$sequence`` values per partition when `partitions` is not given."""


async def to_dask(
    requester: Requester,
    location: TableLocation,
    spec: QuerySpec,
    partitions: int | None = None,
    *,
    credentials: CredentialChoice = "auto",
    dtype_backend: DtypeBackend = None,
    page_size: int | None = None,
) -> dd.DataFrame:
    """A dask DataFrame of `query`'s rows in `partitions` ranges of ``$sequence`` (default:
    one per `ROWS_PER_PARTITION` values); see the module docstring."""
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as exc:  # the `dask` extra is missing
        raise ImportError(f"to_dask() needs dask: pip install 'frameport[dask]' ({exc})") from exc
    if partitions is not None and (
        isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1
    ):
        raise ValueError(f"partitions must be a whole number >= 1 (got {partitions!r}).")
    ascending = _partition_order(spec)
    reference = client_reference(requester, credentials)
    read = await TableRead.make(requester, location, spec, page_size=page_size)
    schema = read.plan.output
    if schema is None:  # inferred: from the first page of rows
        first_rows = spec.first(read.plan.page_size)
        first = await TableRead.make(requester, location, first_rows, reading=True)
        schema = (await first.collect(progress=False))[1]
    meta = to_pandas(schema.empty_table(), dtype_backend=dtype_backend)
    if partitions is None:
        ranges = await read.ranges(width=ROWS_PER_PARTITION)
    else:
        ranges = await read.ranges(parts=partitions)
    ranges = ranges or [SequenceRange(0, 0)]  # no rows: one empty partition
    if not ascending:
        ranges.reverse()
    partition = partial(
        PartitionSpec,
        reference,
        location,
        _portable(spec.condition),
        spec.columns,
        ascending=ascending,
        schema=schema,
        page_size=page_size or spec.page_size,
        dtype_backend=dtype_backend,
    )
    specs = [partition(rows) for rows in ranges]
    with dask.config.set({"dataframe.convert-string": False}):
        frame: dd.DataFrame = dd.from_map(
            read_partition, specs, meta=meta, label=f"frameport-{location.table_id}"
        )
    return frame


def _partition_order(spec: QuerySpec) -> bool:
    """Whether partitions run in ascending ``$sequence`` order; ValueError for what
    partitions by ``$sequence`` cannot express."""
    if spec.head is not None:
        raise ValueError("to_dask() reads every matching row; drop head() and use ddf.head().")
    if spec.sequence_order is None:
        raise ValueError(
            "to_dask() partitions rows by $sequence; drop sort() and sort the dask frame "
            "(ddf.sort_values(...)) instead."
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
