"""A table query resolved against the table's columns: what to send, how to decode the pages,
and what the client does with the rows afterwards.

`make_plan` reads the column models (or, when the caller may not, prepares to infer the types
from the rows), compiles the filter, and works out the query strings of every request: the
filter's, a `select` that adds the columns the client needs for itself (the filter's
client-side part, a client-side sort), and the order. `_read` runs the plan.

>>> plan = await make_plan(requester, location, QuerySpec(condition=col("age") > 30), None)
... # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import (
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from ..._core._queries import order_query, select_query
from ..._exceptions import AuthenticationError, BadRequestError, FilterError
from ..._expr import ColumnKind, ColumnSpec, CompiledFilter, Expr, compile_filter, evaluate
from ..._expr._nodes import And, Between, ColumnRef, Comparison, IsIn, Node, Not, Or, leaf_column
from ..._schema import SYSTEM_SCHEMA, InferredSchema, arrow_schema, to_pandas, warn_unmapped
from .._location import TableLocation
from ._cursor import (
    DEFAULT_PAGE_SIZE,
    READ_POOL,
    Decode,
    check_page_size,
    fetch_page,
)
from ._decode import decode_page, decode_page_inferring

if TYPE_CHECKING:
    from ..._core import Requester

_SORTABLE_FIELDS = ("$id", "$sequence", "$createdAt", "$updatedAt")


@dataclass(frozen=True)
class QuerySpec:
    """What a query asks for; immutable, each builder call makes a new one."""

    condition: Expr | None = None
    columns: tuple[str, ...] | None = None
    order: tuple[tuple[str, bool], ...] = ()
    head: int | None = None
    page_size: int | None = None


@dataclass(frozen=True)
class Plan:
    """A query resolved against the table's columns: what to send and how to decode it."""

    compiled: CompiledFilter
    requests: tuple[tuple[str, ...], ...]  # every query string per request, but paging
    output: pa.Schema | None  # None: inferred from the rows
    decode: Decode
    inferred: InferredSchema | None
    page_size: int
    head: int | None
    client_order: tuple[tuple[str, bool], ...] = ()  # sorted on the client (several requests)
    select: tuple[str, ...] | None = None
    extra_columns: frozenset[str] = field(default_factory=frozenset)
    select_queries: tuple[str, ...] = ()  # the select of every request (none: all columns)
    kind_check: KindCheck | None = None  # inferred types: the filter against the kinds seen

    @property
    def every_row_kept(self) -> bool:
        """Whether every row the service sends is a result row (no client-side filtering or
        merging), so that the service's count is the result's."""
        return self.compiled.residual is None and len(self.requests) == 1


async def make_plan(
    requester: Requester, location: TableLocation, spec: QuerySpec, page_size: int | None
) -> Plan:
    """Resolve `spec` against the columns of the table at `location`."""
    models = await column_models(requester, location)
    full = arrow_schema(models) if models is not None else None
    if full is not None:
        warn_unmapped(full, {str(m["key"]): str(m.get("type")) for m in models or ()})
    kinds = filter_columns(full) if full is not None else _guessed_columns(spec.condition)
    member = requester.query_member_for(location.rows_path)
    compiled = compile_filter(spec.condition, kinds, member=member)
    if full is None and not await _service_accepts(requester, location, compiled):
        compiled = CompiledFilter(((),), spec.condition)  # the client filters every row
    if full is not None:
        _check_sort_columns(spec.order, full)
    client_order = spec.order if len(compiled.requests) > 1 else ()
    extra = set(_expr_columns(compiled.residual)) | {key for key, _ in client_order}
    select = spec.columns
    fetched = None if select is None else _with_extra(select, extra)
    select_queries = () if fetched is None else (select_query(fetched),)
    page_queries = _page_queries(select_queries, () if client_order else spec.order, member)
    inferred = InferredSchema() if models is None else None
    fetch_schema = None if models is None else arrow_schema(models, select=fetched)
    kind_check = None
    if inferred is not None and spec.condition is not None:
        kind_check = KindCheck(spec.condition, kinds, member)
    decode = page_decoder(location.items_key, fetch_schema, inferred, compiled.residual, kind_check)
    return Plan(
        compiled=compiled,
        requests=tuple((*filters, *page_queries) for filters in compiled.requests),
        output=None if models is None else arrow_schema(models, select=select),
        decode=decode,
        inferred=inferred,
        page_size=plan_page_size(spec, page_size),
        head=spec.head,
        client_order=client_order,
        select=select,
        extra_columns=frozenset(extra - set(select or extra)),
        select_queries=select_queries,
        kind_check=kind_check,
    )


def plan_page_size(spec: QuerySpec, page_size: int | None) -> int:
    """The rows per page a read of `spec` asks for: `page_size`, else the query's, else the
    default."""
    return check_page_size(page_size or spec.page_size or DEFAULT_PAGE_SIZE)


def unfiltered_request(spec: QuerySpec, member: str) -> tuple[str, ...] | None:
    """The query strings (but paging) `make_plan` sends for `spec` when it has no filter,
    whatever the table's columns: known before they are fetched. None when it has one."""
    if spec.condition is not None:
        return None
    select_queries = () if spec.columns is None else (select_query(spec.columns),)
    return _page_queries(select_queries, spec.order, member)


def _page_queries(
    select_queries: tuple[str, ...], order: Sequence[tuple[str, bool]], member: str
) -> tuple[str, ...]:
    return (*select_queries, *(order_query(key, up, member) for key, up in order))


async def column_models(
    requester: Requester, location: TableLocation
) -> list[dict[str, Any]] | None:
    """The table's column models, or None when the caller may not read them."""
    try:
        table = await requester.request_json("GET", location.path)
    except AuthenticationError:
        return None
    return list(table.get(location.columns_key) or [])


async def _service_accepts(
    requester: Requester, location: TableLocation, compiled: CompiledFilter
) -> bool:
    """Whether the service takes the filter's values for the columns' types (asked with a
    one-row page); used when the kinds were guessed."""
    if not compiled.requests or not compiled.requests[0]:
        return True
    try:
        await fetch_page(requester, location.rows_path, compiled.requests[0], 1)
    except BadRequestError as exc:
        if exc.type != "general_query_invalid":
            raise
        return False
    return True


def project(plan: Plan, batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` with the output columns only (the client's extra columns dropped)."""
    if plan.output is not None:
        if batch.schema.names == plan.output.names:
            return batch
        return batch.select(plan.output.names)
    names = [name for name in batch.schema.names if name not in plan.extra_columns]
    if plan.select is not None:
        chosen = [name for name in plan.select if name in batch.schema.names]
        names = [*SYSTEM_SCHEMA.names, *(n for n in chosen if n not in SYSTEM_SCHEMA.names)]
    return batch.select(names)


def result_schema(plan: Plan, batches: Sequence[pa.RecordBatch]) -> pa.Schema:
    """The schema of a result made of `batches` (for inferred types: of what was seen)."""
    if plan.output is not None:
        return plan.output
    if batches:
        return batches[0].schema
    assert plan.inferred is not None
    return project(plan, pa.RecordBatch.from_pylist([], schema=plan.inferred.schema)).schema


# ---------------------------------------------------------------------------------------------
# Filter columns


def filter_columns(schema: pa.Schema) -> dict[str, ColumnSpec]:
    """The compiler's view of the table's columns (the ``$`` fields it knows itself; a column
    of inferred types seen only as null has no kind yet and is left out)."""
    columns: dict[str, ColumnSpec] = {}
    for item in schema:
        if item.name.startswith("$") or pa.types.is_null(item.type):
            continue
        array = pa.types.is_list(item.type)
        columns[item.name] = ColumnSpec(_kind(item.type.value_type if array else item.type), array)
    return columns


def _kind(kind: pa.DataType) -> ColumnKind:
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_integer(kind):
        return "integer"
    if pa.types.is_floating(kind):
        return "float"
    if pa.types.is_timestamp(kind):
        return "datetime"
    return "string"


def _guessed_columns(condition: Expr | None) -> dict[str, ColumnSpec]:
    """Column kinds guessed from the filter's values, for tables whose columns cannot be read:
    numbers and booleans as what they are, anything else as text (which the client
    re-checks)."""
    guesses: dict[str, ColumnSpec] = {}
    for leaf in _leaves(None if condition is None else condition.node):
        guesses.setdefault(leaf_column(leaf), ColumnSpec(_guessed_kind(leaf)))
    return guesses


def _guessed_kind(leaf: Node) -> ColumnKind:
    if isinstance(leaf, ColumnRef):
        return "boolean"
    if isinstance(leaf, Comparison):
        value: object = leaf.value
    elif isinstance(leaf, IsIn) and leaf.values:
        value = leaf.values[0]
    elif isinstance(leaf, Between):
        value = leaf.low
    else:
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return "float" if isinstance(value, float) else "string"


def _leaves(node: Node | None) -> Iterable[Any]:
    if isinstance(node, And | Or):
        for operand in node.operands:
            yield from _leaves(operand)
    elif isinstance(node, Not):
        yield from _leaves(node.operand)
    elif node is not None:
        yield node


class KindCheck:
    """For types inferred from the rows: the filter checked against the kinds of its columns
    as they become known (the guessed kinds stand in for the others), so that a value that
    does not fit a column raises the `FilterError` a read with an API key raises, before the
    client evaluates the filter. Checks again only when a kind changes."""

    def __init__(self, condition: Expr, guessed: Mapping[str, ColumnSpec], member: str) -> None:
        self._condition = condition
        self._guessed = dict(guessed)
        self._member = member
        self._checked: dict[str, ColumnSpec] | None = None

    def __call__(self, schema: pa.Schema) -> None:
        seen = filter_columns(schema)
        known = {name: seen[name] for name in self._guessed if name in seen}
        if known != self._checked:
            compile_filter(self._condition, {**self._guessed, **known}, member=self._member)
            self._checked = known


def _expr_columns(condition: Expr | None) -> list[str]:
    """The columns a filter reads, in order of appearance."""
    names = [leaf_column(leaf) for leaf in _leaves(None if condition is None else condition.node)]
    return list(dict.fromkeys(names))


def _with_extra(select: Sequence[str], extra: Iterable[str]) -> tuple[str, ...]:
    """`select` plus the columns the client needs for itself (filters, sorting)."""
    wanted = list(select)
    wanted.extend(name for name in extra if name not in wanted and not name.startswith("$"))
    return tuple(wanted)


def _check_sort_columns(order: Sequence[tuple[str, bool]], schema: pa.Schema) -> None:
    for key, _ in order:
        if key not in schema.names and key not in _SORTABLE_FIELDS:
            raise FilterError(f"sort() names {key!r}, which the table does not have")


# ---------------------------------------------------------------------------------------------
# Pages and batches


def page_decoder(
    items_key: str,
    schema: pa.Schema | None,
    inferred: InferredSchema | None,
    residual: Expr | None,
    kind_check: KindCheck | None = None,
) -> Decode:
    """Page body → (total, kept rows): decoded straight to Arrow (`schema`, or types inferred
    into `inferred` and the filter checked against them), the client-side part of the filter
    applied. Runs in a worker thread."""

    def decode(body: bytes) -> tuple[int, pa.RecordBatch]:
        if inferred is None:
            assert schema is not None
            total, batch = decode_page(body, schema, items_key=items_key, memory_pool=READ_POOL)
        else:
            total, batch = decode_page_inferring(body, inferred, items_key=items_key)
            if kind_check is not None:
                kind_check(inferred.schema)
        if residual is not None and batch.num_rows:
            batch = _keep_matching(batch, residual)
        return total, batch

    return decode


def _keep_matching(batch: pa.RecordBatch, residual: Expr) -> pa.RecordBatch:
    names = [name for name in _expr_columns(residual) if name in batch.schema.names]
    columns = batch.select(names)
    frame = to_pandas(columns)
    for name in names:  # a column seen only as null so far has no dtype to compare with
        if pa.types.is_null(columns.schema.field(name).type):
            frame[name] = pd.Series(pd.NA, index=frame.index, dtype="object")
    mask = evaluate(residual, frame).to_numpy(dtype=bool)
    return batch.filter(pa.array(mask, pa.bool_()))
