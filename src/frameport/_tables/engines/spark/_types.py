"""Spark's types for a table's Arrow schema (the types of ``to_arrow``), and the Arrow schema
Spark expects a Python source's record batches to have.

Every Arrow type ``to_arrow`` gives has a Spark type: strings, 64-bit integers, doubles,
booleans, lists of them, and timestamps, which Spark holds in microseconds (the service's
millisecond values, unchanged, in UTC). A type Spark lacks is refused by the column's name.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import StructField, StructType


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of `schema`'s fields, each nullable; ValueError naming a column whose
    type Spark lacks."""
    fields = []
    for field in schema:
        try:
            spark_type = from_arrow_type(field.type, prefer_timestamp_ntz=False)
        except Exception as exc:  # pyspark raises its own types for what it does not map
            raise ValueError(
                f"Spark has no type for the column {field.name!r} ({field.type}); leave it out "
                "with .option('columns', ...) or a schema without it."
            ) from exc
        fields.append(StructField(field.name, spark_type, nullable=True))
    return StructType(fields)


def batch_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of the record batches Spark accepts for `schema`."""
    arrow: pa.Schema = to_arrow_schema(schema, timezone="UTC")
    return arrow


def conformed_batches(table: pa.Table, schema: pa.Schema) -> list[pa.RecordBatch]:
    """`table`'s rows as record batches of exactly `schema` (what Spark checks)."""
    return table.select(schema.names).cast(schema).to_batches()
