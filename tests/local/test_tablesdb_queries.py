"""The query language of the rows endpoints (service interface, "Queries") against a Python
oracle.

Every filter method runs over the same 240 rows through HTTP and through `matches`; strings compare
case- and accent-insensitively (service interface, "Collation"), nulls follow SQL. Values that look
like SQL, LIKE wildcards or escapes are matched literally.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tablesdb_helpers import (
    assert_error,
    create_database,
    create_table,
    fold,
    insert_rows,
    key_client,
    list_rows,
    matches,
    ok,
    q,
    row_ids,
    wait_available,
)

from frameport.local import LocalService

DB, TABLE = "qdb", "people"
NAMES = [
    "Trường Đại Học",
    "truong đai hoc",
    "TRƯỜNG ĐẠI HỌC",
    "truong dai hoc",
    "Zoë",
    "zoe",
    "ZOE",
    "Ångström",
    "angstrom",
    "Müller",
    "MULLER",
    "O'Brien",
    "50% off",
    "50 off",
    "a_b",
    "axb",
    "a\\b",
    "'; DROP TABLE r_1; --",
    '"quoted"',
    "",
    "straße",
    "STRASSE",
    "日本語",
    "emoji 🎉",
    None,
]
TAGS = ["red", "Red", "blue", "green", "50%", "o'k", "_"]
WORDS = ["alpha", "beta", "gamma", "delta", "Đặng", "café", "naïve", "under_score", "x%y"]
COLUMNS = [
    {"key": "name", "type": "string", "size": 64, "required": False},
    {"key": "age", "type": "integer", "required": False},
    {"key": "score", "type": "double", "required": False},
    {"key": "active", "type": "boolean", "required": False},
    {"key": "born", "type": "datetime", "required": False},
    {"key": "tags", "type": "string", "size": 16, "required": False, "array": True},
    {"key": "nums", "type": "integer", "required": False, "array": True},
    {"key": "bio", "type": "text", "required": False},
    {"key": "plain", "type": "string", "size": 32, "required": False},
]


def _row(index: int, rng: random.Random) -> dict[str, Any]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.15 else value

    day = rng.randint(1, 28)
    return {
        "$id": f"p{index:04d}",
        "name": NAMES[index % len(NAMES)],
        "age": maybe(rng.randint(0, 90)),
        "score": maybe(round(rng.uniform(-5, 5), 3)),
        "active": maybe(rng.random() < 0.5),
        "born": maybe(f"2020-02-{day:02d}T{rng.randint(0, 23):02d}:00:00.000+00:00"),
        "tags": maybe(rng.sample(TAGS, rng.randint(0, 3))),
        "nums": maybe([rng.randint(0, 9) for _ in range(rng.randint(0, 3))]),
        "bio": maybe(" ".join(rng.sample(WORDS, 3))),
        "plain": maybe(rng.choice(["x", "y", "z", "X"])),
    }


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        yield svc


@pytest.fixture(scope="module")
def client(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as admin:
        yield admin


@pytest.fixture(scope="module")
def rows(client: httpx.Client) -> list[dict[str, Any]]:
    create_database(client, DB)
    indexes = [{"key": "bio_text", "type": "fulltext", "columns": ["bio"]}]
    create_table(client, DB, TABLE, COLUMNS, indexes)
    wait_available(client, DB, TABLE)
    rng = random.Random(7)
    data = [_row(index, rng) for index in range(240)]
    insert_rows(client, DB, TABLE, data)
    return [{**row, "$sequence": index + 1} for index, row in enumerate(data)]


def _check(client: httpx.Client, rows: list[dict[str, Any]], *queries: str) -> list[str]:
    """The IDs the service returns equal the oracle's, in $sequence order."""
    found = row_ids(list_rows(client, DB, TABLE, *queries, q("limit", values=[5000])))
    decoded = [json.loads(query) for query in queries]
    expected = [row["$id"] for row in rows if all(matches(query, row) for query in decoded)]
    assert found == expected
    return found


FILTERS = [
    q("equal", "name", ["truong dai hoc"]),
    q("equal", "name", ["Trường Đại Học"]),
    q("equal", "name", ["zoe", "muller"]),
    q("equal", "name", ["'; DROP TABLE r_1; --"]),
    q("equal", "name", ['"quoted"']),
    q("equal", "name", [""]),
    q("equal", "name", ["STRASSE"]),
    q("equal", "age", [3, 30, 60]),
    q("equal", "active", [True]),
    q("equal", "active", [False]),
    q("equal", "score", [1.5, -2.25]),
    q("notEqual", "name", ["zoe"]),
    q("notEqual", "age", [30]),
    q("notEqual", "active", [True]),
    q("lessThan", "age", [20]),
    q("lessThanEqual", "score", [0]),
    q("greaterThan", "age", [80, 10]),
    q("greaterThanEqual", "score", [4.5]),
    q("lessThan", "name", ["m"]),
    q("greaterThan", "born", ["2020-02-20T00:00:00.000+00:00"]),
    q("lessThan", "born", ["2020-02-05T12:00:00+02:00"]),
    q("between", "age", [10, 20]),
    q("between", "name", ["a", "n"]),
    q("between", "born", ["2020-02-03", "2020-02-09"]),
    q("notBetween", "age", [10, 80]),
    q("notBetween", "score", [-1, 1]),
    q("contains", "name", ["%"]),
    q("contains", "name", ["_"]),
    q("contains", "name", ["\\"]),
    q("contains", "name", ["'"]),
    q("contains", "name", ["ĐẠI", "zo"]),
    q("containsAny", "name", ["rong", "ström"]),
    q("containsAll", "name", ["tr", "hoc"]),
    q("notContains", "name", ["o"]),
    q("startsWith", "name", ["tru"]),
    q("startsWith", "name", ["50%"]),
    q("startsWith", "name", ["a_"]),
    q("endsWith", "name", ["HOC"]),
    q("endsWith", "name", ["%"]),
    q("notStartsWith", "name", ["t"]),
    q("notEndsWith", "name", ["e"]),
    q("contains", "tags", ["red"]),
    q("contains", "tags", ["Red", "_"]),
    q("containsAny", "tags", ["50%", "o'k"]),
    q("containsAll", "tags", ["red", "blue"]),
    q("notContains", "tags", ["green"]),
    q("contains", "nums", [7]),
    q("containsAll", "nums", [1, 2]),
    q("notContains", "nums", [0, 1]),
    q("isNull", "age"),
    q("isNotNull", "tags"),
    q("exists", "score"),
    q("notExists", "born"),
    q("exists", None, ["score", "age"]),
    q("notExists", None, ["score", "tags"]),
    q("regex", "name", ["^tr.*c$"]),
    q("regex", "plain", ["^x$"]),
    q("search", "bio", ["cafe"]),
    q("search", "bio", ["dang gam"]),
    q("search", "bio", ["under_score"]),
    q("notSearch", "bio", ["alpha"]),
    q("equal", "$id", ["p0003", "p0100", "P0004"]),
    q("greaterThan", "$sequence", [200]),
    q("lessThanEqual", "$sequence", ["3"]),
]


@pytest.mark.parametrize("query", FILTERS)
def test_each_filter_matches_the_oracle(
    client: httpx.Client, rows: list[dict[str, Any]], query: str
) -> None:
    _check(client, rows, query)


def test_filters_are_anded_and_nest(client: httpx.Client, rows: list[dict[str, Any]]) -> None:
    nested_or = {
        "method": "or",
        "values": [
            {"method": "lessThan", "column": "age", "values": [15]},
            {
                "method": "and",
                "values": [
                    {"method": "equal", "attribute": "active", "values": [True]},
                    {"method": "greaterThan", "column": "score", "values": [2]},
                ],
            },
        ],
    }
    found = _check(client, rows, json.dumps(nested_or), q("isNotNull", "name"))
    assert found, "the nested query should select some rows"
    _check(client, rows, q("startsWith", "name", ["z"]), q("notEqual", "age", [5]))


def test_case_and_accent_insensitive_but_d_stroke_differs(
    client: httpx.Client, rows: list[dict[str, Any]]
) -> None:
    found = {
        rows[int(i[1:])]["name"]
        for i in _check(client, rows, q("equal", "name", ["TRUONG ĐAI HOC"]))
    }
    assert found == {"Trường Đại Học", "truong đai hoc", "TRƯỜNG ĐẠI HỌC"}
    plain_d = {
        rows[int(i[1:])]["name"]
        for i in _check(client, rows, q("equal", "name", ["truong dai hoc"]))
    }
    assert plain_d == {"truong dai hoc"}
    searched = _check(client, rows, q("search", "bio", ["dang"]))
    assert all("Đặng" in rows[int(i[1:])]["bio"] for i in searched)


def test_ordering_on_strings_is_folded(client: httpx.Client, rows: list[dict[str, Any]]) -> None:
    response = list_rows(client, DB, TABLE, q("orderAsc", "name"), q("limit", values=[5000]))
    expected = sorted(
        rows,
        key=lambda row: (row["name"] is not None, fold(row["name"] or ""), int(row["$id"][1:])),
    )
    assert row_ids(response) == [row["$id"] for row in expected]


def test_select_total_limit_and_offset(client: httpx.Client, rows: list[dict[str, Any]]) -> None:
    body = ok(list_rows(client, DB, TABLE))
    assert body["total"] == len(rows) and len(body["rows"]) == 25
    body = ok(list_rows(client, DB, TABLE, q("limit", values=[5]), q("offset", values=[10])))
    assert [row["$id"] for row in body["rows"]] == [row["$id"] for row in rows[10:15]]
    assert body["total"] == len(rows)
    body = ok(list_rows(client, DB, TABLE, q("lessThan", "age", [30]), total="false"))
    assert body["total"] == 0
    first = ok(list_rows(client, DB, TABLE, q("limit", values=[1]), q("limit", values=[7])))
    assert len(first["rows"]) == 1
    body = ok(list_rows(client, DB, TABLE, q("select", values=["name", "age"])))
    row = body["rows"][0]
    system = ["$id", "$sequence", "$tableId", "$databaseId", "$createdAt", "$updatedAt"]
    assert list(row) == [*system, "$permissions", "name", "age"]
    body = ok(list_rows(client, DB, TABLE, q("select", values=["*"]), q("limit", values=[1])))
    assert list(body["rows"][0])[7:] == [column["key"] for column in COLUMNS]


def test_query_member_names(client: httpx.Client, rows: list[dict[str, Any]]) -> None:
    by_attribute = json.dumps({"method": "equal", "attribute": "plain", "values": ["x"]})
    by_column = q("equal", "plain", ["x"])
    both_same = json.dumps(
        {"method": "equal", "attribute": "plain", "column": "plain", "values": ["x"]}
    )
    expected = row_ids(list_rows(client, DB, TABLE, by_column, q("limit", values=[5000])))
    for query in (by_attribute, both_same):
        assert row_ids(list_rows(client, DB, TABLE, query, q("limit", values=[5000]))) == expected
    legacy = client.get(
        f"/databases/{DB}/collections/{TABLE}/documents",
        params={"queries[0]": by_column, "queries[1]": q("limit", values=[5000])},
    )
    assert [document["$id"] for document in ok(legacy)["documents"]] == expected
    both_differ = json.dumps(
        {"method": "equal", "attribute": "plain", "column": "name", "values": ["x"]}
    )
    assert_error(list_rows(client, DB, TABLE, both_differ), 400, "general_query_invalid")


INVALID = [
    ("not json", "Invalid query: Syntax error"),
    ('"a string"', "Invalid query. Must be an array, got string"),
    (json.dumps({"method": "frobnicate"}), "Invalid query method: frobnicate"),
    (json.dumps({"method": 3}), "Invalid query method. Must be a string, got integer"),
    (
        json.dumps({"method": "equal", "column": "age", "values": 3}),
        "Invalid query values. Must be an array, got integer",
    ),
    (q("equal", "nope", [1]), "Invalid query: Attribute not found in schema: nope"),
    (q("equal", "age", ["x"]), 'Invalid query: Query value is invalid for attribute "age"'),
    (q("equal", "age", [1.5]), 'Invalid query: Query value is invalid for attribute "age"'),
    (
        q("equal", "active", ["true"]),
        'Invalid query: Query value is invalid for attribute "active"',
    ),
    (
        q("equal", "born", ["yesterday"]),
        'Invalid query: Query value is invalid for attribute "born"',
    ),
    (q("equal", "age", []), "Invalid query: Equal queries require at least one value."),
    (q("notEqual", "age", [1, 2]), "Invalid query: NotEqual queries require exactly one value."),
    (q("between", "age", [1]), "Invalid query: Between queries require exactly two values."),
    (
        q("equal", "tags", ["red"]),
        'Invalid query: Cannot query equal on attribute "tags" because it is an array.',
    ),
    (
        q("contains", "age", [1]),
        'Invalid query: Cannot query contains on attribute "age" because it is not an array, '
        "string, or object.",
    ),
    (
        q("search", "name", ["x"]),
        'Invalid query: Searching by attribute "name" requires a fulltext index.',
    ),
    (
        json.dumps({"method": "elemMatch", "column": "tags", "values": [{"method": "equal"}]}),
        "Invalid query: elemMatch is not supported by the database",
    ),
    (
        q("intersects", "name", [[1, 2]]),
        'Invalid query: Spatial query "intersects" cannot be applied on non-spatial '
        "attribute: name",
    ),
    (
        q("vectorDot", "age", [[1.0]]),
        "Invalid query: Vector queries can only be used on vector attributes",
    ),
    (
        json.dumps({"method": "and", "values": [{"method": "isNull", "column": "age"}]}),
        "Invalid query: And queries require at least two queries",
    ),
    (
        json.dumps(
            {
                "method": "or",
                "values": [
                    {"method": "limit", "values": [1]},
                    {"method": "isNull", "column": "age"},
                ],
            }
        ),
        "Invalid query: Or queries can only contain filter queries",
    ),
    (
        q("equal", "age", list(range(501))),
        "Invalid query: Query on attribute has greater than 500 values: age",
    ),
    (q("regex", "name", ["("]), None),
    (q("limit", values=[0]), None),
    (q("limit", values=["x"]), None),
    (q("offset", values=[-1]), None),
    (q("cursorAfter", values=["-bad"]), None),
    (q("select", values=["nope"]), "Invalid query: Attribute not found in schema: nope"),
    (q("select", values=["name", "name"]), "Invalid query: Duplicate attributes in select query"),
    (q("orderAsc", "nope"), "Invalid query: Attribute not found in schema: nope"),
    (q("orderDesc", "tags"), None),
]


@pytest.mark.parametrize(("query", "message"), INVALID)
def test_invalid_queries_are_general_query_invalid(
    client: httpx.Client, rows: list[dict[str, Any]], query: str, message: str | None
) -> None:
    body = assert_error(list_rows(client, DB, TABLE, query), 400, "general_query_invalid")
    if message is not None:
        assert body["message"] == message
    else:
        assert body["message"].startswith("Invalid query: ")


def test_queries_param_limits_are_argument_errors(
    client: httpx.Client, rows: list[dict[str, Any]]
) -> None:
    too_many = [q("isNotNull", "age")] * 101
    body = assert_error(list_rows(client, DB, TABLE, *too_many), 400, "general_argument_invalid")
    assert body["message"].startswith("Invalid `queries` param:")
    too_long = q("equal", "name", ["x" * 4100])
    assert_error(list_rows(client, DB, TABLE, too_long), 400, "general_argument_invalid")


def test_get_row_accepts_select_only(client: httpx.Client, rows: list[dict[str, Any]]) -> None:
    path = f"/tablesdb/{DB}/tables/{TABLE}/rows/p0001"
    row = ok(client.get(path, params={"queries[]": [q("select", values=["age"])]}))
    assert "age" in row and "name" not in row
    body = assert_error(
        client.get(path, params={"queries[]": [q("limit", values=[1])]}),
        400,
        "general_query_invalid",
    )
    assert body["message"] == "Invalid query method: limit"


def test_injection_attempts_change_nothing(
    client: httpx.Client, rows: list[dict[str, Any]]
) -> None:
    attempts = ["x' OR '1'='1", "'; DROP TABLE r_1; --", "%", "_", "\\", '") OR 1=1 --']
    for value in attempts:
        _check(client, rows, q("equal", "plain", [value]))
        _check(client, rows, q("startsWith", "name", [value]))
        _check(client, rows, q("search", "bio", [value]))
    assert ok(list_rows(client, DB, TABLE))["total"] == len(rows)
