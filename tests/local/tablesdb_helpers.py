"""Helpers for the tablesdb tests: callers of every kind, schema setup, query strings and a
Python oracle for the query language (service interface, "Queries", "Collation").

The tests speak HTTP to the local service themselves (httpx), so they check the service's
interface rather than the frameport client.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

# Re-exported for the tablesdb tests.
from callers import PASSWORD as PASSWORD
from callers import assert_error as assert_error
from callers import create_user as create_user
from callers import guest_client as guest_client
from callers import jwt_client as jwt_client
from callers import key_client as key_client
from callers import project_headers as project_headers
from callers import session_client as session_client


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def create_database(client: httpx.Client, database_id: str, base: str = "/tablesdb") -> None:
    """Create the database afresh: with work stealing a module's fixture can run twice on one
    worker's service, so one left by its earlier run is dropped first."""
    gone = client.delete(f"{base}/{database_id}")
    assert gone.status_code in (204, 404), gone.text
    ok(client.post(base, json={"databaseId": database_id, "name": database_id}), 201)


def create_table(
    client: httpx.Client,
    database_id: str,
    table_id: str,
    columns: Sequence[Mapping[str, Any]] = (),
    indexes: Sequence[Mapping[str, Any]] = (),
    **settings: Any,
) -> dict[str, Any]:
    body = {
        "tableId": table_id,
        "name": table_id,
        "columns": list(columns),
        "indexes": list(indexes),
        **settings,
    }
    created: dict[str, Any] = ok(client.post(f"/tablesdb/{database_id}/tables", json=body), 201)
    return created


def settle(client: httpx.Client, database_id: str, table_id: str) -> dict[str, Any]:
    """Poll the table until no column or index is `processing` (clients must poll)."""
    deadline = time.monotonic() + 10
    while True:
        table: dict[str, Any] = ok(client.get(f"/tablesdb/{database_id}/tables/{table_id}"))
        states = [item["status"] for item in table["columns"] + table["indexes"]]
        if "processing" not in states:
            return table
        assert time.monotonic() < deadline, states
        time.sleep(0.02)


def wait_available(client: httpx.Client, database_id: str, table_id: str) -> dict[str, Any]:
    """The table once every column and index is `available`."""
    table = settle(client, database_id, table_id)
    assert all(item["status"] == "available" for item in table["columns"] + table["indexes"])
    return table


def insert_rows(
    client: httpx.Client, database_id: str, table_id: str, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Bulk-create rows (API key), 100 per request."""
    path = f"/tablesdb/{database_id}/tables/{table_id}/rows"
    for start in range(0, len(rows), 100):
        ok(client.post(path, json={"rows": list(rows[start : start + 100])}), 201)


# --- queries ---------------------------------------------------------------------------------


def q(method: str, column: str | None = None, values: Sequence[Any] | None = None) -> str:
    """One query string as the client sends it."""
    query: dict[str, Any] = {"method": method}
    if column is not None:
        query["column"] = column
    if values is not None:
        query["values"] = list(values)
    return json.dumps(query)


def list_rows(
    client: httpx.Client, database_id: str, table_id: str, *queries: str, **params: Any
) -> httpx.Response:
    path = f"/tablesdb/{database_id}/tables/{table_id}/rows"
    return client.get(path, params={"queries[]": list(queries), **params})


def row_ids(response: httpx.Response) -> list[str]:
    body = ok(response)
    return [row["$id"] for row in body["rows"]]


# --- the oracle ------------------------------------------------------------------------------


def fold(text: str) -> str:
    """Case-folded, NFKD, combining marks dropped: the comparison form of text."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _norm(value: Any) -> Any:
    return fold(value) if isinstance(value, str) else value


def matches(query: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """Whether `row` matches one decoded query object, with SQL null semantics."""
    method, values = query["method"], query.get("values", [])
    if method in ("and", "or"):
        results = [matches(nested, row) for nested in values]
        return all(results) if method == "and" else any(results)
    key = query.get("column") or query.get("attribute") or ""
    if not key and method in ("exists", "notExists"):
        present = [row.get(name) is not None for name in values]
        return all(present) if method == "exists" else not any(present)
    value = row.get(key)
    if method in ("isNull", "notExists"):
        return value is None
    if method in ("isNotNull", "exists"):
        return value is not None
    if value is None:
        return False
    if isinstance(value, list):
        return _array_matches(method, value, values)
    if key == "$sequence":
        values = [int(item) for item in values]
    if key == "$id":
        return _exact_matches(method, value, values)
    return _scalar_matches(method, value, values)


def _exact_matches(method: str, value: str, values: Sequence[Any]) -> bool:
    """`$id` compares exactly."""
    if method == "equal":
        return value in values
    if method == "notEqual":
        return bool(value != values[0])
    raise AssertionError(method)


def _array_matches(method: str, value: list[Any], values: Sequence[Any]) -> bool:
    if method in ("contains", "containsAny"):
        return any(item in value for item in values)
    if method == "containsAll":
        return all(item in value for item in values)
    if method == "notContains":
        return not any(item in value for item in values)
    raise AssertionError(method)


def _scalar_matches(method: str, value: Any, values: Sequence[Any]) -> bool:
    current, wanted = _norm(value), [_norm(item) for item in values]
    comparisons: dict[str, Callable[[Any, Any], bool]] = {
        "equal": lambda a, b: a == b,
        "notEqual": lambda a, b: a != b,
        "lessThan": lambda a, b: a < b,
        "lessThanEqual": lambda a, b: a <= b,
        "greaterThan": lambda a, b: a > b,
        "greaterThanEqual": lambda a, b: a >= b,
        "contains": lambda a, b: b in a,
        "containsAny": lambda a, b: b in a,
        "startsWith": lambda a, b: a.startswith(b),
        "endsWith": lambda a, b: a.endswith(b),
    }
    if method in comparisons:
        return any(comparisons[method](current, item) for item in wanted)
    if method == "containsAll":
        return all(item in current for item in wanted)
    if method == "notContains":
        return not any(item in current for item in wanted)
    if method in ("notStartsWith", "notEndsWith"):
        return not _scalar_matches(method[3].lower() + method[4:], value, values)
    if method == "between":
        return bool(wanted[0] <= current <= wanted[1])
    if method == "notBetween":
        return not wanted[0] <= current <= wanted[1]
    if method == "regex":
        return re.search(values[0], value, re.IGNORECASE) is not None
    if method in ("search", "notSearch"):
        words = re.sub(r"[^\w\s]", " ", fold(values[0])).split()
        text_words = re.sub(r"[^\w\s]", " ", current).split()
        found = bool(words) and (
            any(word in text_words for word in words[:-1])
            or any(text_word.startswith(words[-1]) for text_word in text_words)
        )
        return found if method == "search" else not found
    raise AssertionError(method)
