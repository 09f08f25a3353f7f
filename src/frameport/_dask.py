"""Dask DataFrames of table queries: one partition per range of ``$sequence``, read on the
workers.

``query.to_dask(partitions=8)`` asks the service for the first and last ``$sequence`` under the
filter and cuts that span into `partitions` ranges (`TableRead.ranges`), then builds the
frame with ``dask.dataframe.from_map`` over one `PartitionSpec` per range. Nothing else is
read until dask computes: each worker makes its own client from the spec, reads its range
with the query's filter through the ordinary paging engine, and returns a pandas DataFrame with
exactly the dtypes of ``to_pandas`` (`meta` is an empty frame with those dtypes).

>>> ddf = people.query("age > 30").select("name", "age").to_dask(partitions=8)  # doctest: +SKIP
>>> ddf.groupby("age").size().compute()                                        # doctest: +SKIP

Decisions:

* A spec carries the endpoint, the project, the table, the filter in its query-string form
  (``repr(expr)``, which `parse` reads back), the selected columns and the range — and a
  reference to the credentials rather than the secret where one exists (`ClientReference`):
  ``"env"`` (the worker reads FRAMEPORT_KEY or FRAMEPORT_JWT), ``"saved"`` (the worker loads
  the session saved by ``login(..., save=True)`` for the endpoint and project), ``"none"`` (a
  guest). ``credentials="auto"`` picks ``"env"`` when the client's key or JWT is the one in the
  environment, ``"saved"`` when its session is the saved one; otherwise, and with
  ``credentials="embedded"``, the spec carries the client's credentials themselves: they never
  appear in a repr or a dask key, but a pickled spec (the task sent to a worker) holds them.
  Set FRAMEPORT_KEY on the workers (and in the driver) to keep secrets out of the task graph.
* Partitions are in ``$sequence`` order and each holds its rows in ``$sequence`` order, so
  ``ddf.compute()`` is ``to_pandas()`` row for row (``reset_index(drop=True)``: every
  partition has its own RangeIndex). A sort on ``$sequence`` descending reverses them; any
  other sort, or `head`, raises ValueError: sort or take rows with dask instead.
* Dask's string conversion is off for these frames (``str`` columns stay ``str``, lists stay
  Python lists in ``object`` columns). Dask cannot infer a Parquet type for an ``object``
  column (``$permissions``, arrays), so write with the query's Arrow schema:
  ``ddf.to_parquet(dir, schema=query.schema())`` — or build the frame with
  ``dtype_backend="pyarrow"``, whose columns dask writes as they are.
* Column selections made in dask (``ddf[["name"]]``) are pushed into the reads: the workers
  ask the service for those columns only.
* Without access to the table's columns (a signed-in user), the schema is inferred from the
  first page of rows and every partition is cast to it; a partition whose values do not fit
  raises `RowDecodeError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
import pyarrow as pa

from ._client import Client, requester_of, with_credentials
from ._core import JWT_ENV, KEY_ENV, Credentials, Requester, credentials_from_env, load_session
from ._core._auth import CredentialChoice
from ._expr import Expr, col, parse
from ._schema import SYSTEM_SCHEMA, RowDecodeError, to_pandas
from ._tables import TableLocation
from ._tables.read import SEQUENCE, QuerySpec, SequenceRange, TableRead

if TYPE_CHECKING:
    import dask.dataframe as dd


CredentialSource = Literal["env", "saved", "embedded", "none"]
DtypeBackend = Literal["pyarrow"] | None

ROWS_PER_PARTITION = 250_000
"""``$sequence`` values per partition when `partitions` is not given."""


@dataclass(frozen=True)
class ClientReference:
    """How a worker makes its client: where to connect and where its credentials come from.

    >>> ClientReference("http://127.0.0.1:8080/v1", "demo", "env")
    ClientReference(endpoint='http://127.0.0.1:8080/v1', project='demo', source='env', ...)
    """

    endpoint: str
    project: str
    source: CredentialSource
    embedded: Credentials | None = field(default=None, repr=False)
    impersonation: tuple[str, str] | None = None
    header_prefix: str = "X-Service-"
    query_member: str | None = None

    def __repr__(self) -> str:
        return (
            f"ClientReference(endpoint={self.endpoint!r}, project={self.project!r}, "
            f"source={self.source!r}, ...)"
        )

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        return (self.endpoint, self.project, self.source, self.impersonation, self.header_prefix)

    def connect(self) -> Client:
        """A new client for these settings (close it when done)."""
        options: dict[str, Any] = {"header_prefix": self.header_prefix}
        if self.query_member is not None:
            options["query_member"] = self.query_member
        if self.source == "saved":
            client = Client.from_saved(self.endpoint, self.project, **options)
        elif self.source == "env":
            key, jwt = credentials_from_env()
            if key is None and jwt is None:
                raise ValueError(
                    f"This dask worker has neither {KEY_ENV} nor {JWT_ENV} in its environment; "
                    "set it where the workers start, or build the frame with "
                    "to_dask(credentials='embedded')."
                )
            client = Client(self.endpoint, self.project, key=key, jwt=jwt, **options)
        else:
            client = Client(self.endpoint, self.project, **options)
            if self.embedded is not None:
                with_credentials(client, self.embedded)
        if self.impersonation is not None:
            impersonating = replace(
                requester_of(client).credentials, impersonation=self.impersonation
            )
            with_credentials(client, impersonating)
        return client


def client_reference(requester: Requester, choice: CredentialChoice = "auto") -> ClientReference:
    """The `ClientReference` of a client's `requester` for dask workers; see the module
    docstring."""
    credentials: Credentials = requester.credentials
    if choice not in ("auto", "env", "saved", "embedded"):
        raise ValueError(
            f"credentials must be 'auto', 'env', 'saved' or 'embedded' (got {choice!r})."
        )
    source: CredentialSource = "embedded" if choice == "auto" else choice
    if choice == "auto":
        if credentials.method is None:
            source = "none"
        elif _secret_in_environment(credentials):
            source = "env"
        elif credentials.session is not None and _session_is_saved(requester, credentials):
            source = "saved"
    return ClientReference(
        endpoint=requester.endpoint,
        project=requester.project,
        source=source,
        embedded=replace(credentials, impersonation=None) if source == "embedded" else None,
        impersonation=credentials.impersonation,
        header_prefix=requester.header_prefix,
        query_member=requester.query_member,
    )


def _secret_in_environment(credentials: Credentials) -> bool:
    key, jwt = credentials_from_env()
    if credentials.key is not None:
        return key is not None and credentials.key.reveal() == key
    if credentials.jwt is not None:
        return jwt is not None and credentials.jwt.reveal() == jwt
    return False


def _session_is_saved(requester: Requester, credentials: Credentials) -> bool:
    try:
        saved = load_session(requester.endpoint, requester.project)
    except ValueError:  # a damaged credential file
        return False
    return saved is not None and credentials.session == saved


@dataclass(frozen=True)
class PartitionSpec:
    """Everything a worker needs to read one partition; picklable, secret-free in its repr
    and dask token (see `ClientReference` for what a pickled spec may hold)."""

    client: ClientReference
    location: TableLocation
    condition: str | Expr | None  # the filter's query-string form (an Expr if it has none)
    columns: tuple[str, ...] | None
    rows: SequenceRange
    ascending: bool
    schema: pa.Schema
    page_size: int | None = None
    dtype_backend: DtypeBackend = None

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        return (
            self.client.__dask_tokenize__(),
            str(self.location),
            self.location.legacy,
            repr(self.condition),
            self.columns,
            self.rows,
            self.ascending,
            self.schema.to_string(),
            self.page_size,
            self.dtype_backend,
        )


def read_partition(spec: PartitionSpec, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The rows of one partition as a DataFrame with the dtypes of ``to_pandas`` (only
    `columns`, when dask asks for fewer). Runs on a dask worker."""
    schema = spec.schema if columns is None else _projected(spec.schema, columns)
    with spec.client.connect() as client:
        location = spec.location
        table = (client.collection if location.legacy else client.table)(
            location.database_id, location.table_id, page_size=spec.page_size
        )
        within = (col(SEQUENCE) > spec.rows.after) & (col(SEQUENCE) <= spec.rows.upto)
        condition = spec.condition
        if isinstance(condition, str):
            condition = parse(condition)
        query = table.where(within if condition is None else condition & within)
        wanted = [name for name in schema.names if name not in SYSTEM_SCHEMA.names]
        if columns is not None or spec.columns is not None:
            query = query.select(*(wanted or ["$id"]))
        shown = [name for name in schema.names if name in SYSTEM_SCHEMA.names]
        ordered = query.sort(SEQUENCE, ascending=spec.ascending)
        batches = ordered.to_arrow(progress=False, system=shown)
    return to_pandas(_conformed(batches, schema), dtype_backend=spec.dtype_backend)


def _projected(schema: pa.Schema, columns: Sequence[str]) -> pa.Schema:
    return pa.schema([schema.field(name) for name in columns])


def _conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly `schema` (a no-op when the worker read the table's own types)."""
    table = table.select(schema.names)
    if table.schema == schema:
        return table
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise RowDecodeError(
            "a partition's values do not fit the types inferred from the first rows "
            f"({exc}); read with an API key that can read the table's columns"
        ) from exc


async def to_dask(
    requester: Requester,
    location: TableLocation,
    spec: QuerySpec,
    partitions: int | None = None,
    *,
    credentials: CredentialChoice = "auto",
    dtype_backend: DtypeBackend = None,
    page_size: int | None = None,
) -> dd.DataFrame:
    """A dask DataFrame of `query`'s rows in `partitions` ranges of ``$sequence`` (default:
    one per `ROWS_PER_PARTITION` values); see the module docstring."""
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as exc:  # the `dask` extra is missing
        raise ImportError(f"to_dask() needs dask: pip install 'frameport[dask]' ({exc})") from exc
    if partitions is not None and (
        isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1
    ):
        raise ValueError(f"partitions must be a whole number >= 1 (got {partitions!r}).")
    ascending = _partition_order(spec)
    reference = client_reference(requester, credentials)
    read = await TableRead.make(requester, location, spec, page_size=page_size)
    schema = read.plan.output
    if schema is None:  # inferred: from the first page of rows
        first_rows = spec.first(read.plan.page_size)
        first = await TableRead.make(requester, location, first_rows, reading=True)
        schema = (await first.collect(progress=False))[1]
    meta = to_pandas(schema.empty_table(), dtype_backend=dtype_backend)
    if partitions is None:
        ranges = await read.ranges(width=ROWS_PER_PARTITION)
    else:
        ranges = await read.ranges(parts=partitions)
    ranges = ranges or [SequenceRange(0, 0)]  # no rows: one empty partition
    if not ascending:
        ranges.reverse()
    condition = _portable(spec.condition)
    page_size = page_size or spec.page_size

    def partition(rows: SequenceRange) -> PartitionSpec:
        return PartitionSpec(
            reference, location, condition, spec.columns, rows, ascending, schema, page_size,
            dtype_backend,
        )  # fmt: skip

    specs = [partition(rows) for rows in ranges]
    with dask.config.set({"dataframe.convert-string": False}):
        frame: dd.DataFrame = dd.from_map(
            read_partition, specs, meta=meta, label=f"frameport-{location.table_id}"
        )
    return frame


def _partition_order(spec: QuerySpec) -> bool:
    """Whether partitions run in ascending ``$sequence`` order; ValueError for what
    partitions by ``$sequence`` cannot express."""
    if spec.head is not None:
        raise ValueError("to_dask() reads every matching row; drop head() and use ddf.head().")
    if spec.sequence_order is None:
        raise ValueError(
            "to_dask() partitions rows by $sequence; drop sort() and sort the dask frame "
            "(ddf.sort_values(...)) instead."
        )
    return spec.sequence_order


def _portable(condition: Expr | None) -> str | Expr | None:
    """The filter's query-string form when parsing it gives the same filter back."""
    if condition is None:
        return None
    text = repr(condition)
    try:
        if parse(text).node == condition.node:
            return text
    except Exception:  # not expressible as text: the spec carries the expression itself
        pass
    return condition
