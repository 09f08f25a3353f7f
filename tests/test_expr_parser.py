"""The query-string parser: the pandas `DataFrame.query` grammar, errors with offsets, and
`parse(repr(expr))` giving back an equal tree."""

from __future__ import annotations

import datetime
import string
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frameport import Expr, FilterError, col
from frameport._expr import parse
from frameport._expr._nodes import (
    And,
    Between,
    ColumnRef,
    Comparison,
    IsIn,
    IsNull,
    Node,
    Not,
    Or,
    Search,
    StringPredicate,
)

A1 = Comparison("a", ">", 1)
B2 = Comparison("b", "<", 2)


@pytest.mark.parametrize(
    ("text", "node"),
    [
        ("a > 1", A1),
        ("1 < a", A1),
        ("a == 'x'", Comparison("a", "==", "x")),
        ('a != "x"', Comparison("a", "!=", "x")),
        ("a <= -1.5", Comparison("a", "<=", -1.5)),
        ("a >= +2", Comparison("a", ">=", 2)),
        ("a == True", Comparison("a", "==", True)),
        ("a > 1e3", Comparison("a", ">", 1000.0)),
        ("1 < a <= 5", And((A1, Comparison("a", "<=", 5)))),
        ("0 < a < b < 3", None),  # two columns: an error, see below
        ("a > 1 and b < 2", And((A1, B2))),
        ("a > 1 & b < 2", And((A1, B2))),  # & binds like `and`, as in pandas
        ("a > 1 | b < 2", Or((A1, B2))),
        ("(a > 1) & (b < 2)", And((A1, B2))),
        ("a > 1 or b < 2 and a > 1", Or((A1, And((B2, A1))))),
        ("(a > 1 or b < 2) and a > 1", And((Or((A1, B2)), A1))),
        ("a > 1 and b < 2 and a > 1", And((A1, B2, A1))),
        ("(a > 1 and b < 2) and (a > 1)", And((A1, B2, A1))),
        ("not a > 1", Not(A1)),
        ("~(a > 1)", Not(A1)),
        ("not not a > 1", Not(Not(A1))),
        ("~flag", Not(ColumnRef("flag"))),
        ("flag", ColumnRef("flag")),
        ("flag and a > 1", And((ColumnRef("flag"), A1))),
        ("a in [1, 2]", IsIn("a", (1, 2))),
        ("a in (1, 2)", IsIn("a", (1, 2))),
        ("a in []", IsIn("a", ())),
        ("a not in ['x']", Not(IsIn("a", ("x",)))),
        ("a == [1, 2]", IsIn("a", (1, 2))),
        ("[1, 2] == a", IsIn("a", (1, 2))),
        ("a != [1, 2]", Not(IsIn("a", (1, 2)))),
        ("a.isin([1, 2])", IsIn("a", (1, 2))),
        ("~a.isin([1, 2])", Not(IsIn("a", (1, 2)))),
        ("a.between(1, 5)", Between("a", 1, 5)),
        ("a.isna()", IsNull("a")),
        ("a.isnull()", IsNull("a")),
        ("a.notna()", Not(IsNull("a"))),
        ("a.notnull()", Not(IsNull("a"))),
        ("s.str.startswith('O')", StringPredicate("s", "startswith", "O")),
        ("s.str.endswith('o')", StringPredicate("s", "endswith", "o")),
        ("s.str.contains('sl')", StringPredicate("s", "contains", "sl")),
        ("s.str.contains('a.b', regex=False)", StringPredicate("s", "contains", "a.b")),
        ("s.str.match('O.*')", StringPredicate("s", "match", "O.*")),
        ("bio.search('deep learning')", Search("bio", "deep learning")),
        ("`first name` == 'Ada'", Comparison("first name", "==", "Ada")),
        ("`$id` in ['a', 'b']", IsIn("$id", ("a", "b"))),
        ("`first name`.str.startswith('A')", StringPredicate("first name", "startswith", "A")),
        ("`a`b` > 1", None),  # a backtick inside a name cannot be written
        (
            "s == 'x & y | @z `q` # no comment'",
            Comparison("s", "==", "x & y | @z `q` # no comment"),
        ),
        ("s == '''it's'''", Comparison("s", "==", "it's")),
        ("s == r'\\d'", Comparison("s", "==", "\\d")),
        # pandas' own query() fails on this one (a literal ending in "\\" before a backtick)
        (
            "s == '\\\\' and `first name` == 'x'",
            And((Comparison("s", "==", "\\"), Comparison("first name", "==", "x"))),
        ),
        ("  a > 1  ", A1),
        ("a > 1\nand b < 2", And((A1, B2))),
        ("(a > 1\n or b < 2)", Or((A1, B2))),
        ("café == 1", Comparison("café", "==", 1)),
    ],
)
def test_grammar(text: str, node: Node | None) -> None:
    if node is None:
        with pytest.raises(FilterError):
            parse(text)
    else:
        assert parse(text).node == node


def test_variables_come_from_the_callers_frame() -> None:
    limit = 30
    cities = ["Oslo", "Bergen"]
    assert parse("age > @limit and city in @cities").node == And(
        (Comparison("age", ">", 30), IsIn("city", ("Oslo", "Bergen")))
    )
    assert parse("age == @cities").node == IsIn("age", ("Oslo", "Bergen"))
    del limit, cities


GLOBAL_LIMIT = 7


def test_variables_fall_back_to_the_callers_globals() -> None:
    assert parse("age > @GLOBAL_LIMIT").node == Comparison("age", ">", 7)


def test_variables_from_local_dict_and_level() -> None:
    assert parse("age > @x", local_dict={"x": 5}).node == Comparison("age", ">", 5)

    def query(text: str) -> Expr:  # a wrapper like TableQuery.query()
        return parse(text, level=1)

    threshold = np.int64(3)
    assert query("age > @threshold").node == Comparison("age", ">", 3)
    del threshold


@pytest.mark.parametrize(
    ("value", "values"),
    [
        (np.array([1, 2]), (1, 2)),
        (pd.Series(["a"]), ("a",)),
        ({2, 1}, (1, 2)),
        ((True,), (True,)),
    ],
)
def test_list_like_variables(value: object, values: tuple[object, ...]) -> None:
    assert parse("a in @v", local_dict={"v": value}).node == IsIn("a", values)  # type: ignore[arg-type]


def test_datetime_variables_become_iso_text() -> None:
    stamp = datetime.datetime(2020, 10, 15, 6, 38)
    node = parse("t >= @stamp", local_dict={"stamp": stamp}).node
    assert node == Comparison("t", ">=", "2020-10-15T06:38:00.000+00:00")


@pytest.mark.parametrize(
    ("text", "offset", "fragment", "message"),
    [
        ("", 0, "", "empty"),
        ("   ", 0, "", "empty"),
        ("age >", 5, "", "not valid"),
        ("age > 1 and", 11, "", "not valid"),
        ("age > > 1", 6, "> 1", "not valid"),
        ("(age > 1", 0, "(age > 1", "never closed"),
        ("age > 1)", 7, ")", "not valid"),
        ("age = 1", 4, "= 1", "not valid"),
        ("age > 1 # note", 8, "#", "comments"),
        ("age > 'x", 6, "'x", "never closed"),
        ("`first name > 1", 0, "`first name > 1", "never closed"),
        ("`` > 1", 0, "``", "Empty column name"),
        ("@ > 1", 0, "@", "variable name"),
        ("age > @missing", 6, "@missing", "not a defined variable"),
        ("age > 10**2", 6, "10**2", "not supported"),
        ("age + 1 > 2", 0, "age + 1", "not supported"),
        ("a.b > 1", 0, "a.b", "not supported"),
        ("a[0] > 1", 0, "a[0]", "not supported"),
        ("age > x.y", 6, "x.y", "not supported"),
        ("lambda: 1", 0, "lambda: 1", "not supported"),
        ("age > f'{x}'", 6, "f'{x}'", "not supported"),
        ("age > b'x'", 6, "b'x'", "values are strings"),
        ("age > 1j", 6, "1j", "values are strings"),
        ("age > 1e400", 6, "1e400", "finite"),
        ("age > -1e400", 6, "-1e400", "finite"),
        ("age > ...", 6, "...", "values are strings"),
        ("age == None", 7, "None", "isna"),
        ("age is 1", 0, "age is 1", "use =="),
        ("age > 1 if x else y", 0, "age > 1 if x else y", "not supported"),
        ("a < b", 0, "a < b", "two columns"),
        ("1 < 2", 0, "1 < 2", "two values"),
        ("'x' in a", 0, "'x' in a", "'in' needs"),
        ("a in 5", 0, "a in 5", "'in' needs"),
        ("a < [1, 2]", 0, "a < [1, 2]", "only ==, != and in"),
        ("a in [[1]]", 6, "[1]", "single value"),
        ("a in [b]", 6, "b", "single value"),
        ("True", 0, "True", "a value, not a condition"),
        ("'x'", 0, "'x'", "a value, not a condition"),
        ("@v", 0, "@v", "a value, not a condition"),
        ("a > 1 and 5", 10, "5", "a value, not a condition"),
        ("len(a) > 1", 0, "len(a)", "not supported"),
        ("len(a)", 0, "len(a)", "only column methods"),
        ("a.upper()", 0, "a.upper()", "supported column methods"),
        ("a.str.lower()", 0, "a.str.lower()", "supported string methods"),
        ("a.isna(1)", 0, "a.isna(1)", "takes 0 positional arguments"),
        ("a.isin()", 0, "a.isin()", "takes 1 positional argument"),
        ("a.isin(*b)", 0, "a.isin(*b)", "takes 1 positional argument"),
        ("a.between(1)", 0, "a.between(1)", "takes 2 positional arguments"),
        ("a.between(1, 2, inclusive='both')", 0, "a.between(1, 2, inclusive='both')", "takes 2"),
        ("a.isin(1)", 7, "1", "list of values"),
        ("a.between([1], 2)", 10, "[1]", "single value"),
        ("(a > 1).isna()", 1, "a > 1", "not supported"),
        ("s.str.startswith(1)", 17, "1", "expected a string"),
        ("s.search(1)", 9, "1", "expected a string"),
        ("s.str.contains('a.b')", 0, "s.str.contains('a.b')", "regex=False"),
        ("s.str.contains('a', regex=x)", 26, "x", "True or False"),
        ("s.str.contains('a', case=False)", 0, "s.str.contains('a', case=False)", "takes 1"),
        ("s.str.match('(')", 0, "s.str.match('(')", "regular expression"),
        ("`x y`.foo()", 0, "`x y`.foo()", "supported column methods"),
        ("café > 1 and 'é'", 13, "'é'", "a value, not a condition"),
        ("a > 1 and\n b +", 14, "", "not valid"),
        ("a > 1 and @v", 10, "@v", "a value, not a condition"),
    ],
)
def test_errors_carry_the_offending_text_and_offset(
    text: str, offset: int, fragment: str, message: str
) -> None:
    with pytest.raises(FilterError, match=message) as caught:
        parse(text, local_dict={"v": 1})
    assert caught.value.offset == offset
    assert caught.value.text is not None
    assert caught.value.text == fragment or caught.value.text.startswith(fragment or "\0")


def test_non_string_input() -> None:
    with pytest.raises(FilterError, match="string"):
        parse(5)  # type: ignore[arg-type]


def test_variables_that_are_not_values() -> None:
    with pytest.raises(FilterError, match="@v"):
        parse("a > @v", local_dict={"v": col("b")})
    with pytest.raises(FilterError, match="isna"):
        parse("a in @v", local_dict={"v": [1, None]})


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(FilterError):
        parse("(" * 300 + "a > 1" + ")" * 300)
    with pytest.raises(FilterError):
        parse("not " * 5000 + "a > 1")


def test_parse_never_evaluates_the_text(tmp_path: Any) -> None:
    marker = tmp_path / "marker"
    with pytest.raises(FilterError):
        parse(f"__import__('pathlib').Path({str(marker)!r}).touch()")
    assert not marker.exists()


# repr → parse → equal tree -----------------------------------------------------------------
NAMES = st.sampled_from(
    ["a", "age", "first name", "$id", "$createdAt", "class", "True", "a.b", "x-y", "ﬁle",
     "café", "_x", "datetime", "Ω", "tab\tname", "quote'name", 'dq"name', "#hash", "a&b|c@d"]
)  # fmt: skip
SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.text(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)
REGEXES = st.sampled_from(["O.*", "[a-z]+$", "a|b", r"\d{2}", "(x)?y"])


def leaves() -> st.SearchStrategy[Node]:
    return st.one_of(
        st.builds(Comparison, NAMES, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), SCALARS),
        st.builds(IsIn, NAMES, st.lists(SCALARS, max_size=4).map(tuple)),
        st.builds(Between, NAMES, SCALARS, SCALARS),
        st.builds(IsNull, NAMES),
        st.builds(
            StringPredicate,
            NAMES,
            st.sampled_from(["startswith", "endswith", "contains"]),
            st.text(),
        ),
        st.builds(StringPredicate, NAMES, st.just("match"), REGEXES),
        st.builds(Search, NAMES, st.text()),
        st.builds(ColumnRef, NAMES),
    )


def trees() -> st.SearchStrategy[Node]:
    return st.recursive(
        leaves(),
        lambda children: st.one_of(
            st.lists(children, min_size=2, max_size=3).map(lambda items: _join(And, items)),
            st.lists(children, min_size=2, max_size=3).map(lambda items: _join(Or, items)),
            children.map(Not),
        ),
        max_leaves=8,
    )


def _join(kind: type[And] | type[Or], items: list[Node]) -> Node:
    flat: list[Node] = []
    for item in items:
        flat.extend(item.operands if isinstance(item, kind) else [item])
    return kind(tuple(flat))


@settings(max_examples=400, deadline=None)
@given(tree=trees())
def test_repr_parses_back_to_an_equal_tree(tree: Node) -> None:
    expr = Expr(tree)
    text = repr(expr)
    parsed = parse(text)
    assert parsed.node == tree
    assert repr(parsed) == text


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=string.printable, max_size=30),
    variables=st.fixed_dictionaries({"v": SCALARS}),
)
def test_parse_of_any_printable_text_is_an_expr_or_a_filter_error(
    text: str, variables: Mapping[str, Any]
) -> None:
    try:
        result = parse(text, local_dict=variables)
    except FilterError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(text)
    else:
        assert isinstance(result, Expr)
