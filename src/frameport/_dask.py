"""Dask DataFrames of table queries, beside the other integrations: the names of the table
feature `frameport._tables.dask`, which ``TableQuery.to_dask`` builds its frames with."""

from ._tables.dask import (
    ROWS_PER_PARTITION,
    ClientReference,
    PartitionSpec,
    client_reference,
    read_partition,
    to_dask,
)

__all__ = [
    "ROWS_PER_PARTITION",
    "ClientReference",
    "PartitionSpec",
    "client_reference",
    "read_partition",
    "to_dask",
]
