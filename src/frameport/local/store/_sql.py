"""Compile a validated `ListQuery` to parameterised SQL and fetch one page.

Every value travels as a bound parameter; the SQL text holds only internal expressions
(`c_3`, `f_3`, `_seq`, ...) that the schema made. Null semantics are SQL's: comparisons,
`notEqual`, `notBetween`, `notStartsWith`, ... never match NULL; only `isNull`/`isNotNull`
(and `exists`/`notExists`) talk about nulls.

Ordering (service interface, "Ordering and cursors"): the requested orders, then `$sequence` as
tie-breaker unless `$id` or `$sequence` is already ordered on (ascending, or in the direction of a
first `$createdAt` / `$updatedAt` key). NULL sorts first ascending and last descending; a cursor
compares the full ordering tuple, so paging by cursor visits every row exactly once, nulls included.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..wire._errors import ServiceError
from ._collation import fold
from ._query import DEFAULT_LIMIT, Condition, Filter, ListQuery

COUNT_CAP = 5000

_COMPARISONS = {
    "lessThan": "<",
    "lessThanEqual": "<=",
    "greaterThan": ">",
    "greaterThanEqual": ">=",
}


@dataclass(frozen=True)
class Source:
    """Where a list endpoint's items live: a table, its sequence and ID expressions, and a
    fixed condition (e.g. `database_id = ?`) with its parameters."""

    table: str
    seq: str
    id: str
    base_where: str = "1"
    base_params: tuple[Any, ...] = ()
    range_indexes: tuple[tuple[str, str], ...] = ()  # (column expression, index name)
    sequence_index: str | None = None  # an index of `seq` alone


@dataclass(frozen=True)
class OrderKey:
    key: str
    sql: str
    descending: bool


Clause = tuple[str, list[Any]]


# --- filters ---------------------------------------------------------------------------


def compile_filters(filters: Sequence[Filter], source: Source) -> Clause:
    """`filters` AND-ed together, as SQL text and parameters."""
    params: list[Any] = []
    parts = [_compile(item, source, params) for item in filters]
    return (" AND ".join(parts) if parts else "1"), params


def _compile(item: Filter, source: Source, params: list[Any]) -> str:
    if not isinstance(item, Condition):
        joiner = " AND " if item.method == "and" else " OR "
        return "(" + joiner.join(_compile(child, source, params) for child in item.children) + ")"
    return _condition(item, source, params)


def _placeholders(values: Sequence[Any], params: list[Any]) -> str:
    params.extend(values)
    return ", ".join("?" for _ in values)


def _any_of(template: str, values: Sequence[Any], params: list[Any], joiner: str = " OR ") -> str:
    """`template` (with one `?`) for each value, joined; several values mean OR
    (service interface, "Queries")."""
    params.extend(values)
    return "(" + joiner.join(template for _ in values) + ")"


def _condition(item: Condition, source: Source, params: list[Any]) -> str:
    method, values, field = item.method, item.values, item.field
    column, raw = field.compare_sql, field.sql
    if method in ("isNull", "notExists"):
        return f"{raw} IS NULL"
    if method in ("isNotNull", "exists"):
        return f"{raw} IS NOT NULL"
    if field.array:
        return _array_condition(method, raw, values, params)
    if method == "equal":
        return f"{column} IN ({_placeholders(values, params)})"
    if method in _COMPARISONS:
        return _any_of(f"{column} {_COMPARISONS[method]} ?", values, params)
    if method == "notEqual":
        params.append(values[0])
        return f"{column} != ?"
    if method in ("between", "notBetween"):
        params.extend(values)
        negation = "NOT " if method == "notBetween" else ""
        return f"{column} {negation}BETWEEN ? AND ?"
    if method in ("startsWith", "notStartsWith", "endsWith", "notEndsWith"):
        return _affix(method, column, str(values[0]), params)
    if method in ("contains", "containsAny"):
        return _any_of(f"instr({column}, ?) > 0", values, params)
    if method == "containsAll":
        return _any_of(f"instr({column}, ?) > 0", values, params, " AND ")
    if method == "notContains":
        return "NOT " + _any_of(f"instr({column}, ?) > 0", values, params)
    if method == "regex":
        params.append(values[0])
        return f"{raw} REGEXP ?"
    return _search(method, field.search_table or "", column, source, str(values[0]), params)


def _affix(method: str, column: str, value: str, params: list[Any]) -> str:
    """startsWith/endsWith and negations, comparing UTF-8 bytes (no LIKE wildcards).

    Bytes, not text: SQLite's text functions stop at a NUL character, its blob functions do
    not, and a prefix or suffix of the UTF-8 bytes is one of the characters.
    """
    negate = method.startswith("not")
    if not value:
        return "0" if negate else f"{column} IS NOT NULL"
    encoded = value.encode("utf-8")
    params.extend([len(encoded), encoded])
    start = "1, ?" if method in ("startsWith", "notStartsWith") else "-?"
    blob = f"CAST({column} AS BLOB)"
    test = f"coalesce(substr({blob}, {start}), {blob}) = ?"  # substr of an empty blob is NULL
    return f"NOT ({test})" if negate else test


def _array_condition(method: str, raw: str, values: Sequence[Any], params: list[Any]) -> str:
    """contains* on array columns: exact element equality through json_each."""
    if method == "containsAll":
        template = f"EXISTS (SELECT 1 FROM json_each({raw}) WHERE value = ?)"
        return _any_of(template, values, params, " AND ")
    found = (
        f"EXISTS (SELECT 1 FROM json_each({raw}) WHERE value IN ({_placeholders(values, params)}))"
    )
    if method == "notContains":
        return f"({raw} IS NOT NULL AND NOT {found})"
    return found


def fulltext_expression(text: str) -> str | None:
    """An FTS5 query for `search`: any of the words, the last one as a prefix; a quoted text
    is one phrase. Words are the letters, digits and underscores of the folded text.

    >>> fulltext_expression('Hello wor')
    '"hello" OR "wor"*'
    """
    words = re.sub(r"[^\w\s]", " ", fold(text)).split()
    if not words:
        return None
    if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
        return '"' + " ".join(words) + '"'
    quoted = [f'"{word}"' for word in words]
    quoted[-1] += "*"
    return " OR ".join(quoted)


def _search(
    method: str, table: str, column: str, source: Source, text: str, params: list[Any]
) -> str:
    expression = fulltext_expression(text)
    if expression is None:
        return f"{column} IS NOT NULL" if method == "notSearch" else "0"
    params.append(expression)
    matches = f"{source.seq} IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
    return f"({column} IS NOT NULL AND NOT {matches})" if method == "notSearch" else matches


# --- ordering and cursors --------------------------------------------------------------


def order_keys(query: ListQuery, source: Source) -> list[OrderKey]:
    """The full ordering, tie-breaker included; random order is one key `random()`."""
    keys: list[OrderKey] = []
    for order in query.orders:
        if order.field is None:
            return [OrderKey("", "random()", False)]
        keys.append(OrderKey(order.field.key, order.field.compare_sql, order.descending))
    if not any(key.key in ("$id", "$sequence") for key in keys):
        descending = (
            bool(keys) and keys[0].key in ("$createdAt", "$updatedAt") and keys[0].descending
        )
        keys.append(OrderKey("$sequence", source.seq, descending))
    return keys


def _order_by(keys: Sequence[OrderKey], reverse: bool) -> str:
    return ", ".join(f"{key.sql} {'DESC' if key.descending != reverse else 'ASC'}" for key in keys)


def _cursor_clause(keys: Sequence[OrderKey], values: Sequence[Any], before: bool) -> Clause:
    """Rows strictly after (or before) the cursor row's ordering tuple."""
    params: list[Any] = []
    alternatives = []
    for index, key in enumerate(keys):
        parts = [f"{earlier.sql} = ?" for earlier in keys[:index]]
        params.extend(values[:index])
        if key.descending != before:
            parts.append(f"({key.sql} < ? OR {key.sql} IS NULL)")
        else:
            parts.append(f"{key.sql} > ?")
        params.append(values[index])
        alternatives.append("(" + " AND ".join(parts) + ")")
    return "(" + " OR ".join(alternatives) + ")", params


def _cursor_values(
    conn: sqlite3.Connection,
    source: Source,
    keys: Sequence[OrderKey],
    item_id: str,
    missing: Callable[[str], ServiceError],
) -> Sequence[Any]:
    row: tuple[Any, ...] | None = conn.execute(
        f"SELECT {', '.join(key.sql for key in keys)} FROM {source.table} "
        f"WHERE {source.id} = ? AND {source.base_where}",
        (item_id, *source.base_params),
    ).fetchone()
    if row is None:
        raise missing(item_id)
    for key, value in zip(keys, row, strict=True):
        if value is None:
            raise ServiceError("database_query_order_null", f"Order attribute '{key.key}' is empty")
    return row


# --- the `$sequence` window ---------------------------------------------------------------


@dataclass(frozen=True)
class SequenceWindow:
    """The rows with ``after < $sequence <= upto`` (None: unbounded on that side).

    SQLite seeks the rowid by the first bound it meets on each side and checks the others
    row by row, so a read of a `$sequence` range paged by cursor would scan from the range's
    start on every page. The tightest bounds go first, as one range it can seek.
    """

    after: int | None
    upto: int | None

    @classmethod
    def of_filters(cls, filters: Sequence[Filter], seq: str) -> SequenceWindow:
        """The bounds the top-level comparisons of `$sequence` (`seq` in SQL) among `filters`
        imply."""
        window = cls(None, None)
        for item in filters:
            window = window.narrowed(cls.of_filter(item, seq))
        return window

    @classmethod
    def of_filter(cls, item: Filter, seq: str) -> SequenceWindow | None:
        """The bounds `item` sets on `$sequence` (`seq` in SQL) when it is one comparison of
        it with a number, which the window then says in full; None otherwise."""
        if not isinstance(item, Condition) or item.field.sql != seq:
            return None
        if len(item.values) != 1 or not isinstance(item.values[0], int):
            return None
        value = item.values[0]
        return {
            "greaterThan": cls(value, None),
            "greaterThanEqual": cls(value - 1, None),
            "lessThan": cls(None, value - 1),
            "lessThanEqual": cls(None, value),
            "equal": cls(value - 1, value),
        }.get(item.method)

    def narrowed(self, other: SequenceWindow | None) -> SequenceWindow:
        """The rows in both windows."""
        if other is None:
            return self
        after = [value for value in (self.after, other.after) if value is not None]
        upto = [value for value in (self.upto, other.upto) if value is not None]
        return SequenceWindow(max(after, default=None), min(upto, default=None))

    def clause(self, seq: str) -> Clause:
        """The window as SQL on the sequence expression `seq`."""
        parts, params = [], []
        if self.after is not None:
            parts.append(f"{seq} > ?")
            params.append(self.after)
        if self.upto is not None:
            parts.append(f"{seq} <= ?")
            params.append(self.upto)
        return (" AND ".join(parts) or "1"), params


# --- the index a read goes through ---------------------------------------------------

_INDEXABLE = frozenset(
    {"equal", "greaterThan", "greaterThanEqual", "lessThan", "lessThanEqual", "between"}
)


def _table_access(
    conn: sqlite3.Connection,
    query: ListQuery,
    source: Source,
    window: SequenceWindow,
    wanted: int | None,
) -> str:
    """What a read of `query` names in FROM: the table, or the table `INDEXED BY` the index of
    one of its top-level comparisons of `$createdAt` or `$updatedAt` (`source.range_indexes`).

    Without statistics SQLite reads such a query along the rowid, which gives `$sequence`
    order without sorting, and checks each row: for a range holding few of the table's rows
    (a watermark's) it scans the table to fill a page. Like a server database weighing an
    index range by the entries it holds, the local service counts the range's entries (at
    most as many as can matter) and goes through the index when the rows it holds, sorted,
    cost less than the rows scanned along the rowid to find the `wanted` ones (None: all).
    """
    if not source.range_indexes or not query.filters:
        return source.table
    indexes = dict(source.range_indexes)
    candidates = [
        item
        for item in query.filters
        if isinstance(item, Condition)
        and item.method in _INDEXABLE
        and item.field.sql in indexes
        and len(item.values) == (2 if item.method == "between" else 1)
    ]
    if not candidates:
        return source.table
    span = _rows_at_most(conn, source, window)
    # Along the rowid, finding `wanted` of `held` rows scans span * wanted / held of them;
    # through the index, all `held` are read and sorted: the index wins while held² < span·wanted.
    limit = math.isqrt(span * (span if wanted is None else min(wanted, span))) + 1
    best: tuple[int, str] | None = None
    for item in candidates:
        params: list[Any] = []
        condition = _condition(item, source, params)
        index = indexes[item.field.sql]
        held = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {source.table} INDEXED BY {index} "
            f"WHERE {condition} LIMIT {limit})",
            params,
        ).fetchone()[0]
        if held < limit and (best is None or held < best[0]):
            best = (held, index)
    return source.table if best is None else f"{source.table} INDEXED BY {best[1]}"


def _sequence_past(
    conn: sqlite3.Connection,
    query: ListQuery,
    source: Source,
    seek: SequenceWindow,
    conditions: Sequence[Clause],
    descending: bool,
    offset: int,
) -> int | None:
    """The `$sequence` of the row `offset` rows into the rows `query` keeps in `seek` (and
    `conditions`: permissions, a cursor) in `$sequence` order; None: there are fewer.

    Only `seq` is read: the skipped rows are not built as the page's projection, which SQLite
    builds for every row it sorts, or, along the rowid, reads from the table. A query that
    filters on `$sequence` alone counts its rows in the index of `seq` alone, a narrow copy
    of the rowid's order (an offset over 500,000 rows: 10 ms against 35 ms along the table).
    """
    direction = "DESC" if descending else "ASC"
    alone = all(SequenceWindow.of_filter(item, source.seq) is not None for item in query.filters)
    if alone and source.sequence_index is not None:
        ends = _table_ends(conn, source)
        if ends is None:
            return None
        # A bound past the table's end is left out: SQLite then skips entries without
        # comparing each with it (26 ms against 10 ms for 500,000).
        seek = SequenceWindow(
            None if seek.after is None or seek.after < ends[0] else seek.after,
            None if seek.upto is None or seek.upto >= ends[1] else seek.upto,
        )
        # The window says the filters in full: the walk compares no entry with them again.
        query = replace(query, filters=[])
        access = f"{source.table} INDEXED BY {source.sequence_index}"
    else:
        access = _table_access(conn, query, source, seek, offset + 1)
    where, params = where_clause(query, source, seek, conditions)
    found = conn.execute(
        f"SELECT {source.seq} FROM {access} WHERE {where} "
        f"ORDER BY {source.seq} {direction} LIMIT 1 OFFSET ?",
        [*params, offset],
    ).fetchone()
    return None if found is None else int(found[0])


def _table_ends(conn: sqlite3.Connection, source: Source) -> tuple[int, int] | None:
    """The first and last `$sequence` of `source`'s table (None: it is empty)."""
    # Apart: SQLite seeks a lone min() or max() in the rowid but scans for both at once.
    low, high = conn.execute(
        f"SELECT (SELECT min({source.seq}) FROM {source.table}), "
        f"(SELECT max({source.seq}) FROM {source.table})"
    ).fetchone()
    return None if low is None else (int(low), int(high))


def _rows_at_most(conn: sqlite3.Connection, source: Source, window: SequenceWindow) -> int:
    """How many rows of `source` `window` can hold at most (the table's ends known)."""
    ends = _table_ends(conn, source)
    if ends is None:
        return 0
    low, high = ends
    after = low - 1 if window.after is None else max(window.after, low - 1)
    upto = high if window.upto is None else min(window.upto, high)
    return max(0, int(upto) - int(after))


# --- running ---------------------------------------------------------------------------


def where_clause(
    query: ListQuery, source: Source, seek: SequenceWindow, extra: Sequence[Clause] = ()
) -> Clause:
    """The `$sequence` window `seek` (see `_seek`), the fixed condition, the filters and
    `extra` clauses (e.g. permissions), AND-ed."""
    filters_sql, params = compile_filters(query.filters, source)
    seek_sql, seek_params = seek.clause(source.seq)
    parts = [seek_sql, source.base_where, filters_sql]
    all_params: list[Any] = [*seek_params, *source.base_params, *params]
    for sql, extra_params in extra:
        parts.append(sql)
        all_params.extend(extra_params)
    return " AND ".join(f"({part})" for part in parts), all_params


def _seek(query: ListQuery, source: Source, window: SequenceWindow | None) -> SequenceWindow:
    """The `$sequence` window the filters imply, narrowed by `window` (a cursor's)."""
    return SequenceWindow.of_filters(query.filters, source.seq).narrowed(window)


def count(
    conn: sqlite3.Connection, query: ListQuery, source: Source, extra: Sequence[Clause] = ()
) -> int:
    """How many items match the filters (limit, offset and cursor ignored), capped at 5000."""
    seek = _seek(query, source, None)
    where, params = where_clause(query, source, seek, extra)
    access = _table_access(conn, query, source, seek, COUNT_CAP)
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {access} WHERE {where} LIMIT {COUNT_CAP})"
    return int(conn.execute(sql, params).fetchone()[0])


def fetch_page(
    conn: sqlite3.Connection,
    query: ListQuery,
    source: Source,
    projection: Clause,
    *,
    missing_cursor: Callable[[str], ServiceError],
    extra: Sequence[Clause] = (),
    default_limit: int | None = DEFAULT_LIMIT,
) -> list[tuple[Any, ...]]:
    """The items of one page in order, each as the tuple `projection` selects."""
    keys = order_keys(query, source)
    before = query.cursor is not None and query.cursor.before
    cursor: Clause | None = None
    window = None
    if query.cursor is not None:
        values = _cursor_values(conn, source, keys, query.cursor.item_id, missing_cursor)
        cursor = _cursor_clause(keys, values, before)
        if keys[0].sql == source.seq:
            # The rows past the cursor lie on one side of its `$sequence` (itself included).
            after = keys[0].descending == before
            window = (
                SequenceWindow(values[0] - 1, None) if after else SequenceWindow(None, values[0])
            )
    seek = _seek(query, source, window)
    offset = query.offset or 0
    if offset and len(keys) == 1 and keys[0].sql == source.seq:
        # In `$sequence` order the page starts at the row `offset` rows in, found first.
        descending = keys[0].descending != before
        conditions = [*extra] if cursor is None else [*extra, cursor]
        first = _sequence_past(conn, query, source, seek, conditions, descending, offset)
        if first is None:
            return []
        start = SequenceWindow(None, first) if descending else SequenceWindow(first - 1, None)
        seek, offset = seek.narrowed(start), 0
    where, params = where_clause(query, source, seek, extra)
    if cursor is not None:
        where = f"{where} AND {cursor[0]}"
        params.extend(cursor[1])
    limit = query.limit if query.limit is not None else default_limit
    wanted = None if limit is None else limit + offset
    access = _table_access(conn, query, source, seek, wanted)
    order = _order_by(keys, before)
    page = f"FROM {access} WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?"
    if access == source.table:
        sql = f"SELECT {projection[0]} {page}"
    else:
        # Through an index the rows come out of order, and SQLite would sort them with their
        # projection built: the page's `$sequence`s are chosen and sorted alone, then their
        # rows built (20 ms against 27 for 5,000 rows changed since a watermark).
        sql = (
            f"SELECT {projection[0]} FROM {source.table} "
            f"WHERE {source.seq} IN (SELECT {source.seq} {page}) ORDER BY {order}"
        )
    bounds = [-1 if limit is None else limit, offset]
    rows = conn.execute(sql, [*projection[1], *params, *bounds]).fetchall()
    if before:
        rows.reverse()
    return rows
