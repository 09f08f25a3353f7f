"""What a table query asks for (`QuerySpec`), and the query resolved against the table's
columns by `make_plan` (`Plan`): what to send, how to decode the pages, what the client does
with the rows. A plan keeps only what cannot be derived (where, the query member, the query,
the page size, the filter's query strings per request and the client's part, the fetched
schema or None when types are inferred); the rest are properties.

>>> spec = QuerySpec(condition=col("age") > 30)
>>> plan = await make_plan(requester, location, "column", spec, None)    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from ..._core._pages import check_page_size, fetch_page
from ..._core._queries import order_query, select_query
from ..._exceptions import AuthenticationError, BadRequestError, FilterError
from ..._expr import CompiledFilter, Expr, compile_filter, evaluate
from ..._schema import SYSTEM_SCHEMA, InferredSchema, arrow_schema, to_pandas, warn_unmapped
from .._decode import Decode, decode_page, decode_page_inferring
from .._location import TableLocation
from .._system import ALL_SYSTEM, DEFAULT_SYSTEM, System, system_fields
from ._kinds import KindCheck, expr_columns, filter_columns, guessed_columns
from ._prefetch import DEFAULT_PAGE_SIZE, READ_POOL, PagedRead, in_read_pool
from ._ranges import SEQUENCE, SequenceRange

if TYPE_CHECKING:
    from ..._core import Requester

_SORTABLE_FIELDS = ("$id", "$sequence", "$createdAt", "$updatedAt")


@dataclass(frozen=True)
class QuerySpec:
    """What a query asks for; immutable, each builder makes a new one."""

    condition: Expr | None = None
    columns: tuple[str, ...] | None = None
    order: tuple[tuple[str, bool], ...] = ()
    head: int | None = None
    page_size: int | None = None
    system: tuple[str, ...] = system_fields(DEFAULT_SYSTEM)  # the $ fields shown

    def showing(self, system: System) -> QuerySpec:
        """The same query showing the ``$`` fields `system` names (see `_system`)."""
        return replace(self, system=system_fields(system))

    def where(self, condition: Expr) -> QuerySpec:
        """Also keep only the rows where `condition` holds (``&`` with the filter so far)."""
        self._refuse_after_head("where")
        previous = self.condition
        return replace(self, condition=condition if previous is None else previous & condition)

    def select(self, columns: Sequence[str]) -> QuerySpec:
        """Only these columns (after the ``$`` fields shown), in this order."""
        select_query(columns)  # checks the names
        return replace(self, columns=tuple(columns))

    def sorted_by(self, keys: Sequence[str], ascending: Sequence[bool]) -> QuerySpec:
        """The rows ordered by `keys`, each ascending or not."""
        self._refuse_after_head("sort")
        if not keys or len(ascending) != len(keys):
            raise ValueError("sort() takes one or more columns and one ascending flag for each")
        for key in keys:
            order_query(key)  # checks the name
        return replace(self, order=tuple(zip(keys, map(bool, ascending), strict=True)))

    def first(self, rows: int) -> QuerySpec:
        """At most the first `rows` rows."""
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise ValueError(f"head() takes a whole number of rows >= 0 (got {rows!r})")
        return replace(self, head=rows if self.head is None else min(rows, self.head))

    def _refuse_after_head(self, method: str) -> None:
        if self.head is not None:
            raise ValueError(
                f"{method}() after head() would change which rows head() keeps; "
                f"call {method}() first, then head()."
            )

    @property
    def sequence_order(self) -> bool | None:
        """Which way the rows come by ``$sequence``: True up, False down, None when they are
        sorted by a column (only a sort led by ``$sequence``, or none, follows it)."""
        if not self.order:
            return True
        key, ascending = self.order[0]
        return ascending if key == SEQUENCE else None

    def describe(self, location: TableLocation) -> list[str]:
        """The table and what the query asks of it, e.g. ``["crm/people", "head=5"]``."""
        parts = [str(location)]
        if self.condition is not None:
            parts.append(f"where={self.condition!r}")
        if self.columns is not None:
            parts.append(f"select={list(self.columns)!r}")
        if self.order:
            keys = ", ".join(f"{key} {'asc' if up else 'desc'}" for key, up in self.order)
            parts.append(f"sort={keys}")
        if self.head is not None:
            parts.append(f"head={self.head}")
        if self.system != system_fields(DEFAULT_SYSTEM):
            parts.append(f"system={list(self.system)!r}")
        return parts


@dataclass(frozen=True)
class Plan:
    """A query resolved against the table's columns (see the module docstring)."""

    location: TableLocation
    member: str
    spec: QuerySpec
    page_size: int
    filters: tuple[tuple[str, ...], ...]  # per request; none: no row can match
    residual: Expr | None  # the part of the filter the client applies
    fetched: pa.Schema | None  # the columns each page is decoded to; None: inferred

    @property
    def head(self) -> int | None:
        return self.spec.head

    @property
    def client_order(self) -> tuple[tuple[str, bool], ...]:
        """The sort the client applies: the query's, when its rows come from several
        requests."""
        return self.spec.order if len(self.filters) > 1 else ()

    @property
    def extra_columns(self) -> frozenset[str]:
        """Columns fetched for the client's own use (its filter, its sort), not output."""
        select = self.spec.columns
        if select is None or "*" in select:
            return frozenset()
        return frozenset(_client_columns(self)) - set(select)

    @property
    def shown_system(self) -> tuple[str, ...]:
        """The ``$`` fields the result shows: those of `system=`, and those `select` names."""
        named = set(self.spec.system).union(self.spec.columns or ())
        return tuple(name for name in ALL_SYSTEM if name in named)

    @property
    def hidden_columns(self) -> frozenset[str]:
        """Columns fetched but not output: the client's own and the ``$`` fields not shown
        (the read uses ``$id`` and ``$sequence`` itself before it drops them)."""
        return self.extra_columns | (frozenset(ALL_SYSTEM) - set(self.shown_system))

    @property
    def select_queries(self) -> tuple[str, ...]:
        """The select of every request (none: every column)."""
        select = self.spec.columns
        if select is None:
            return ()
        fetched = [*select]
        fetched.extend(n for n in _client_columns(self) if n not in fetched and n[0] != "$")
        return (select_query(fetched),)

    @property
    def requests(self) -> tuple[tuple[str, ...], ...]:
        """Every query string of each request, but the paging ones."""
        order = () if self.client_order else self.spec.order
        page = (*self.select_queries, *(order_query(k, up, self.member) for k, up in order))
        return tuple((*filters, *page) for filters in self.filters)

    @property
    def output(self) -> pa.Schema | None:
        """The result's schema (None: inferred from the rows)."""
        hidden = self.hidden_columns
        if self.fetched is None or not hidden:
            return self.fetched
        return pa.schema([field for field in self.fetched if field.name not in hidden])

    @property
    def every_row_kept(self) -> bool:
        """Whether every row the service sends is a result row (no client-side filtering or
        merging), so that the service's count is the result's."""
        return self.residual is None and len(self.filters) == 1

    @property
    def reads_rows(self) -> bool:
        """Whether a read of the plan sends any request for rows (a filter matching no row,
        or a head of 0, does not)."""
        return bool(self.filters) and self.head != 0

    def paged(self, *, counted: bool = True, last_sequence: int | None = None) -> PagedRead:
        """What a serial read of the plan fetches (`counted`: whether its first page asks the
        service to count the rows; `last_sequence`, see `PagedRead`)."""
        return PagedRead(
            self.location.rows_path,
            self.requests,
            page_size=self.page_size,
            head=None if self.client_order else self.head,
            every_row_kept=self.every_row_kept,
            counted=counted,
            last_sequence=last_sequence,
        )

    def narrowed(self, *queries: str) -> Plan:
        """The plan with `queries` added to the filters of every request."""
        return replace(self, filters=tuple((*filters, *queries) for filters in self.filters))

    def within(self, part: SequenceRange) -> Plan:
        """The plan restricted to the rows of `part` (and never more rows than it spans)."""
        head = part.span if self.head is None else min(self.head, part.span)
        narrowed = self.narrowed(*part.queries(self.member))
        return replace(narrowed, spec=replace(self.spec, head=head))

    def ids_only(self) -> Plan:
        """The plan of the same rows with only the ``$`` fields (and what the client needs to
        filter them), in ``$sequence`` order."""
        spec = replace(self.spec, columns=("$id",), order=(), system=ALL_SYSTEM)
        fetched = self.fetched
        if fetched is not None:
            wanted = [*SYSTEM_SCHEMA.names, *expr_columns(self.residual)]
            fetched = pa.schema([fetched.field(name) for name in dict.fromkeys(wanted)])
        return replace(self, spec=spec, fetched=fetched)

    def decoder(
        self, inferred: InferredSchema | None, *, filtered: bool = True, kept: bool = False
    ) -> Decode:
        """Page body → (total, kept rows): decoded straight to Arrow (the fetched schema, or
        types inferred into `inferred` and the filter checked against them), the client-side
        part of the filter applied unless not `filtered`, in `READ_POOL` when the read keeps
        every batch (`kept`, see `in_read_pool`). Runs in a worker thread."""
        items_key, fetched = self.location.items_key, self.fetched
        residual = self.residual if filtered else None
        condition = self.spec.condition
        check = None if inferred is None or condition is None else KindCheck(condition, self.member)

        def decode(body: bytes) -> tuple[int, pa.RecordBatch]:
            if inferred is None:
                assert fetched is not None
                total, batch = decode_page(
                    body, fetched, items_key=items_key, memory_pool=READ_POOL
                )
            else:
                total, batch = decode_page_inferring(body, inferred, items_key=items_key)
                if check is not None:
                    check(inferred.schema)
            if residual is not None and batch.num_rows:
                batch = _keep_matching(batch, residual)
            return total, in_read_pool(batch) if kept else batch

        return decode

    def project(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """`batch` with the output columns only (the client's extra columns dropped)."""
        output = self.output
        if output is not None:
            return batch if batch.schema.names == output.names else batch.select(output.names)
        hidden = self.hidden_columns
        names = [name for name in batch.schema.names if name not in hidden]
        if self.spec.columns is not None:
            chosen = [name for name in self.spec.columns if name in batch.schema.names]
            names = [*self.shown_system, *(n for n in chosen if n not in ALL_SYSTEM)]
        return batch if names == batch.schema.names else batch.select(names)

    def result_schema(
        self, batches: Sequence[pa.RecordBatch], inferred: InferredSchema | None
    ) -> pa.Schema:
        """The schema of a result made of `batches` (for inferred types: of what was seen)."""
        if self.output is not None:
            return self.output
        if batches:
            return batches[0].schema
        assert inferred is not None
        return self.project(pa.RecordBatch.from_pylist([], schema=inferred.schema)).schema


def _client_columns(plan: Plan) -> list[str]:
    """The columns the client reads itself, in a fixed order: its part of the filter, then
    its sort."""
    names = [*expr_columns(plan.residual), *(key for key, _ in plan.client_order)]
    return list(dict.fromkeys(names))


async def make_plan(
    requester: Requester,
    location: TableLocation,
    member: str,
    spec: QuerySpec,
    page_size: int | None,
    *,
    columns: list[dict[str, Any]] | None = None,
) -> Plan:
    """Resolve `spec` against the columns of the table at `location` (`columns`: their
    models, when the caller has them already), whose requests name columns with `member`."""
    models = await column_models(requester, location) if columns is None else columns
    full = arrow_schema(models) if models is not None else None
    if full is not None:
        warn_unmapped(full, {str(m["key"]): str(m.get("type")) for m in models or ()})
    kinds = filter_columns(full) if full is not None else guessed_columns(spec.condition)
    compiled = compile_filter(spec.condition, kinds, member=member)
    if full is None and not await _service_accepts(requester, location, compiled):
        compiled = CompiledFilter(((),), spec.condition)  # the client filters every row
    if full is not None:
        _check_sort_columns(spec.order, full)
    plan = Plan(
        location=location,
        member=member,
        spec=spec,
        page_size=plan_page_size(spec, page_size),
        filters=compiled.requests,
        residual=compiled.residual,
        fetched=None,
    )
    if models is None:
        return plan
    extra = (name for name in _client_columns(plan) if name[0] != "$")
    select = None if spec.columns is None else [*spec.columns, *extra]
    return replace(plan, fetched=arrow_schema(models, select=select))


def plan_before_columns(
    location: TableLocation, member: str, spec: QuerySpec, page_size: int | None
) -> Plan | None:
    """The plan of `spec` before the table's columns are known, for the requests a read
    sends while they are fetched: a query without a filter sends the same requests whatever
    the columns. None for a query with a filter."""
    if spec.condition is not None:
        return None
    size = plan_page_size(spec, page_size)
    return Plan(location, member, spec, size, filters=((),), residual=None, fetched=None)


def plan_page_size(spec: QuerySpec, page_size: int | None) -> int:
    """The rows per page a read of `spec` asks for: `page_size`, else the query's, else the
    default."""
    return check_page_size(page_size or spec.page_size or DEFAULT_PAGE_SIZE)


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


def _check_sort_columns(order: Sequence[tuple[str, bool]], schema: pa.Schema) -> None:
    for key, _ in order:
        if key not in schema.names and key not in _SORTABLE_FIELDS:
            raise FilterError(f"sort() names {key!r}, which the table does not have")


def _keep_matching(batch: pa.RecordBatch, residual: Expr) -> pa.RecordBatch:
    names = [name for name in expr_columns(residual) if name in batch.schema.names]
    columns = batch.select(names)
    frame = to_pandas(columns)
    for name in names:  # a column seen only as null so far has no dtype to compare with
        if pa.types.is_null(columns.schema.field(name).type):
            frame[name] = pd.Series(pd.NA, index=frame.index, dtype="object")
    mask = evaluate(residual, frame).to_numpy(dtype=bool)
    return batch.filter(pa.array(mask, pa.bool_()))
