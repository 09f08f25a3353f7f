"""startsWith / endsWith (and their negations) on text holding NUL characters.

SQLite's text functions stop at a NUL, so `substr` once compared only the text before it
and these filters returned wrong rows. Python's `str` methods are the oracle; the empty
string and null are among the values.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from tablesdb_helpers import (
    create_database,
    create_table,
    insert_rows,
    key_client,
    list_rows,
    q,
    row_ids,
    wait_available,
)

from frameport.local import LocalService

DB, TABLE = "nul", "texts"
VALUES: list[str | None] = ["a\0b", "a", "a\0", "\0b", "ab", "x\0a\0b", "b\0a", "", None]


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, DB)
        column = {"key": "s", "type": "string", "size": 32, "required": False}
        create_table(client, DB, TABLE, columns=[column])
        wait_available(client, DB, TABLE)
        insert_rows(client, DB, TABLE, [{"$id": f"v{n}", "s": v} for n, v in enumerate(VALUES)])
        yield client


@pytest.mark.parametrize("needle", ["a\0", "\0b", "a\0b", "\0", "a"])
@pytest.mark.parametrize("method", ["startsWith", "endsWith", "notStartsWith", "notEndsWith"])
def test_affixes_with_nul_match_python(admin: httpx.Client, method: str, needle: str) -> None:
    test = str.startswith if "tartsWith" in method else str.endswith
    negate = method.startswith("not")
    # A null matches neither a filter nor its negation, as in SQL.
    expected = {
        f"v{n}" for n, v in enumerate(VALUES) if v is not None and test(v, needle) != negate
    }
    response = list_rows(admin, DB, TABLE, q(method, "s", [needle]), q("limit", None, [100]))
    assert set(row_ids(response)) == expected
