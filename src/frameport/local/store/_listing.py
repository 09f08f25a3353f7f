"""The `queries` of the metadata lists (buckets, files, functions, deployments), run in SQL.

The query language itself is the tables' (`_query` parses and validates, `_sql` compiles and pages);
this module describes each metadata table to it. A query that fails validation is 400
`general_argument_invalid` with ``Invalid `queries` param: Invalid query: <detail>``
(service interface, "Query errors"). Strings compare through the service's collation, IDs exactly;
`select` is not accepted. The `search` parameter matches items whose name contains any of its words.

>>> FILES = MetadataList("files", {"string": ("name", "mimeType")}, noun="File")
>>> FILES.schema.fields["mimeType"].sql
'mime_type'
>>> listed = FILES.parse(params)  # doctest: +SKIP
>>> scope = ("bucket_id = ?", ["b1"])
>>> total, rows = FILES.page(conn, listed, "id, name", scope=scope)  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..wire._errors import ServiceError, invalid_param
from ..wire._params import Params
from ._collation import fold
from ._query import ALL_METHODS, Field, ListQuery, QueryError, Schema, parse_queries
from ._sql import Clause, Source, count, fetch_page

_WITHOUT_SELECT = ALL_METHODS - {"select"}
_BASE_FIELDS = {
    "$id": Field("$id", "id", "id", "id"),
    "$createdAt": Field("$createdAt", "datetime", "created_at", "created_at"),
    "$updatedAt": Field("$updatedAt", "datetime", "updated_at", "updated_at"),
    "$sequence": Field("$sequence", "sequence", "sequence", "sequence"),
}


def _field(key: str, kind: str, column: str) -> Field:
    if kind == "string":
        return Field(key, kind, column, f"fold({column})", fold=True)
    return Field(key, kind, column, column)


def _snake(key: str) -> str:
    """`mimeType` → `mime_type`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


@dataclass(frozen=True)
class ListRequest:
    """A list request's `queries`, `search` and `total` parameters, validated."""

    query: ListQuery
    search: str | None
    with_total: bool


@dataclass(frozen=True)
class MetadataList:
    """One metadata table as a list endpoint sees it.

    `fields` names the filterable attributes by kind (`{"string": ("name", "mimeType")}`);
    each is stored in the snake-case column of its name (`mime_type`) unless `columns` says
    otherwise. Every table also has `id`, `sequence`, `created_at` and `updated_at`. `noun`
    names the item in cursor errors.
    """

    table: str
    fields: Mapping[str, Sequence[str]]
    noun: str
    search_column: str = "name"
    columns: Mapping[str, str] = field(default_factory=dict)

    @property
    def schema(self) -> Schema:
        extra = {
            key: _field(key, kind, self.columns.get(key) or _snake(key))
            for kind, keys in self.fields.items()
            for key in keys
        }
        return Schema({**_BASE_FIELDS, **extra})

    def parse(self, params: Params) -> ListRequest:
        """The request's `queries` (validated against this list's attributes), `search` and
        `total`."""
        try:
            query = parse_queries(params.queries(), self.schema, allowed=_WITHOUT_SELECT)
        except QueryError as exc:
            raise queries_param_error(exc) from None
        search = params.string("search", max_length=256)
        return ListRequest(query, search, params.boolean("total", True))

    def page(
        self,
        conn: Any,
        listed: ListRequest,
        columns: str,
        *,
        scope: Clause = ("1", []),
        visible: Clause | None = None,
    ) -> tuple[int, list[tuple[Any, ...]]]:
        """(total, rows): the `columns` of one page of items in `scope` that are `visible`."""
        source = Source(self.table, "sequence", "id", scope[0], tuple(scope[1]))
        extra = [clause for clause in (visible, self._search(listed.search)) if clause is not None]
        query = listed.query
        total = count(conn, query, source, extra) if listed.with_total else 0
        rows = fetch_page(
            conn, query, source, (columns, []), missing_cursor=self._missing, extra=extra
        )
        return total, rows

    def _search(self, text: str | None) -> Clause | None:
        words = fold(text or "").split()
        if not words:
            return None
        column = f"fold({self.search_column})"
        return " OR ".join(f"instr({column}, ?) > 0" for _ in words), list(words)

    def _missing(self, item_id: str) -> ServiceError:
        return ServiceError(
            "general_cursor_not_found", f"{self.noun} '{item_id}' for the 'cursor' value not found."
        )


def queries_param_error(exc: QueryError) -> ServiceError:
    """A metadata list's query problem as its param validator reports it
    (service interface, "Query errors"):
    ``Invalid `queries` param: Invalid query: <detail>``."""
    message = exc.message
    if not message.startswith("Invalid query:"):
        message = f"Invalid query: {message}"
    return invalid_param("queries", message)


def readable_by(roles: Iterable[str], action: str = "read") -> Clause:
    """Items whose JSON `permissions` column grants `action` to one of `roles`."""
    granted = [f'{action}("{role}")' for role in sorted(roles)]
    marks = ", ".join("?" for _ in granted)
    return f"EXISTS (SELECT 1 FROM json_each(permissions) WHERE value IN ({marks}))", granted
