"""A dlt source for frameport's tables, for loading them into warehouses with dlt.

`frameport_source(database, tables)` has one resource per table named. Each resource yields Arrow
tables page by page, with ``$id`` as its primary key, ``$updatedAt`` as dlt's incremental
cursor and ``merge`` as its write disposition: the first load reads every row, later loads
only the rows updated since the last one (dlt keeps the cursor in its pipeline state).
Deleted rows are not seen by an incremental read; use ``q.sync`` (Delta) to follow deletes.

The connection comes from the arguments, else from dlt's configuration and secrets
(``[sources.frameport]`` ``endpoint``, ``project``, ``key`` in ``secrets.toml``, or
``SOURCES__FRAMEPORT__KEY`` and so on), else from frameport's environment variables
(FRAMEPORT_ENDPOINT, FRAMEPORT_PROJECT, FRAMEPORT_KEY). The key is held as a dlt secret and
never printed. Needs the ``dlt`` extra.

>>> import dlt
>>> from frameport.dlt import frameport_source
>>> pipeline = dlt.pipeline("crm", destination="duckdb", dataset_name="crm")  # doctest: +SKIP
>>> pipeline.run(frameport_source("crm", ["people"]))                          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import dlt
import pyarrow as pa
from dlt.common.typing import TSecretStrValue
from dlt.extract import DltResource

from ._client import Client
from ._expr import col

CURSOR = "$updatedAt"
CURSOR_PATH = "'$updatedAt'"  # quoted: dlt reads cursor paths as JSONPath
PRIMARY_KEY = "$id"


@dlt.source(name="frameport")
def frameport_source(
    database: str,
    tables: Sequence[str],
    endpoint: str | None = dlt.config.value,
    project: str | None = dlt.config.value,
    key: TSecretStrValue | None = dlt.secrets.value,
    page_size: int | None = None,
) -> list[DltResource]:
    """One resource per table of `database` named in `tables`."""
    connection = _Connection(endpoint, project, key, page_size)
    return [table_resource(connection, database, table_id) for table_id in tables]


class _Connection:
    """What a resource needs to open its client (not printed: the key is a secret)."""

    def __init__(
        self, endpoint: str | None, project: str | None, key: str | None, page_size: int | None
    ) -> None:
        self._endpoint, self._project, self._key = endpoint, project, key
        self.page_size = page_size

    def __repr__(self) -> str:
        return f"_Connection(endpoint={self._endpoint!r}, project={self._project!r})"

    def client(self) -> Client:
        if self._endpoint and self._project:
            return Client(self._endpoint, self._project, key=self._key)
        return Client.from_env()


def table_resource(connection: _Connection, database: str, table_id: str) -> DltResource:
    """The resource of one table: Arrow tables of its rows with every ``$`` field (as a Delta
    sync keeps them), merged by ``$id``, incremental on ``$updatedAt``."""

    def rows(
        updated_at: dlt.sources.incremental[Any] = dlt.sources.incremental(CURSOR_PATH),  # noqa: B008
    ) -> Iterator[pa.Table]:
        with connection.client() as client:
            query: Any = client.table(database, table_id)
            if updated_at.last_value is not None:
                query = query.where(col(CURSOR) >= updated_at.last_value)
            for batch in query.iter_batches(
                arrow=True, progress=False, page_size=connection.page_size, system=True
            ):
                yield pa.Table.from_batches([batch])

    return dlt.resource(rows, name=table_id, primary_key=PRIMARY_KEY, write_disposition="merge")


__all__ = ["frameport_source", "table_resource"]
