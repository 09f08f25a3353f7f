"""pandas is the oracle of the filter DSL.

For random frames with the dtypes the client produces (nullable Int64 and boolean, float64,
pandas' str, datetime64[ms, UTC], all with nulls; text with accents, quotes, case variants)
and random filters:

* `frame[evaluate(expr, frame)]` equals `frame.query(repr(expr))`, which checks the client-side
  evaluation and the query-string form at once;
* the compiled queries, run by a model of the service's query semantics (SQL NULLs,
  case- and accent-insensitive text; service interface, "Queries", "Collation"), narrowed
  by the residual, give the same rows: service rows ∩ residual == `frame.query(...)`.

Date-time literals are handed to `frame.query` as `@` variables holding Timestamps: with a
string literal, pandas' query() rewrites `==`, `!=` and `in` into an `isin` that never matches
a date-time column (see `test_pandas_query_datetime_string_equality_quirk`).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from frameport import Expr, col
from frameport._expr import ColumnSpec, compile_filter, evaluate, parse
from frameport.local.store._collation import fold

TEXTS = [
    "Oslo", "oslo", "OSLO", "Ósló", "Bergen", "bergen", "it's", 'say "hi"', "a`b", "x & y | z",
    "@home", "", " ", "straße", "STRASSE", "ﬁle", "file", "100%", "a_b", "a%b", "back\\slash",
    "naïve", "NAIVE", "trường đại học", "truong dai hoc", "#tag", "Ωmega", "ωMEGA",
]  # fmt: skip
PATTERNS = [
    "O",
    "o",
    "os",
    "sl",
    "ló",
    "LO",
    "",
    "%",
    "_",
    "a_",
    "\\",
    "'",
    "ss",
    "ß",
    "fi",
    "ï",
    "ROW",
    "w1",
]
REGEXES = ["O", "o.*", "[A-Z]", "a|b", "(os|OS)", r"\w+", "^$", ".*é", "ß", "tr.*c$", r"\d"]
INSTANTS = [
    pd.Timestamp("2020-10-15T06:38:00.000Z"),
    pd.Timestamp("2020-10-15T06:38:00.001Z"),
    pd.Timestamp("1999-12-31T23:59:59.999Z"),
    pd.Timestamp("2024-02-29T12:00:00.000Z"),
]
SCHEMA = {
    "i": ColumnSpec("integer"),
    "f": ColumnSpec("float"),
    "s": ColumnSpec("string"),
    "first name": ColumnSpec("string"),
    "b": ColumnSpec("boolean"),
    "t": ColumnSpec("datetime"),
}
OPERATORS: list[Callable[[Any, Any], Any]] = [
    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
]  # fmt: skip


# frames ------------------------------------------------------------------------------------
@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    size = draw(st.integers(0, 10))

    def column(values: st.SearchStrategy[Any]) -> list[Any]:
        return draw(st.lists(st.none() | values, min_size=size, max_size=size))

    stamps = column(st.sampled_from(INSTANTS))
    return pd.DataFrame(
        {
            "$id": pd.Series([f"row{index}" for index in range(size)], dtype="str"),
            "i": pd.array(column(st.integers(-3, 3)), dtype="Int64"),
            "f": pd.Series(
                [np.nan if v is None else v for v in column(st.sampled_from([-1.5, 0.0, 2.0]))],
                dtype="float64",
            ),
            "s": pd.Series(column(st.sampled_from(TEXTS)), dtype="str"),
            "first name": pd.Series(column(st.sampled_from(TEXTS)), dtype="str"),
            "b": pd.array(column(st.booleans()), dtype="boolean"),
            "t": pd.Series(pd.to_datetime(stamps, utc=True)).astype("datetime64[ms, UTC]"),
        }
    )


# filters -----------------------------------------------------------------------------------
INTEGER_VALUES = st.integers(-4, 4) | st.sampled_from([0.5, -1.5, 2.0, 1e19, -1e19])
FLOAT_VALUES = st.sampled_from([-1.5, 0.0, 0.5, 2.0, 1, 3])
TEXT_VALUES = st.sampled_from(TEXTS)
INSTANT_VALUES = st.sampled_from(INSTANTS).flatmap(
    lambda stamp: st.sampled_from(
        [
            stamp,
            stamp + pd.Timedelta(microseconds=500),
            stamp - pd.Timedelta(nanoseconds=1),
            stamp.tz_localize(None).to_pydatetime(),  # naive: taken as UTC
            stamp.date(),
        ]
    )
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "i": INTEGER_VALUES,
    "f": FLOAT_VALUES,
    "s": TEXT_VALUES,
    "first name": TEXT_VALUES,
    "t": INSTANT_VALUES,
    "$id": st.sampled_from(["row0", "row1", "row3", "ROW1", "row"]),
}


def comparisons() -> st.SearchStrategy[Expr]:
    ordered = st.sampled_from(sorted(VALUES)).flatmap(
        lambda name: st.builds(
            lambda op, value: op(col(name), value), st.sampled_from(OPERATORS), VALUES[name]
        )
    )
    boolean = st.builds(
        lambda op, value: op(col("b"), value),
        st.sampled_from([operator.eq, operator.ne]),
        st.booleans(),
    )
    return ordered | boolean


def memberships() -> st.SearchStrategy[Expr]:
    values = {**VALUES, "b": st.booleans()}
    return st.sampled_from(sorted(values)).flatmap(
        lambda name: st.lists(values[name], max_size=4).map(lambda items: col(name).isin(items))
    )


def ranges() -> st.SearchStrategy[Expr]:
    return st.sampled_from(sorted(VALUES)).flatmap(
        lambda name: st.builds(lambda lo, hi: col(name).between(lo, hi), VALUES[name], VALUES[name])
    )


def text_predicates() -> st.SearchStrategy[Expr]:
    names = st.sampled_from(["s", "first name", "$id"])
    plain = st.builds(
        lambda name, method, pattern: getattr(col(name).str, method)(pattern),
        names,
        st.sampled_from(["startswith", "endswith", "contains"]),
        st.sampled_from(PATTERNS) | TEXT_VALUES,
    )
    regex = st.builds(
        lambda name, pattern: col(name).str.match(pattern), names, st.sampled_from(REGEXES)
    )
    return plain | regex


def missing() -> st.SearchStrategy[Expr]:
    names = st.sampled_from([*SCHEMA, "$id"])
    return names.map(lambda name: col(name).isna()) | names.map(lambda name: col(name).notna())


LEAVES = (
    comparisons() | memberships() | ranges() | text_predicates() | missing() | st.just(col("b"))
)
FILTERS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.tuples(children, children).map(lambda pair: pair[0] & pair[1]),
        st.tuples(children, children).map(lambda pair: pair[0] | pair[1]),
        children.map(lambda child: ~child),
    ),
    max_leaves=6,
)


# the oracle --------------------------------------------------------------------------------
_DATETIME_TEXT = r"'\d{4}-\d{2}-\d{2}T[^']*'"
_DATETIME_LIST = re.compile(rf"\[{_DATETIME_TEXT}(?:, {_DATETIME_TEXT})*\]")
_DATETIME_LITERAL = re.compile(_DATETIME_TEXT)
_ESCAPED_BACKSLASH_AT_END = re.compile(r"\\\\['\"]")


def pandas_query(frame: pd.DataFrame, expr: Expr) -> pd.DataFrame:
    """`frame.query(repr(expr))`, with date-time literals passed as Timestamp variables."""
    variables: dict[str, object] = {}

    def variable(value: object) -> str:
        name = f"stamp{len(variables)}"
        variables[name] = value
        return "@" + name

    def stamp(text: str) -> pd.Timestamp:
        return pd.Timestamp(text.strip("'"))

    text = _DATETIME_LIST.sub(
        lambda m: variable([stamp(item) for item in _DATETIME_LITERAL.findall(m.group())]),
        repr(expr),
    )
    text = _DATETIME_LITERAL.sub(lambda m: variable(stamp(m.group())), text)
    if "`" in text and _ESCAPED_BACKSLASH_AT_END.search(text):
        reject()  # pandas' backtick tokenizer misreads such a literal (pandas 3.1.1)
    return frame.query(text, local_dict=variables)


# a model of the service's query semantics --------------------------------------------------
class ServiceModel:
    """Runs query strings over a frame as the service runs them (service interface, "Queries",
    "Collation"): the queries of a request are ANDed, NULL makes every method but
    isNull/isNotNull unknown (SQL), text compares folded (case and accents ignored), `regex`
    searches case-insensitively, `$id` compares exactly."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.rows = [
            {str(name): _python_value(value) for name, value in row.items()}
            for row in frame.to_dict("records")
        ]

    def ids(self, queries: Sequence[str]) -> set[str]:
        parsed = [json.loads(query) for query in queries]
        return {row["$id"] for row in self.rows if all(self.truth(q, row) for q in parsed)}

    def truth(self, query: dict[str, Any], row: dict[str, Any]) -> bool | None:
        method: str = query["method"]
        values = query.get("values", [])
        if method in ("and", "or"):
            results = [self.truth(value, row) for value in values]
            decided = method == "or"  # the value that settles the outcome
            if decided in results:
                return decided
            return None if None in results else not decided
        name = query["column"]
        value = row[name]
        if method in ("isNull", "isNotNull"):
            return (value is None) == (method == "isNull")
        if value is None:
            return None
        key = self._key(name)
        field, args = key(value), [key(_wire_value(name, arg)) for arg in values]
        negated = method.startswith("not")
        base = method[3].lower() + method[4:] if negated else method
        result = self._test(base, field, args, value, values)
        return not result if negated else result

    @staticmethod
    def _test(method: str, field: Any, args: list[Any], raw: Any, raw_args: list[Any]) -> bool:
        if method == "equal":
            return field in args
        if method == "between":
            return bool(args[0] <= field <= args[1])
        if method == "startsWith":
            return bool(field.startswith(args[0]))
        if method == "endsWith":
            return bool(field.endswith(args[0]))
        if method == "contains":
            return args[0] in field
        if method == "regex":
            return re.search(raw_args[0], raw, re.IGNORECASE) is not None
        compare = {
            "lessThan": operator.lt,
            "lessThanEqual": operator.le,
            "greaterThan": operator.gt,
            "greaterThanEqual": operator.ge,
        }[method]
        return bool(compare(field, args[0]))

    @staticmethod
    def _key(name: str) -> Callable[[Any], Any]:
        return fold if SCHEMA.get(name, ColumnSpec("id")).kind == "string" else (lambda v: v)


def _python_value(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and np.isnan(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def _wire_value(name: str, value: Any) -> Any:
    spec = SCHEMA.get(name)
    if spec is not None and spec.kind == "datetime":
        return pd.Timestamp(value)
    return value


def service_then_client(frame: pd.DataFrame, expr: Expr, **limits: int) -> set[str]:
    compiled = compile_filter(expr, SCHEMA, **limits)  # type: ignore[arg-type]
    model = ServiceModel(frame)
    returned: set[str] = set()
    for queries in compiled.requests:
        for query in queries:
            assert len(query) <= limits.get("max_query_length", 4096)
        assert len(queries) <= limits.get("max_queries", 90)
        returned |= model.ids(queries)
    batch = frame[frame["$id"].isin(returned)]
    if compiled.residual is not None:
        batch = batch[evaluate(compiled.residual, batch)]
    return set(batch["$id"])


# the properties ----------------------------------------------------------------------------
PROPERTY = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(frame=frames(), expr=FILTERS)
def test_evaluate_and_repr_agree_with_pandas_query(frame: pd.DataFrame, expr: Expr) -> None:
    expected = pandas_query(frame, expr)
    mask = evaluate(expr, frame)
    assert mask.dtype == bool
    assert list(frame[mask].index) == list(expected.index)


@PROPERTY
@given(frame=frames(), expr=FILTERS)
def test_service_rows_and_residual_give_pandas_rows(frame: pd.DataFrame, expr: Expr) -> None:
    expected = set(pandas_query(frame, expr)["$id"])
    assert service_then_client(frame, expr) == expected


@PROPERTY
@given(frame=frames(), expr=FILTERS)
def test_split_and_relaxed_requests_give_pandas_rows(frame: pd.DataFrame, expr: Expr) -> None:
    expected = set(pandas_query(frame, expr)["$id"])
    assert service_then_client(frame, expr, max_query_length=160, max_queries=2) == expected
    assert service_then_client(frame, expr, max_query_length=90, max_queries=1) == expected


def test_service_rows_are_a_superset_before_the_residual() -> None:
    frame = pd.DataFrame({"$id": ["a", "b", "c"], "s": pd.Series(["Oslo", "OSLO", None])})
    compiled = compile_filter(col("s") == "Oslo", SCHEMA)
    assert ServiceModel(frame).ids(compiled.requests[0]) == {"a", "b"}
    assert compiled.residual is not None
    assert list(evaluate(compiled.residual, frame)) == [True, False, False]


def test_regex_narrowing_ignoring_case_keeps_every_match() -> None:
    frame = pd.DataFrame({"$id": ["a", "b", "c"], "s": pd.Series(["NAIVE", "naive", None])})
    for pattern in ["[^a-z]", "[^A-Z]", "[A-Z]", "N"]:
        expr = col("s").str.match(pattern)
        assert service_then_client(frame, expr) == set(pandas_query(frame, expr)["$id"])


def test_datetime_ordering_literals_work_in_pandas_query_directly() -> None:
    frame = pd.DataFrame({"t": pd.Series([*INSTANTS[:3], pd.NaT]).astype("datetime64[ms, UTC]")})
    for expr in [
        col("t") > INSTANTS[0],
        ~(col("t") <= INSTANTS[1]),
        col("t").between(INSTANTS[2], INSTANTS[0]),
        ~col("t").between(INSTANTS[2], INSTANTS[0] + pd.Timedelta(microseconds=1)),
    ]:
        assert list(frame[evaluate(expr, frame)].index) == list(frame.query(repr(expr)).index)


def test_pandas_query_datetime_string_equality_quirk() -> None:
    """Documents the one place `evaluate` departs from `frame.query(repr(expr))`: pandas turns
    `t == 'text'` into `t.isin(['text'])`, which never matches a date-time; frameport compares
    instants. If pandas changes this, the departure can go."""
    frame = pd.DataFrame(
        {"t": pd.Series(pd.to_datetime(INSTANTS[:1], utc=True)).astype("datetime64[ms, UTC]")}
    )
    expr = col("t") == INSTANTS[0]
    assert frame.query(repr(expr)).empty
    assert list(evaluate(expr, frame)) == [True]


@pytest.mark.parametrize(
    "text",
    [
        "i == 9007199254740992.0",
        "i != 9007199254740992.0",
        "i < 9007199254740994.0",
        "i <= 9007199254740994.0",
        "i > 9007199254740994.0",
        "i >= 9007199254740994.0",
        "i == 9.223372036854776e18",
        "i < -9.223372036854776e18",
        "i.between(9007199254740994.0, 9.223372036854776e18)",
        "not i.between(1e19, 2e19)",
        "i.between(-2e19, -1e19)",
        "i in [9007199254740993, 0.5]",
        "i in [9007199254740993, 0.5, -9223372036854775809]",  # an object list: exact
        "i in [9007199254740993, 9223372036854775808]",  # int64 and uint64: float64
        "i not in [9223372036854775807, 0.5]",
        "i in [9223372036854775807, -9223372036854775808]",
    ],
)
def test_integers_beyond_float_precision_compare_as_pandas_does(text: str) -> None:
    """pandas compares an Int64 column with a float in float64 (and an `isin` list numpy makes
    float64 too), so beyond 2**53 a float stands for every integer rounding to it."""
    values: list[int | None] = [
        2**53 - 1,
        2**53,
        2**53 + 1,
        2**53 + 2,
        2**53 + 3,
        2**63 - 513,
        2**63 - 512,
    ]
    values += [2**63 - 1, -(2**63), -(2**63) + 1, None]
    frame = pd.DataFrame(
        {"$id": [f"row{n}" for n in range(len(values))], "i": pd.array(values, dtype="Int64")}
    )
    expected = set(frame.query(text)["$id"])
    assert service_then_client(frame, parse(text)) == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (col("i") != 1, [False, True, False]),  # Int64: NA drops the null row, even under !=
        (~(col("i") == 1), [False, True, False]),
        (~col("i").isin([1]), [False, True, True]),  # isin is False on NA, so ~isin keeps it
        (col("f") != 1.5, [False, True, True]),  # float64: NaN compares unequal
        (~(col("f") > 1), [False, True, True]),
        (col("b"), [True, False, False]),
        (~col("b"), [False, True, False]),
        ((col("b") == True) | (col("i") == 1), [True, False, False]),  # noqa: E712
        (~((col("b") == True) & (col("f") > 100)), [True, True, True]),  # noqa: E712
    ],
)
def test_null_semantics_examples(expr: Expr, expected: list[bool]) -> None:
    frame = pd.DataFrame(
        {
            "$id": ["a", "b", "c"],
            "i": pd.array([1, 2, None], dtype="Int64"),
            "f": [1.5, 0.5, np.nan],
            "b": pd.array([True, False, None], dtype="boolean"),
        }
    )
    assert list(evaluate(expr, frame)) == expected
    assert list(frame.query(repr(expr)).index) == [i for i, keep in enumerate(expected) if keep]
    assert service_then_client(frame, expr) == {
        row for row, keep in zip(frame["$id"], expected, strict=True) if keep
    }
