"""Ray Data and tables (the ``ray`` extra): `read_table` makes a dataset of a query, one read
task per range of ``$sequence`` the partition planner cuts, and `TableSink` writes a dataset
into a table through the load's write path. Imported on first use of ``fp.ray``; it imports
Ray.

>>> ds = fp.ray.read_table(people.query("age > 30"))             # doctest: +SKIP
>>> ds.write_datasink(fp.ray.TableSink(archive, id_from="key"))  # doctest: +SKIP

Workers connect as dask workers do: with ``credentials="auto"`` a worker reads
FRAMEPORT_KEY (or FRAMEPORT_JWT) from its environment when the client's key is the one
there, else the tasks carry the client's credentials (never in a repr); see the guide
"Outgrowing one machine".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

try:
    import ray.data
except ImportError as exc:  # the `ray` extra is missing
    raise ImportError(
        f"frameport.ray needs Ray Data: pip install 'frameport[ray]' ({exc})"
    ) from exc

from ._core import async_twin, run_sync
from ._core._auth import CredentialChoice
from ._tables import Table, TableQuery
from ._tables.engines import client_reference, planned_partitions
from ._tables.engines.ray import BYTES_PER_PARTITION, TableDatasink, TableDatasource
from ._tables.read import column_models
from ._tables.writes import DEFAULT_ON_CONFLICT, LoadOptions, OnConflict

if TYPE_CHECKING:
    from ._tables import AsyncTableQuery

__all__ = ["TableSink", "read_table"]


def read_table(
    query: TableQuery,
    *,
    partitions: int | None = None,
    credentials: CredentialChoice = "auto",
    page_size: int | None = None,
    **read_args: Any,
) -> ray.data.Dataset:
    """A Ray dataset of `query`'s rows (a `Table` or a `TableQuery` of a `Client`), as Arrow
    blocks with the types of ``query.to_arrow()``.

    The partition planner cuts the rows into ranges of ``$sequence`` now, on the driver (a
    missing table or a filter it refuses raises here), with estimates of each range's rows
    and bytes that Ray reads as each read task's metadata: `partitions` ranges of equal
    estimated bytes, or (by default) ranges of at most 64 MiB in Arrow memory, and at least
    as many as the cluster's CPUs (when Ray is started). The rows come
    in ``$sequence`` order (down it, for a query sorted down ``$sequence``); any other sort,
    or ``head``, raises ValueError: sort or limit the dataset instead. Each range is one
    block of the dataset (``override_num_blocks=`` in `read_args` lets Ray slice them into
    more). `credentials`: where the workers' come from, as for ``to_dask``. `read_args` go
    to ``ray.data.read_datasource`` (e.g. ``concurrency=``).

    >>> ds = fp.ray.read_table(people.query("age > 30").select("name", "age"))
    ... # doctest: +SKIP
    """
    if not isinstance(query, TableQuery):
        raise TypeError(
            "fp.ray.read_table() takes a Table or TableQuery of a synchronous fp.Client "
            f"(got {type(query).__name__}); Ray's reads are synchronous."
        )
    source: AsyncTableQuery = async_twin(query)
    planned = run_sync(
        planned_partitions(
            source._requester,
            source.location,
            source._spec,
            caller="fp.ray.read_table()",
            parts=partitions,
            bytes=BYTES_PER_PARTITION,
            at_least=_cpus(),
            credentials=credentials,
            page_size=page_size,
        )
    )
    name = f"frameport({source.location})"
    # a block per planned range: Ray would otherwise slice each into blocks of about 1 MiB
    # and copy every slice into its object store
    read_args.setdefault("override_num_blocks", len(planned.specs))
    dataset: ray.data.Dataset = ray.data.read_datasource(
        TableDatasource(planned, name), **read_args
    )
    return dataset


def _cpus() -> int:
    """The CPUs of the Ray cluster this process is connected to (1 before ``ray.init``)."""
    if not ray.is_initialized():
        return 1
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class TableSink(TableDatasink):
    """A Ray Data sink writing a dataset into `table` (a `Table` of a `Client`):
    ``ds.write_datasink(fp.ray.TableSink(table, id_from="key"))``.

    Each write task loads its blocks through ``table.load``'s write path, over a connection
    of its own; `id_from`, `id_hash` and `on_conflict` are ``load``'s. With `id_from` or
    `id_hash` a task Ray runs again (its worker died) or a whole write run again meets the
    rows written before instead of duplicating them; without them every run writes its
    rows anew. After the write, `reports` holds every load's `WriteReport`. A missing
    table, options ``load`` refuses or a dataset without the ID columns raise on the driver,
    before any task runs.
    """

    def __init__(
        self,
        table: Table,
        *,
        id_from: str | None = None,
        id_hash: str | Sequence[str] | None = None,
        on_conflict: OnConflict = DEFAULT_ON_CONFLICT,
        credentials: CredentialChoice = "auto",
    ) -> None:
        if not isinstance(table, Table):
            raise TypeError(
                "fp.ray.TableSink() takes a Table of a synchronous fp.Client "
                f"(got {type(table).__name__})."
            )
        target = async_twin(table)
        requester, location = target._requester, target.location
        options = LoadOptions(
            on_conflict=on_conflict, id_from=id_from, id_hash=id_hash, progress=False
        )
        super().__init__(client_reference(requester, credentials), location, options)
        run_sync(column_models(requester, location))  # a missing table: NotFoundError, here
