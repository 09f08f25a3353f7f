"""Tables and queries as Arrow streams (``__arrow_c_stream__``): pyarrow, polars and DuckDB
read them without pandas, and get what `to_arrow()` gives, empty results included."""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import frameport as fp
from frameport._client import Client
from frameport._demo import sample_people
from frameport._tables._query import Table, TableQuery
from frameport._tables.read._cursor import PREFETCH_PAGES
from frameport.local import LocalService
from tables_support import BOUNDS_ROWS, load, new_id

PAGE = 10


@pytest.fixture(scope="module")
def people(key_client: Client) -> Table:
    table, _ = load(key_client, new_id("stream"), sample_people(150, seed=3))
    return key_client.table(table.database_id, table.id, page_size=PAGE)


def queries(people: Table) -> dict[str, TableQuery]:
    return {
        "table": people,
        "filtered": people.where(fp.col("age") > 40).select("name", "age", "signup"),
        "sorted": people.sort("score", ascending=False).head(55),
        "empty": people.where(fp.col("city") == "Atlantis"),
    }


CASES = ["table", "filtered", "sorted", "empty"]


@pytest.mark.parametrize("case", CASES)
def test_pyarrow_reads_the_stream_as_to_arrow(people: Table, case: str) -> None:
    query = queries(people)[case]
    expected = query.to_arrow(progress=False)
    assert pa.table(query).equals(expected, check_metadata=True)
    reader = pa.RecordBatchReader.from_stream(query)
    assert reader.schema == expected.schema
    assert reader.read_all().equals(expected)


@pytest.mark.parametrize("case", CASES)
def test_polars_reads_the_stream_as_to_arrow(people: Table, case: str) -> None:
    query = queries(people)[case]
    expected = pl.from_arrow(query.to_arrow(progress=False))
    assert isinstance(expected, pl.DataFrame)
    streamed = pl.DataFrame(query)
    assert streamed.schema == expected.schema
    assert streamed.equals(expected)
    eager = query.to_polars()
    assert isinstance(eager, pl.DataFrame) and eager.equals(expected)


@pytest.mark.parametrize("case", CASES)
def test_duckdb_reads_the_stream_as_to_arrow(people: Table, case: str) -> None:
    query = queries(people)[case]
    expected = duckdb.from_arrow(query.to_arrow(progress=False)).to_arrow_table()
    relation = duckdb.sql("select * from query")
    assert relation is not None
    streamed = relation.to_arrow_table()
    assert streamed.equals(expected)


def test_duckdb_aggregates_a_table_without_pandas(people: Table) -> None:
    frame = people.to_pandas(progress=False)
    relation = duckdb.sql(
        "select city, count(*) as n from people where city is not null group by city"
    )
    assert relation is not None
    counted = relation.df()
    expected = frame.dropna(subset=["city"]).groupby("city").size()
    got = counted.set_index("city")["n"].sort_index()
    assert got.to_dict() == expected.sort_index().to_dict()


def test_the_stream_fetches_pages_as_the_consumer_reads(
    service: LocalService, people: Table
) -> None:
    before = service.rows_served
    reader = pa.RecordBatchReader.from_stream(people)
    first = reader.read_next_batch()
    assert first.num_rows == PAGE
    # only the first pages have been fetched: the one read, and the pager's read-ahead
    assert PAGE <= service.rows_served - before <= (PREFETCH_PAGES + 3) * PAGE + BOUNDS_ROWS < 150
    rest = reader.read_all()
    assert first.num_rows + rest.num_rows == 150
    assert service.rows_served - before == 150 + BOUNDS_ROWS
