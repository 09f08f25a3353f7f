"""Where a table lives, and the paths and names of the interface that reaches it."""

from __future__ import annotations

from dataclasses import dataclass

from .._core._ids import ID


@dataclass(frozen=True)
class TableLocation:
    """Where a table lives: its database and ID, and which interface reaches it
    (``/v1/tablesdb/...`` rows, or the legacy ``/v1/databases/...`` documents)."""

    database_id: str
    table_id: str
    legacy: bool = False

    def __post_init__(self) -> None:
        ID.custom(self.database_id)
        ID.custom(self.table_id)

    def __str__(self) -> str:
        return f"{self.database_id}/{self.table_id}"

    @property
    def container_path(self) -> str:
        """The path listing (and creating) the database's tables."""
        if self.legacy:
            return f"/databases/{self.database_id}/collections"
        return f"/tablesdb/{self.database_id}/tables"

    @property
    def path(self) -> str:
        """The table's own path (its model, with the columns)."""
        return f"{self.container_path}/{self.table_id}"

    @property
    def rows_path(self) -> str:
        return f"{self.path}/{self.items_key}"

    @property
    def items_key(self) -> str:
        """``rows``, or ``documents`` on the legacy interface (list key and bulk body key)."""
        return "documents" if self.legacy else "rows"

    @property
    def columns_key(self) -> str:
        return "attributes" if self.legacy else "columns"

    @property
    def id_param(self) -> str:
        return "collectionId" if self.legacy else "tableId"

    @property
    def security_param(self) -> str:
        return "documentSecurity" if self.legacy else "rowSecurity"
