"""The compiler: filter trees → the service's JSON query strings, plus the client residual."""

from __future__ import annotations

import datetime
import json
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

from frameport import Expr, FilterError, col
from frameport._core._queries import (
    MAX_QUERY_LENGTH,
    ServiceQuery,
    cursor_after_query,
    limit_query,
    offset_query,
    order_query,
    select_query,
)
from frameport._core._transport import queries_param
from frameport._expr import ColumnSpec, CompiledFilter, compile_filter, parse
from frameport._expr._compiler import pandas_null_value
from frameport._expr._fitting import MAX_FILTER_URL_LENGTH, Part, fit_requests
from frameport._expr._nodes import IsIn, Leaf, Not

SCHEMA = {
    "age": ColumnSpec("integer"),
    "score": ColumnSpec("float"),
    "city": ColumnSpec("string"),
    "bio": ColumnSpec("string"),
    "ok": ColumnSpec("boolean"),
    "born": ColumnSpec("datetime"),
    "tags": ColumnSpec("string", array=True),
}


def queries(expr: Expr | str, **options: Any) -> list[list[dict[str, Any]]]:
    """The compiled requests, each query decoded from JSON."""
    if isinstance(expr, str):
        expr = parse(expr)
    compiled = compile_filter(expr, SCHEMA, **options)
    return [[json.loads(query) for query in request] for request in compiled.requests]


def one(method: str, column: str, *values: Any) -> dict[str, Any]:
    return {"method": method, "column": column, "values": list(values)}


def either(*operands: dict[str, Any]) -> dict[str, Any]:
    return {"method": "or", "values": list(operands)}


def both(*operands: dict[str, Any]) -> dict[str, Any]:
    return {"method": "and", "values": list(operands)}


def residual(expr: Expr | str) -> str | None:
    if isinstance(expr, str):
        expr = parse(expr)
    rest = compile_filter(expr, SCHEMA).residual
    return None if rest is None else repr(rest)


# the measured null table ---------------------------------------------------------------------
NULL_ROW = pd.DataFrame(
    {
        "i": pd.array([None], dtype="Int64"),
        "b": pd.array([None], dtype="boolean"),
        "f": pd.Series([np.nan], dtype="float64"),
        "s": pd.Series([None], dtype="str"),
        "t": pd.Series([pd.NaT], dtype="datetime64[ms, UTC]"),
    }
)
COLUMN_OF_KIND = {"integer": "i", "boolean": "b", "float": "f", "string": "s", "datetime": "t"}
VALUE_TEXT = {
    "integer": "1",
    "boolean": "True",
    "float": "1.5",
    "string": "'x'",
    "datetime": "'2020-01-01T00:00:00.000+00:00'",
}
LEAF_TEMPLATES = [
    "{c} == {v}",
    "{c} != {v}",
    "{c} < {v}",
    "{c} <= {v}",
    "{c} > {v}",
    "{c} >= {v}",
    "{c} in [{v}]",
    "{c} == [{v}]",
    "{c}.between({v}, {v})",
    "{c}.isna()",
]
STRING_TEMPLATES = [
    "{c}.str.startswith('x')",
    "{c}.str.endswith('x')",
    "{c}.str.contains('x', regex=False)",
    "{c}.str.match('x')",
]
CASES = [(kind, template) for kind in VALUE_TEXT for template in LEAF_TEMPLATES] + [
    ("string", template) for template in STRING_TEMPLATES
]


@pytest.mark.parametrize(("kind", "template"), CASES)
@pytest.mark.parametrize("negated", [False, True])
def test_null_table_matches_installed_pandas(kind: str, template: str, negated: bool) -> None:
    """Measures, in the installed pandas, whether `DataFrame.query` keeps a null row."""
    text = template.format(c=COLUMN_OF_KIND[kind], v=VALUE_TEXT[kind])
    text = f"~({text})" if negated else text
    kept_by_pandas = len(NULL_ROW.query(text)) == 1
    node = parse(text).node
    leaf: Leaf = node.operand if isinstance(node, Not) else node  # type: ignore[assignment]
    value = pandas_null_value(leaf, kind)  # type: ignore[arg-type]
    assert kept_by_pandas == (value is not None and value != negated)


def test_boolean_column_as_condition_drops_null_rows_in_pandas() -> None:
    assert NULL_ROW.query("b").empty
    assert NULL_ROW.query("~b").empty


# representative compiled filters ------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("age > 30", [one("greaterThan", "age", 30)]),
        (
            "age >= 30 and age < 40",
            [one("greaterThanEqual", "age", 30), one("lessThan", "age", 40)],
        ),
        ("30 < age", [one("greaterThan", "age", 30)]),
        ("1 < age <= 5", [one("greaterThan", "age", 1), one("lessThanEqual", "age", 5)]),
        ("age != 1", [one("notEqual", "age", 1)]),
        ("~(age < 3)", [one("greaterThanEqual", "age", 3)]),
        ("score != 1.5", [either(one("notEqual", "score", 1.5), one("isNull", "score"))]),
        ("~(score < 3)", [either(one("greaterThanEqual", "score", 3.0), one("isNull", "score"))]),
        ("score == 2", [one("equal", "score", 2.0)]),
        ("age in [1, 2]", [one("equal", "age", 1, 2)]),
        ("age == [1, 2]", [one("equal", "age", 1, 2)]),
        (
            "age not in [1, 2]",
            [
                either(
                    both(one("notEqual", "age", 1), one("notEqual", "age", 2)),
                    one("isNull", "age"),
                )
            ],
        ),
        ("score not in [1.5]", [either(one("notEqual", "score", 1.5), one("isNull", "score"))]),
        ("age.between(1, 5)", [one("between", "age", 1, 5)]),
        ("~age.between(1, 5)", [one("notBetween", "age", 1, 5)]),
        (
            "~score.between(1, 5)",
            [either(one("notBetween", "score", 1.0, 5.0), one("isNull", "score"))],
        ),
        ("age.isna()", [one("isNull", "age")]),
        ("age.notna()", [one("isNotNull", "age")]),
        ("~age.isna()", [one("isNotNull", "age")]),
        ("tags.isna()", [one("isNull", "tags")]),
        ("ok", [one("equal", "ok", True)]),
        ("~ok", [one("equal", "ok", False)]),
        ("ok != True", [one("notEqual", "ok", True)]),
        ("ok in [True, False]", [one("equal", "ok", True, False)]),
        ("`$id` == 'a1'", [one("equal", "$id", "a1")]),
        ("`$id` != 'a1'", [one("notEqual", "$id", "a1")]),
        ("`$id` not in ['a', 'b']", [one("notEqual", "$id", "a"), one("notEqual", "$id", "b")]),
        ("`$sequence` > 10", [one("greaterThan", "$sequence", 10)]),
        (
            "(age > 1) | (score < 2)",
            [either(one("greaterThan", "age", 1), one("lessThan", "score", 2.0))],
        ),
        (
            "~((age > 1) | (score < 2))",
            [
                one("lessThanEqual", "age", 1),
                either(one("greaterThanEqual", "score", 2.0), one("isNull", "score")),
            ],
        ),
        (
            "not (age > 1 and ok)",
            [either(one("lessThanEqual", "age", 1), one("equal", "ok", False))],
        ),
        ("not not age > 1", [one("greaterThan", "age", 1)]),
        # values snapped to what an integer column holds
        ("age > 30.5", [one("greaterThanEqual", "age", 31)]),
        ("age >= 30.5", [one("greaterThanEqual", "age", 31)]),
        ("age < 30.5", [one("lessThanEqual", "age", 30)]),
        ("age <= -30.5", [one("lessThanEqual", "age", -31)]),
        ("age == 30.0", [one("equal", "age", 30)]),
        ("age != 30.5", [one("isNotNull", "age")]),
        ("age < 1e19", [one("isNotNull", "age")]),
        ("age < 100000000000000000000", [one("isNotNull", "age")]),
        ("age >= -100000000000000000000", [one("isNotNull", "age")]),
        ("age.between(1.5, 3.5)", [one("between", "age", 2, 3)]),
        ("age.between(-1e300, 1e300)", [one("between", "age", -(2**63), 2**63 - 1)]),
        ("~age.between(2.5, 2.7)", [one("isNotNull", "age")]),
        ("~age.between(1e19, 2e19)", [one("isNotNull", "age")]),
        ("age in [1.0, 1.5]", [one("equal", "age", 1)]),
        # pandas compares integers with a float in float64, where 2**53 + 1 is 2**53
        ("age == 9007199254740992.0", [one("between", "age", 2**53, 2**53 + 1)]),
        ("age > 9007199254740992.0", [one("greaterThan", "age", 2**53 + 1)]),
        ("age < 9.223372036854776e18", [one("lessThan", "age", 2**63 - 512)]),
        ("age in [9007199254740993, 0.5]", [one("equal", "age", 2**53)]),
        ("age in [9007199254740993]", [one("equal", "age", 2**53 + 1)]),
        ("age not in []", []),
        ("city in [] or age > 1", [one("greaterThan", "age", 1)]),
    ],
)
def test_compiled_queries(text: str, expected: list[dict[str, Any]]) -> None:
    assert queries(text) == [expected]
    assert residual(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "age == 30.5",
        "age > 1e19",
        "age > 100000000000000000000",
        "age in []",
        "age.between(2.5, 2.7)",
        "age.between(1e19, 2e19)",
        "age.between(-2e19, -1e19)",
        "age in [9223372036854775807, 0.5]",
        "ok and age in []",
    ],
)
def test_filters_that_match_no_row_send_no_request(text: str) -> None:
    compiled = compile_filter(parse(text), SCHEMA)
    assert compiled.requests == ()
    assert compiled.residual is None
    assert compiled.explain() == "No request: the filter matches no row."


def test_no_filter_is_one_request_without_queries() -> None:
    assert compile_filter(None, SCHEMA) == CompiledFilter(((),), None)


def test_datetime_values_are_sent_in_utc_with_milliseconds() -> None:
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    stamp = datetime.datetime(2020, 10, 15, 8, 38, tzinfo=plus_two)
    assert queries(col("born") >= stamp) == [
        [one("greaterThanEqual", "born", "2020-10-15T06:38:00.000+00:00")]
    ]
    assert queries("born < '2020-10-15'") == [
        [one("lessThan", "born", "2020-10-15T00:00:00.000+00:00")]
    ]
    assert queries(col("born").isin([datetime.date(2021, 1, 2)])) == [
        [one("equal", "born", "2021-01-02T00:00:00.000+00:00")]
    ]


def test_datetime_values_finer_than_milliseconds_are_snapped() -> None:
    stamp = pd.Timestamp("2020-10-15T06:38:00.0005Z")
    assert queries(col("born") > stamp) == [
        [one("greaterThanEqual", "born", "2020-10-15T06:38:00.001+00:00")]
    ]
    assert queries(col("born") <= stamp) == [
        [one("lessThanEqual", "born", "2020-10-15T06:38:00.000+00:00")]
    ]
    assert compile_filter(col("born") == stamp, SCHEMA).requests == ()
    assert queries(col("born") != stamp) == [[]]


def test_string_conditions_narrow_and_leave_the_exact_test_to_the_client() -> None:
    assert queries("city == 'Oslo'") == [[one("equal", "city", "Oslo")]]
    assert residual("city == 'Oslo'") == "city == 'Oslo'"
    assert queries("city.str.startswith('O')") == [[one("startsWith", "city", "O")]]
    assert queries("city.str.endswith('o')") == [[one("endsWith", "city", "o")]]
    assert queries("city.str.contains('sl', regex=False)") == [[one("contains", "city", "sl")]]
    assert queries("city in ['Oslo', 'Bergen']") == [[one("equal", "city", "Oslo", "Bergen")]]
    assert residual("city.str.contains('sl', regex=False)") is not None


@pytest.mark.parametrize(
    "text",
    ["city != 'Oslo'", "not city == 'Oslo'", "city not in ['a']", "~city.str.startswith('O')"],
)
def test_negated_string_conditions_are_left_to_the_client(text: str) -> None:
    assert queries(text) == [[]]
    assert residual(text) == repr(parse(text))


def test_string_ordering_cannot_narrow_beyond_not_null() -> None:
    # the service's case-insensitive order differs from pandas' code-point order
    assert queries("city < 'M'") == [[one("isNotNull", "city")]]
    assert queries("city.between('A', 'M')") == [[one("isNotNull", "city")]]
    assert residual("city < 'M'") == "city < 'M'"


def test_only_inexact_conjuncts_are_left_to_the_client() -> None:
    text = "age > 1 and city == 'Oslo' and score < 2"
    assert queries(text) == [
        [
            one("greaterThan", "age", 1),
            one("equal", "city", "Oslo"),
            one("lessThan", "score", 2.0),
        ]
    ]
    assert residual(text) == "city == 'Oslo'"
    assert residual("age > 1 or city == 'Oslo'") == "age > 1 or city == 'Oslo'"


def test_regex_match_is_anchored_and_sent_only_when_portable() -> None:
    assert queries("city.str.match('O.*o$')") == [[one("regex", "city", "^(?:O.*o$)")]]
    assert queries("city.str.match('[A-Z]+ (a|b)')") == [
        [one("regex", "city", "^(?:[A-Z]+ (a|b))")]
    ]
    # \w means more in Python than in PCRE: only the null test is sent
    assert queries(r"city.str.match('\\w+')") == [[one("isNotNull", "city")]]
    assert queries("city.str.match('(?i)x')") == [[one("isNotNull", "city")]]
    # ignoring case, a negated class matches less: [^a-z] refuses "N"
    assert queries("city.str.match('[^a-z]')") == [[one("isNotNull", "city")]]
    assert queries("city.str.match('[a^z]')") == [[one("regex", "city", "^(?:[a^z])")]]
    assert residual("city.str.match('O')") == "city.str.match('O')"


def test_search_is_sent_and_never_left_to_the_client() -> None:
    text = "bio.search('deep learning') and city == 'Oslo'"
    assert queries(text) == [[one("search", "bio", "deep learning"), one("equal", "city", "Oslo")]]
    assert residual(text) == "city == 'Oslo'"
    assert queries("~bio.search('x')") == [[one("notSearch", "bio", "x")]]


def test_search_that_the_client_would_have_to_check_is_refused() -> None:
    with pytest.raises(FilterError, match="search"):
        compile_filter(parse("bio.search('x') or city == 'Oslo'"), SCHEMA)


def test_member_attribute_for_the_legacy_interface() -> None:
    compiled = compile_filter(parse("age > 1 or score < 2"), SCHEMA, member="attribute")
    assert json.loads(compiled.requests[0][0]) == {
        "method": "or",
        "values": [
            {"method": "greaterThan", "attribute": "age", "values": [1]},
            {"method": "lessThan", "attribute": "score", "values": [2.0]},
        ],
    }


def test_query_strings_are_compact_json_with_text_as_is() -> None:
    compiled = compile_filter(col("$id") == "ÆØÅ", SCHEMA)
    assert compiled.requests == (('{"method":"equal","column":"$id","values":["ÆØÅ"]}',),)


def test_explain_shows_requests_and_residual() -> None:
    compiled = compile_filter(parse("age > 30 and city == 'Oslo'"), SCHEMA)
    assert compiled.explain() == (
        "Request 1 of 1:\n"
        '  {"method":"greaterThan","column":"age","values":[30]}\n'
        '  {"method":"equal","column":"city","values":["Oslo"]}\n'
        "Applied by the client to the rows returned: city == 'Oslo'"
    )
    assert compile_filter(None, SCHEMA).explain() == "Request 1 of 1: no filter"


# fitting the service's limits ---------------------------------------------------------------
def equal_values(request: list[dict[str, Any]], column: str) -> list[Any]:
    found: list[Any] = []
    for query in request:
        for item in query["values"] if query["method"] == "or" else [query]:
            if item["method"] == "equal" and item["column"] == column:
                found.extend(item["values"])
    return found


def test_isin_with_more_than_500_values_is_an_or_of_chunks() -> None:
    compiled = compile_filter(col("age").isin(range(600)), SCHEMA)
    (request,) = compiled.requests
    (query,) = request
    assert len(query) <= MAX_QUERY_LENGTH
    assert json.loads(query) == either(
        one("equal", "age", *range(500)), one("equal", "age", *range(500, 600))
    )


def test_isin_too_long_for_one_string_is_split_across_requests() -> None:
    compiled = compile_filter((col("score") > 1) & col("age").isin(range(3000)), SCHEMA)
    assert len(compiled.requests) > 1
    seen: list[int] = []
    for request in compiled.requests:
        assert all(len(query) <= MAX_QUERY_LENGTH for query in request)
        decoded = [json.loads(query) for query in request]
        assert one("greaterThan", "score", 1.0) in decoded
        for query in decoded:
            for item in query["values"] if query["method"] == "or" else [query]:
                if item["method"] == "equal":
                    assert len(item["values"]) <= 500
        seen.extend(equal_values(decoded, "age"))
    assert sorted(seen) == list(range(3000))
    assert compiled.residual is None


def test_long_top_level_or_is_split_across_requests() -> None:
    names = [f"{'x' * 1500}{number}" for number in range(6)]
    expr = col("$id").isin(names[:1])
    for name in names[1:]:
        expr = expr | (col("$id") == name)
    compiled = compile_filter(expr, SCHEMA)
    assert len(compiled.requests) >= 3
    ids = [v for request in compiled.requests for v in equal_values(
        [json.loads(query) for query in request], "$id")]  # fmt: skip
    assert sorted(ids) == sorted(names)
    assert compiled.residual is None


def test_many_conjuncts_are_packed_into_and_queries() -> None:
    expr = col("age") != 0
    for number in range(1, 150):
        expr = expr & (col("age") != number)
    compiled = compile_filter(expr, SCHEMA)
    (request,) = compiled.requests
    assert len(request) < 90
    decoded = [json.loads(query) for query in request]
    unequal = [
        item["values"][0]
        for query in decoded
        for item in (query["values"] if query["method"] == "and" else [query])
    ]
    assert sorted(unequal) == list(range(150))
    assert compiled.residual is None


def test_conjuncts_beyond_the_limits_are_left_to_the_client() -> None:
    expr = (col("age") > 1) & (col("score") < 2) & (col("ok") == True)  # noqa: E712
    compiled = compile_filter(expr, SCHEMA, max_queries=1, max_query_length=60)
    assert [json.loads(query) for query in compiled.requests[0]] == [one("greaterThan", "age", 1)]
    assert repr(compiled.residual) == "score < 2 and ok == True"


def test_an_and_inside_a_long_query_keeps_what_fits() -> None:
    expr = ~col("age").isin(range(1000))  # or(and(notEqual x 1000), isNull)
    compiled = compile_filter(expr, SCHEMA, max_queries=3)
    assert all(len(request) <= 3 for request in compiled.requests)
    assert all(len(query) <= MAX_QUERY_LENGTH for r in compiled.requests for query in r)
    assert repr(compiled.residual) == repr(expr)


def test_search_is_kept_when_other_conjuncts_are_dropped() -> None:
    expr = (col("age") > 1) & col("bio").search("x")
    packed = compile_filter(expr, SCHEMA, max_queries=1)
    assert [json.loads(query) for query in packed.requests[0]] == [
        both(one("greaterThan", "age", 1), one("search", "bio", "x"))
    ]
    assert packed.residual is None
    compiled = compile_filter(expr, SCHEMA, max_queries=1, max_query_length=60)
    assert [json.loads(query) for query in compiled.requests[0]] == [one("search", "bio", "x")]
    assert repr(compiled.residual) == "age > 1"


def test_search_too_long_for_the_service_is_refused() -> None:
    with pytest.raises(FilterError, match="too long"):
        compile_filter(col("bio").search("x" * 5000), SCHEMA)


def test_a_request_stays_within_the_url_length_httpx_allows() -> None:
    """`not in` with 600 IDs is 600 `notEqual`s; packed into 90 strings of 4096 characters
    they made a URL httpx refused (InvalidURL). What exceeds the URL budget is left to the
    client."""
    ids = [f"not-a-value-{n:04d}" for n in range(600)]
    expr = ~col("$id").isin(ids) & (col("age") > 1)
    compiled = compile_filter(expr, SCHEMA)
    (request,) = compiled.requests
    url = httpx.Request("GET", "http://localhost/rows", params=queries_param(request)).url
    assert len(str(url)) <= MAX_FILTER_URL_LENGTH + 100
    assert one("greaterThan", "age", 1) in [json.loads(query) for query in request]
    assert repr(compiled.residual) == repr(~col("$id").isin(ids))


def test_split_stops_at_the_request_cap() -> None:
    part = Part(frozenset({0}), ServiceQuery("equal", "age", tuple(range(3000))))
    fitted = fit_requests([part], member="column", max_requests=2)
    assert fitted.requests == ((),)
    assert fitted.relaxed == {0}
    uncapped = fit_requests([part], member="column")
    assert len(uncapped.requests) > 2
    assert not uncapped.relaxed


# what cannot be expressed -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (col("nope") > 1, "does not have"),
        (col("tags") == "x", "array column"),
        (col("tags").isin(["x"]), "array column"),
        (col("age").search("x"), "string column"),
        (col("tags").search("x"), "array column"),
        (col("age") > "30", "does not fit"),
        (col("age") == True, "does not fit"),  # noqa: E712
        (col("score") > "1", "does not fit"),
        (col("city") == 1, "does not fit"),
        (col("city").isin(["a", 1]), "does not fit"),
        (col("ok") == 1, "does not fit"),
        (col("ok") > False, "boolean columns"),
        (col("ok").between(False, True), "boolean columns"),
        (col("born") > 5, "does not fit"),
        (col("born") > "garbage", "ISO-8601"),
        (col("born") > "now", "ISO-8601"),
        (col("age").str.startswith("1"), "string column"),
        (col("age"), "not a condition"),
        (~col("city"), "not a condition"),
    ],
)
def test_filters_that_cannot_be_expressed_raise_before_any_request(
    expr: Expr, message: str
) -> None:
    with pytest.raises(FilterError, match=message):
        compile_filter(expr, SCHEMA)


def test_float_column_rejects_an_integer_too_large_for_a_float() -> None:
    with pytest.raises(FilterError, match="too large"):
        compile_filter(col("score") < 10**400, SCHEMA)


def test_unknown_column_message_lists_the_columns() -> None:
    with pytest.raises(FilterError) as caught:
        compile_filter(col("agee") > 1, SCHEMA)
    assert "age, bio, born, city, ok, score, tags" in str(caught.value)


def test_member_must_be_column_or_attribute() -> None:
    with pytest.raises(FilterError, match="member"):
        compile_filter(None, SCHEMA, member="field")


def test_compile_takes_an_expression() -> None:
    with pytest.raises(FilterError, match="expression"):
        compile_filter("age > 1", SCHEMA)  # type: ignore[arg-type]


def test_column_spec_rejects_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="kind"):
        ColumnSpec("text")  # type: ignore[arg-type]


def test_membership_keeps_negation_of_the_membership_node() -> None:
    assert parse("age not in [1]").node == Not(IsIn("age", (1,)))


# the other query parts ----------------------------------------------------------------------
def test_select_order_limit_cursor_queries() -> None:
    assert select_query(["name", "age"]) == '{"method":"select","values":["name","age"]}'
    assert select_query(("*",), "attribute") == '{"method":"select","values":["*"]}'
    assert order_query("age") == '{"method":"orderAsc","column":"age"}'
    assert order_query("age", ascending=False, member="attribute") == (
        '{"method":"orderDesc","attribute":"age"}'
    )
    assert limit_query(25) == '{"method":"limit","values":[25]}'
    assert offset_query(0) == '{"method":"offset","values":[0]}'
    assert cursor_after_query("65f1c0e2a1b2c3d4e5f6") == (
        '{"method":"cursorAfter","values":["65f1c0e2a1b2c3d4e5f6"]}'
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: select_query([]),
        lambda: select_query(["a", "a"]),
        lambda: select_query([""]),
        lambda: select_query(["a"], "field"),
        lambda: order_query(""),
        lambda: order_query("a", member="field"),
        lambda: limit_query(0),
        lambda: limit_query(True),
        lambda: limit_query(2.5),  # type: ignore[arg-type]
        lambda: offset_query(-1),
        lambda: offset_query(False),
        lambda: cursor_after_query(""),
        lambda: cursor_after_query("_starts-with-underscore"),
        lambda: cursor_after_query("x" * 37),
        lambda: cursor_after_query("has space"),
    ],
)
def test_query_part_helpers_reject_bad_arguments(call: Any) -> None:
    with pytest.raises(FilterError):
        call()
