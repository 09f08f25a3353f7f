"""Dask DataFrames of table queries, beside the other integrations: the names of the table
engine `frameport._tables.engines.dask`, which ``TableQuery.to_dask`` builds its frames with."""

from ._tables.engines import ClientReference, PartitionSpec, client_reference
from ._tables.engines.dask import to_dask

__all__ = ["ClientReference", "PartitionSpec", "client_reference", "to_dask"]
