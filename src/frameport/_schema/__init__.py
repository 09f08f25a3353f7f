"""Service column types, Arrow types and pandas dtypes: one table, both ways (pandas 3 dtypes,
also under pandas 2.3). `DTYPE_TABLE` is the published write → read table; the documentation
is written from it.

>>> arrow_schema([{"key": "age", "type": "integer", "array": False}]).field("age").type
DataType(int64)
"""

from .._exceptions import RowDecodeError
from ._inference import InferredSchema, infer_batch
from ._proposal import SchemaProposal, column_definitions, propose_batches, propose_frame
from ._reading import (
    DTYPE_TABLE,
    STR_DTYPE,
    SYSTEM_SCHEMA,
    TIMESTAMP,
    ArrowArray,
    DtypeBackend,
    DtypeMapping,
    UnmappedColumnWarning,
    arrow_schema,
    batches_to_pandas,
    column_arrow_type,
    column_type_name,
    dtype_table_markdown,
    is_json_text,
    json_text_columns,
    system_fields_markdown,
    to_pandas,
    type_reads_markdown,
    warn_unmapped,
)
from ._validation import ColumnRules, validate_batch
from ._writing import (
    SERVICE_FIELDS,
    NewColumn,
    batch_to_rows,
    check_column_keys,
    frame_to_rows,
    new_column,
    parse_column_type,
    string_size,
    to_json_value,
)

__all__ = [
    "DTYPE_TABLE",
    "SERVICE_FIELDS",
    "STR_DTYPE",
    "SYSTEM_SCHEMA",
    "TIMESTAMP",
    "ArrowArray",
    "ColumnRules",
    "DtypeBackend",
    "DtypeMapping",
    "InferredSchema",
    "NewColumn",
    "RowDecodeError",
    "SchemaProposal",
    "UnmappedColumnWarning",
    "arrow_schema",
    "batch_to_rows",
    "batches_to_pandas",
    "check_column_keys",
    "column_arrow_type",
    "column_definitions",
    "column_type_name",
    "dtype_table_markdown",
    "frame_to_rows",
    "infer_batch",
    "is_json_text",
    "json_text_columns",
    "new_column",
    "parse_column_type",
    "propose_batches",
    "propose_frame",
    "string_size",
    "system_fields_markdown",
    "to_json_value",
    "to_pandas",
    "type_reads_markdown",
    "validate_batch",
    "warn_unmapped",
]
