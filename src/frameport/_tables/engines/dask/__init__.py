"""Dask DataFrames of table queries (``TableQuery.to_dask``): one partition per planned range
of ``$sequence``, each read on a dask worker as pandas from a picklable `PartitionSpec`
(`.._partition`). The ``dask`` extra is imported only when a frame is built.
"""

from ._frame import ROWS_PER_PARTITION, PandasPartition, to_dask

__all__ = ["ROWS_PER_PARTITION", "PandasPartition", "to_dask"]
