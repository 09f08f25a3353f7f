"""The dask frame of a table query: ``query.to_dask(partitions=8)`` plans the query's
partitions (`planned_partitions`: `partitions` ranges of ``$sequence`` of equal estimated
bytes, or ranges of about `ROWS_PER_PARTITION` estimated rows), then builds the frame with
``dask.dataframe.from_map`` over one `PartitionSpec` per range, each read on a worker as
pandas (`PandasPartition`). Nothing else is read until dask computes; `meta` is an empty
frame with the dtypes of ``to_pandas``.

>>> ddf = people.query("age > 30").select("name", "age").to_dask(partitions=8)  # doctest: +SKIP
>>> ddf.groupby("age").size().compute()                                        # doctest: +SKIP

Decisions:

* ``ddf.compute()`` is ``to_pandas()`` row for row (``reset_index(drop=True)``: every
  partition has its own RangeIndex); see `_partition` for the order and what is refused.
* Dask's string conversion is off for these frames (``str`` columns stay ``str``, lists stay
  Python lists in ``object`` columns). Dask cannot infer a Parquet type for an ``object``
  column (``$permissions``, arrays), so write with the query's Arrow schema:
  ``ddf.to_parquet(dir, schema=query.schema())``, or build the frame with
  ``dtype_backend="pyarrow"``, whose columns dask writes as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from ...._core import Requester
from ...._core._auth import CredentialChoice
from ...._schema import DtypeBackend, to_pandas
from ..._location import TableLocation
from ...read import QuerySpec
from .._partition import PartitionSpec, planned_partitions, read_arrow

if TYPE_CHECKING:
    import dask.dataframe as dd

ROWS_PER_PARTITION = 250_000
"""Estimated rows per partition when `partitions` is not given."""


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
    one per `ROWS_PER_PARTITION` estimated rows); see the module docstring."""
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as exc:  # the `dask` extra is missing
        raise ImportError(f"to_dask() needs dask: pip install 'frameport[dask]' ({exc})") from exc
    planned = await planned_partitions(
        requester,
        location,
        spec,
        caller="to_dask()",
        parts=partitions,
        rows=ROWS_PER_PARTITION,
        credentials=credentials,
        page_size=page_size,
    )
    meta = to_pandas(planned.schema.empty_table(), dtype_backend=dtype_backend)
    with dask.config.set({"dataframe.convert-string": False}):
        frame: dd.DataFrame = dd.from_map(
            PandasPartition(dtype_backend),
            planned.specs,
            meta=meta,
            label=f"frameport-{location.table_id}",
        )
    return frame


@dataclass(frozen=True)
class PandasPartition:
    """Reads one partition on a dask worker as a DataFrame with the dtypes of ``to_pandas``
    (only `columns`, when dask asks for fewer: dask sees the parameter and pushes its column
    selections into the read)."""

    dtype_backend: DtypeBackend = None

    def __call__(self, spec: PartitionSpec, columns: Sequence[str] | None = None) -> pd.DataFrame:
        return to_pandas(read_arrow(spec, columns), dtype_backend=self.dtype_backend)

    def __dask_tokenize__(self) -> tuple[object, ...]:
        return ("frameport-pandas-partition", self.dtype_backend)
