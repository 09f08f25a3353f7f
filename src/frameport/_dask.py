"""Dask DataFrames of table queries, beside the other integrations: the names of the table
feature `frameport._tables.dask`, which ``TableQuery.to_dask`` builds its frames with."""

from ._tables.dask import ClientReference, PartitionSpec, client_reference, to_dask

__all__ = ["ClientReference", "PartitionSpec", "client_reference", "to_dask"]
