"""A source's rows made ready to send: checked against the table's columns, given their IDs
and turned into JSON values, one chunk at a time.

`RowPreparer` checks the source's columns once (`check_columns`: a column the table lacks,
or a required column the source lacks, is a `LoadError` before anything is sent), then each
chunk: the service's own fields are dropped (but ``$id`` and ``$permissions``),
`validate_batch` converts and checks the values, the IDs are derived (`_row_ids`), and a row
repeating an ID of an earlier row of the same chunk is rejected (rule ``id``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..._exceptions import LoadError
from ..._schema import (
    SERVICE_FIELDS,
    ArrowArray,
    ColumnRules,
    batch_to_rows,
    check_column_keys,
    validate_batch,
)
from ._report import REJECTED_COLUMNS
from ._row_ids import (
    ID_COLUMN,
    ID_MESSAGE,
    IdFrom,
    column_ids,
    hashed_ids,
    id_keys,
    positional_ids,
)
from ._text_files import UNREADABLE

PERMISSIONS = "$permissions"
WRITTEN_FIELDS = frozenset({ID_COLUMN, PERMISSIONS})
_DROPPED_FIELDS = SERVICE_FIELDS - WRITTEN_FIELDS


@dataclass
class PreparedChunk:
    """One chunk of the source: `rows` to send (JSON-ready, each with its ``$id``),
    `positions` (each row's place in the source), and `rejected` (a frame in the report's
    form: row, column, rule, message, then the row's values)."""

    rows: list[dict[str, Any]]
    positions: npt.NDArray[np.int64]
    rejected: pd.DataFrame


class RowPreparer:
    """Prepares the chunks of one load (see the module docstring). `rules` is None when the
    table's columns cannot be read: the service then checks every value."""

    def __init__(
        self, rules: Mapping[str, ColumnRules] | None, id_from: IdFrom, run_id: str
    ) -> None:
        self._rules = rules
        self._id_from = id_from
        self._run_id = run_id

    def check_columns(self, names: Sequence[str]) -> None:
        """Refuse a source whose columns do not fit the table or the ID options."""
        given = [name for name in names if name not in _DROPPED_FIELDS and name != UNREADABLE]
        try:
            check_column_keys(given)
        except ValueError as exc:
            raise LoadError(str(exc)) from None
        absent_keys = [key for key in id_keys(self._id_from) if key not in given]
        if absent_keys:
            raise LoadError(
                f"id_from names {', '.join(map(repr, absent_keys))}, which the source does not "
                f"have; its columns are {', '.join(given)}"
            )
        if self._rules is None:
            return
        unknown = [name for name in given if name not in self._rules and name not in WRITTEN_FIELDS]
        if unknown:
            raise LoadError(
                f"the table has no column {', '.join(map(repr, unknown))}: drop "
                f"{'it' if len(unknown) == 1 else 'them'} from the source, or add "
                f"{'it' if len(unknown) == 1 else 'them'} first with table.add_column(...)"
            )
        missing = [key for key, rule in self._rules.items() if rule.required and key not in given]
        if missing:
            raise LoadError(
                f"the table requires the column {', '.join(map(repr, missing))}, which the "
                "source does not have; add it to the source"
            )

    def prepare(self, batch: pa.RecordBatch, first_row: int) -> PreparedChunk:
        """The chunk `batch`, whose first row is row `first_row` of the source."""
        source, readable, unreadable = _unreadable_rows(batch)
        kept_names = [name for name in source.schema.names if name not in _DROPPED_FIELDS]
        batch = source.select(kept_names)
        if readable is not None:
            batch = batch.take(readable)
        if self._rules is not None:
            checked = validate_batch(batch, self._rules)
            rows, kept, rejected = checked.rows, checked.kept, checked.rejected
        else:
            rows, kept = batch, np.arange(batch.num_rows, dtype=np.int64)
            rejected = pa.table({name: [] for name in REJECTED_COLUMNS})
        if readable is not None:  # places in the batch read, not in its readable rows
            kept = readable[kept]
            rejected = rejected.set_column(
                0, "row", pa.array(readable[rejected.column("row").to_numpy()], pa.int64())
            )
            rejected = pa.concat_tables([rejected.cast(unreadable.schema), unreadable])
            rejected = rejected.sort_by("row")
        ids, bad_ids, id_column = self._ids(rows, first_row + kept)
        if bad_ids.any():
            rejected = _with_rejections(rejected, kept[bad_ids], id_column, ID_MESSAGE)
            rows, kept, ids = (
                rows.filter(pa.array(~bad_ids)),
                kept[~bad_ids],
                ids.filter(pa.array(~bad_ids)),
            )
        repeated = pd.Series(ids.to_numpy(zero_copy_only=False)).duplicated().to_numpy()
        if repeated.any():
            message = "repeats the ID of an earlier row of the source"
            rejected = _with_rejections(rejected, kept[repeated], ID_COLUMN, message)
            rows, kept, ids = (
                rows.filter(pa.array(~repeated)),
                kept[~repeated],
                ids.filter(pa.array(~repeated)),
            )
        if ID_COLUMN in rows.schema.names:
            rows = rows.drop_columns([ID_COLUMN])
        rows = rows.append_column(ID_COLUMN, ids)
        return PreparedChunk(
            rows=batch_to_rows(rows),
            positions=first_row + kept,
            rejected=rejected_frame(rejected, source, first_row),
        )

    def _ids(
        self, rows: pa.RecordBatch, positions: npt.NDArray[np.int64]
    ) -> tuple[ArrowArray, npt.NDArray[np.bool_], str]:
        """Each row's ID, the mask of rows whose ID is unusable, and the column it came from."""
        no_bad = np.zeros(rows.num_rows, dtype=bool)
        if isinstance(self._id_from, str):
            values, bad = column_ids(rows.column(self._id_from))
            return values, bad.to_numpy(zero_copy_only=False), self._id_from
        if self._id_from:
            return hashed_ids(rows, list(self._id_from)), no_bad, ",".join(self._id_from)
        made = positional_ids(self._run_id, positions)
        if ID_COLUMN not in rows.schema.names:
            return made, no_bad, ID_COLUMN
        given, bad = column_ids(rows.column(ID_COLUMN))
        bad_given = pc.and_(bad, given.is_valid()).to_numpy(zero_copy_only=False)
        return pc.coalesce(given, made), bad_given, ID_COLUMN


def _unreadable_rows(
    batch: pa.RecordBatch,
) -> tuple[pa.RecordBatch, npt.NDArray[np.int64] | None, pa.Table]:
    """`batch` without its `UNREADABLE` column, the places of its readable rows (None: all
    are), and the unreadable rows' rejections (rule ``read``)."""
    if UNREADABLE not in batch.schema.names:
        return batch, None, pa.table({})
    messages = batch.column(UNREADABLE)
    bad = messages.is_valid().to_numpy(zero_copy_only=False)
    places = np.flatnonzero(bad)
    unreadable = rejections(places, "", "read", messages.filter(pa.array(bad)).to_pylist())
    source = batch.drop_columns([UNREADABLE])
    return source, np.flatnonzero(~bad).astype(np.int64), unreadable


def rejections(
    rows: Sequence[int] | npt.NDArray[np.int64],
    column: str | Sequence[str],
    rule: str,
    message: str | Sequence[str | None],
) -> pa.Table:
    """The report's first columns for the rejected `rows` (places in a batch): one `column`
    and `message` for all of them, or one each."""
    count = len(rows)
    return pa.table(
        {
            "row": pa.array(rows, pa.int64()),
            "column": pa.array(
                [column] * count if isinstance(column, str) else column, pa.string()
            ),
            "rule": pa.array([rule] * count, pa.string()),
            "message": pa.array(
                [message] * count if isinstance(message, str) else message, pa.string()
            ),
        }
    )


def _with_rejections(
    rejected: pa.Table, rows: npt.NDArray[np.int64], column: str, message: str
) -> pa.Table:
    more = rejections(rows, column, "id", message)
    return pa.concat_tables([rejected.cast(more.schema), more]).sort_by("row")


def rejected_value_name(column: str) -> str:
    """The name of a rejected row's value of `column` in the report: the column's own, or
    with ``_value`` after it where the report's own columns (row, column, rule, message)
    have it."""
    return f"{column}_value" if column in REJECTED_COLUMNS else column


def rejected_frame(rejected: pa.Table, source: pa.RecordBatch, first_row: int) -> pd.DataFrame:
    """The report's rows for `rejected`: positions in the source, then the rows' values."""
    if rejected.num_rows == 0:
        return pd.DataFrame(columns=REJECTED_COLUMNS)
    positions = rejected.column("row").to_numpy()
    values = source.take(pa.array(positions)).to_pandas()
    values = values.rename(columns=rejected_value_name)
    meta = rejected.to_pandas()
    meta["row"] = positions + first_row
    return pd.concat([meta.reset_index(drop=True), values.reset_index(drop=True)], axis=1)
