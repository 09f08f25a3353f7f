"""CSV and JSON lines files read in blocks of whole records, so that no record can stop a load.

`record_batches` reads the file's bytes `BLOCK_BYTES` at a time and cuts each block after
its last whole record (a newline; in a CSV file, a newline outside quotes). A record longer
than a block grows the block, up to `MAX_RECORD_BYTES`. Each block is then

* checked for UTF-8: a record that is not is one unreadable row;
* for JSON, scanned for nesting: a line nested deeper than `MAX_JSON_DEPTH` is a `LoadError`
  naming the line, raised before pyarrow, whose parser recurses and crashes the process
  from some 20,000 levels, sees it;
* parsed by pyarrow on its own. A CSV file's table columns are read as text, which the
  table's rules convert as they convert the same text in a frame; a field is null when it is
  one of the `null_values` (by default only an empty field: pyarrow's and pandas' default
  set would silently make nulls of text such as ``NA``). A JSON line's values keep their JSON
  types, inferred from the block's own values (a column's type may change from block to
  block; the table's rules convert each block's values), except that a text or date
  column's strings stay the strings they are (pyarrow would read ISO dates as timestamps).
  A block that does not parse is split in halves, down to the records that do not parse
  alone: each is one unreadable row.

An unreadable row comes as a row of nulls whose `UNREADABLE` value says what is wrong and
on which line of the file; the load reports it as a rejected row (rule ``read``) and loads
the rest.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..._exceptions import LoadError

BLOCK_BYTES = 4 << 20
"""Bytes read and parsed at a time."""
MAX_RECORD_BYTES = 64 << 20
"""The longest record (a CSV row, a JSON line) a load reads."""
MAX_JSON_DEPTH = 100
"""The deepest nesting of a JSON line, its own object included: a table's values nest a few
levels at most (a polygon is 3), and pyarrow's parser crashes far deeper."""
UNREADABLE = "$unreadable"
"""The column of a batch that says, for each unreadable row, why (null for the others)."""
DEFAULT_NULL_VALUES = ("",)
"""The CSV fields read as null unless a load names others: only the empty field, as pandas'
``to_csv`` and frameport write a null."""

_PARSE_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"
_NEWLINE, _QUOTE, _BACKSLASH = ord("\n"), ord('"'), ord("\\")
_JSON_MARKS = np.zeros(256, dtype=bool)
_JSON_MARKS[[ord(c) for c in '"\\[]{}']] = True
_OPEN_LIST, _OPEN_OBJECT, _CLOSE_LIST, _CLOSE_OBJECT = (ord(c) for c in "[{]}")


@dataclass(frozen=True)
class TextFormat:
    """How a file's records are parsed: `parse` reads whole records into a table."""

    kind: str  # "csv" or "json"
    parse: Callable[[bytes], pa.Table]
    known_columns: Collection[str] = ()
    """Columns a JSON line may hold though the file's first lines do not."""


@dataclass(frozen=True)
class TextReading:
    """How a load reads CSV and JSON lines files: `columns` (the table's, and the ID's) are
    read as text from a CSV file, and known to a JSON one; `json_text` (the table's text and
    date columns) keep a JSON line's strings as they are; `null_values` are the CSV fields
    read as null as the load names them (None: not named, `csv_nulls` is the default)."""

    columns: Collection[str]
    json_text: Collection[str] = ()
    null_values: tuple[str, ...] | None = None

    @property
    def csv_nulls(self) -> tuple[str, ...]:
        """The CSV fields read as null."""
        return DEFAULT_NULL_VALUES if self.null_values is None else self.null_values


def null_strings(null_values: object) -> tuple[str, ...] | None:
    """`null_values` (a list of strings, or None) as a tuple, or a `LoadError` saying what
    it takes."""
    if null_values is None:
        return None
    if isinstance(null_values, Collection) and not isinstance(null_values, str | bytes):
        values = tuple(null_values)
        if all(isinstance(value, str) for value in values):
            return values
    raise LoadError(
        "null_values takes a list of the strings a CSV file's fields are null by, e.g. "
        f'["", "NA", "n/a"] ("" is the empty field); got {null_values!r}'
    )


def csv_format(header: bytes, reading: TextReading, delimiter: str) -> tuple[TextFormat, list[str]]:
    """The format of a CSV file with the header line `header`, and its column names."""
    import pyarrow.csv as csv

    parse_options = csv.ParseOptions(delimiter=delimiter)
    names = csv.read_csv(io.BytesIO(header), parse_options=parse_options).column_names
    convert = csv.ConvertOptions(
        column_types={name: pa.string() for name in reading.columns if name in names},
        null_values=list(reading.csv_nulls),
        strings_can_be_null=True,
    )

    def parse(data: bytes, block_size: int) -> pa.Table:
        read = csv.ReadOptions(column_names=names, block_size=block_size)
        return csv.read_csv(
            io.BytesIO(data),
            read_options=read,
            parse_options=parse_options,
            convert_options=convert,
        )

    return TextFormat("csv", _in_blocks(parse)), names


def json_format(reading: TextReading) -> TextFormat:
    """The format of a JSON lines file."""
    import pyarrow.json as pj

    def read(data: bytes, block_size: int, text: list[str]) -> pa.Table:
        explicit = pa.schema([(name, pa.string()) for name in text]) if text else None
        return pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(block_size=block_size),
            parse_options=pj.ParseOptions(
                explicit_schema=explicit, unexpected_field_behavior="infer"
            ),
        )

    def parse(data: bytes, block_size: int) -> pa.Table:
        table = read(data, block_size, [])
        dated = [
            field.name
            for field in table.schema
            if field.name in reading.json_text and pa.types.is_timestamp(field.type)
        ]
        if not dated:
            return table
        # strings pyarrow took for timestamps: read again as the strings they are
        return read(data, block_size, dated).select(table.column_names)

    return TextFormat("json", _in_blocks(parse), reading.columns)


def _in_blocks(parse: Callable[[bytes, int], pa.Table]) -> Callable[[bytes], pa.Table]:
    """`parse` in blocks of `_PARSE_BYTES`, which pyarrow parses in parallel, or in one
    when a record is longer than that."""

    def parse_all(data: bytes) -> pa.Table:
        try:
            return parse(data, _PARSE_BYTES)
        except pa.ArrowInvalid as exc:
            if "straddl" not in str(exc):
                raise
        return parse(data, len(data) + 1)

    return parse_all


def split_header(stream: pa.NativeFile) -> tuple[bytes, Iterator[tuple[bytes, int]]]:
    """A CSV file's header record, and the blocks after it (see `record_blocks`)."""
    blocks = record_blocks(stream, quoted=True)
    first = next(blocks, None)
    if first is None:
        raise LoadError("the CSV file is empty: it has no header line naming its columns")
    block, line = first
    ends = _record_ends(block, quoted=True)
    end = int(ends[0]) + 1 if len(ends) else len(block)
    header, rest = block[:end], block[end:]
    if _first_bad_utf8(header, 0) is not None:
        raise LoadError(
            f"the header (line {line}) of the CSV file is not valid UTF-8: save the file as UTF-8"
        )

    def after() -> Iterator[tuple[bytes, int]]:
        if rest:
            yield rest, line + header.count(b"\n")
        yield from blocks

    return header, after()


def record_blocks(stream: pa.NativeFile, *, quoted: bool) -> Iterator[tuple[bytes, int]]:
    """The file's bytes in blocks of whole records, each with the line number of its first
    byte. A CSV record (`quoted`) may hold newlines inside quotes."""
    rest, want, line = b"", BLOCK_BYTES, 1
    first = True
    while True:
        chunk = stream.read(want)
        data = rest + chunk
        if first:
            data, first = data.removeprefix(_BOM), False
        if not chunk:
            if data:
                yield data, line
            return
        ends = _record_ends(data, quoted=quoted)
        if len(ends):
            cut = int(ends[-1]) + 1
            yield data[:cut], line
            line += data.count(b"\n", 0, cut)
            rest, want = data[cut:], BLOCK_BYTES
            continue
        if len(data) >= MAX_RECORD_BYTES:
            raise LoadError(
                f"line {line:,} of the file is longer than {MAX_RECORD_BYTES >> 20} MiB, "
                "the longest record a load reads"
                + (" (is a quote left open before it?)" if quoted else "")
                + ": split the value, or load the rows from a Parquet file"
            )
        # a record longer than the block: read as much again, up to the longest record
        rest, want = data, min(len(data), MAX_RECORD_BYTES - len(data))


def record_batches(
    blocks: Iterator[tuple[bytes, int]], text_format: TextFormat, columns: list[str] | None
) -> Iterator[pa.RecordBatch]:
    """Each block's rows as batches with the columns `columns` (for JSON, None: the first
    rows' columns), and the `UNREADABLE` column where a row could not be read."""
    for block, line in blocks:
        parts = _read_block(block, line, text_format)
        if not parts:
            continue
        if columns is None:
            columns = next(
                (t.column_names for t in parts if isinstance(t, pa.Table) and t.num_columns), None
            )
        yield from _conformed(parts, columns or [], text_format.known_columns)


def check_json_depth(block: bytes, line: int) -> None:
    """Raise `LoadError` when a line of `block` (the file's line `line` first) nests deeper
    than `MAX_JSON_DEPTH`. Only a line with more opening brackets than that can, so only
    those lines are scanned (`_deepest`)."""
    data = np.frombuffer(block, dtype=np.uint8)
    opens = np.flatnonzero((data == _OPEN_LIST) | (data == _OPEN_OBJECT))
    if len(opens) <= MAX_JSON_DEPTH:
        return
    starts = np.concatenate(([0], np.flatnonzero(data == _NEWLINE) + 1))
    per_line = np.diff(np.searchsorted(opens, starts), append=len(opens))
    for number in np.flatnonzero(per_line > MAX_JSON_DEPTH):
        start = int(starts[number])
        end = int(starts[number + 1]) if number + 1 < len(starts) else len(block)
        if _deepest(data[start:end]) > MAX_JSON_DEPTH:
            raise LoadError(
                f"line {line + int(number):,} of the file is nested deeper than "
                f"{MAX_JSON_DEPTH} levels, more than any table's values: fix or drop that line "
                "(a table's values nest a few levels at most; store deeper JSON as text)"
            )


def _deepest(data: npt.NDArray[np.uint8]) -> int:
    """The deepest nesting of one JSON line: brackets inside strings do not count."""
    places = np.flatnonzero(_JSON_MARKS[data])
    marks = data[places]
    quote = marks == _QUOTE
    backslash = marks == _BACKSLASH
    # a quote is escaped when an odd run of backslashes stands right before it
    follows = np.zeros(len(places), dtype=bool)
    follows[1:] = backslash[:-1] & (places[1:] == places[:-1] + 1)
    run_start = np.maximum.accumulate(np.where(backslash & ~follows, places, 0))
    before = np.zeros(len(places), dtype=np.int64)
    before[1:] = places[1:] - run_start[:-1]
    quote &= ~(follows & (before % 2 == 1))
    in_string = (np.cumsum(quote) - quote) % 2 == 1
    opens = ((marks == _OPEN_LIST) | (marks == _OPEN_OBJECT)) & ~in_string
    closes = ((marks == _CLOSE_LIST) | (marks == _CLOSE_OBJECT)) & ~in_string
    depth = np.cumsum(opens.astype(np.int64) - closes)
    return int(depth.max()) if len(depth) else 0


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unreadable:
    """A record that cannot be read, and why."""

    message: str


def _read_block(block: bytes, line: int, text_format: TextFormat) -> list[pa.Table | _Unreadable]:
    """The block's records in order: tables of the ones pyarrow reads, and the others."""
    if text_format.kind == "json":
        check_json_depth(block, line)
    parts: list[pa.Table | _Unreadable] = []
    start = 0
    while start < len(block):
        bad = _first_bad_utf8(block, start)
        if bad is None:
            parts.extend(_parsed(block, start, len(block), line, text_format))
            break
        end, record_end = _record_around(block, bad, quoted=text_format.kind == "csv")
        parts.extend(_parsed(block, start, end, line, text_format))
        at = line + block.count(b"\n", 0, end)
        place = bad - block.rfind(b"\n", 0, bad)
        parts.append(
            _Unreadable(
                f"line {at:,} of the file is not valid UTF-8 (its byte {place:,} is "
                f"0x{block[bad]:02x}): save the file as UTF-8"
            )
        )
        start = record_end
    return parts


def _parsed(
    block: bytes, start: int, end: int, line: int, text_format: TextFormat
) -> list[pa.Table | _Unreadable]:
    """The records between `start` and `end` parsed; when they do not parse together, in
    halves, down to the single records that do not parse."""
    data = block[start:end]
    if not data.strip():
        return []
    try:
        table = text_format.parse(data)
        table.validate(full=True)
        return [table]
    except (pa.ArrowException, ValueError) as exc:
        error = exc
    ends = _record_ends(data, quoted=text_format.kind == "csv")
    inner = ends[ends < len(data) - 1]
    if not len(inner):
        at = line + block.count(b"\n", 0, start)
        return [_Unreadable(f"line {at:,} of the file cannot be read: {_reason(error)}")]
    middle = start + int(inner[len(inner) // 2]) + 1
    return [
        *_parsed(block, start, middle, line, text_format),
        *_parsed(block, middle, end, line, text_format),
    ]


def _reason(error: Exception) -> str:
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    reason = reason.removeprefix("JSON parse error: ").removeprefix("CSV parse error: ")
    return re.sub(r"\.? in row \d+$", "", reason)  # pyarrow's row is within the block


def _conformed(
    parts: list[pa.Table | _Unreadable], columns: list[str], known: Collection[str]
) -> Iterator[pa.RecordBatch]:
    """The parts as batches of `columns` (a column a part lacks is null), in as few batches as
    their types allow. A JSON line's field outside `columns` and `known` makes its row
    unreadable."""
    tables = []
    for part in parts:
        if isinstance(part, _Unreadable):
            nulls = {name: pa.nulls(1) for name in columns}
            tables.append(pa.table({**nulls, UNREADABLE: pa.array([part.message])}))
        elif part.num_rows:
            tables.append(_with_columns(part, columns, known))
    for group in _concatenated(tables):
        yield from group.combine_chunks().to_batches()


def _with_columns(table: pa.Table, columns: list[str], known: Collection[str]) -> pa.Table:
    for name in columns:
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows))
    extra = [n for n in table.column_names if n not in columns and n not in known]
    if extra:
        filled = np.zeros(table.num_rows, dtype=bool)
        for name in extra:
            filled |= table.column(name).is_valid().to_numpy(zero_copy_only=False)
        message = (
            f"the line has the field {extra[0]!r}, which the table does not have: drop it from "
            "the file, or add the column first with table.add_column(...)"
        )
        messages = pa.array([message if row else None for row in filled], pa.string())
        table = table.drop_columns(extra)
        if filled.any():
            table = table.append_column(UNREADABLE, messages)
    return table


def _concatenated(tables: list[pa.Table]) -> Iterator[pa.Table]:
    """Runs of `tables` joined where their types agree or widen (an integer column to a
    float one, a null column to any)."""
    run: pa.Table | None = None
    for table in tables:
        if run is None:
            run = table
            continue
        try:
            run = pa.concat_tables([run, table], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            yield run
            run = table
    if run is not None:
        yield run


def _record_ends(block: bytes, *, quoted: bool) -> Any:
    """The places of the newlines that end records: all of them, or (`quoted`) those after
    an even number of quotes."""
    data = np.frombuffer(block, dtype=np.uint8)
    newlines = np.flatnonzero(data == _NEWLINE)
    if not quoted or not len(newlines):
        return newlines
    quotes = np.flatnonzero(data == _QUOTE)
    return newlines[np.searchsorted(quotes, newlines) % 2 == 0]


def _first_bad_utf8(block: bytes, start: int) -> int | None:
    try:
        codecs.utf_8_decode(memoryview(block)[start:], "strict", True)
    except UnicodeDecodeError as exc:
        return start + exc.start
    return None


def _record_around(block: bytes, place: int, *, quoted: bool) -> tuple[int, int]:
    """Where the record holding the byte at `place` starts and ends."""
    ends = _record_ends(block, quoted=quoted)
    before, after = ends[ends < place], ends[ends >= place]
    start = int(before[-1]) + 1 if len(before) else 0
    return start, int(after[0]) + 1 if len(after) else len(block)
