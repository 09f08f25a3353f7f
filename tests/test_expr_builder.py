"""The expression builder: `col()`, `Expr` operators and methods, values, repr."""

from __future__ import annotations

import datetime
import doctest
import importlib
import math

import numpy as np
import pandas as pd
import pytest

from frameport import Expr, FilterError, col
from frameport._expr._nodes import (
    And,
    Between,
    ColumnRef,
    Comparison,
    IsIn,
    IsNull,
    Not,
    Or,
    Search,
    StringPredicate,
)


@pytest.mark.parametrize(
    ("expr", "node", "text"),
    [
        (col("age") == 30, Comparison("age", "==", 30), "age == 30"),
        (col("age") != 30, Comparison("age", "!=", 30), "age != 30"),
        (col("age") < 30, Comparison("age", "<", 30), "age < 30"),
        (col("age") <= 30, Comparison("age", "<=", 30), "age <= 30"),
        (col("age") > 30, Comparison("age", ">", 30), "age > 30"),
        (col("age") >= 30, Comparison("age", ">=", 30), "age >= 30"),
        (30 < col("age"), Comparison("age", ">", 30), "age > 30"),  # noqa: SIM300
        (30 >= col("age"), Comparison("age", "<=", 30), "age <= 30"),  # noqa: SIM300
        (np.int64(30) < col("age"), Comparison("age", ">", 30), "age > 30"),
        (col("city") == "Oslo", Comparison("city", "==", "Oslo"), "city == 'Oslo'"),
        (col("ok") == False, Comparison("ok", "==", False), "ok == False"),  # noqa: E712
        (col("x") == -1.5, Comparison("x", "==", -1.5), "x == -1.5"),
        (col("a").isin([1, 2]), IsIn("a", (1, 2)), "a in [1, 2]"),
        (col("a").isin([]), IsIn("a", ()), "a in []"),
        (~col("a").isin(["x"]), Not(IsIn("a", ("x",))), "a not in ['x']"),
        (col("a").between(1, 5), Between("a", 1, 5), "a.between(1, 5)"),
        (col("a").isna(), IsNull("a"), "a.isna()"),
        (col("a").isnull(), IsNull("a"), "a.isna()"),
        (col("a").notna(), Not(IsNull("a")), "a.notna()"),
        (col("a").notnull(), Not(IsNull("a")), "a.notna()"),
        (
            col("s").str.startswith("O"),
            StringPredicate("s", "startswith", "O"),
            "s.str.startswith('O')",
        ),
        (col("s").str.endswith("o"), StringPredicate("s", "endswith", "o"), "s.str.endswith('o')"),
        (
            col("s").str.contains("a.b"),
            StringPredicate("s", "contains", "a.b"),
            "s.str.contains('a.b', regex=False)",
        ),
        (col("s").str.match("O.*"), StringPredicate("s", "match", "O.*"), "s.str.match('O.*')"),
        (col("bio").search("deep"), Search("bio", "deep"), "bio.search('deep')"),
        (col("ok"), ColumnRef("ok"), "ok"),
        (~col("ok"), Not(ColumnRef("ok")), "not ok"),
        (~(col("a") > 1), Not(Comparison("a", ">", 1)), "not a > 1"),
        (~~col("ok"), Not(Not(ColumnRef("ok"))), "not not ok"),
    ],
)
def test_operators_and_methods_build_nodes(expr: Expr, node: object, text: str) -> None:
    assert expr.node == node
    assert repr(expr) == text


def test_and_or_flatten_and_print_with_pandas_precedence() -> None:
    a, b, c = col("a") > 1, col("b") > 2, col("c") > 3
    assert ((a & b) & c).node == And((a.node, b.node, c.node))
    assert (a & (b & c)).node == And((a.node, b.node, c.node))
    assert ((a | b) | c).node == Or((a.node, b.node, c.node))
    assert repr((a | b) & c) == "(a > 1 or b > 2) and c > 3"
    assert repr(a | (b & c)) == "a > 1 or b > 2 and c > 3"
    assert repr(~(a & b)) == "not (a > 1 and b > 2)"
    assert repr(~(a | b) & c) == "not (a > 1 or b > 2) and c > 3"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("first name", "`first name` == 1"),
        ("$id", "`$id` == 1"),
        ("class", "`class` == 1"),
        ("True", "`True` == 1"),
        ("datetime", "`datetime` == 1"),
        ("2nd", "`2nd` == 1"),
        ("a.b", "`a.b` == 1"),
        ("ﬁle", "`ﬁle` == 1"),  # Python would read the identifier as 'file'
        ("café", "café == 1"),
    ],
)
def test_column_names_are_quoted_when_they_are_not_plain_identifiers(name: str, text: str) -> None:
    assert repr(col(name) == 1) == text


def test_strings_print_as_python_literals() -> None:
    assert repr(col("s") == "it's") == '''s == "it's"'''
    assert repr(col("s") == "a\"b'c\n") == r"""s == 'a"b\'c\n'"""


def test_bool_raises_a_type_error_that_explains_the_operators() -> None:
    with pytest.raises(TypeError, match=r"& \(and\), \| \(or\) and ~ \(not\)"):
        bool(col("a") > 1)
    with pytest.raises(TypeError, match="between"):
        1 < col("a") < 5  # noqa: B015
    with pytest.raises(TypeError):
        (col("a") > 1) and (col("b") > 2)
    with pytest.raises(TypeError):
        if col("a") == 1:
            pass


def test_expressions_are_not_hashable() -> None:
    with pytest.raises(TypeError):
        hash(col("a"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.int64(3), 3),
        (np.uint8(3), 3),
        (np.float32(1.5), 1.5),
        (np.bool_(True), True),
        (np.str_("x"), "x"),
        (datetime.datetime(2020, 10, 15, 6, 38), "2020-10-15T06:38:00.000+00:00"),
        (
            datetime.datetime(
                2020, 10, 15, 8, 38, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
            ),
            "2020-10-15T06:38:00.000+00:00",
        ),
        (datetime.date(2020, 10, 15), "2020-10-15T00:00:00.000+00:00"),
        (pd.Timestamp("2020-10-15 06:38:00.123"), "2020-10-15T06:38:00.123+00:00"),
        (pd.Timestamp("2020-10-15 06:38:00.000500001"), "2020-10-15T06:38:00.000500001+00:00"),
        (np.datetime64("2020-10-15T06:38"), "2020-10-15T06:38:00.000+00:00"),
        (pd.Timestamp("0999-01-02"), "0999-01-02T00:00:00.000+00:00"),
    ],
)
def test_values_are_normalized_to_plain_literals(value: object, expected: object) -> None:
    node = (col("v") == value).node
    assert isinstance(node, Comparison)
    assert node.value == expected
    assert type(node.value) is type(expected)


def test_list_likes_for_isin() -> None:
    assert col("a").isin((1, 2)).node == IsIn("a", (1, 2))
    assert col("a").isin(np.array([1, 2])).node == IsIn("a", (1, 2))
    assert col("a").isin(pd.Series(["x", "y"])).node == IsIn("a", ("x", "y"))
    assert col("a").isin(range(3)).node == IsIn("a", (0, 1, 2))
    assert col("a").isin({"b", "a"}).node == IsIn("a", ("a", "b"))  # sets in a stable order


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: col("a") == None, "isna"),  # noqa: E711
        (lambda: col("a") != pd.NA, "isna"),
        (lambda: col("a") > pd.NaT, "isna"),
        (lambda: col("a") > math.nan, "finite"),
        (lambda: col("a") < math.inf, "finite"),
        (lambda: col("a") == np.float64("nan"), "finite"),
        (lambda: col("a") == b"x", "bytes"),
        (lambda: col("a") == object(), "object"),
        (lambda: col("a") == "\ud800", "surrogate"),
        (lambda: col("a") == [1, 2], "isin"),
        (lambda: col("a") == col("b"), "two columns"),
        (lambda: col("a") < col("b"), "two columns"),
        (lambda: (col("a") > 1) == 2, "condition"),
        (lambda: col("a") == (col("b") > 1), "condition"),
        (lambda: col("a").isin("abc"), "list"),
        (lambda: col("a").isin(5), "list"),
        (lambda: col("a").isin(np.array(5)), "list"),
        (lambda: col("a").isin([1, None]), "isna"),
        (lambda: col("a").isin([math.nan]), "finite"),
        (lambda: col("a").between(None, 5), "isna"),
        (lambda: (col("a") > 1).isin([1]), "column"),
        (lambda: (col("a") > 1).between(1, 2), "column"),
        (lambda: (col("a") > 1).isna(), "column"),
        (lambda: (col("a") > 1).str, "column"),
        (lambda: (col("a") > 1).search("x"), "column"),
        (lambda: col("a").search(5), "text"),  # type: ignore[arg-type]
        (lambda: col("a").str.startswith(5), "text"),  # type: ignore[arg-type]
        (lambda: col("a").str.contains(None), "text"),  # type: ignore[arg-type]
        (lambda: col("a").str.match("("), "regular expression"),
        (lambda: (col("a") > 1) & True, "combines two conditions"),
        (lambda: True | (col("a") > 1), "combines two conditions"),
        (lambda: col(""), "non-empty"),
        (lambda: col(5), "non-empty"),  # type: ignore[arg-type]
        (lambda: col("a`b"), "backtick"),
    ],
)
def test_user_mistakes_raise_filter_error(build: object, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        build()  # type: ignore[operator]


def test_filter_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        col("a") == None  # noqa: B015, E711


@pytest.mark.parametrize(
    "module",
    [
        "frameport._expr",
        "frameport._expr._builder",
        "frameport._expr._values",
        "frameport._expr._nodes",
        "frameport._expr._parser",
        "frameport._core._queries",
        "frameport._expr._evaluate",
    ],
)
def test_docstring_examples(module: str) -> None:
    imported = importlib.import_module(module)
    result = doctest.testmod(imported, extraglobs={"datetime": datetime, "pd": pd})
    assert result.attempted > 0
    assert result.failed == 0
