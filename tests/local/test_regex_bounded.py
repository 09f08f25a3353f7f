"""A pathological regular expression cannot stall the local service.

With a backtracking engine, `(a+)+$` against 64 `a`s and a `!` never finishes and holds the
GIL, so every other request waits behind it. The service matches in linear time instead;
patterns its engine refuses (backreferences, lookaround) are invalid queries.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from callers import assert_error, key_client
from tablesdb_helpers import create_database, create_table, insert_rows, q, wait_available

from frameport.local import LocalService

DB, TABLE = "regexdb", "words"
ROWS = f"/tablesdb/{DB}/tables/{TABLE}/rows"
EVIL = "(a+)+$"
#: Generous: a linear engine answers in milliseconds, a backtracking one never does.
PATIENCE = 60.0


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, DB)
        column = {"key": "word", "type": "string", "size": 256, "required": False}
        create_table(client, DB, TABLE, columns=[column])
        wait_available(client, DB, TABLE)
        words = ["a" * 64 + "!", "a" * 200 + "!", "aaa", "banana", "Aardvark"]
        insert_rows(client, DB, TABLE, [{"$id": f"w{n}", "word": w} for n, w in enumerate(words)])
        yield client


def ids(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {row["$id"] for row in response.json()["rows"]}


def test_another_request_completes_while_a_pathological_regex_runs(
    admin: httpx.Client, service: LocalService
) -> None:
    with key_client(service) as other, ThreadPoolExecutor(max_workers=1) as pool:
        evil = pool.submit(admin.get, ROWS, params={"queries[]": [q("regex", "word", [EVIL])]})
        meanwhile = other.get("/tablesdb", timeout=PATIENCE)
        assert meanwhile.status_code == 200, meanwhile.text
        assert ids(evil.result(timeout=PATIENCE)) == {"w2", "w3"}  # aaa, banana


def test_regex_matches_case_insensitively_anywhere(admin: httpx.Client) -> None:
    assert ids(admin.get(ROWS, params={"queries[]": [q("regex", "word", ["^a{3}$"])]})) == {"w2"}
    assert ids(admin.get(ROWS, params={"queries[]": [q("regex", "word", ["ARD"])]})) == {"w4"}


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)b", "(?<!a)b", "a{1001}"])
def test_patterns_without_a_linear_match_are_invalid_queries(
    admin: httpx.Client, pattern: str
) -> None:
    response = admin.get(ROWS, params={"queries[]": [q("regex", "word", [pattern])]})
    body = assert_error(response, 400, "general_query_invalid")
    assert "regular expression" in body["message"]
