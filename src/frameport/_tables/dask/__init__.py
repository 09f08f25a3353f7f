"""Dask DataFrames of table queries (``TableQuery.to_dask``): one partition per range of
``$sequence`` (`_frame`), each read on a dask worker from a picklable spec (`_partition`) over
a connection the worker makes from a reference to the client's settings and credentials
(`_reference`), without a client. The ``dask`` extra is imported only when a frame is built.
"""

from ._frame import ROWS_PER_PARTITION, to_dask
from ._partition import PartitionSpec, read_partition
from ._reference import ClientReference, client_reference

__all__ = [
    "ROWS_PER_PARTITION",
    "ClientReference",
    "PartitionSpec",
    "client_reference",
    "read_partition",
    "to_dask",
]
