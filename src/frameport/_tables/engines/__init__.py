"""The engines that read and write tables beyond one process, together: dask (`dask/`), Ray
Data (`ray/`), each importing its engine only when used. What they share: the partitions
of a query, planned on the driver by the partition planner (`read.plan_partitions`) and
read on a worker without a client (`_partition`: `PartitionSpec`, `read_arrow`), over a
connection made from a reference to the client's settings and credentials (`_reference`).
"""

from ._partition import PartitionSpec, PlannedPartitions, planned_partitions, read_arrow
from ._reference import ClientReference, client_reference

__all__ = [
    "ClientReference",
    "PartitionSpec",
    "PlannedPartitions",
    "client_reference",
    "planned_partitions",
    "read_arrow",
]
