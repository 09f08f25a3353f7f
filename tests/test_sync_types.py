"""What a type checker (and an IDE) reads of the sync faces: the sync return types, never an
async class or a coroutine. mypy checks the `assert_type` calls in ``make lint``; run here,
the same calls go to the local service."""

from __future__ import annotations

from collections.abc import Iterator
from typing import assert_type

import pandas as pd
import pyarrow as pa
import pytest

import frameport as fp
from tables_support import new_id


def test_the_sync_faces_return_sync_types(key_client: fp.Client) -> None:
    database = new_id("types")
    frame = pd.DataFrame({"age": [36, 17]})
    people = assert_type(key_client.create_table(database, "people", schema=frame), fp.Table)
    assert_type(key_client.table(database, "people"), fp.Table)
    assert_type(people.insert(frame, progress=False), list[str])
    adults = assert_type(people.where(fp.col("age") > 18), fp.TableQuery)
    assert_type(adults.to_pandas(progress=False), pd.DataFrame)
    assert_type(adults.to_arrow(progress=False), pa.Table)
    assert_type(adults.iter_batches(progress=False), Iterator[pd.DataFrame | pa.RecordBatch])
    assert_type(adults.count(), int)
    assert_type(people.columns(), pd.DataFrame)
    assert_type(key_client.tables(database), pd.DataFrame)
    bucket = assert_type(key_client.create_bucket(new_id("types"), exist_ok=True), fp.Bucket)
    assert_type(key_client.bucket(bucket.id), fp.Bucket)
    with pytest.warns(fp.ImpersonationIgnoredWarning):  # an API key does not impersonate
        assert_type(key_client.impersonate(user_id="u1"), fp.Client)
    assert adults.count() == 1
