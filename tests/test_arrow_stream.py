"""Tables and queries as Arrow streams (``__arrow_c_stream__``): pyarrow, polars and DuckDB
read them without pandas, and get what `to_arrow()` gives, empty results included."""

from __future__ import annotations

import time

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import frameport as fp
from frameport import Client, Table, TableQuery
from frameport._core._fan_in import ITEMS_AHEAD
from frameport._demo import sample_people
from frameport._tables.read._strategy import READ_CAP
from frameport.local import LocalService
from tables_support import BOUNDS_ROWS, load, new_id, rows_served

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


def settled_rows_served(service: LocalService, table: Table) -> int:
    """The rows of `table` sent once the reads in flight have stopped asking for more."""
    last, still = rows_served(service, table), 0
    while still < 3:
        time.sleep(0.2)
        now = rows_served(service, table)
        last, still = now, (still + 1 if now == last else 0)
    return last


def test_the_stream_fetches_pages_as_the_consumer_reads(
    service: LocalService, key_client: Client
) -> None:
    # a table no other test reads, so that what the service sent is this stream's alone
    rows = 1000
    loaded, _ = load(key_client, new_id("lazy"), sample_people(rows, seed=4))
    table = key_client.table(loaded.database_id, loaded.id, page_size=PAGE)
    reader = pa.RecordBatchReader.from_stream(table)
    first = reader.read_next_batch()
    assert first.num_rows == PAGE
    # a consumer that stops after one batch has the first page and the ends fetched, and the
    # ranges running (the one being read and READ_CAP ahead of it), each paused with
    # ITEMS_AHEAD pages waiting, one decoded and held back, and the next one fetched
    ahead = (READ_CAP + 1) * (ITEMS_AHEAD + 2) * PAGE
    assert PAGE + BOUNDS_ROWS <= settled_rows_served(service, table) <= PAGE + BOUNDS_ROWS + ahead
    assert PAGE + BOUNDS_ROWS + ahead < rows
    rest = reader.read_all()
    assert first.num_rows + rest.num_rows == rows
    assert rows_served(service, table) == rows + BOUNDS_ROWS
