"""`infer_schema`: the columns a load's source calls for, shown before anything is created.

A pandas DataFrame is judged as ``create_table(schema=frame)`` judges it; anything else a
load reads (an Arrow table, a polars frame, a Parquet, CSV or JSON lines file ...) is read as
the load reads it (`open_source`), every batch, so the proposal fits every row. A file's
unreadable records are left out.
"""

from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..._schema import SchemaProposal, propose_batches, propose_frame
from ._sources import open_source
from ._text_files import UNREADABLE, TextReading


def infer_schema(source: pd.DataFrame | pa.Table | str | os.PathLike[str]) -> SchemaProposal:
    """The columns `source`'s values call for, each with the reason, before anything is
    created: a `SchemaProposal` that prints one line per column and that
    ``create_table(schema=...)`` takes, as it is or edited like a dict.

    `source` is a pandas DataFrame, a pyarrow Table (or anything ``table.load`` reads), or
    the path of a Parquet, CSV or JSON lines file, read whole. Each column's type follows its
    values' type (the dtype table), except that numbers that are all whole with nulls among
    them propose an integer column (``pd.read_csv`` reads an integer column with nulls as
    float64), and text that is all ISO dates or datetimes proposes a datetime column.
    ``create_table(schema=frame)`` creates what ``infer_schema(frame)`` proposes. Needs no
    client: nothing is sent.

    >>> proposal = fp.infer_schema("people.csv")                       # doctest: +SKIP
    >>> proposal["notes"] = "string(2000)"                             # doctest: +SKIP
    >>> client.create_table("crm", "people", schema=proposal)          # doctest: +SKIP
    """
    if isinstance(source, pd.DataFrame):
        return propose_frame(source)
    opened = open_source(source, reading=TextReading(columns=()))
    batches = (_readable(batch) for batch in opened.batches())
    return propose_batches(opened.schema, batches, source=opened.description)


def _readable(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` without its unreadable records and the column that marks them."""
    position = batch.schema.get_field_index(UNREADABLE)
    if position < 0:
        return batch
    kept = batch.filter(pc.is_null(batch.column(position)))
    return kept.drop_columns([UNREADABLE])
