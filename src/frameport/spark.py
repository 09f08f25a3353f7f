"""Spark and tables (the ``spark`` extra): `register` makes ``spark.read.format("frameport")``
read a table of the service in partitions, one per range of ``$sequence`` the partition
planner cuts, each read on an executor as Arrow record batches with the types of
``to_arrow``. Imported on first use of ``fp.spark``; it imports pyspark.

>>> fp.spark.register(spark)                                        # doctest: +SKIP
>>> df = (spark.read.format("frameport").option("endpoint", endpoint)
...       .option("project", "demo").option("database", "crm").option("table", "people")
...       .option("query", "age > 30").load())                      # doctest: +SKIP

Credentials: ``.option("api_key_secret", key)`` (or ``jwt_token``), names Spark redacts
from plans and its UI, or FRAMEPORT_KEY (FRAMEPORT_JWT) in the environment where the driver
and the executors start; see the guide "Outgrowing one machine".
"""

from __future__ import annotations

try:
    from pyspark.sql import SparkSession
except ImportError as exc:  # the `spark` extra is missing
    raise ImportError(
        f"frameport.spark needs pyspark: pip install 'frameport[spark]' ({exc})"
    ) from exc

from ._tables.engines.spark import PUSHDOWN_SETTING, FilteringDataSource, FrameportDataSource

__all__ = ["register"]


def register(spark: SparkSession) -> None:
    """Registers the source named ``frameport`` with `spark`'s session, for the session's
    ``spark.sql.python.filterPushdown.enabled``: when true, the source takes the filters
    of a query that the filter DSL can say and the service applies them; when false (Spark's
    default) Spark filters the rows it reads. Register again after changing the setting:
    Spark refuses a source registered for pushdown once the setting is false.

    >>> spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")  # doctest: +SKIP
    >>> fp.spark.register(spark)                                          # doctest: +SKIP
    """
    enabled = str(spark.conf.get(PUSHDOWN_SETTING, "false")).strip().lower() == "true"
    spark.dataSource.register(FilteringDataSource if enabled else FrameportDataSource)
