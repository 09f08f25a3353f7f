"""Parallel keyset paging: reads in ranges of $sequence give exactly the serial read.

One table of 12,000 sample people is loaded for the module and rows are deleted from it (a
block of 2,500 and every seventh row of another stretch), so $sequence has gaps. Reads use
pages of 700 rows so that every range spans several pages. The serial read is the oracle:
frames must be identical (values, order, dtypes).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import weakref
from collections.abc import AsyncGenerator, Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from frameport import AsyncClient, Client, FilterError, Table, TableQuery, col
from frameport._core._fan_in import Slot, in_order
from frameport._core._sync import run_sync
from frameport._demo import sample_people
from frameport._tables.read._ranges import PAGES_PER_RANGE, split_ranges, tapering_ranges
from frameport.local import LocalService
from tables_support import BOUNDS_ROWS, data_frames, load, new_id, rows_served

PAGE = 700
ROWS = 12_000
QUERIES: dict[str, Callable[[Table], TableQuery]] = {
    "everything": lambda t: t,
    "service filter": lambda t: t.where((col("age") > 40) & col("active")),
    "filter with a client-side part": lambda t: t.query("city == 'Oslo' and score > 50"),
    "negated text (client only)": lambda t: t.query("city != 'Bergen'"),
    "select": lambda t: t.select("name", "signup"),
    "sort by $sequence descending": lambda t: t.query("age < 30").sort("$sequence", False),
    "head": lambda t: t.query("age >= 18").head(3_333),
    "whole table by $sequence descending": lambda t: t.sort("$sequence", False),
    "head of the whole table": lambda t: t.head(2_222),
    "empty": lambda t: t.query("age > 1000"),
}


@pytest.fixture(scope="module")
def people(key_client: Client) -> Table:
    """The table, with a block of rows and every seventh row of another stretch deleted."""
    table, frame = load(key_client, new_id("parallel"), sample_people(ROWS, seed=9))
    table.where(col("$sequence").between(3_001, 5_500)).delete()
    table.where(col("$id").isin(list(frame["$id"].iloc[8_000:9_000:7]))).delete()
    return table


def serial(query: TableQuery) -> pd.DataFrame:
    return query.to_pandas(progress=False, page_size=PAGE, parallel=1)


@pytest.mark.parametrize("name", QUERIES)
@pytest.mark.parametrize("parallel", [2, 4])
def test_parallel_to_pandas_is_the_serial_read(people: Table, name: str, parallel: int) -> None:
    query = QUERIES[name](people)
    expected = serial(query)
    read = query.to_pandas(progress=False, page_size=PAGE, parallel=parallel)
    pd.testing.assert_frame_equal(read, expected)


AUTO_SHAPES: dict[str, Callable[[Table], TableQuery]] = {
    **QUERIES,
    "sort by a column (stays serial)": lambda t: t.query("age > 70").sort("age", False),
    "head within one page (stays serial)": lambda t: t.query("active").head(PAGE - 1),
}


@pytest.mark.parametrize("name", AUTO_SHAPES)
def test_auto_reads_are_the_serial_read(people: Table, name: str, tmp_path: Path) -> None:
    """The default, ``parallel="auto"``, against ``parallel=1`` for every terminal."""
    query = AUTO_SHAPES[name](people)
    expected = serial(query)
    pd.testing.assert_frame_equal(query.to_pandas(progress=False, page_size=PAGE), expected)
    assert query.to_arrow(progress=False, page_size=PAGE).equals(
        query.to_arrow(progress=False, page_size=PAGE, parallel=1)
    )
    batches = data_frames(query.iter_batches(rows=900, progress=False, page_size=PAGE))
    joined = pd.concat(batches, ignore_index=True) if batches else expected.iloc[:0]
    pd.testing.assert_frame_equal(joined, expected)
    written = query.to_parquet(tmp_path / "auto.parquet", progress=False, page_size=PAGE)
    query.to_parquet(tmp_path / "serial.parquet", progress=False, page_size=PAGE, parallel=1)
    assert written.rows == len(expected)
    assert pq.read_table(tmp_path / "auto.parquet").equals(
        pq.read_table(tmp_path / "serial.parquet")
    )


@pytest.mark.parametrize("size", [5_001, 10_000])
def test_auto_reads_pages_of_the_default_size_like_the_serial_read(
    key_client: Client, size: int
) -> None:
    table, _ = load(key_client, new_id("parallel"), sample_people(size, seed=size))
    table.where(col("$sequence").between(4_990, 5_010)).delete()
    expected = table.to_pandas(progress=False, parallel=1)
    assert len(expected) == size - len(range(4_990, min(size, 5_010) + 1))
    pd.testing.assert_frame_equal(table.to_pandas(progress=False), expected)


def test_auto_reads_a_distant_service_in_several_ranges_with_the_serial_result() -> None:
    with LocalService(latency=15) as svc, svc.client() as client:
        table, _ = load(client, new_id("parallel"), sample_people(3_000, seed=4))
        query = table.query("age > 20")
        expected = query.to_pandas(progress=False, page_size=100, parallel=1)
        read = query.to_pandas(progress=False, page_size=100)
        pd.testing.assert_frame_equal(read, expected)
        assert "as many at once as this machine keeps up with" in query.explain(page_size=100)


@pytest.mark.parametrize("name", ["everything", "select", "whole table by $sequence descending"])
def test_a_read_without_a_filter_opens_beside_the_column_fetch_sending_nothing_more(
    service: LocalService, people: Table, name: str
) -> None:
    """Its first page and ends go out before the columns are known: the service still
    sends the result's rows and the two ends' rows, no more."""
    query = QUERIES[name](people)
    expected = serial(query)
    before = rows_served(service, people)
    pd.testing.assert_frame_equal(query.to_pandas(progress=False, page_size=PAGE), expected)
    assert rows_served(service, people) - before == len(expected) + BOUNDS_ROWS


SERIAL_OPENINGS: dict[str, Callable[[TableQuery], TableQuery]] = {
    "head of a few rows": lambda t: t.head(10),
    "head of a select": lambda t: t.select("name", "signup").head(650),
    "head by $sequence descending": lambda t: t.sort("$sequence", False).head(30),
}


@pytest.mark.parametrize("name", SERIAL_OPENINGS)
def test_a_serial_read_without_a_filter_asks_for_its_first_page_beside_the_column_fetch(
    service: LocalService, people: Table, name: str
) -> None:
    """The page asked for before the columns are known is the read's own first page: the
    service sends the result's rows once, and the frame is that of the same read with a
    filter (which asks for its pages only once the columns are known)."""
    query = SERIAL_OPENINGS[name](people)
    assert "because the head fits in one page" in query.explain()
    expected = SERIAL_OPENINGS[name](people.where(col("$sequence") > 0)).to_pandas(progress=False)
    before = rows_served(service, people)
    pd.testing.assert_frame_equal(query.to_pandas(progress=False), expected)
    assert rows_served(service, people) - before == len(expected)


def test_a_serial_read_of_many_pages_takes_its_early_first_page_once(
    service: LocalService, people: Table
) -> None:
    expected = people.where(col("$sequence") > 0).to_pandas(progress=False, page_size=PAGE)
    before = rows_served(service, people)
    read = people.to_pandas(progress=False, page_size=PAGE, parallel=1)
    pd.testing.assert_frame_equal(read, expected)
    assert rows_served(service, people) - before == len(expected)
    batches = data_frames(people.iter_batches(progress=False, page_size=PAGE, parallel=1))
    assert [len(batch) for batch in batches[:2]] == [PAGE, PAGE]


def test_a_serial_read_whose_plan_fails_raises_the_plans_error(people: Table) -> None:
    """Its early first page (refused too: the column is unknown) is let go unseen."""
    with pytest.raises(FilterError, match="unknown column 'nope'"):
        people.select("nope").head(5).to_pandas(progress=False)
    with pytest.raises(FilterError, match="unknown column 'nope'"):
        people.select("nope").to_pandas(progress=False, parallel=1)
    assert len(people.head(5).to_pandas(progress=False)) == 5  # the client still reads


def test_a_read_whose_plan_fails_closes_what_it_opened(people: Table) -> None:
    with pytest.raises(FilterError, match="unknown column 'nope'"):
        people.select("nope").to_pandas(progress=False)
    with pytest.raises(FilterError, match="sort"):
        people.sort("nope").to_pandas(progress=False)
    assert len(people.head(5).to_pandas(progress=False)) == 5  # the client still reads


def test_explain_says_when_a_read_stays_serial_and_why(people: Table) -> None:
    serially = "The pages are read one after another, because"
    assert f"{serially} the rows are sorted by a column" in people.sort("age").explain()
    assert f"{serially} parallel is 1" in people.explain(parallel=1)
    assert f"{serially} the head fits in one page" in people.head(10).explain()
    assert "4 at once" in people.explain(parallel=4)
    assert "as many at once as this machine keeps up with" in people.explain()


def test_the_table_has_gaps_and_the_oracle_sees_them(people: Table) -> None:
    sequence = people.to_pandas(progress=False, parallel=1, system=["sequence"])["$sequence"]
    assert len(sequence) == ROWS - 2_500 - len(range(8_000, 9_000, 7))
    assert sequence.diff().max() > 2_000  # the deleted block


@pytest.mark.parametrize("parallel", [3, 8])
def test_parallel_to_arrow_is_the_serial_read(people: Table, parallel: int) -> None:
    query = people.query("score < 40 or age > 80")
    expected = query.to_arrow(progress=False, page_size=PAGE, parallel=1)
    read = query.to_arrow(progress=False, page_size=PAGE, parallel=parallel)
    assert read.schema == expected.schema
    assert read.equals(expected)


def test_parallel_to_parquet_writes_the_serial_file(people: Table, tmp_path: Path) -> None:
    query = people.query("city in ['Oslo', 'Tromsø'] or age < 25")
    rows = query.to_parquet(tmp_path / "serial.parquet", progress=False, page_size=PAGE, parallel=1)
    parallel_rows = query.to_parquet(
        tmp_path / "parallel.parquet", progress=False, page_size=PAGE, parallel=4
    )
    assert rows.rows == parallel_rows.rows > 0
    expected = pq.read_table(tmp_path / "serial.parquet")
    written = pq.read_table(tmp_path / "parallel.parquet")
    assert written.schema == expected.schema
    assert written.equals(expected)


def test_parallel_batches_come_in_order_with_constant_dtypes(people: Table) -> None:
    query = people.query("active")
    batches = data_frames(
        query.iter_batches(rows=1_000, progress=False, page_size=PAGE, parallel=3)
    )
    assert {len(batch) for batch in batches[:-1]} == {1_000}
    assert len({tuple(batch.dtypes.astype(str)) for batch in batches}) == 1
    joined = pd.concat(batches, ignore_index=True)
    pd.testing.assert_frame_equal(joined, serial(query))


def test_parallel_reads_the_legacy_interface_too(key_client: Client, people: Table) -> None:
    collection = key_client.collection(people.database_id, people.id)
    query = collection.query("age > 60")
    pd.testing.assert_frame_equal(
        query.to_pandas(progress=False, page_size=PAGE, parallel=4), serial(query)
    )


def test_a_one_row_table_reads_with_more_ranges_than_rows(key_client: Client) -> None:
    table, _ = load(key_client, new_id("parallel"), sample_people(1, seed=2))
    pd.testing.assert_frame_equal(table.to_pandas(progress=False, parallel=4), serial(table))


def test_queries_that_cannot_run_in_ranges_fall_back_to_serial(people: Table) -> None:
    by_age = people.query("age > 70").sort("age", ascending=False)
    pd.testing.assert_frame_equal(
        by_age.to_pandas(progress=False, page_size=PAGE, parallel=4), serial(by_age)
    )
    many_ids = serial(people)["$id"].iloc[::3].tolist()  # more values than one request holds
    split = people.where(col("$id").isin(many_ids))
    pd.testing.assert_frame_equal(split.to_pandas(progress=False, parallel=4), serial(split))


def test_which_queries_run_in_ranges(people: Table) -> None:
    def reason(query: TableQuery, parallel: int = 4) -> str | None:
        return run_sync(query._async._read(PAGE, parallel)).strategy.serial_reason

    assert reason(people) is None
    assert reason(people.query("city == 'Oslo'")) is None  # a client-side residual is fine
    assert reason(people.sort("$sequence", ascending=False)) is None
    assert reason(people.head(10)) is None
    assert reason(people, parallel=1) == "parallel is 1"
    assert "sorted" in str(reason(people.sort("age")))
    many_ids = serial(people)["$id"].iloc[::3].tolist()
    assert "several requests" in str(reason(people.where(col("$id").isin(many_ids))))


@pytest.mark.parametrize("wrong", [0, -2, 1.5, True, "4", "automatic"])
def test_parallel_must_be_a_whole_number(people: Table, wrong: object) -> None:
    with pytest.raises(ValueError, match="parallel"):
        people.to_pandas(progress=False, parallel=wrong)  # type: ignore[arg-type]


def test_parallel_none_and_one_are_the_serial_path(people: Table) -> None:
    expected = serial(people.head(2_000))
    for parallel in (None, 1):
        read = people.head(2_000).to_pandas(progress=False, page_size=PAGE, parallel=parallel)
        pd.testing.assert_frame_equal(read, expected)


def test_a_page_is_freed_with_its_response_not_by_a_later_full_collection(
    service: LocalService, people: Table
) -> None:
    """Concurrent ranges keep responses in flight during the engine's young-generation
    collections; a page body must not depend on the garbage collector to be freed."""

    async def freed_at_once() -> bool:
        async with AsyncClient(service.endpoint, service.project, key=service.key) as client:
            path = f"/tablesdb/{people.database_id}/tables/{people.id}/rows"
            response = await client._request("GET", path)
            alive = weakref.ref(response)
            del response
            return alive() is None

    gc.disable()
    try:
        assert asyncio.run(freed_at_once())
    finally:
        gc.enable()


# -- the pieces ----------------------------------------------------------------------------------


@given(
    first=st.integers(1, 10**12),
    width=st.integers(0, 10**6),
    parts=st.integers(1, 64),
)
def test_ranges_cover_the_bounds_exactly_once(first: int, width: int, parts: int) -> None:
    last = first + width
    ranges = split_ranges(first, last, parts)
    assert ranges[0].after == first - 1 and ranges[-1].upto == last
    assert all(a.upto == b.after for a, b in itertools.pairwise(ranges))
    assert all(r.span >= 1 for r in ranges)
    assert len(ranges) == min(parts, width + 1)
    assert max(r.span for r in ranges) - min(r.span for r in ranges) <= 1


@given(
    after=st.integers(0, 10**9),
    span=st.integers(1, 10**5),
    page=st.integers(1, 5_000),
    width=st.integers(1, 20),
    descending=st.booleans(),
)
def test_tapering_ranges_cover_the_span_once_narrowing_to_single_pages(
    after: int, span: int, page: int, width: int, descending: bool
) -> None:
    upto = after + span
    ranges = list(tapering_ranges(after, upto, page, lambda: width, descending=descending))
    ordered = ranges[::-1] if descending else ranges
    assert ordered[0].after == after and ordered[-1].upto == upto
    assert all(a.upto == b.after for a, b in itertools.pairwise(ordered))
    assert all(0 < r.span <= PAGES_PER_RANGE * page for r in ranges)
    pages = [-(-r.span // page) for r in ranges]
    assert pages == sorted(pages, reverse=True)  # never wider than the one before
    if width > 1:
        assert pages[-1] == 1  # the read ends in single pages, one per slot


def test_in_order_keeping_all_starts_past_a_slow_source_within_the_window() -> None:
    running: set[int] = set()
    widest: list[int] = []
    finished: list[int] = []

    async def source(index: int, delay: float) -> AsyncGenerator[str, None]:
        running.add(index)
        widest.append(len(running))
        await asyncio.sleep(delay)
        yield f"{index}"
        running.discard(index)
        finished.append(index)

    async def run(keep_all: bool) -> list[str]:
        for seen in (running, widest, finished):
            seen.clear()
        delays = [0.2, 0.01, 0.01, 0.01, 0.01, 0.01]
        sources = [(Slot(), source(i, d)) for i, d in enumerate(delays)]
        return [item async for item in in_order(sources, window=2, keep_all=keep_all)]

    assert asyncio.run(run(keep_all=True)) == [str(i) for i in range(6)]
    assert max(widest) == 2 and finished[-1] == 0  # the others ran beside the slow one
    assert asyncio.run(run(keep_all=False)) == [str(i) for i in range(6)]
    assert finished.index(0) < finished.index(2)  # within 2 of the slow one: held back


def test_in_order_keeping_all_starts_the_next_source_once_one_gives_up_its_slot() -> None:
    events: list[str] = []

    async def source(index: int, release: Callable[[], None]) -> AsyncGenerator[str, None]:
        events.append(f"start {index}")
        await asyncio.sleep(0.01)  # its requests
        release()
        await asyncio.sleep(0.05)  # its last items, decoding
        events.append(f"end {index}")
        yield f"{index}"

    async def run(keep_all: bool) -> list[str]:
        events.clear()
        slots = [Slot() for _ in range(3)]
        sources = [(slot, source(i, slot.release)) for i, slot in enumerate(slots)]
        return [item async for item in in_order(sources, window=1, keep_all=keep_all)]

    assert asyncio.run(run(keep_all=True)) == ["0", "1", "2"]
    assert events.index("start 1") < events.index("end 0")  # started in the freed slot
    assert asyncio.run(run(keep_all=False)) == ["0", "1", "2"]
    assert events == ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]


def test_in_order_hands_on_items_source_by_source_whatever_finishes_first() -> None:
    async def source(index: int, delay: float) -> AsyncGenerator[str, None]:
        for item in range(3):
            await asyncio.sleep(delay)
            yield f"{index}.{item}"

    async def run() -> list[str]:
        delays = [0.03, 0.0, 0.02, 0.0, 0.01]
        sources = [(Slot(), source(i, d)) for i, d in enumerate(delays)]
        return [item async for item in in_order(sources, window=3)]

    assert asyncio.run(run()) == [f"{i}.{j}" for i in range(5) for j in range(3)]


def test_in_order_follows_a_window_that_changes_while_it_runs() -> None:
    running: set[int] = set()
    widest: list[int] = []
    window = iter([1, 1, 1, 3, 3, 3, 3, 3, 3, 1])

    def width() -> int:
        return next(window, 1)

    async def source(index: int) -> AsyncGenerator[str, None]:
        running.add(index)
        widest.append(len(running))
        for item in range(2):
            await asyncio.sleep(0.01 * (6 - index))
            yield f"{index}.{item}"
        running.discard(index)

    async def run() -> list[str]:
        sources = [(Slot(), source(i)) for i in range(6)]
        return [item async for item in in_order(sources, window=width)]

    assert asyncio.run(run()) == [f"{i}.{j}" for i in range(6) for j in range(2)]
    assert widest[0] == 1 and max(widest) == 3


def test_in_order_raises_a_later_sources_failure_at_once() -> None:
    started: list[int] = []

    async def slow() -> AsyncGenerator[int, None]:
        started.append(0)
        await asyncio.sleep(30)
        yield 0

    async def failing() -> AsyncGenerator[int, None]:
        started.append(1)
        raise RuntimeError("range 1 failed")
        yield 1

    async def run() -> None:
        async for _ in in_order([(Slot(), slow()), (Slot(), failing())], window=2):
            pass

    async def bounded() -> None:
        await asyncio.wait_for(run(), timeout=10)

    with pytest.raises(RuntimeError, match="range 1 failed"):
        asyncio.run(bounded())
    assert started == [0, 1]


def test_the_arrow_schema_of_an_empty_parallel_read_is_the_tables(people: Table) -> None:
    empty = people.query("age > 1000").to_arrow(progress=False, parallel=4)
    assert empty.num_rows == 0
    assert empty.schema == people.to_arrow(progress=False, page_size=PAGE).schema
    assert empty.schema.field("age").type == pa.int64()
