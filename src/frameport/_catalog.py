"""The catalog of a project: its databases, the tables of a database and its buckets, as
DataFrames (creating and dropping them: `_tables._admin`, `_storage`).

>>> client.databases()                                                   # doctest: +SKIP
>>> client.tables("crm")[["$id", "name", "columns"]]                    # doctest: +SKIP

Listing and managing the catalog needs an API key (with the ``databases``, ``tables`` and
``buckets`` scopes): signed-in users may read rows and files, not the catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ._core._ids import ID
from ._records import BUCKET_SCHEMA, DATABASE_SCHEMA, TABLE_SCHEMA, list_frame, list_table
from ._schema import to_pandas

if TYPE_CHECKING:
    import pandas as pd

    from ._core import Requester


async def list_databases(requester: Requester) -> pd.DataFrame:
    """Every database of the project, one row each: ``$id``, ``name``, ``enabled``,
    ``$createdAt``, ``$updatedAt``."""
    return await list_frame(requester, "/tablesdb", "databases", DATABASE_SCHEMA)


async def list_tables(requester: Requester, database_id: str) -> pd.DataFrame:
    """Every table of database `database_id`, one row each: ``$id``, ``name``, ``enabled``,
    ``rowSecurity``, ``columns`` (how many), ``$createdAt``, ``$updatedAt``,
    ``$permissions``."""
    path = f"/tablesdb/{ID.custom(database_id)}/tables"
    tables = await list_table(requester, path, "tables", TABLE_SCHEMA)
    counts = pc.list_value_length(tables["columns"]).cast(pa.int64())
    index = tables.schema.get_field_index("columns")
    return to_pandas(tables.set_column(index, "columns", counts))


async def list_buckets(requester: Requester) -> pd.DataFrame:
    """Every bucket of the project, one row each: ``$id``, ``name``, ``enabled``,
    ``fileSecurity``, ``maximumFileSize``, ``compression``, ``encryption``, ``antivirus``,
    ``transformations``, ``totalSize`` (bytes), ``$createdAt``, ``$updatedAt``,
    ``$permissions``."""
    return await list_frame(requester, "/storage/buckets", "buckets", BUCKET_SCHEMA)
