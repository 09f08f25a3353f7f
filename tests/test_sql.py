"""`fp.sql`: SQL over tables computed by polars, with the WHERE filters pushed to the service;
results equal the same computation in pandas."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pytest

import frameport as fp
from frameport import Client, Table
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import load, new_id, rows_served


@pytest.fixture(scope="module")
def loaded(key_client: Client) -> tuple[Table, pd.DataFrame]:
    return load(key_client, new_id("sql"), sample_people(300, seed=5))


@pytest.fixture(scope="module")
def orders(key_client: Client, loaded: tuple[Table, pd.DataFrame]) -> tuple[Table, pd.DataFrame]:
    _, people = loaded
    buyers = people["$id"].iloc[::3].repeat(2).to_numpy()
    frame = pd.DataFrame(
        {
            "person": pd.array(buyers, dtype="str"),
            "total": pd.array([(i * 7) % 50 for i in range(len(buyers))], dtype="Int64"),
        }
    )
    return load(key_client, new_id("sql"), frame)


def test_group_by_equals_pandas_and_the_filter_reaches_the_service(
    service: LocalService, loaded: tuple[Table, pd.DataFrame]
) -> None:
    table, frame = loaded
    before = rows_served(service, table)
    got = fp.sql(
        "select city, avg(age) as mean_age, count(*) as n from people "
        "where age > 30 group by city order by city",
        people=table,
    )
    kept = frame[frame["age"] > 30]
    assert rows_served(service, table) - before == len(kept)  # one short page, no ends
    expected = (
        kept.groupby("city")["age"].agg(mean_age="mean", n="size").reset_index()
        .sort_values("city", ignore_index=True)
    )  # fmt: skip
    result = got.to_pandas()
    assert list(result["city"]) == list(expected["city"])
    assert list(result["n"]) == list(expected["n"])
    pd.testing.assert_series_equal(
        result["mean_age"], expected["mean_age"].astype("float64"), check_names=False
    )


def test_distinct_and_order_equal_pandas(loaded: tuple[Table, pd.DataFrame]) -> None:
    table, frame = loaded
    got = fp.sql("select distinct city from p where city is not null order by city desc", p=table)
    expected = sorted(frame["city"].dropna().unique(), reverse=True)
    assert got["city"].to_list() == expected


def test_a_join_across_tables_equals_pandas(
    loaded: tuple[Table, pd.DataFrame], orders: tuple[Table, pd.DataFrame]
) -> None:
    people, people_frame = loaded
    order_table, order_frame = orders
    got = fp.sql(
        'select p.name, sum(o.total) as spent from p join o on p."$id" = o.person '
        "group by p.name order by p.name",
        p=people,
        o=order_table,
    )
    merged = order_frame.merge(people_frame, left_on="person", right_on="$id")
    expected = merged.groupby("name")["total"].sum().sort_index()
    assert got["name"].to_list() == list(expected.index)
    assert got["spent"].to_list() == [int(v) for v in expected]


def test_polars_frames_mix_with_tables(loaded: tuple[Table, pd.DataFrame]) -> None:
    table, frame = loaded
    regions = pl.DataFrame({"city": ["Oslo", "Bergen"], "region": ["east", "west"]})
    got = fp.sql(
        "select r.region, count(*) as n from t join r on t.city = r.city group by r.region "
        "order by r.region",
        t=table,
        r=regions,
    )
    counts = frame["city"].value_counts()
    assert got.rows() == [("east", counts["Oslo"]), ("west", counts["Bergen"])]


def test_bad_sql_raises_sql_error_naming_the_tables(loaded: tuple[Table, pd.DataFrame]) -> None:
    table, _ = loaded
    with pytest.raises(fp.SQLError, match="tables given \\(people\\)"):
        fp.sql("select * from nobody", people=table)
    with pytest.raises(fp.SQLError, match="column"):
        fp.sql("select height from people", people=table)
    with pytest.raises(fp.SQLError, match="SQL statement as text"):
        fp.sql("  ", people=table)
