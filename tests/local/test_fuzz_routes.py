"""Fuzzing every route: never a 500, never a hang.

Hypothesis draws a route of the service's route list, path IDs, query parameters and a JSON
body (from the parameter names the routes read, hostile strings, deep nesting, huge numbers,
lone surrogates, query strings) and sends it with an API key or as a guest. Any answer is
fine but a 5xx; the run is bounded and its seed fixed, so it is the same in every run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from callers import guest_client, key_client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tablesdb_helpers import create_database, create_table, wait_available

from frameport.local import LocalService
from frameport.local.routes import ROUTES, RouteSpec

#: An answer slower than this is a hang.
PATIENCE = 30.0
IDS = ["fz", "t", "b", "r1", "m1", "u1", "name", "unique()", "", "x" * 40, "..", "%00"]
PARAMS = [
    "rowId", "data", "permissions", "queries", "queries[]", "name", "tableId", "databaseId",
    "bucketId", "fileId", "columns", "indexes", "key", "type", "size", "required", "default",
    "array", "min", "max", "elements", "roles", "userId", "email", "password", "phone",
    "teamId", "rows", "enabled", "rowSecurity", "fileSecurity", "maximumFileSize",
    "allowedFileExtensions", "duration", "sessionId", "search", "total", "ttl", "columnId",
    "attributes", "orders", "lengths", "encrypt", "format", "entrypoint", "activate", "folder",
]  # fmt: skip
NASTY = [
    "\ud800", "\x00", "a\x00b", "'; DROP TABLE x; --", "(a+)+$", "%", "_", "\\", "{}", "[]",
    "unique()", "null", "9" * 30, "é" * 300, "\U0001f600",
]  # fmt: skip
METHODS = [
    "equal", "notEqual", "lessThan", "greaterThan", "between", "startsWith", "endsWith",
    "regex", "search", "contains", "isNull", "and", "or", "limit", "offset", "cursorAfter",
    "orderAsc", "select", "bogus",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([10**400, -(10**400), 1e308, -0.0])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(NASTY)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
query_strings = st.one_of(
    st.text(max_size=30),
    st.builds(
        lambda method, attribute, values: json.dumps(
            {"method": method, "attribute": attribute, "values": values}
        ),
        st.sampled_from(METHODS),
        st.sampled_from(["n", "s", "$id", "$createdAt", "nope", ""]),
        st.lists(json_values, max_size=3),
    ),
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[RouteSpec, str, dict[str, Any], bytes | None, bool]:
    spec = draw(st.sampled_from(ROUTES))
    path = spec.path.removeprefix("/v1")
    for name in [part[1:-1] for part in path.split("/") if part.startswith("{")]:
        path = path.replace(f"{{{name}}}", draw(st.sampled_from(IDS)) or "x", 1)
    query = {"queries[]": draw(st.lists(query_strings, max_size=3))}
    body: dict[str, Any] = draw(
        st.dictionaries(st.sampled_from(PARAMS), json_values | query_strings, max_size=5)
    )
    nesting = draw(st.sampled_from(["none", "string", "body", "query"]))
    # Past the recursion limit of Python's JSON decoder, even the higher one Hypothesis sets.
    deep = "[" * 50_000
    deep += "]" * len(deep)
    if nesting == "string":  # a JSON-string parameter (data, permissions) nested deeply
        body[draw(st.sampled_from(PARAMS))] = deep
    raw = None if spec.method == "GET" else json.dumps(body).encode()  # ASCII: surrogates kept
    if nesting == "body" and raw is not None:  # the body itself nested deeply
        raw = raw[:-1] + (b", " if body else b"") + b'"deep": ' + deep.encode() + b"}"
    if nesting == "query":  # a query value nested as deeply as 4096 characters allow
        value = "[" * 2000 + "]" * 2000
        query["queries[]"].append('{"method":"equal","attribute":"n","values":' + value + "}")
    return spec, path, query, raw, draw(st.booleans())


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(rate_limits=False) as service:
        with key_client(service) as admin:
            create_database(admin, "fz")
            columns = [
                {"key": "n", "type": "integer", "required": False},
                {"key": "s", "type": "string", "size": 32, "required": False},
            ]
            create_table(admin, "fz", "t", columns=columns)
            wait_available(admin, "fz", "t")
            admin.post("/tablesdb/fz/tables/t/rows", json={"rowId": "r1", "data": {"n": 1}})
            admin.post("/storage/buckets", json={"bucketId": "b", "name": "b"})
        yield service


@pytest.fixture(scope="module")
def callers(svc: LocalService) -> Iterator[dict[bool, httpx.Client]]:
    with key_client(svc) as admin, guest_client(svc) as guest:
        yield {True: admin, False: guest}


@settings(
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=requests())
def test_no_route_answers_500_or_hangs(
    callers: dict[bool, httpx.Client],
    request: tuple[RouteSpec, str, dict[str, Any], bytes | None, bool],
) -> None:
    spec, path, query, body, as_key = request
    response = callers[as_key].request(
        spec.method, path, params=query, content=body,
        headers={"Content-Type": "application/json"}, timeout=PATIENCE,
    )  # fmt: skip
    assert response.status_code < 500, (spec.method, path, response.text)
