"""Parquet export: streamed row group by row group, read back equal with pyarrow, atomic."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frameport import Client, FrameportError, RetryPolicy, Table
from frameport._demo import sample_people
from frameport._schema import to_pandas
from frameport._tables.export._watch import file_checks
from frameport.local import LocalService
from tables_support import load, new_id


@pytest.fixture(scope="module")
def people(service: LocalService) -> Iterator[tuple[Table, pd.DataFrame]]:
    with service.client() as client:
        yield load(client, new_id("parquet"), sample_people(12_345, seed=12))


def test_the_file_reads_back_equal_to_the_query(
    people: tuple[Table, pd.DataFrame], tmp_path: Path
) -> None:
    table, _ = people
    query = table.query("age >= 40 and city != 'Oslo'").select("name", "age", "signup")
    target = tmp_path / "adults.parquet"
    rows = query.to_parquet(target, progress=False, page_size=1000).rows
    written = pq.read_table(target)
    expected = query.to_arrow(progress=False)
    assert rows == expected.num_rows == written.num_rows
    assert written.schema.equals(expected.schema)
    assert written.equals(expected)
    pd.testing.assert_frame_equal(to_pandas(written), query.to_pandas(progress=False))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["adults.parquet"]


def test_the_whole_table_in_row_groups_with_the_chosen_codec(
    people: tuple[Table, pd.DataFrame], tmp_path: Path
) -> None:
    table, _ = people
    target = tmp_path / "all.parquet"
    assert table.to_parquet(target, compression="snappy", progress=False).rows == 12_345
    metadata = pq.ParquetFile(target).metadata
    assert metadata.num_rows == 12_345
    assert metadata.row_group(0).column(0).compression == "SNAPPY"
    assert pq.read_table(target).equals(table.to_arrow(progress=False))


def test_system_columns_are_delta_encoded_and_every_reader_reads_them_equal(
    people: tuple[Table, pd.DataFrame], tmp_path: Path
) -> None:
    import duckdb
    import polars as pl

    table, _ = people
    target = tmp_path / "system.parquet"
    table.to_parquet(target, system=True, progress=False)
    chunks = pq.ParquetFile(target).metadata.row_group(0)
    encodings = {
        chunks.column(i).path_in_schema: chunks.column(i) for i in range(chunks.num_columns)
    }
    for name in ("$sequence", "$createdAt", "$updatedAt"):
        assert "DELTA_BINARY_PACKED" in encodings[name].encodings, name
        assert not encodings[name].has_dictionary_page, name
    assert not encodings["$id"].has_dictionary_page
    assert encodings["city"].has_dictionary_page  # the user's columns as Arrow writes them
    expected = table.to_arrow(system=True, progress=False)
    written = pq.read_table(target)
    assert written.equals(expected)
    sequences = expected.column("$sequence").to_pylist()
    assert pl.read_parquet(target)["$sequence"].to_list() == sequences
    relation = duckdb.sql(f'SELECT "$sequence", "$updatedAt" FROM \'{target}\'')
    assert relation is not None
    in_duckdb = relation.to_arrow_table()
    assert in_duckdb.column(0).to_pylist() == sequences
    assert in_duckdb.column(1).to_pylist() == expected.column("$updatedAt").to_pylist()


def test_an_empty_result_writes_a_file_with_the_schema(
    people: tuple[Table, pd.DataFrame], tmp_path: Path
) -> None:
    table, _ = people
    target = tmp_path / "none.parquet"
    assert table.query("age > 1000").to_parquet(target, progress=False).rows == 0
    written = pq.read_table(target)
    assert written.num_rows == 0
    assert written.schema.equals(table.to_arrow(progress=False).schema)


def test_a_failed_export_leaves_no_partial_file(tmp_path: Path) -> None:
    frame = sample_people(3000, seed=13)
    patient = RetryPolicy(retries=12, backoff=0.05, backoff_max=0.5)
    with LocalService(faults="0.3:11") as faulty:
        with faulty.client(retries=patient) as loader:
            table = loader.create_table("faulty", "people", schema=frame)
            table.insert(frame, progress=False)
        fresh = tmp_path / "fresh.parquet"
        kept = tmp_path / "kept.parquet"
        kept.write_bytes(b"the previous export")
        with faulty.client(retries=0) as fragile:
            people = fragile.table("faulty", "people")
            for target in (fresh, kept):
                with pytest.raises(FrameportError):  # 30 pages: one of them fails
                    people.to_parquet(target, progress=False, page_size=100)
    assert not fresh.exists()
    assert kept.read_bytes() == b"the previous export"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kept.parquet"]


def test_export_from_the_legacy_interface_matches(
    service: LocalService, people: tuple[Table, pd.DataFrame], tmp_path: Path
) -> None:
    table, _ = people
    with Client(service.endpoint, service.project, key=service.key) as client:
        collection = client.collection(table.database_id, table.id)
        collection.head(2500).to_parquet(tmp_path / "legacy.parquet", progress=False)
    assert pq.read_table(tmp_path / "legacy.parquet").equals(
        table.head(2500).to_arrow(progress=False)
    )


def test_the_checks_read_the_written_file_not_the_batches_that_went_by(tmp_path: Path) -> None:
    """`rows_match` compares the file's own row count (its footer) with the rows the read
    listed, and `ids_unique` reads the file's $id column: either fails for a file that does
    not hold what was listed."""
    path = tmp_path / "written.parquet"
    pq.write_table(pa.table({"$id": ["a", "b", "c"], "n": [1, 2, 3]}), path, row_group_size=2)
    assert file_checks(path, 3, True).ok
    assert not file_checks(path, 4, True).rows_match
    pq.write_table(pa.table({"$id": ["a", "b", "a"]}), path, row_group_size=2)
    checks = file_checks(path, 3, None)
    assert checks.rows_match and not checks.ids_unique and not checks.ok


@settings(max_examples=150, deadline=None)
@given(
    ids=st.lists(st.one_of(st.none(), st.text(alphabet="ab€\x00", max_size=4)), max_size=40),
    rows_per_group=st.integers(1, 9),
)
def test_ids_unique_says_whether_a_files_ids_repeat(
    ids: list[str | None], rows_per_group: int
) -> None:
    """The check hashes the IDs of each row group: IDs of every length (empty, unicode, a NUL
    byte, null) repeated within a row group or across two are found, as a set of them finds
    them."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ids.parquet"
        pq.write_table(pa.table({"$id": pa.array(ids, pa.string())}), path,
                       row_group_size=rows_per_group)  # fmt: skip
        assert file_checks(path, len(ids), None).ids_unique == (len(set(ids)) == len(ids))
