"""Reading as a signed-in user, who may not read a table's columns (401): the types are
inferred from the rows and stay the same across pages and batches."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from frameport import Client
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import data_frames, load, new_id


@pytest.fixture(scope="module")
def shared(service: LocalService) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """A table every signed-in user may read: people, plus a column empty on the first pages."""
    frame = sample_people(12_000, seed=31)
    late = pd.array([None] * 7000 + list(range(5000)), dtype="Int64")
    frame = frame.assign(late=late)
    with service.client() as client:
        table, _ = load(client, new_id("inferred"), frame, permissions=['read("users")'])
        yield table.database_id, table.id, table.to_pandas(progress=False)


def test_a_user_reads_the_same_frame_as_a_key(
    user_client: Client, shared: tuple[str, str, pd.DataFrame]
) -> None:
    database, table_id, by_key = shared
    table = user_client.table(database, table_id)
    assert "inferred from the rows" in table.explain()
    pd.testing.assert_frame_equal(table.to_pandas(progress=False), by_key)
    for where in (
        "age > 30 and city in ['Oslo', 'Bergen'] and score != 50.0",
        "age > 30.5 and active",  # the service refuses 30.5 for integers: the client filters
    ):
        pd.testing.assert_frame_equal(
            table.query(where).to_pandas(progress=False).reset_index(drop=True),
            by_key.query(where).reset_index(drop=True),
        )


def test_streamed_batches_keep_one_type_when_a_column_starts_empty(
    user_client: Client, shared: tuple[str, str, pd.DataFrame]
) -> None:
    database, table_id, by_key = shared
    table = user_client.table(database, table_id)
    frames = data_frames(table.iter_batches(progress=False))
    assert [len(frame) for frame in frames] == [5000, 5000, 2000]
    assert all(str(frame["late"].dtype) == "Int64" for frame in frames)
    pd.testing.assert_frame_equal(pd.concat(frames, ignore_index=True), by_key)


def test_a_selected_view_exports_with_inferred_types(
    user_client: Client, shared: tuple[str, str, pd.DataFrame], tmp_path: object
) -> None:
    import pyarrow.parquet as pq

    database, table_id, by_key = shared
    query = user_client.table(database, table_id).query("city == 'Bodø'").select("name", "late")
    target = f"{tmp_path}/bodo.parquet"
    assert query.to_parquet(target, progress=False).rows == (by_key["city"] == "Bodø").sum()
    written = pq.read_table(target)
    assert written.schema.names[-2:] == ["name", "late"]
    assert str(written.schema.field("late").type) == "int64"
