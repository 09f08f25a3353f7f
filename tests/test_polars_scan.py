"""Lazy polars scans of tables: columns, filters and row limits reach the service (counted
in the rows the local service sent), and results equal polars on the fully read frame."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence

import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import frameport as fp
from frameport import AsyncClient, Client, Table, TableQuery
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import load, new_id, rows_served


@pytest.fixture(scope="module")
def people(key_client: Client) -> Table:
    table, _ = load(key_client, new_id("scan"), sample_people(400, seed=11))
    return table


@pytest.fixture(scope="module")
def full(people: Table) -> pl.DataFrame:
    frame = people.to_polars()
    assert isinstance(frame, pl.DataFrame)
    return frame


def scan(source: Table | TableQuery) -> pl.LazyFrame:
    """`source.to_polars(lazy=True)`, checked to be a LazyFrame."""
    lazy = source.to_polars(lazy=True)
    assert isinstance(lazy, pl.LazyFrame)
    return lazy


def by_id(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort("$id")


def test_a_fully_pushed_filter_sends_only_the_matching_rows(
    service: LocalService, people: Table, full: pl.DataFrame
) -> None:
    predicate = (pl.col("age") > 70) & pl.col("city").is_in(["Oslo", "Bergen"])
    expected = full.filter(predicate).select("name", "age")
    before = rows_served(service, people)
    got = scan(people).filter(predicate).select("name", "age").collect()
    assert got.equals(expected)
    # One short page holds them all: a near service is asked for no ends beside it.
    assert 0 < expected.height == rows_served(service, people) - before


def test_what_polars_alone_can_apply_stays_exact(
    service: LocalService, key_client: Client, people: Table, full: pl.DataFrame
) -> None:
    lazy = fp.scan_table(key_client, people.database_id, people.id)
    predicate = (pl.col("age") >= 60) & (pl.col("name").str.to_lowercase().str.len_chars() > 4)
    expected = full.filter(predicate)
    before = rows_served(service, people)
    got = lazy.filter(predicate).collect()
    assert by_id(got).equals(by_id(expected))
    assert rows_served(service, people) - before == full.filter(pl.col("age") >= 60).height
    report = fp.explain_scans(lazy.filter(predicate))
    assert "filter pushed to the service: age >= 60" in report
    assert "filter applied by polars only" in report and "to_lowercase" in report
    assert '"method":"greaterThanEqual","column":"age"' in report


def test_columns_go_into_the_select_and_a_row_limit_into_head(
    service: LocalService, people: Table, full: pl.DataFrame
) -> None:
    lazy = scan(people).select("name", "city").head(7)
    report = fp.explain_scans(lazy)
    assert "columns polars needs: name, city" in report
    assert '{"method":"select","values":["name","city"]}' in report
    assert "row limit 7: applied by the service (head)" in report
    before = rows_served(service, people)
    got = lazy.collect()
    assert rows_served(service, people) - before == 7
    assert got.equals(full.select("name", "city").head(7))


def test_a_row_limit_after_a_filter_stops_the_scan(people: Table, full: pl.DataFrame) -> None:
    predicate = pl.col("score") < 50
    got = scan(people).filter(predicate).head(5).collect()
    assert got.equals(full.filter(predicate).head(5))


def test_a_scan_of_a_query_keeps_its_filter(people: Table, full: pl.DataFrame) -> None:
    query = people.where(fp.col("active") == True)  # noqa: E712
    lazy = scan(query)
    got = lazy.filter(pl.col("age") < 30).collect()
    expected = full.filter(pl.col("active") & (pl.col("age") < 30))
    assert by_id(got).equals(by_id(expected))


# ---------------------------------------------------------------------------------------------
# Differential: the lazy scan against polars filtering the fully read frame

TEXTS = ["ana", "Ana", "ÁNA", "ána", "Émile", "emile", "zoë", "Zoe", "", "a b"]
INTS = [-(2**63), -(2**63) + 1, -1, 0, 1, 7, 2**53 + 1, 2**63 - 2, 2**63 - 1]
FLOATS = [-1.5, 0.0, 0.25, 3.0, 1e300]
TIMES = [
    dt.datetime(1999, 12, 31, 23, 59, 59, 999000, tzinfo=dt.UTC),
    dt.datetime(2024, 2, 29, 12, 0, tzinfo=dt.UTC),
    dt.datetime(2024, 2, 29, 12, 0, 0, 1000, tzinfo=dt.UTC),
    dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=dt.UTC),
]


def edge_frame() -> pd.DataFrame:
    rows = 36
    return pd.DataFrame(
        {
            "n": pd.array([None if i % 7 == 0 else INTS[i % len(INTS)] for i in range(rows)],
                          dtype="Int64"),
            "x": [float("nan") if i % 5 == 0 else FLOATS[i % len(FLOATS)] for i in range(rows)],
            "s": pd.array([None if i % 6 == 0 else TEXTS[i % len(TEXTS)] for i in range(rows)],
                          dtype="str"),
            "t": pd.array(
                [pd.NaT if i % 8 == 0 else TIMES[i % len(TIMES)] for i in range(rows)],
                dtype="datetime64[ms, UTC]",
            ),
            "b": pd.array([None if i % 4 == 0 else i % 3 == 0 for i in range(rows)],
                          dtype="boolean"),
        }
    )  # fmt: skip


OPS = ["==", "!=", "<", "<=", ">", ">="]
Value = int | float | str | dt.datetime


def compare(column: str, op: str, value: Value) -> pl.Expr:
    expr = pl.col(column)
    return {
        "==": expr == value, "!=": expr != value, "<": expr < value,
        "<=": expr <= value, ">": expr > value, ">=": expr >= value,
    }[op]  # fmt: skip


def column_leaves(column: str, values: Sequence[Value]) -> st.SearchStrategy[pl.Expr]:
    value = st.sampled_from(values)
    return st.one_of(
        st.builds(compare, st.just(column), st.sampled_from(OPS), value),
        st.builds(lambda vs: pl.col(column).is_in(vs), st.lists(value, max_size=3)),
        st.builds(
            lambda low, high, closed: pl.col(column).is_between(
                pl.lit(low), pl.lit(high), closed=closed
            ),
            value, value, st.sampled_from(["both", "left", "right", "none"]),
        ),
        st.sampled_from([pl.col(column).is_null(), pl.col(column).is_not_null()]),
    )  # fmt: skip


def text_leaves() -> st.SearchStrategy[pl.Expr]:
    text = st.sampled_from(TEXTS)
    return st.one_of(
        st.builds(lambda t: pl.col("s").str.starts_with(t), text),
        st.builds(lambda t: pl.col("s").str.ends_with(t), text),
        st.builds(lambda t: pl.col("s").str.contains(t, literal=True), text),
        st.builds(lambda t: pl.col("s").str.to_lowercase() == t, text),  # polars only
    )


LEAVES = st.one_of(
    column_leaves("n", INTS),
    column_leaves("x", FLOATS),
    column_leaves("s", TEXTS),
    column_leaves("t", TIMES),
    text_leaves(),
    st.sampled_from([pl.col("b"), pl.col("b") == False, (pl.col("n") % 2) == 0]),  # noqa: E712
)
PREDICATES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.builds(lambda a, b: a & b, inner, inner),
        st.builds(lambda a, b: a | b, inner, inner),
        st.builds(lambda a: ~a, inner),
    ),
    max_leaves=4,
)


@pytest.fixture(scope="module")
def edges(key_client: Client) -> tuple[Table, pl.DataFrame]:
    table, _ = load(key_client, new_id("edges"), edge_frame())
    read = table.to_polars()
    assert isinstance(read, pl.DataFrame)
    return table, read


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predicate=PREDICATES)
def test_the_lazy_scan_equals_polars_on_the_full_frame(
    edges: tuple[Table, pl.DataFrame], predicate: pl.Expr
) -> None:
    table, full = edges
    got = scan(table).filter(predicate).collect()
    assert by_id(got).equals(by_id(full.filter(predicate))), str(predicate)


def test_the_async_face_reads_eagerly_and_refuses_a_lazy_scan(
    async_client: AsyncClient, people: Table, full: pl.DataFrame
) -> None:
    async def read() -> pl.DataFrame:
        table = async_client.table(people.database_id, people.id)
        eager = await table.to_polars()
        assert isinstance(eager, pl.DataFrame)
        with pytest.raises(RuntimeError, match="synchronous Client"):
            await table.to_polars(lazy=True)
        return eager

    assert asyncio.run(read()).equals(full)
