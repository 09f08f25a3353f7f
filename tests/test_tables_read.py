"""Reading tables through the public API over HTTP: complete, typed, filtered, sorted, paged.

The tables (0 to 60,000 rows) are loaded once for the module; pandas is the oracle.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
import pyarrow as pa
import pytest

from frameport import Client, Table, col
from frameport._demo import sample_people
from tables_support import (
    PEOPLE_DTYPES,
    SYSTEM_DTYPES,
    assert_same_rows,
    data_frames,
    load,
    new_id,
)

# Its module fixtures are costly (tables loaded, a process started): one worker runs them.
pytestmark = pytest.mark.xdist_group("tables_read")

SIZES = (0, 1, 4999, 5000, 5001, 60_000)
Loaded = dict[int, tuple[Table, pd.DataFrame]]


@pytest.fixture(scope="module")
def database(key_client: Client) -> str:
    return new_id("read")


@pytest.fixture(scope="module")
def tables(key_client: Client, database: str) -> Loaded:
    return {size: load(key_client, database, sample_people(size, seed=size)) for size in SIZES}


@pytest.fixture(scope="module")
def big(tables: Loaded) -> tuple[Table, pd.DataFrame]:
    return tables[60_000]


@pytest.fixture(scope="module")
def big_read(big: tuple[Table, pd.DataFrame]) -> pd.DataFrame:
    """The whole 60,000-row table as read (service order, every field)."""
    return big[0].to_pandas(progress=False, system=True)


# -- complete and typed ------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_every_row_reads_back_with_its_values_and_dtypes(tables: Loaded, size: int) -> None:
    table, expected = tables[size]
    read = table.to_pandas(progress=False, system=True)
    assert_same_rows(read, expected)
    assert read["$sequence"].is_monotonic_increasing  # the service's order
    assert table.count() == size


@pytest.mark.parametrize("size", (0, 5001))
def test_arrow_and_pandas_share_the_schema_even_when_empty(tables: Loaded, size: int) -> None:
    table, _ = tables[size]
    arrow = table.to_arrow(progress=False, system=True)
    assert arrow.num_rows == size
    assert arrow.schema.field("age").type == pa.int64()
    assert arrow.schema.field("signup").type == pa.timestamp("ms", tz="UTC")
    assert arrow.schema.field("$permissions").type == pa.list_(pa.string())
    frame = table.to_pandas(progress=False)
    assert frame.dtypes.astype(str)[list(PEOPLE_DTYPES)].to_dict() == PEOPLE_DTYPES


def test_pyarrow_backend_gives_arrow_dtypes_with_the_same_values(
    big: tuple[Table, pd.DataFrame],
) -> None:
    table, _ = big
    arrow_backed = table.head(6000).to_pandas(dtype_backend="pyarrow", progress=False, system=True)
    user_columns = arrow_backed.drop(columns="$permissions")  # tuples with either backend
    assert all(isinstance(dtype, pd.ArrowDtype) for dtype in user_columns.dtypes)
    default = table.head(6000).to_pandas(progress=False)
    assert arrow_backed["age"].tolist() == default["age"].tolist()
    assert arrow_backed["name"].tolist() == default["name"].tolist()


def test_legacy_collection_interface_gives_the_same_frames(
    key_client: Client, database: str, tables: Loaded
) -> None:
    table, _ = tables[5001]
    collection = key_client.collection(database, table.id)
    pd.testing.assert_frame_equal(
        collection.to_pandas(progress=False), table.to_pandas(progress=False)
    )
    text = "age > 40 and city == 'Bergen'"
    pd.testing.assert_frame_equal(
        collection.query(text).sort("score").to_pandas(progress=False),
        table.query(text).sort("score").to_pandas(progress=False),
    )


# -- filters ------------------------------------------------------------------------------------

FILTERS = (
    "age > 30 and city in ['Oslo', 'Bergen']",
    "score < 40 or age.isna()",
    "active and city != 'Oslo'",
    "not (age > 50)",
    "name.str.startswith('Ada') and score >= 70.5",
    "signup >= @start and signup < @end",
    "city == 'oslo'",
    "age.between(20, 25) | (score.isna() & ~active)",
)


@pytest.mark.parametrize("text", FILTERS)
def test_filters_keep_the_rows_pandas_query_keeps(
    big: tuple[Table, pd.DataFrame], big_read: pd.DataFrame, text: str
) -> None:
    table, _ = big
    start, end = pd.Timestamp("2020-01-01", tz="UTC"), pd.Timestamp("2020-03-01 12:00", tz="UTC")
    read = table.query(text).to_pandas(progress=False, system=True)
    expected = big_read.query(text)
    assert start < end  # the variables `@start` and `@end` name
    pd.testing.assert_frame_equal(read.reset_index(drop=True), expected.reset_index(drop=True))
    assert table.query(text).count() == len(expected)


def test_where_and_query_and_variables_agree(
    big: tuple[Table, pd.DataFrame], big_read: pd.DataFrame
) -> None:
    table, _ = big
    low, high = 25, 28
    by_text = table.query("@low <= age <= @high").query("city == 'Trondheim'")
    by_expr = table.where(col("age").between(low, high)).where(col("city") == "Trondheim")
    expected = big_read[big_read["age"].between(low, high) & (big_read["city"] == "Trondheim")]
    for query in (by_text, by_expr):
        read = query.to_pandas(progress=False)
        assert read["$id"].tolist() == expected["$id"].tolist()


def test_a_filter_split_into_several_requests_returns_each_row_once(
    big: tuple[Table, pd.DataFrame], big_read: pd.DataFrame
) -> None:
    table, _ = big
    chosen = big_read["$id"].iloc[::50].tolist()  # 1,200 IDs: too long for one request
    query = table.where(col("$id").isin(chosen) | col("$id").isin(chosen[:10]))
    assert "Request 2 of" in query.explain()
    read = query.to_pandas(progress=False)
    assert sorted(read["$id"]) == sorted(chosen)
    ordered = query.sort("score", ascending=False).to_pandas(progress=False)
    expected = big_read[big_read["$id"].isin(chosen)]
    expected = expected.sort_values(
        ["score", "$sequence"], ascending=[False, True], na_position="last"
    )
    assert ordered["$id"].tolist() == expected["$id"].tolist()
    assert query.sort("score").head(7).to_pandas(progress=False)["$id"].tolist() == (
        expected.sort_values(["score", "$sequence"], na_position="first")["$id"].head(7).tolist()
    )


def test_a_filter_that_matches_nothing_sends_no_request_and_keeps_dtypes(
    big: tuple[Table, pd.DataFrame],
) -> None:
    table, _ = big
    query = table.query("age > 1e19")  # beyond any 64-bit integer
    assert "No request" in query.explain()
    frame = query.to_pandas(progress=False)
    assert len(frame) == 0 and str(frame["age"].dtype) == "Int64"
    assert query.count() == 0


# -- select, sort, head ---------------------------------------------------------------------------


def test_select_returns_the_fields_and_the_chosen_columns_in_order(
    big: tuple[Table, pd.DataFrame], big_read: pd.DataFrame
) -> None:
    table, _ = big
    chosen = table.query("city == 'Bodø'").select("score", "name")
    read = chosen.to_pandas(progress=False)
    assert list(read.columns) == ["$id", "score", "name"]
    every = chosen.to_pandas(progress=False, system=True)
    assert list(every.columns) == [*SYSTEM_DTYPES, "score", "name"]
    for frame in (read, every):
        expected = big_read.query("city == 'Bodø'")[list(frame.columns)]
        pd.testing.assert_frame_equal(frame.reset_index(drop=True), expected.reset_index(drop=True))


@pytest.mark.parametrize("page_size", (None, 1000))
@pytest.mark.parametrize(
    ("by", "ascending", "na_position"),
    [
        ("age", True, "first"),
        ("score", False, "last"),
        (["city", "age"], [True, False], "last"),
        ("$createdAt", False, "last"),
    ],
)
def test_sort_orders_like_the_service_nulls_and_ties_included(
    big: tuple[Table, pd.DataFrame],
    big_read: pd.DataFrame,
    by: str | list[str],
    ascending: bool | list[bool],
    na_position: Literal["first", "last"],
    page_size: int | None,
) -> None:
    table, _ = big
    read = table.sort(by, ascending).to_pandas(progress=False, page_size=page_size)
    keys = [by] if isinstance(by, str) else by
    directions = [ascending] * len(keys) if isinstance(ascending, bool) else ascending
    tie = not (keys[0] == "$createdAt" and not directions[0])
    expected = big_read.sort_values(
        [*keys, "$sequence"], ascending=[*directions, tie], na_position=na_position, kind="stable"
    )
    assert read["$id"].tolist() == expected["$id"].tolist()
    assert_same_rows(read, big_read[["$id", *PEOPLE_DTYPES]])


def test_head_stops_at_n_rows_in_the_service_order(
    big: tuple[Table, pd.DataFrame], big_read: pd.DataFrame
) -> None:
    table, _ = big
    assert (
        table.head(7).to_pandas(progress=False)["$id"].tolist() == big_read["$id"].head(7).tolist()
    )
    assert table.head(0).to_pandas(progress=False, system=True).shape == (0, len(big_read.columns))
    filtered = table.query("city == 'Oslo' and score > 50").head(5003).to_pandas(progress=False)
    expected = big_read.query("city == 'Oslo' and score > 50").head(5003)
    assert filtered["$id"].tolist() == expected["$id"].tolist()
    top = table.sort("score", ascending=False).head(10).to_pandas(progress=False)
    assert top["score"].tolist() == big_read["score"].nlargest(10).tolist()
    assert table.head(12_000).count() == 12_000


def test_queries_are_immutable_and_head_comes_last(big: tuple[Table, pd.DataFrame]) -> None:
    table, _ = big
    base = table.query("age > 30")
    narrower = base.query("city == 'Oslo'")
    assert base.count() > narrower.count()
    assert "city" not in repr(base) and "city" in repr(narrower)
    with pytest.raises(ValueError, match="head"):
        table.head(5).query("age > 3")
    with pytest.raises(TypeError, match="query"):
        table.where("age > 3")  # type: ignore[arg-type]


# -- batches, explain, preview ------------------------------------------------------------------


def test_iter_batches_rechunks_by_rows_and_keeps_dtypes(
    big: tuple[Table, pd.DataFrame], big_read: pd.DataFrame
) -> None:
    table, _ = big
    frames = data_frames(table.iter_batches(rows=7000, progress=False, system=True))
    assert [len(frame) for frame in frames] == [7000] * 8 + [4000]
    assert all(frame.dtypes.equals(big_read.dtypes) for frame in frames)
    pd.testing.assert_frame_equal(pd.concat(frames, ignore_index=True), big_read)


def test_iter_batches_by_bytes_gives_arrow_batches_of_about_that_size(
    big: tuple[Table, pd.DataFrame], big_read: pd.DataFrame
) -> None:
    table, _ = big
    batches = list(table.iter_batches(bytes=2_000_000, arrow=True, progress=False))
    assert all(isinstance(batch, pa.RecordBatch) for batch in batches)
    assert all(1_000_000 < batch.nbytes < 3_000_000 for batch in batches[:-1])
    assert sum(batch.num_rows for batch in batches) == len(big_read)
    assert len({batch.schema for batch in batches}) == 1


def test_breaking_out_of_iter_batches_stops_the_read(big: tuple[Table, pd.DataFrame]) -> None:
    table, _ = big
    for frame in table.iter_batches(progress=False):
        assert len(frame) == 5000
        break
    assert table.head(3).count() == 3  # the client still works


def test_explain_names_the_requests_and_the_client_side_part(
    big: tuple[Table, pd.DataFrame],
) -> None:
    table, _ = big
    text = (
        table.query("age > 30 and city in ['Oslo', 'Bergen']").select("name").sort("age").explain()
    )
    assert '{"method":"greaterThan","column":"age","values":[30]}' in text
    assert '{"method":"select","values":["name","city"]}' in text  # city: for the client
    assert '{"method":"orderAsc","column":"age"}' in text
    assert "Then the client keeps the rows where city in ['Oslo', 'Bergen']. Why:" in text
    assert "because the rows are sorted by a column" in text
    assert "cursorAfter" not in text and "decoder" not in text
    assert "5,000 at a time" in table.explain()


def test_html_preview_shows_schema_first_rows_and_capped_total(
    big: tuple[Table, pd.DataFrame], tables: Loaded
) -> None:
    table, _ = big
    shown = table._repr_html_()
    assert "≥ 20,000 rows" in shown  # counted on past the service's 5,000, up to 20,000
    assert "datetime64[ms, UTC]" in shown and "<table" in shown
    assert "≤ " in table.query("city == 'Bodø'")._repr_html_()
    assert "· 1 row<" in tables[1][0]._repr_html_()


def test_progress_bars_work_with_a_capped_total_and_can_be_turned_off(
    big: tuple[Table, pd.DataFrame],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    table, _ = big
    assert len(table.head(12_000).to_pandas(progress=True)) == 12_000
    assert "rows" in capsys.readouterr().err
    monkeypatch.setenv("FRAMEPORT_PROGRESS", "0")
    assert len(table.head(12_000).to_pandas()) == 12_000
    assert capsys.readouterr().err == ""


def test_unknown_columns_are_refused_before_any_row_is_read(
    big: tuple[Table, pd.DataFrame],
) -> None:
    table, _ = big
    from frameport import FilterError

    for query in (table.select("nope"), table.sort("nope"), table.query("nope > 1")):
        with pytest.raises(FilterError, match="nope"):
            query.to_pandas(progress=False)
