"""The partition planner, seen through the engines that use it: a query's partitions are cut
where the estimated bytes reach equal shares, so a deleted block and a run of wide rows leave
each partition about as heavy as the others (ranges of equal ``$sequence`` span would leave
one empty and another holding nearly every byte)."""

from __future__ import annotations

import pandas as pd
import pytest

import frameport as fp
from frameport import Client, Table
from tables_support import new_id

NARROW, WIDE = 1_200, 400


@pytest.fixture(scope="module")
def skewed(key_client: Client) -> Table:
    """1,200 narrow rows with most of the first half deleted, then 400 rows of 2,000
    characters each."""
    texts = [""] * NARROW + ["x" * 2_000] * WIDE
    frame = pd.DataFrame({"n": range(len(texts)), "text": texts})
    table = key_client.create_table(new_id("planner"), "skewed", schema=frame)
    table.insert(frame, concurrency=1, progress=False)  # $sequence in the frame's order
    table.where(fp.col("$sequence").between(200, 900)).delete()
    return table


def weights(ddf: object) -> list[int]:
    """Each partition's characters of text plus 8 bytes a row: what its memory grows with."""
    sizes = ddf.map_partitions(  # type: ignore[attr-defined]
        lambda frame: pd.Series([int(frame["text"].str.len().sum()) + 8 * len(frame)])
    )
    return [int(size) for size in sizes.compute(scheduler="sync")]


def test_partitions_of_skewed_rows_carry_equal_bytes(skewed: Table) -> None:
    ddf = skewed.to_dask(partitions=4)
    sizes = weights(ddf)
    assert len(sizes) == 4
    assert min(sizes) > 0
    assert max(sizes) / min(sizes) < 1.5, sizes
    joined = ddf.compute(scheduler="sync").reset_index(drop=True)
    pd.testing.assert_frame_equal(joined, skewed.to_pandas(progress=False))


def test_a_filter_is_planned_on_the_rows_it_keeps(skewed: Table) -> None:
    query = skewed.query("n >= 1000")  # 200 narrow rows, then the wide ones
    sizes = weights(query.to_dask(partitions=3))
    assert len(sizes) == 3 and max(sizes) / min(sizes) < 1.5, sizes
