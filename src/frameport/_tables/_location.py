"""Where a table lives, and the paths and names of the interface that reaches it."""

from __future__ import annotations

from dataclasses import dataclass

from .._core._ids import ID


class _Named:
    """A name a `TableLocation` reads as `current`, or as `legacy` on the legacy interface."""

    def __init__(self, current: str, legacy: str) -> None:
        self.names = (current, legacy)

    def __get__(self, location: TableLocation, owner: type[TableLocation]) -> str:
        return self.names[location.legacy]


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

    # The names that differ between the two interfaces: the list key and bulk body key, the
    # key of the table's columns, and the parameters of a new table's ID and row security.
    items_key = _Named("rows", "documents")
    columns_key = _Named("columns", "attributes")
    id_param = _Named("tableId", "collectionId")
    security_param = _Named("rowSecurity", "documentSecurity")
