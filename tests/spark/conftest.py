"""The Spark tests' shared session: one local Spark (`local[2]`, no UI, logging at ERROR)
for the whole run, whose Python workers run this interpreter (with its frameport). Spark's
cold start costs most of these tests' time; mark every Spark test module
``pytest.mark.xdist_group("spark")`` so one xdist worker runs them all on one session.

* `spark` — the session, with the ``frameport`` source registered for its pushdown setting
  (false, Spark's default). Its JVM and Python workers have FRAMEPORT_KEY (the `service`'s
  key) in their environment; this process does not. A test that changes the setting
  restores it with `pushdown`.
* `pushdown` — a function setting ``spark.sql.python.filterPushdown.enabled`` and registering
  the source again, restored (and registered again) after the test.
* `spark_log` — the file Spark's JVM and its Python workers write their logs to (kept out of
  the test output).
* `read_options` — the options of a read of a table of the service, with its API key.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import frameport as fp
from frameport import Table
from frameport.local import LocalService

PUSHDOWN_SETTING = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture(scope="session")
def spark_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark") / "spark.log"


@pytest.fixture(scope="session")
def spark(spark_log: Path, service: LocalService) -> Iterator[SparkSession]:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers import this frameport
    # The JVM and its Python workers have FRAMEPORT_KEY, the service's key, in their
    # environment (as workers of a cluster would); this process does not keep it.
    before = os.environ.get("FRAMEPORT_KEY")
    os.environ["FRAMEPORT_KEY"] = service.key
    # The JVM (and the Python workers it starts) inherit standard error as it is when the
    # session starts: their logs go to `spark_log`, this process's stay where they were.
    saved = os.dup(2)
    log = os.open(spark_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pyspark's notes on the pandas version
            session = (
                SparkSession.builder.master("local[2]")
                .appName("frameport-tests")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.log.level", "ERROR")
                .config("spark.sql.shuffle.partitions", "2")
                .getOrCreate()
            )
    finally:
        if before is None:
            del os.environ["FRAMEPORT_KEY"]
        else:
            os.environ["FRAMEPORT_KEY"] = before
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)
    fp.spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def pushdown(spark: SparkSession) -> Iterator[Callable[[bool], None]]:
    before = spark.conf.get(PUSHDOWN_SETTING, "false")

    def set_pushdown(enabled: bool) -> None:
        spark.conf.set(PUSHDOWN_SETTING, "true" if enabled else "false")
        fp.spark.register(spark)

    yield set_pushdown
    spark.conf.set(PUSHDOWN_SETTING, before or "false")
    fp.spark.register(spark)


@pytest.fixture
def read_options(service: LocalService) -> Callable[[Table], dict[str, str]]:
    def options(table: Table) -> dict[str, str]:
        return {
            "endpoint": service.endpoint,
            "project": service.project,
            "database": table.database_id,
            "table": table.id,
            "api_key_secret": service.key,
        }

    return options
