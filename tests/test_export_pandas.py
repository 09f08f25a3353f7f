"""A Parquet export reads back as the frame: `to_parquet` writes the pandas metadata that
`to_pandas` implies, so ``pd.read_parquet`` gives `to_pandas()` (dtypes, nulls, time zones)
for every type of the published dtype table, and other readers read the Arrow types they read
before; a bucket's ``upload_dataframe`` of the same frame writes the same metadata."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import frameport as fp
from frameport.cli import main
from frameport.local import LocalService
from tables_support import load, new_id

ROWS = 3


def every_dtype() -> pd.DataFrame:
    """One column per row of `fp.DTYPE_TABLE`, written with its dtype and holding its example
    values (nulls included), repeated to `ROWS` rows."""
    columns = {}
    for number, mapping in enumerate(fp.DTYPE_TABLE):
        values = [*mapping.example, *mapping.example][:ROWS]
        columns[f"c{number}"] = pd.Series(values, dtype=mapping.written)
    return pd.DataFrame(columns)


@pytest.fixture(scope="module")
def table(service: LocalService) -> Iterator[fp.Table]:
    with service.client() as client:
        readable = ['read("users")']  # a signed-in user reads it with inferred types
        yield load(client, new_id("export-pandas"), every_dtype(), permissions=readable)[0]


def pandas_columns(path: Path) -> list[tuple[object, ...]]:
    """What the file's pandas metadata says of each column: its name and the dtype pandas
    reads it as (``pandas_type`` is left out: it names the Arrow type, and pandas writes
    its strings as ``large_string`` where an export keeps the table's ``string``)."""
    metadata = pq.read_schema(path).metadata or {}
    assert b"pandas" in metadata, "the file has no pandas metadata"
    columns = json.loads(metadata[b"pandas"])["columns"]
    return [(c["name"], c["field_name"], c["numpy_type"], c["metadata"]) for c in columns]


@pytest.mark.parametrize("system", [False, True], ids=["columns", "system"])
@pytest.mark.parametrize("resume", [False, True], ids=["streamed", "resumable"])
def test_read_parquet_gives_to_pandas_for_every_published_dtype(
    table: fp.Table, tmp_path: Path, resume: bool, system: bool
) -> None:
    target = tmp_path / "every.parquet"
    report = table.to_parquet(target, progress=False, resume=resume, system=system)
    assert report.rows == ROWS
    expected = table.to_pandas(progress=False, system=system)
    read = pd.read_parquet(target)
    pd.testing.assert_frame_equal(read, expected)
    assert [str(dtype) for dtype in read.dtypes[[f"c{i}" for i in range(len(fp.DTYPE_TABLE))]]] == [
        mapping.read for mapping in fp.DTYPE_TABLE
    ]


def test_other_readers_read_the_arrow_types_and_values(table: fp.Table, tmp_path: Path) -> None:
    import duckdb
    import polars as pl
    import polars.testing

    target = tmp_path / "every.parquet"
    table.to_parquet(target, progress=False, system=True)
    expected = table.to_arrow(progress=False, system=True)
    written = pq.read_table(target)
    assert written.schema.remove_metadata().equals(expected.schema)
    assert written.equals(expected)
    as_polars = pl.from_arrow(expected)
    assert isinstance(as_polars, pl.DataFrame)
    polars.testing.assert_frame_equal(pl.read_parquet(target), as_polars)
    plain = tmp_path / "plain.parquet"  # the file as written without pandas metadata
    pq.write_table(expected, plain)
    in_duckdb, before = (duckdb.sql(f"SELECT * FROM '{path}'") for path in (target, plain))
    assert in_duckdb is not None and before is not None
    assert in_duckdb.to_arrow_table().equals(before.to_arrow_table())
    assert in_duckdb.to_arrow_table().to_pylist() == expected.to_pylist()


def test_the_async_face_and_the_command_line_write_the_same_metadata(
    service: LocalService, table: fp.Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = tmp_path / "sync.parquet"
    table.to_parquet(synced, progress=False)

    async def export() -> None:
        async with fp.AsyncClient(service.endpoint, service.project, key=service.key) as client:
            await client.table(table.database_id, table.id).to_parquet(
                tmp_path / "async.parquet", progress=False
            )

    asyncio.run(export())
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    cli = tmp_path / "cli.parquet"
    assert main(["export", table.database_id, table.id, "-o", str(cli), "--no-progress"]) == 0
    expected = table.to_pandas(progress=False)
    for path in (synced, tmp_path / "async.parquet", cli):
        assert pandas_columns(path) == pandas_columns(synced)
        pd.testing.assert_frame_equal(pd.read_parquet(path), expected)


def test_the_bucket_export_and_the_table_export_agree(
    key_client: fp.Client, table: fp.Table, tmp_path: Path
) -> None:
    exported = tmp_path / "table.parquet"
    table.to_parquet(exported, progress=False)
    frame = table.to_pandas(progress=False)
    bucket = key_client.create_bucket(fp.ID.unique(), "exports")
    uploaded = bucket.upload_dataframe(frame, "table.parquet")
    downloaded = tmp_path / "bucket.parquet"
    bucket.download(uploaded.id, downloaded)
    assert pandas_columns(downloaded) == pandas_columns(exported)
    pd.testing.assert_frame_equal(bucket.read_parquet(uploaded.id), pd.read_parquet(exported))
    pd.testing.assert_frame_equal(pd.read_parquet(exported), frame)


def test_an_empty_result_and_an_inferred_read_carry_the_metadata(
    table: fp.Table, user_client: fp.Client, tmp_path: Path
) -> None:
    target = tmp_path / "none.parquet"
    query = table.query("c0 > 1000")
    assert query.to_parquet(target, progress=False).rows == 0
    pd.testing.assert_frame_equal(pd.read_parquet(target), query.to_pandas(progress=False))
    as_user = user_client.table(table.database_id, table.id)
    assert "inferred from the rows" in as_user.explain()
    as_user.to_parquet(target, progress=False)
    pd.testing.assert_frame_equal(pd.read_parquet(target), as_user.to_pandas(progress=False))
