"""What a type checker (and an IDE) reads of the sync faces, and what they give at run time: the
sync return types, never an async class or a coroutine. mypy checks the `assert_type` calls in
``make lint``; run here against the local service, each value is checked to be of that type."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar, assert_type

import pandas as pd
import pyarrow as pa
import pytest

import frameport as fp
from tables_support import new_id

T = TypeVar("T")


def of(kind: type | tuple[type, ...], value: T) -> T:
    """`value`, checked at run time to be a `kind`."""
    assert isinstance(value, kind), f"{type(value).__name__} is not {kind}"
    return value


def test_the_sync_faces_return_sync_types(key_client: fp.Client) -> None:
    database = new_id("types")
    frame = pd.DataFrame({"age": [36, 17]})
    people = assert_type(
        of(fp.Table, key_client.create_table(database, "people", schema=frame)), fp.Table
    )
    assert_type(of(fp.Table, key_client.table(database, "people")), fp.Table)
    ids = assert_type(of(list, people.insert(frame, progress=False)), list[str])
    assert all(isinstance(row_id, str) for row_id in ids)
    adults = assert_type(of(fp.TableQuery, people.where(fp.col("age") > 18)), fp.TableQuery)
    assert_type(of(pd.DataFrame, adults.to_pandas(progress=False)), pd.DataFrame)
    assert_type(of(pa.Table, adults.to_arrow(progress=False)), pa.Table)
    batches = assert_type(
        of(Iterator, adults.iter_batches(progress=False)), Iterator[pd.DataFrame | pa.RecordBatch]
    )
    assert all(isinstance(batch, pd.DataFrame | pa.RecordBatch) for batch in batches)
    assert assert_type(of(int, adults.count()), int) == 1
    assert_type(of(pd.DataFrame, people.columns()), pd.DataFrame)
    assert_type(of(pd.DataFrame, key_client.tables(database)), pd.DataFrame)
    bucket = assert_type(
        of(fp.Bucket, key_client.create_bucket(new_id("types"), exist_ok=True)), fp.Bucket
    )
    assert_type(of(fp.Bucket, key_client.bucket(bucket.id)), fp.Bucket)
    with pytest.warns(fp.ImpersonationIgnoredWarning):  # an API key does not impersonate
        assert_type(of(fp.Client, key_client.impersonate(user_id="u1")), fp.Client)
