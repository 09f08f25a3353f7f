"""`fp.ray`: Ray Data datasets of table queries (one read task per planned range) and a
datasink writing through the load's write path, against the local service with a local Ray
of two CPUs, started once for the session (its start-up costs most of this file's time).

A killed task is a real one: the sink's first attempt writes half its block, then its worker
process exits (`os._exit`); Ray runs the task again, and `id_from` makes the second attempt
meet the rows the first wrote.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pyarrow as pa
import pytest
import ray
import ray.data

import frameport as fp
from frameport import Client, Table
from frameport._demo import sample_people
from frameport.ray import TableSink
from tables_support import load, new_id

ROWS = 3_000
# One worker runs the Ray tests and the guide that starts Ray (test_guides_together.py): Ray
# starts once per worker that needs it, and costs tens of seconds each time.
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="session")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def people(key_client: Client) -> Table:
    """Sample people with a block of rows deleted."""
    table, _ = load(key_client, new_id("ray"), sample_people(ROWS, seed=5))
    table.where(fp.col("$sequence").between(500, 1_400)).delete()
    return table


def datasource_of(ds: ray.data.Dataset) -> Any:
    """The datasource under a dataset read from one (its read operator's, in Ray's plan)."""
    return cast(Any, ds._logical_plan.dag).datasource


def arrow_of(ds: ray.data.Dataset) -> pa.Table:
    """The dataset's rows by `$id` (Ray hands blocks on as they finish)."""
    return pa.concat_tables(ray.get(ds.to_arrow_refs())).sort_by("$id")


def test_read_equals_to_arrow_in_values_and_types(local_ray: None, people: Table) -> None:
    ds = fp.ray.read_table(people, partitions=3)
    assert len(datasource_of(ds).get_read_tasks(1)) == 3  # whatever Ray asks
    read = arrow_of(ds)
    assert read.schema == people.schema()
    assert read.equals(people.to_arrow(progress=False).sort_by("$id"))


def test_each_planned_range_is_one_block(local_ray: None, people: Table) -> None:
    blocks = ray.get(fp.ray.read_table(people, partitions=3).to_arrow_refs())
    assert len(blocks) == 3
    assert sum(block.num_rows for block in blocks) == people.count()
    sliced = fp.ray.read_table(people, partitions=3, override_num_blocks=12)
    assert len(ray.get(sliced.to_arrow_refs())) == 12  # what Ray is asked for


def test_a_filtered_and_projected_query(local_ray: None, people: Table) -> None:
    query = people.query("age > 40 and city != 'Oslo'").select("name", "age")
    read = arrow_of(fp.ray.read_table(query, partitions=2))
    assert read.equals(query.to_arrow(progress=False).sort_by("$id"))


def test_an_empty_table_reads_as_an_empty_dataset(local_ray: None, key_client: Client) -> None:
    empty, _ = load(key_client, new_id("ray"), sample_people(0))
    ds = fp.ray.read_table(empty)
    assert ds.count() == 0
    assert ds.schema().base_schema == empty.to_arrow(progress=False).schema


def test_estimates_are_those_of_the_planned_ranges(local_ray: None, people: Table) -> None:
    ds = fp.ray.read_table(people, partitions=4)
    actual = people.to_arrow(progress=False).get_total_buffer_size()
    estimate = datasource_of(ds).estimate_inmemory_data_size()
    assert 0.8 < estimate / actual < 1.25, (estimate, actual)
    assert ds.count() == people.count()


def test_bad_input_is_refused_on_the_driver(local_ray: None, key_client: Client) -> None:
    missing = key_client.table("crm", new_id("missing"))
    with pytest.raises(fp.NotFoundError):
        fp.ray.read_table(missing)
    with pytest.raises(fp.NotFoundError):
        fp.ray.TableSink(missing, id_from="key")
    with pytest.raises(ValueError, match="sort"):
        fp.ray.read_table(key_client.table("crm", "x").sort("age"))


def source_frame(rows: int) -> pd.DataFrame:
    frame = sample_people(rows, seed=8).drop(columns=["signup"])
    return frame.assign(key=[f"k{n}" for n in range(rows)])


def test_a_write_equals_its_source_and_a_rerun_adds_nothing(
    local_ray: None, key_client: Client
) -> None:
    frame = source_frame(600)
    table = key_client.create_table(new_id("ray"), new_id("w"), schema=frame)
    ds = ray.data.from_pandas(frame).repartition(3)
    sink = fp.ray.TableSink(table, id_from="key")
    ds.write_datasink(sink)
    assert sum(report.written for report in sink.reports) == 600
    again = fp.ray.TableSink(table, id_from="key")
    ds.write_datasink(again)
    assert sum(report.skipped for report in again.reports) == 600
    back = table.sort("key").to_pandas(progress=False).drop(columns=["$id"])
    expected = frame.sort_values("key").reset_index(drop=True)
    pd.testing.assert_frame_equal(back, expected[back.columns.tolist()], check_dtype=False)


def test_a_table_read_through_ray_writes_into_another(local_ray: None, key_client: Client) -> None:
    """Ray runs the read and the write in one task here, the write pulling the read's
    blocks as it loads them (no other step between them)."""
    frame = source_frame(500)
    original = key_client.create_table(new_id("ray"), new_id("w"), schema=frame)
    original.load(frame, id_from="key", progress=False)
    copy = key_client.create_table(original.database_id, new_id("copy"), schema=frame)
    sink = fp.ray.TableSink(copy, id_from="key")
    fp.ray.read_table(original, partitions=2).write_datasink(sink)
    assert sum(report.written for report in sink.reports) == 500
    back = copy.sort("key").to_pandas(progress=False)
    assert back.equals(original.sort("key").to_pandas(progress=False))


def test_a_dataset_without_the_id_column_is_refused_before_any_task(
    local_ray: None, key_client: Client
) -> None:
    frame = source_frame(10)
    table = key_client.create_table(new_id("ray"), new_id("w"), schema=frame)
    with pytest.raises(fp.LoadError, match="'serial'"):
        ray.data.from_pandas(frame).write_datasink(fp.ray.TableSink(table, id_from="serial"))
    assert table.count() == 0


@pytest.mark.parametrize("id_from", ["key", None])
def test_a_write_rerun_after_a_killed_task_neither_duplicates_nor_loses_a_row(
    local_ray: None, key_client: Client, tmp_path: Path, id_from: str | None
) -> None:
    """With id_from the rows the killed attempt wrote are met again; without, the same kill
    leaves them twice (so the kill is real)."""
    frame = source_frame(400)
    table = key_client.create_table(new_id("ray"), new_id("w"), schema=frame)
    first_attempt = tmp_path / "first-attempt"

    class DyingSink(TableSink):
        """Its first attempt writes half of its first block, then its process dies."""

        def write(self, blocks, ctx):
            blocks = list(blocks)
            try:
                first_attempt.touch(exist_ok=False)
            except FileExistsError:
                return super().write(blocks, ctx)
            half = blocks[0][: len(blocks[0]) // 2]
            super().write([half], ctx)
            os._exit(1)

    ds = ray.data.from_pandas(frame).repartition(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp.FrameportWarning)  # a load without IDs warns
        ds.write_datasink(DyingSink(table, id_from=id_from))
    assert first_attempt.exists()
    back = table.to_pandas(progress=False)
    assert set(back["key"]) == set(frame["key"])
    assert len(back) == 400 if id_from else len(back) == 500  # half of a 200-row block again
