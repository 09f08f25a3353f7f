"""``spark.read.format("frameport")``: batch reads of a table of the local service on the
shared local Spark session (`conftest.py`), in partitions the partition planner cuts, with the
filters the DSL can say pushed to the service when the session enables Python filter pushdown,
and Spark filtering them itself when it does not.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from frameport import Client, Table
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import load, new_id, rows_served

pytestmark = pytest.mark.xdist_group("spark")

ROWS = 240
Options = Callable[[Table], dict[str, str]]


@pytest.fixture(scope="module")
def people(key_client: Client) -> Table:
    table, _ = load(key_client, new_id("spark"), sample_people(ROWS, seed=8))
    return table


def reader(spark: SparkSession, options: dict[str, str]) -> Any:
    return spark.read.format("frameport").options(**options)


def by_id(table: pa.Table) -> pa.Table:
    return table.sort_by("$id")


def spark_rows(df: DataFrame) -> pa.Table:
    """The DataFrame's rows as Arrow, in the types of ``to_arrow`` (Spark holds timestamps in
    microseconds, to_arrow in milliseconds: the values are the same)."""
    return by_id(df.toArrow())


def test_read_equals_to_arrow_in_values_and_types(
    spark: SparkSession, people: Table, read_options: Options
) -> None:
    df = reader(spark, {**read_options(people), "partitions": "3"}).load()
    assert df.rdd.getNumPartitions() == 3
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("$id", "string"),
        ("name", "string"),
        ("age", "bigint"),
        ("city", "string"),
        ("score", "double"),
        ("signup", "timestamp"),
        ("active", "boolean"),
    ]
    expected = by_id(people.to_arrow(progress=False))
    read = spark_rows(df)
    assert read.schema.field("signup").type == pa.timestamp("us", tz="UTC")
    assert read.cast(expected.schema).equals(expected)
    assert read.column("age").null_count > 0  # nulls came through


def test_an_empty_table_reads_as_an_empty_frame_of_its_schema(
    spark: SparkSession, key_client: Client, read_options: Options
) -> None:
    empty, _ = load(key_client, new_id("spark"), sample_people(0))
    df = reader(spark, read_options(empty)).load()
    assert df.count() == 0
    assert df.schema.fieldNames() == ["$id", "name", "age", "city", "score", "signup", "active"]


def test_filters_read_the_same_rows_under_both_settings_and_are_pushed_when_enabled(
    spark: SparkSession,
    service: LocalService,
    people: Table,
    read_options: Options,
    pushdown: Callable[[bool], None],
) -> None:
    expected = by_id(
        people.query("age > 60 and city.str.startswith('B') and age != 70").to_arrow(progress=False)
    )
    assert 0 < expected.num_rows < ROWS // 4
    moved = {}
    for enabled in (False, True):
        pushdown(enabled)
        served = rows_served(service, people)
        df = reader(spark, read_options(people)).load()
        picked = df.where(
            (F.col("age") > 60) & F.col("city").startswith("B") & (F.col("age") != 70)
        )
        assert spark_rows(picked).cast(expected.schema).equals(expected)
        moved[enabled] = rows_served(service, people) - served
    # Spark filters every row itself with the setting off; with it on, the service sends the
    # rows that may match (a string condition narrows without regard to case) and the
    # planner its sample of them.
    assert moved[False] >= ROWS
    assert moved[True] < ROWS // 2


def test_a_source_registered_for_pushdown_names_the_setting_once_it_is_off(
    spark: SparkSession, people: Table, read_options: Options, pushdown: Callable[[bool], None]
) -> None:
    pushdown(True)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")  # not registered again
    with pytest.raises(Exception, match=r"spark\.sql\.python\.filterPushdown\.enabled"):
        reader(spark, read_options(people)).load().where("age > 30").count()


def test_the_query_option_filters_with_the_dsl_and_combines_with_pushed_filters(
    spark: SparkSession,
    service: LocalService,
    people: Table,
    read_options: Options,
    pushdown: Callable[[bool], None],
) -> None:
    pushdown(True)
    expected = by_id(people.query("age > 30 and active == True").to_arrow(progress=False))
    served = rows_served(service, people)
    df = reader(spark, {**read_options(people), "query": "age > 30"}).load()
    picked = df.where(F.col("active"))
    assert spark_rows(picked).cast(expected.schema).equals(expected)
    # The service sent the rows the query and `active` keep, and the planner its sample of
    # them: fewer than the query's own rows twice over.
    assert rows_served(service, people) - served < 2 * people.query("age > 30").count()


def test_a_schema_or_the_columns_option_fetch_only_those_columns(
    spark: SparkSession, people: Table, read_options: Options
) -> None:
    expected = by_id(people.select("name", "age").to_arrow(progress=False))
    given = reader(spark, read_options(people)).schema("`$id` string, name string, age bigint")
    named = reader(spark, {**read_options(people), "columns": "name, age"})
    for df in (given.load(), named.load()):
        assert spark_rows(df).equals(expected)
    # `$` fields a schema names are shown, in the schema's order
    shown = reader(spark, read_options(people)).schema(
        "age bigint, `$updatedAt` timestamp, `$id` string"
    )
    system = people.select("age").to_arrow(progress=False, system=["id", "updatedAt"])
    expected = by_id(system.select(["age", "$updatedAt", "$id"]))
    assert spark_rows(shown.load()).cast(expected.schema).equals(expected)
    with pytest.raises(Exception, match=r"declare it as bigint"):
        reader(spark, read_options(people)).schema("age int").load().count()


# The hypothesis test: random conjunctions of filters on a small table with nulls, pushed
# through the source, against Spark's own filtering of the whole table.
NAMES = ["Ada", "Bo", "bo", "Cy", "Éva", "", None]
SMALL = 40


@pytest.fixture(scope="module")
def mixed(key_client: Client) -> Table:
    rows = [
        {
            "name": NAMES[i % len(NAMES)],
            "n": None if i % 6 == 0 else i % 9 - 4,
            "x": None if i % 7 == 0 else (i % 5) / 2 - 1.0,
            "flag": None if i % 8 == 0 else i % 3 == 0,
        }
        for i in range(SMALL)
    ]
    table, _ = load(key_client, new_id("spark"), pa.Table.from_pylist(rows).to_pandas())
    return table


_values = {
    "name": st.sampled_from([n for n in NAMES if n is not None] + ["B", "C"]),
    "n": st.integers(-5, 5),
    "x": st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0, 0.25]),
    "flag": st.booleans(),
}


@st.composite
def conditions(draw: st.DrawFn) -> tuple[str, Column]:
    column = draw(st.sampled_from(list(_values)))
    value: Any = draw(_values[column])
    kinds = ["==", "<", ">=", "in", "null", "notnull", "<=>"]
    if column == "name":
        kinds += ["startswith", "endswith", "contains"]
    kind = draw(st.sampled_from(kinds))
    c = F.col(column)
    makers: dict[str, Callable[[], Column]] = {
        "==": lambda: c == value,
        "<": lambda: c < value,
        ">=": lambda: c >= value,
        "in": lambda: c.isin([value, draw(_values[column])]),
        "null": lambda: c.isNull(),
        "notnull": lambda: c.isNotNull(),
        "<=>": lambda: c.eqNullSafe(value),
        "startswith": lambda: c.startswith(value),
        "endswith": lambda: c.endswith(value),
        "contains": lambda: c.contains(value),
    }
    made = makers[kind]()
    return f"{kind} {column} {value!r}", ~made if draw(st.booleans()) else made


@pytest.fixture(scope="module")
def whole(spark: SparkSession, mixed: Table) -> DataFrame:
    """The whole small table as Spark's own in-memory frame."""
    return spark.createDataFrame(mixed.to_arrow(progress=False))


@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(conditions(), min_size=1, max_size=3))
def test_pushed_filters_keep_the_rows_spark_keeps(
    spark: SparkSession,
    mixed: Table,
    whole: DataFrame,
    read_options: Options,
    pushdown: Callable[[bool], None],
    drawn: list[tuple[str, Column]],
) -> None:
    pushdown(True)
    condition = drawn[0][1]
    for _, more in drawn[1:]:
        condition = condition & more
    read = reader(spark, read_options(mixed)).load().where(condition)
    ids = sorted(row["$id"] for row in read.select("$id").collect())
    expected = sorted(row["$id"] for row in whole.where(condition).select("$id").collect())
    assert ids == expected, [text for text, _ in drawn]


def test_bad_input_raises_on_the_driver_before_any_task_runs(
    spark: SparkSession, people: Table, read_options: Options
) -> None:
    options = read_options(people)
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("bad-input", "bad input")
    cases = {
        "needs the option 'table'": {k: v for k, v in options.items() if k != "table"},
        "NotFoundError": {**options, "table": "no-such-table"},
        "FilterError": {**options, "query": "age >>> 3"},
        "takes no option 'api_key'": {**options, "api_key": "x"},
        "has no option 'colums'": {**options, "colums": "age"},
    }
    for message, case in cases.items():
        with pytest.raises(AnalysisException, match=message) as caught:
            reader(spark, case).load()
        assert options["api_key_secret"] not in str(caught.value)
    assert tracker.getJobIdsForGroup("bad-input") == []
    spark.sparkContext.setJobGroup("", "")


def test_without_a_key_option_the_workers_read_frameport_key_from_their_environment(
    spark: SparkSession, people: Table, read_options: Options
) -> None:
    options = read_options(people)
    del options["api_key_secret"]
    assert "FRAMEPORT_KEY" not in os.environ
    assert reader(spark, options).load().count() == ROWS


def test_the_key_is_in_no_plan_ui_or_log(
    spark: SparkSession, people: Table, read_options: Options, spark_log: Path
) -> None:
    key = read_options(people)["api_key_secret"]
    start = spark_log.stat().st_size if spark_log.exists() else 0
    spark.sparkContext.setLogLevel("INFO")
    try:
        df = reader(spark, read_options(people)).load().where("age > 40")
        plans = [df._jdf.queryExecution().toString(), df.rdd.toDebugString().decode()]
        assert df.count() > 0
    finally:
        spark.sparkContext.setLogLevel("ERROR")
    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList()
    described = [executions.apply(i).physicalPlanDescription() for i in range(executions.size())]
    assert any("frameport" in text for text in described)  # the SQL tab's plans are there
    with open(spark_log, encoding="utf-8", errors="replace") as log:
        log.seek(start)
        logged = log.read()
    assert "INFO" in logged  # the log was written while the read ran
    for text in [*plans, *described, logged]:
        assert key not in text
