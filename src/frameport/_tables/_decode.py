"""Pages of rows, as the service sends them, decoded into Arrow record batches.

A page body is ``{"total": N, "rows": [{...}, ...]}`` (legacy: ``"documents"``). `decode_page`
parses it once with Arrow's JSON reader against the batch schema, in C++, never building
Python dicts. Pages the reader refuses (``5.0`` in an integer column, a number beyond the
double range, `$sequence` changing form) go through `json.loads` and `batch_from_rows`, which
either builds the same batch or raises `RowDecodeError` naming the column.
`decode_page_inferring` does the same for tables whose columns cannot be read. `decoded`
runs a decoding on the decoding thread, beside the event loop fetching the next page (Arrow's
JSON reader releases the GIL). The read, the table widget and the records use them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, cast

import pyarrow as pa
import pyarrow.json as pa_json

from .._core._pages import quote_is_unescaped
from .._schema import (
    SYSTEM_SCHEMA,
    InferredSchema,
    RowDecodeError,
    infer_batch,
    is_json_text,
    json_text_columns,
)

if TYPE_CHECKING:
    from .._core._adaptive import AdaptiveConcurrency

log = logging.getLogger(__name__)

Decode = Callable[[bytes], tuple[int, pa.RecordBatch]]
"""Turns one page body into (the service's total, the rows kept as a batch); runs in a thread."""

_SEQUENCE = "$sequence"


def decode_page(
    body: bytes,
    schema: pa.Schema,
    *,
    items_key: str = "rows",
    memory_pool: pa.MemoryPool | None = None,
) -> tuple[int, pa.RecordBatch]:
    """The ``total`` of a page body and its rows as a batch with exactly `schema`.

    Fields the body has but `schema` lacks are ignored; fields a row lacks are null.
    `$sequence` may be a string of digits (response format ≥ 1.9.0) or a number.
    Arrow's allocations come from `memory_pool` (default: Arrow's default pool), except
    the columns Arrow's JSON reader builds: in its default pool whatever it is given.

    >>> schema = pa.schema([("$id", pa.string()), ("n", pa.int64())])
    >>> total, batch = decode_page(b'{"total": 9, "rows": [{"$id": "a", "n": 1}]}', schema)
    >>> total, batch.to_pylist()
    (9, [{'$id': 'a', 'n': 1}])
    """
    try:
        if json_text_columns(schema):  # Arrow's reader would take text values as they are
            raise pa.ArrowInvalid("columns read as JSON text")
        total, batch = _read_page(body, list(schema), items_key, "ignore", memory_pool)
        return total, pa.RecordBatch.from_arrays(batch.columns, schema=schema)
    except pa.ArrowException as exc:
        log.debug("page decoded through json.loads: Arrow's JSON reader refused it: %s", exc)
    return decode_small_page(body, schema, items_key=items_key)


def decode_small_page(
    body: bytes, schema: pa.Schema, *, items_key: str = "rows"
) -> tuple[int, pa.RecordBatch]:
    """`decode_page` for a page of a row or two (a count, a bound): through `json.loads`,
    the same batch and errors without the fixed cost of setting up Arrow's reader."""
    total, rows = _load_page(body, items_key)
    return total, batch_from_rows(rows, schema)


def decode_page_inferring(
    body: bytes, inferred: InferredSchema, *, items_key: str = "rows"
) -> tuple[int, pa.RecordBatch]:
    """Like `decode_page`, for a table whose columns cannot be read: the page's columns are
    added to `inferred` (see its rules), and the batch is conformed to ``inferred.schema``.

    Columns already settled are read with their types, the others are inferred by Arrow's
    reader; a page it cannot read that way goes through `json.loads` and `infer_batch`.
    When the add changes the schema, batches returned earlier need ``inferred.conform``.
    """
    settled = [
        field.with_type(_text_for_timestamps(field.type)) if field.name[0] != "$" else field
        for field in inferred.schema
        if not holds(field.type, pa.types.is_null)
    ]
    try:
        total, batch = _read_page(body, settled, items_key, "infer")
        guessed = batch.schema.names[len(settled) :]
        if any(holds(batch.schema.field(name).type, pa.types.is_timestamp) for name in guessed):
            # Arrow takes ISO-like text for timestamps; the rules want the service's form only.
            raise pa.ArrowInvalid("inferred a timestamp column")
    except pa.ArrowException as exc:
        log.debug("page decoded through json.loads: Arrow's JSON reader refused it: %s", exc)
        total, rows = _load_page(body, items_key)
        system = batch_from_rows(rows, SYSTEM_SCHEMA)
        columns = infer_batch(rows)
        batch = pa.RecordBatch.from_arrays(
            [*system.columns, *columns.columns], names=system.schema.names + columns.schema.names
        )
    inferred.add_batch(batch)
    return total, inferred.conform(batch)


def holds(kind: pa.DataType, test: Callable[[pa.DataType], bool]) -> bool:
    """Whether `kind`, or the values of a list of that kind, pass `test`."""
    return holds(kind.value_type, test) if pa.types.is_list(kind) else bool(test(kind))


def _read_page(
    body: bytes,
    row_fields: Sequence[pa.Field[pa.DataType]],
    items_key: str,
    unexpected: Literal["ignore", "infer"],
    memory_pool: pa.MemoryPool | None = None,
) -> tuple[int, pa.RecordBatch]:
    """Arrow's JSON reader over the whole body, `$sequence` read as it comes and cast to int64."""
    row_fields = [_wire_field(field, body) for field in row_fields]
    envelope = pa.schema([("total", pa.int64()), (items_key, pa.list_(pa.struct(row_fields)))])
    table = pa_json.read_json(
        pa.BufferReader(body),  # type: ignore[arg-type]  # the stubs leave out Arrow's own files
        # One block holds the whole body: the envelope is a single JSON value.
        read_options=pa_json.ReadOptions(use_threads=False, block_size=len(body) + 1),
        parse_options=pa_json.ParseOptions(
            explicit_schema=envelope,
            unexpected_field_behavior=unexpected,
            newlines_in_values=b"\n" in body,
        ),
        memory_pool=memory_pool,
    )
    if table.num_rows != 1:
        raise pa.ArrowInvalid(f"a page body is one JSON object, not {table.num_rows}")
    total = table.column("total")[0].as_py()
    rows = cast(
        "pa.ListArray[Any]", table.column(items_key).combine_chunks(memory_pool=memory_pool)
    )
    batch = pa.RecordBatch.from_struct_array(cast(pa.StructArray, rows.flatten()))
    position = batch.schema.get_field_index(_SEQUENCE)
    if position >= 0 and batch.schema.field(position).type != pa.int64():
        sequence = batch.column(position).cast(pa.int64(), memory_pool=memory_pool)
        batch = batch.set_column(position, _SEQUENCE, sequence)
    return int(total or 0), batch


def _wire_field(field: pa.Field[pa.DataType], body: bytes) -> pa.Field[pa.DataType]:
    if field.name == _SEQUENCE:
        return field.with_type(_sequence_wire_type(body))
    return field


def _sequence_wire_type(body: bytes) -> pa.DataType:
    """string when the first `$sequence` value of the body is quoted, else int64."""
    key = b'"$sequence"'
    position = body.find(key)
    while position >= 0:
        rest = body[position + len(key) : position + len(key) + 64].lstrip()
        if rest.startswith(b":") and quote_is_unescaped(body, position):
            return pa.string() if rest[1:].lstrip().startswith(b'"') else pa.int64()
        position = body.find(key, position + 1)
    return pa.string()


def _load_page(body: bytes, items_key: str) -> tuple[int, list[Mapping[str, object]]]:
    try:
        page = json.loads(body)
    except ValueError as exc:
        raise RowDecodeError(f"the page body is not JSON: {exc}") from exc
    if not isinstance(page, dict):
        raise RowDecodeError(f"the page body is a JSON {type(page).__name__}, not an object")
    rows = page.get(items_key) or []
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise RowDecodeError(f"the page's {items_key!r} is not a list of objects")
    total = page.get("total")
    return (total if type(total) is int else 0), rows


async def decoded(
    decode: Decode, body: bytes, concurrency: AdaptiveConcurrency | None = None
) -> tuple[int, pa.RecordBatch]:
    """`decode(body)` run on the decoding thread, its time told to `concurrency` (the work
    of a page)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_decoder(), _timed_decode, decode, body, concurrency)


def _timed_decode(
    decode: Decode, body: bytes, concurrency: AdaptiveConcurrency | None
) -> tuple[int, pa.RecordBatch]:
    started = time.perf_counter()
    try:
        return decode(body)
    finally:
        if concurrency is not None:
            concurrency.worked(time.perf_counter() - started)


def _decoder() -> ThreadPoolExecutor:
    """The thread decoding pages: one, beside the event loop fetching the next page. (A second
    thread decoding the next page at once gained nothing measurable on 2 cores, and raised a
    read's peak memory by half the final frame: more temporaries, another malloc arena.)"""
    global _decoder_pool
    with _decoder_pool_lock:
        if _decoder_pool is None:
            _decoder_pool = ThreadPoolExecutor(1, thread_name_prefix="frameport-decode")
        return _decoder_pool


def _forget_decoder_after_fork() -> None:
    global _decoder_pool
    _decoder_pool = None


_decoder_pool: ThreadPoolExecutor | None = None
_decoder_pool_lock = threading.Lock()
os.register_at_fork(after_in_child=_forget_decoder_after_fork)


# ---------------------------------------------------------------------------------------------
# Decoded JSON rows → a batch of a given schema (the fallback)


class _Misfit(Exception):
    """A JSON value that does not fit a column's type."""


def batch_from_rows(rows: Sequence[Mapping[str, object]], schema: pa.Schema) -> pa.RecordBatch:
    """Decoded JSON rows as a batch with exactly `schema`, checking every value's type.

    A key missing from a row is null. Datetimes are the service's text, `$sequence` a number
    or a string of digits; integral floats fit integer columns and integers fit float
    columns. Any other misfit raises `RowDecodeError` naming the column and row.
    """
    arrays = []
    for field in schema:
        coerce = (
            json.dumps
            if is_json_text(field)
            else _coercion(field.type, sequence=field.name == _SEQUENCE)
        )
        values = [row.get(field.name) for row in rows]
        for position, value in enumerate(values):
            if value is not None:
                try:
                    values[position] = coerce(value)
                except _Misfit:
                    message = (
                        f"column {field.name!r}: row {position} holds {value!r}, "
                        f"which does not fit {field.type}"
                    )
                    raise RowDecodeError(message, column=field.name) from None
        try:
            arrays.append(pa.array(values, type=_text_for_timestamps(field.type)).cast(field.type))
        except (pa.ArrowException, OverflowError, ValueError) as exc:
            raise RowDecodeError(f"column {field.name!r}: {exc}", column=field.name) from exc
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _text_for_timestamps(kind: pa.DataType) -> pa.DataType:
    """`kind` with timestamps replaced by string: how the values arrive in JSON."""
    if pa.types.is_timestamp(kind):
        return pa.string()
    if pa.types.is_list(kind):
        return pa.list_(_text_for_timestamps(kind.value_type))
    return kind


def _coercion(kind: pa.DataType, *, sequence: bool = False) -> Callable[[object], object]:
    """The check (and normalisation) of one non-null JSON value for an Arrow type."""
    if pa.types.is_integer(kind):
        return _as_sequence if sequence else _as_integer
    if pa.types.is_floating(kind):
        return _as_float
    if pa.types.is_boolean(kind):
        return _of_type(bool)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_timestamp(kind):
        return _of_type(str)
    if pa.types.is_list(kind):
        return _list_of(_coercion(kind.value_type))
    if pa.types.is_null(kind):
        return _of_type(type(None))
    return _unchecked


def _as_integer(value: object) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise _Misfit


def _as_sequence(value: object) -> int:
    if type(value) is str and value.isascii() and value.isdigit():
        return int(value)
    return _as_integer(value)


def _as_float(value: object) -> float:
    if type(value) is int or type(value) is float:
        return float(value)
    raise _Misfit


def _of_type(expected: type) -> Callable[[object], object]:
    def check(value: object) -> object:
        if type(value) is not expected:
            raise _Misfit
        return value

    return check


def _list_of(coerce: Callable[[object], object]) -> Callable[[object], object]:
    def check(value: object) -> object:
        if type(value) is not list:
            raise _Misfit
        return [None if item is None else coerce(item) for item in value]

    return check


def _unchecked(value: object) -> object:
    return value
