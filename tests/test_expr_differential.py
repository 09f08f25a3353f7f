"""The filter DSL end to end: random filters sent through the local service return the rows
`DataFrame.query` keeps.

A few random tables (small integers or ones beyond 2**53, floats, text with accents, case
variants, quotes, backslashes, LIKE wildcards and emoji, booleans, millisecond date-times;
nulls in every column) are loaded once for the module. Hypothesis draws a table and a filter
over its columns whose values come from the table itself, near misses (another case or accent,
half an integer, half a millisecond...) and others, so that filters select interesting subsets.
Each filter exists in two equivalent forms, built side by side: a `col()` expression and a
query string with `@` variables (chained comparisons, `&`/`and`, `~`/`not`, `== [...]`, values
on either side...). The oracle is `frame.query(text, local_dict=variables)` on the table as
`to_pandas()` reads it, with its dtypes; what the service path returns must hold the same rows
(by `$id`), with the same values and dtypes.

* `test_where_*` sends the expression (`table.where(expr)`) and its negation, and checks
  `count()`;
* `test_query_*` sends the query string (`table.query(text, local_dict=...)`) and the
  expression's own query-string form (`table.query(repr(expr))`).

Date-times reach pandas as `@` variables holding Timestamps, or as ISO text for `<`, `<=`,
`>`, `>=`: with text, pandas' query() turns `==`, `!=` and `in` into an `isin` that never
matches a date-time (`test_expr_semantics.test_pandas_query_datetime_string_equality_quirk`),
where frameport compares instants. Text ending in a backslash goes to pandas as a variable too:
its backtick tokenizer misreads such a literal (pandas 3.1.1). `.search()` is the service's
fulltext search, which pandas cannot express, so it is not generated.
"""

from __future__ import annotations

import math
import operator
import random
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frameport import Client, Expr, Table, col
from frameport._expr import ColumnKind
from tables_support import assert_same_rows, load, new_id

# Its module fixtures are costly (tables loaded, a process started): one worker runs them.
pytestmark = pytest.mark.xdist_group("expr_differential")

SEED = 20240607
SMALL_INTEGERS = [-3, -2, -1, 0, 1, 2, 3, 7, 1000, -(2**31), 2**40]
#: Integers that float64 cannot all tell apart (pandas compares them with a float in float64).
WIDE_INTEGERS = [2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, 2**53 + 3, 2**63 - 513, 2**63 - 512]
WIDE_INTEGERS += [2**63 - 1, -(2**63), -(2**63) + 1, 0]
#: Integers and floats beyond what an int64 column holds.
BEYOND_INTEGERS = [1e19, -1e19, 2e19, -2e19, 2.0**63, -(2.0**64), 2**63, -(2**63) - 1, 2**64]
#: (rows, share of nulls in every column, integers of column `i`) of each table.
TABLE_SHAPES = (
    (3, 0.2, SMALL_INTEGERS),
    (40, 0.2, WIDE_INTEGERS),
    (120, 0.5, SMALL_INTEGERS),
    (250, 0.2, WIDE_INTEGERS),
    (300, 0.05, SMALL_INTEGERS),
)
WHERE_EXAMPLES = 400
# 400 examples take about a minute on a quiet machine and several on a busy one.
LONG_RUN = pytest.mark.timeout(900)
QUERY_EXAMPLES = 400

FLOATS = [-1.5, -0.0, 0.0, 0.1, 0.3, 0.1 + 0.2, 1.0, 2.0, 2.5, 1e-300, 1e300, -7.25]
TEXTS = [
    "Oslo", "oslo", "OSLO", "Ósló", "ÓSLO", "o'slo", "Oslo ", " oslo", 'a"b', "it's", 'say "hi"',
    "\\", "back\\slash", "ends\\", "%", "_", "a%b", "a_b", "100%", "😀", "😀 party", "", " ",
    "straße", "STRASSE", "ﬁle", "file", "naïve", "NAIVE", "İstanbul", "istanbul", "Ωmega",
    "ωMEGA", "trường", "truong", "x & y | z", "@home", "#tag", "`tick`", "é", "e\u0301",
]  # fmt: skip
BASE_INSTANTS = [
    pd.Timestamp("2020-10-15T06:38:00Z"),
    pd.Timestamp("1969-12-31T23:59:59.999Z"),
    pd.Timestamp("2024-02-29T00:00:00Z"),
]
INSTANTS = [
    base + pd.Timedelta(milliseconds=ms) for base in BASE_INSTANTS for ms in (-1, 0, 1, 999)
]
PATTERNS = ["", "o", "O", "os", "OS", "ó", "%", "_", "\\", "'", '"', "ss", "ß", "fi", "😀", " "]
REGEXES = [
    "O", "o", "o.*", "[A-Z]", "[a-z]+$", "a|b", "(os|OS)", r"\w+", "^$", "$", ".*é", "ß",
    r"\d", ".", "Ó", "o'", '.*"', r"\\", "%", "_", "😀", "[^a-z]", "[^A-Z]+", "[^o]", "(?i)oslo",
    "O?s", r"\.",
]  # fmt: skip
#: A column name that needs backticks in a query string.
DASHED = "first-name"
KINDS: dict[str, ColumnKind] = {
    "i": "integer",
    "f": "float",
    "s": "string",
    DASHED: "string",
    "b": "boolean",
    "t": "datetime",
    "$id": "id",
    "$sequence": "integer",
}
#: Columns `<`, `between`... apply to; those whose values the compiler snaps come more often.
ORDERED_COLUMNS = st.sampled_from(
    ["i", "i", "f", "f", "t", "t", "t", "s", DASHED, "$id", "$sequence"]
)
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: What the parser (like pandas with regex=True) reads as a regular expression in contains().
REGEX_METACHARACTERS = re.compile(r"[.^$*+?{}\[\]\\|()]")


# the tables --------------------------------------------------------------------------------
def random_frame(
    rng: random.Random, rows: int, null_share: float, integers: Sequence[int]
) -> pd.DataFrame:
    """`rows` rows drawn from a few colliding values per column, with nulls everywhere."""

    def column(pool: Sequence[Any], distinct: int) -> list[Any]:
        chosen = rng.sample(list(pool), min(distinct, len(pool)))
        return [None if rng.random() < null_share else rng.choice(chosen) for _ in range(rows)]

    prefixes = ["r", "row", "x.", "k_"]
    return pd.DataFrame(
        {
            "$id": pd.array([f"{rng.choice(prefixes)}{n}" for n in range(rows)], dtype="str"),
            "i": pd.array(column(integers, 6), dtype="Int64"),
            "f": pd.Series(column(FLOATS, 6), dtype="float64"),
            "s": pd.Series(column(TEXTS, 12), dtype="str"),
            DASHED: pd.Series(column(TEXTS, 8), dtype="str"),
            "b": pd.array(column([True, False], 2), dtype="boolean"),
            "t": pd.Series(column(INSTANTS, 6), dtype="datetime64[ms, UTC]"),
        }
    )


_rng = random.Random(SEED)
FRAMES = [random_frame(_rng, *shape) for shape in TABLE_SHAPES]


# the values filters use: the table's own and near misses -----------------------------------
def _distinct(values: Sequence[Any]) -> list[Any]:
    """Values without repeats; -0.0 and 0.0 (equal, but printed differently) both stay."""
    return list({(type(value), repr(value)): value for value in values}.values())


def _without_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def near_misses(kind: ColumnKind, value: Any) -> list[Any]:
    """Values a hair away from `value` (finer than the column holds, another case or accent),
    which a filter must tell apart from it."""
    if kind == "integer":
        return [value - 0.5, value + 0.5, float(value)]
    if kind == "float":
        misses = [math.nextafter(value, math.inf), math.nextafter(value, -math.inf), -value]
        return [*misses, int(value)] if value.is_integer() and abs(value) < 2**53 else misses
    if kind == "string":
        return [value.upper(), value.lower(), value.swapcase(), _without_accents(value), value[:-1]]
    if kind == "id":
        return [value.upper(), value + "0", value[:-1]]
    if kind == "datetime":
        return [
            value + pd.Timedelta(microseconds=500),
            value - pd.Timedelta(microseconds=1),
            value - pd.Timedelta(nanoseconds=1),
        ]
    return [not value]


def other_values(kind: ColumnKind, own: Sequence[Any]) -> list[Any]:
    """Values a step away from the column's own (the next integer, millisecond...), and
    others of the column's kind."""
    steps: list[Any] = []
    for value in own:
        if kind == "integer":
            steps += [value - 1, value + 1]
        elif kind == "string":
            steps += [value + " ", " " + value]
        elif kind == "datetime":
            steps += [value + pd.Timedelta(milliseconds=step) for step in (-1, 1)]
            steps.append(value.floor("D"))
    pool: dict[ColumnKind, list[Any]] = {
        "integer": SMALL_INTEGERS + WIDE_INTEGERS,
        "float": [*FLOATS, 0, 3],
        "string": TEXTS,
        "id": ["r", "R1", "row", "x"],
        "datetime": INSTANTS,
        "boolean": [True, False],
    }
    return _distinct(steps + pool[kind])


def text_patterns(own: Sequence[str]) -> list[str]:
    """Prefixes, suffixes and case variants of the column's values, and awkward characters."""
    patterns = list(PATTERNS)
    for value in own:
        patterns += [value, value[:1], value[:2], value[-1:], value[-3:], value.upper()[:2]]
    return _distinct(patterns)


@dataclass(frozen=True, repr=False)
class Vocabulary:
    """The values filters on one table draw from, per column."""

    own: dict[str, list[Any]]
    literals: dict[str, st.SearchStrategy[Any]]  # own values, near misses, others
    patterns: dict[str, list[str]]
    regexes: dict[str, list[str]]

    def literal(self, name: str) -> st.SearchStrategy[Any]:
        return self.literals[name]

    def __repr__(self) -> str:
        return f"Vocabulary(<{len(self.own['$sequence'])} rows>)"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def vocabulary(frame: pd.DataFrame) -> Vocabulary:
    own: dict[str, list[Any]] = {}
    for name, kind in KINDS.items():
        if name == "$sequence":
            own[name] = list(range(1, len(frame) + 1))
            continue
        values = frame[name].dropna().tolist()
        if kind == "datetime":
            values = [pd.Timestamp(value) for value in values]
        own[name] = _distinct(values)
    literals: dict[str, st.SearchStrategy[Any]] = {}
    for name, kind in KINDS.items():
        near = _distinct([miss for value in own[name] for miss in near_misses(kind, value)])
        others = other_values(kind, own[name])
        if name == "$sequence":
            others = [0, len(frame) + 1, -1]
        if kind == "integer":
            others += BEYOND_INTEGERS
        pools = [pool for pool in (own[name], near, others) if pool]
        literals[name] = st.one_of([st.sampled_from(pool) for pool in pools])
    texts = [name for name, kind in KINDS.items() if kind in ("string", "id")]
    patterns = {name: text_patterns(own[name]) for name in texts}
    regexes = {
        name: _distinct(REGEXES + [re.escape(value) for value in own[name][:6]]) for name in texts
    }
    return Vocabulary(own, literals, patterns, regexes)


VOCABULARIES = [vocabulary(frame) for frame in FRAMES]


# filters in two forms ----------------------------------------------------------------------
@dataclass(frozen=True)
class Variable:
    """A value the query string names as `@variable`."""

    value: Any


Token = str | Variable
_OR, _AND, _NOT, _COMPARISON, _ATOM = range(5)


@dataclass(frozen=True, eq=False)
class Filter:
    """One filter as a `col()` expression and as an equivalent query string; `precedence`
    says how tightly the string binds (whether it needs parentheses as an operand)."""

    expr: Expr
    tokens: tuple[Token, ...]
    precedence: int

    def text(self) -> tuple[str, dict[str, Any]]:
        """The query string and its `@` variables."""
        pieces: list[str] = []
        variables: dict[str, Any] = {}
        for token in self.tokens:
            if isinstance(token, Variable):
                name = f"v{len(variables)}"
                variables[name] = token.value
                pieces.append("@" + name)
            else:
                pieces.append(token)
        return "".join(pieces), variables

    def operand(self, minimum: int) -> tuple[Token, ...]:
        return self.tokens if self.precedence >= minimum else ("(", *self.tokens, ")")

    def __repr__(self) -> str:
        text, variables = self.text()
        return _shortened(f"Filter(where={self.expr!r}, query={text!r}, local_dict={variables!r})")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _shortened(text: str) -> str:
    """`text` with lists of more than 300 characters cut (the large `isin`s)."""
    return re.sub(r"\[([^\[\]]{300})[^\[\]]+\]", r"[\1, ...]", text)


def quoted(name: str) -> str:
    return name if name.isidentifier() else f"`{name}`"


def _builder_value(kind: ColumnKind, value: Any) -> st.SearchStrategy[Any]:
    """`value` in one of the forms a user may hand to `col()` (the same instant, number...)."""
    if kind == "datetime":
        stamp: pd.Timestamp = value
        forms = [
            stamp,
            stamp.tz_convert("America/New_York"),
            stamp.tz_localize(None),  # naive: taken as UTC
            stamp.isoformat(),
            np.datetime64(stamp.tz_localize(None)),
        ]
        if not stamp.nanosecond:
            forms.append(stamp.to_pydatetime())
        return st.sampled_from(forms)
    if isinstance(value, float):
        return st.sampled_from([value, np.float64(value)])
    if isinstance(value, int) and not isinstance(value, bool):
        fits = -(2**63) <= value < 2**63
        return st.sampled_from([value, np.int64(value)] if fits else [value])
    if kind == "boolean":
        return st.sampled_from([value, np.bool_(value)])
    return st.just(value)


def _value_tokens(kind: ColumnKind, value: Any, *, ordering: bool) -> st.SearchStrategy[Token]:
    """`value` in a query string: a literal or a variable."""
    if kind == "datetime":
        if ordering:
            return st.sampled_from([Variable(value), repr(value.isoformat())])
        return st.just(Variable(value))
    if isinstance(value, str) and value.endswith("\\"):
        return st.just(Variable(value))
    return st.sampled_from([repr(value), repr(value), Variable(value)])


def _list_tokens(kind: ColumnKind, values: Sequence[Any]) -> st.SearchStrategy[Token]:
    literal_ok = kind != "datetime" and not any(
        isinstance(value, str) and value.endswith("\\") for value in values
    )
    variable = st.just(Variable(list(values)))
    if not literal_ok:
        return variable
    return st.just("[" + ", ".join(repr(value) for value in values) + "]") | variable


@st.composite
def comparisons(draw: st.DrawFn, vocab: Vocabulary) -> Filter:
    name = draw(ORDERED_COLUMNS)
    kind = KINDS[name]
    op = draw(st.sampled_from(sorted(OPERATORS)))
    value = draw(vocab.literal(name))
    builder_value = draw(_builder_value(kind, value))
    value_first = draw(st.booleans())
    if value_first and isinstance(builder_value, int | float | str):
        expr = OPERATORS[MIRRORED[op]](builder_value, col(name))  # Python reflects it
    else:
        expr = OPERATORS[op](col(name), builder_value)
    token = draw(_value_tokens(kind, value, ordering=op not in ("==", "!=")))
    if value_first:
        tokens: tuple[Token, ...] = (token, f" {MIRRORED[op]} ", quoted(name))
    else:
        tokens = (quoted(name), f" {op} ", token)
    return Filter(expr, tokens, _COMPARISON)


@st.composite
def flag_comparisons(draw: st.DrawFn) -> Filter:
    op = draw(st.sampled_from(["==", "!="]))
    value = draw(st.booleans())
    expr = OPERATORS[op](col("b"), draw(_builder_value("boolean", value)))
    token = draw(_value_tokens("boolean", value, ordering=False))
    return Filter(expr, ("b", f" {op} ", token), _COMPARISON)


def flags() -> st.SearchStrategy[Filter]:
    """The boolean column as a condition of its own."""
    return st.just(Filter(col("b"), ("b",), _ATOM))


@st.composite
def chains(draw: st.DrawFn, vocab: Vocabulary) -> Filter:
    """`low < column <= high` (query strings only; the expression is its `&`)."""
    name = draw(st.sampled_from(["i", "f", "t", "t", "$sequence", "$id"]))
    kind = KINDS[name]
    low, high = draw(vocab.literal(name)), draw(vocab.literal(name))
    first, second = draw(st.sampled_from(["<", "<="])), draw(st.sampled_from(["<", "<="]))
    above = OPERATORS[MIRRORED[first]](col(name), draw(_builder_value(kind, low)))
    below = OPERATORS[second](col(name), draw(_builder_value(kind, high)))
    low_token = draw(_value_tokens(kind, low, ordering=True))
    high_token = draw(_value_tokens(kind, high, ordering=True))
    tokens = (low_token, f" {first} ", quoted(name), f" {second} ", high_token)
    return Filter(above & below, tokens, _COMPARISON)


@st.composite
def memberships(draw: st.DrawFn, vocab: Vocabulary) -> Filter:
    name = draw(st.sampled_from(["i", "i", "f", "t", "s", DASHED, "b", "$id", "$sequence"]))
    kind = KINDS[name]
    values = draw(st.lists(vocab.literal(name), max_size=5))
    expr = col(name).isin([draw(_builder_value(kind, value)) for value in values])
    negated = draw(st.booleans())
    listed = draw(_list_tokens(kind, values))
    form = draw(st.sampled_from(["in", "==", "isin"]))
    column = quoted(name)
    if form == "isin":
        tokens: tuple[Token, ...] = (f"{column}.isin(", listed, ")")
        if negated:
            tokens = ("~", *tokens)
        precedence = _ATOM
    else:
        word = {"in": " not in " if negated else " in ", "==": " != " if negated else " == "}
        tokens, precedence = (column, word[form], listed), _COMPARISON
    return Filter(~expr if negated else expr, tokens, precedence)


@st.composite
def large_memberships(draw: st.DrawFn, vocab: Vocabulary) -> Filter:
    """An `isin` too long for one query or one request (chunked, split, merged, or left to
    the client)."""
    name = draw(st.sampled_from(["i", "s", "$id"]))
    count = draw(st.integers(450, 700))
    misses: list[Any] = (
        [10_000 + n for n in range(count)]
        if name == "i"
        else [f"not-a-value-{n:04d}" for n in range(count)]
    )
    values = misses + vocab.own[name]
    start = draw(st.integers(0, len(values) - 1))
    values = values[start:] + values[:start]
    negated = draw(st.booleans())
    expr = col(name).isin(values)
    tokens = (quoted(name), " not in " if negated else " in ", Variable(values))
    return Filter(~expr if negated else expr, tokens, _COMPARISON)


@st.composite
def ranges(draw: st.DrawFn, vocab: Vocabulary) -> Filter:
    name = draw(ORDERED_COLUMNS)
    kind = KINDS[name]
    literal = vocab.literal(name)
    if kind == "integer" and draw(st.integers(0, 4)) == 0:
        literal = st.sampled_from(BEYOND_INTEGERS)  # a range beyond what int64 holds
    low, high = draw(literal), draw(literal)
    if draw(st.booleans()):
        low, high = sorted([low, high])
    expr = col(name).between(draw(_builder_value(kind, low)), draw(_builder_value(kind, high)))
    low_token = draw(_value_tokens(kind, low, ordering=True))
    high_token = draw(_value_tokens(kind, high, ordering=True))
    leaf = Filter(expr, (f"{quoted(name)}.between(", low_token, ", ", high_token, ")"), _ATOM)
    return draw(st.sampled_from([leaf, negation(leaf, "~")]))


@st.composite
def missing(draw: st.DrawFn) -> Filter:
    name = draw(st.sampled_from(sorted(KINDS)))
    method = draw(st.sampled_from(["isna", "isnull", "notna", "notnull"]))
    expr = getattr(col(name), method)()
    return Filter(expr, (f"{quoted(name)}.{method}()",), _ATOM)


@st.composite
def text_predicates(draw: st.DrawFn, vocab: Vocabulary) -> Filter:
    name = draw(st.sampled_from([name for name, kind in KINDS.items() if kind in ("string", "id")]))
    method = draw(st.sampled_from(["startswith", "endswith", "contains", "match"]))
    pool = vocab.regexes[name] if method == "match" else vocab.patterns[name]
    pattern = draw(st.sampled_from(pool))
    expr = getattr(col(name).str, method)(pattern)
    token = draw(_value_tokens("string", pattern, ordering=False))
    keywords = ""
    if method == "contains":
        plain = not REGEX_METACHARACTERS.search(pattern)
        keywords = draw(st.sampled_from([", regex=False", ""] if plain else [", regex=False"]))
    tokens = (f"{quoted(name)}.str.{method}(", token, keywords, ")")
    leaf = Filter(expr, tokens, _ATOM)
    return draw(st.sampled_from([leaf, leaf, negation(leaf, "~")]))


def leaves(vocab: Vocabulary) -> st.SearchStrategy[Filter]:
    common = [
        comparisons(vocab),
        comparisons(vocab),
        flag_comparisons(),
        flags(),
        chains(vocab),
        memberships(vocab),
        memberships(vocab),
        ranges(vocab),
        ranges(vocab),
        missing(),
        text_predicates(vocab),
        text_predicates(vocab),
    ]
    rare = large_memberships(vocab)
    return st.one_of(*common, *common, *common, rare)


def conjunction(left: Filter, right: Filter, word: str) -> Filter:
    tokens = (*left.operand(_AND), word, *right.operand(_AND))
    return Filter(left.expr & right.expr, tokens, _AND)


def disjunction(left: Filter, right: Filter, word: str) -> Filter:
    tokens = (*left.operand(_OR), word, *right.operand(_OR))
    return Filter(left.expr | right.expr, tokens, _OR)


def negation(inner: Filter, word: str) -> Filter:
    # `not` binds more loosely than comparisons, `~` more tightly
    tokens = (word, *inner.operand(_COMPARISON if word == "not " else _ATOM))
    return Filter(~inner.expr, tokens, _NOT if word == "not " else _ATOM)


def filters(vocab: Vocabulary) -> st.SearchStrategy[Filter]:
    return st.recursive(
        leaves(vocab),
        lambda children: st.one_of(
            st.builds(conjunction, children, children, st.sampled_from([" and ", " & "])),
            st.builds(disjunction, children, children, st.sampled_from([" or ", " | "])),
            st.builds(negation, children, st.sampled_from(["not ", "~"])),
        ),
        max_leaves=6,
    )


@dataclass(frozen=True)
class Case:
    """A filter on one of the module's tables."""

    table: int
    filter: Filter

    def __repr__(self) -> str:
        return f"Case(table={self.table} ({len(FRAMES[self.table])} rows), {self.filter!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


#: The cases of each table: a test runs once per table (its examples shared out evenly), so
#: xdist can spread the tables over its workers.
CASES = [
    st.builds(Case, st.just(table), filters(vocab)) for table, vocab in enumerate(VOCABULARIES)
]
EACH_TABLE = pytest.mark.parametrize("index", range(len(CASES)))


# the service -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadedTable:
    """A table of the module and the frame `to_pandas()` reads it as (the oracle's input)."""

    table: Table
    frame: pd.DataFrame

    def __repr__(self) -> str:
        return f"LoadedTable({self.table.id!r}, <{len(self.frame)} rows>)"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@pytest.fixture(scope="module")
def loaded(key_client: Client) -> list[LoadedTable]:
    database = new_id("differential")
    tables: list[LoadedTable] = []
    for frame in FRAMES:
        table, _ = load(key_client, database, frame)
        tables.append(LoadedTable(table, table.to_pandas(progress=False, system=True)))
    return tables


def assert_rows(read: pd.DataFrame, expected: pd.DataFrame, frame: pd.DataFrame) -> None:
    """`read` holds the rows of `expected` (by `$id`), with the same values and dtypes."""
    got, wanted = set(read["$id"]), set(expected["$id"])
    if got != wanted:
        rows = frame.set_index("$id").drop(columns=["$createdAt", "$updatedAt", "$permissions"])
        missing = rows.loc[sorted(wanted - got)].to_string()
        extra = rows.loc[sorted(got - wanted)].to_string()
        raise AssertionError(f"rows missing:\n{missing}\nrows extra:\n{extra}")
    assert read["$id"].is_unique
    pd.testing.assert_frame_equal(
        read.sort_values("$sequence", ignore_index=True),
        expected.sort_values("$sequence", ignore_index=True),
    )


DIFFERENTIAL = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# the properties ----------------------------------------------------------------------------
def test_tables_read_back_as_loaded(loaded: list[LoadedTable]) -> None:
    for table, frame in zip(loaded, FRAMES, strict=True):
        assert_same_rows(table.frame, frame)


@LONG_RUN
@EACH_TABLE
@settings(DIFFERENTIAL, max_examples=WHERE_EXAMPLES // len(CASES))
@given(data=st.data())
def test_where_returns_the_rows_pandas_query_keeps(
    loaded: list[LoadedTable], index: int, data: st.DataObject
) -> None:
    case = data.draw(CASES[index], label="case")
    table, frame = loaded[index].table, loaded[index].frame
    text, variables = case.filter.text()
    expected = frame.query(text, local_dict=variables)
    query = table.where(case.filter.expr)
    assert_rows(query.to_pandas(progress=False, system=True), expected, frame)
    assert query.count() == len(expected)
    # the negation turns every condition around (and keeps neither side's null rows)
    expected = frame.query(f"not ({text})", local_dict=variables)
    assert_rows(
        table.where(~case.filter.expr).to_pandas(progress=False, system=True), expected, frame
    )


@LONG_RUN
@EACH_TABLE
@settings(DIFFERENTIAL, max_examples=QUERY_EXAMPLES // len(CASES))
@given(data=st.data())
def test_query_strings_return_the_rows_pandas_query_keeps(
    loaded: list[LoadedTable], index: int, data: st.DataObject
) -> None:
    case = data.draw(CASES[index], label="case")
    table, frame = loaded[index].table, loaded[index].frame
    text, variables = case.filter.text()
    expected = frame.query(text, local_dict=variables)
    assert_rows(
        table.query(text, local_dict=variables).to_pandas(progress=False, system=True),
        expected,
        frame,
    )
    assert_rows(
        table.query(repr(case.filter.expr)).to_pandas(progress=False, system=True), expected, frame
    )
