"""Helpers shared by the table tests: load a frame into a new table, compare what reads back."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import pyarrow as pa

from frameport import ID, Client, Table
from frameport.local import LocalService

#: The read dtypes of the sample people (`frameport._demo.sample_people`).
PEOPLE_DTYPES = {
    "name": "str",
    "age": "Int64",
    "city": "str",
    "score": "float64",
    "signup": "datetime64[ms, UTC]",
    "active": "boolean",
}
SYSTEM_DTYPES = {
    "$id": "str",
    "$sequence": "Int64",
    "$createdAt": "datetime64[ms, UTC]",
    "$updatedAt": "datetime64[ms, UTC]",
    "$permissions": "object",
}

BOUNDS_ROWS = 2
"""Rows a ``parallel="auto"`` read (the default) of a result longer than one page asks for
besides its result: the rows at either end under the filter (the first and the last one),
asked for beside the first page (from a near service, once the first page came full); the
ranges after that page are cut between them. A result of one short page asks for none."""


def strings_as_in_pandas_3() -> None:
    """Under pandas 2 (frameport's floor is 2.3), make "str" in a test's frame mean what it
    means in pandas 3 and in every frame frameport reads: the string dtype with NaN for
    missing values (also the dtype of a frame's column labels)."""
    if int(pd.__version__.split(".", 1)[0]) < 3:
        pd.set_option("future.infer_string", True)


def rows_served(service: LocalService, table: Table) -> int:
    """Rows of this one table the service has sent so far: other reads do not move it."""
    return service.rows_served_from(table.database_id, table.id)


def new_id(prefix: str) -> str:
    """A fresh table or database ID (tests share one service)."""
    return f"{prefix}-{ID.unique()}"


def data_frames(batches: Iterable[pd.DataFrame | pa.RecordBatch]) -> list[pd.DataFrame]:
    """`batches` from ``iter_batches`` without ``arrow=True``, each checked to be a DataFrame."""
    frames = []
    for batch in batches:
        assert isinstance(batch, pd.DataFrame), type(batch)
        frames.append(batch)
    return frames


def load(
    client: Client, database: str, frame: pd.DataFrame, **options: object
) -> tuple[Table, pd.DataFrame]:
    """A new table holding `frame`; returns it and `frame` with the `$id` column the insert
    gave each row."""
    table = client.create_table(database, new_id("t"), schema=frame, **options)  # type: ignore[arg-type]
    ids = table.insert(frame, progress=False) if len(frame) else []
    return table, frame.assign(**{"$id": pd.array(ids, dtype="str")})


def assert_same_rows(read: pd.DataFrame, expected: pd.DataFrame) -> None:
    """`read` holds exactly the rows of `expected` (matched by `$id`, any order), with equal
    values and dtypes in `expected`'s columns, and the service's fields it shows (`$id`
    first; every one with ``system=True``) with their dtypes."""
    assert read["$id"].is_unique
    assert len(read) == len(expected)
    assert sorted(read["$id"]) == sorted(expected["$id"])
    shown = [column for column in read.columns if column in SYSTEM_DTYPES]
    assert shown == [column for column in SYSTEM_DTYPES if column in shown] and shown[0] == "$id"
    for column in shown:
        assert str(read[column].dtype) == SYSTEM_DTYPES[column], column
    columns = [c for c in expected.columns if c != "$id"]
    aligned = read.set_index("$id").loc[expected["$id"], columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(aligned, expected[columns].reset_index(drop=True))
