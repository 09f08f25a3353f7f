"""The two vocabularies of the database interface: tables/rows/columns and the legacy
collections/documents/attributes (service interface, "The catalog"). Both serve the same data.

>>> TABLES.error("row", "not_found"), COLLECTIONS.error("row", "not_found")
('row_not_found', 'document_not_found')
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Terms:
    """The names one interface uses for the same things."""

    base: str
    database_type: str
    table: str
    tables: str
    table_id: str
    row: str
    rows: str
    row_id: str
    column: str
    columns: str
    security: str

    @classmethod
    def named(cls, base: str, database_type: str, table: str, row: str, column: str) -> Terms:
        """An interface's terms from its singular words (plurals and IDs follow from them)."""
        table_names = (table, f"{table}s", f"{table}Id")
        row_names = (row, f"{row}s", f"{row}Id")
        return cls(
            base, database_type, *table_names, *row_names, column, f"{column}s", f"{row}Security"
        )

    @property
    def table_key(self) -> str:
        """The row member naming the table: `$tableId` or `$collectionId`."""
        return f"${self.table_id}"

    @property
    def table_path(self) -> str:
        return f"{self.base}/{{databaseId}}/{self.tables}/{{{self.table_id}}}"

    @property
    def rows_path(self) -> str:
        return f"{self.table_path}/{self.rows}"

    def word(self, thing: str) -> str:
        """This interface's word for `table`, `row` or `column`."""
        return {"table": self.table, "row": self.row, "column": self.column}[thing]

    def error(self, thing: str, kind: str) -> str:
        """The error type for `thing` (table, row or column), e.g. `document_not_found`."""
        return f"{self.word(thing)}_{kind}"

    def title(self, thing: str) -> str:
        """`Row`, `Document`, `Table`, ... for messages."""
        return self.word(thing).capitalize()


TABLES = Terms.named("/v1/tablesdb", "tablesdb", "table", "row", "column")
COLLECTIONS = Terms.named("/v1/databases", "legacy", "collection", "document", "attribute")

BOTH = (TABLES, COLLECTIONS)
