"""10,000 random and mutated strings into the parser: each gives an expression or a
`FilterError`, never another exception; what parses also compiles and evaluates with nothing
but `FilterError`."""

from __future__ import annotations

import contextlib
import random

import numpy as np
import pandas as pd

from frameport import FilterError
from frameport._expr import ColumnSpec, compile_filter, evaluate, parse

SEED = 20240531
VALID = [
    "age > 30 and city in ['Oslo', 'Bergen']",
    "1 < age <= 5 | ~(score != 1.5)",
    "`first name`.str.startswith('A') & not ok",
    "city.str.contains('a.b', regex=False) or age.isna()",
    "score.between(-1.5, 2e3) and `$id` not in ['a', 'b']",
    "born >= '2020-10-15T06:38:00.000+00:00' and bio.search('deep')",
    "age == @limit or city == @cities",
    "not (age > 1 and (score < 2 or ok)) and city.str.match('O.*')",
    "city == '''it's''' and age.notna()",
]
TOKENS = [
    "age", "score", "city", "ok", "born", "`first name`", "`$id`", "bio", "x", "@limit",
    "@cities", "@nope", "@", "`", "'", '"', "'''", "(", ")", "[", "]", "{", "}", ",", ".",
    ":", ";", "==", "!=", "<", "<=", ">", ">=", "=", "&", "|", "~", "^", "+", "-", "*", "/",
    "**", "%", "and", "or", "not", "in", "is", "if", "else", "lambda", "None", "True",
    "False", "0", "1.5", "1e400", "-3", "0x1f", "1_000", "1j", "'Oslo'", "''", "b'x'",
    "f'{x}'", "str", "isna()", "isin", "between", "startswith", "search", "match", "#", "\\",
    "\n", "\t", " ", "\x00", "é", "\u2028", "ﬁ", "\ud800", "…",
]  # fmt: skip
CHARS = "".join(sorted(set("".join(TOKENS)))) + "abcxyz0123456789"
SCHEMA = {
    "age": ColumnSpec("integer"),
    "score": ColumnSpec("float"),
    "city": ColumnSpec("string"),
    "first name": ColumnSpec("string"),
    "ok": ColumnSpec("boolean"),
    "born": ColumnSpec("datetime"),
    "bio": ColumnSpec("string"),
    "x": ColumnSpec("string", array=True),
}
FRAME = pd.DataFrame(
    {
        "$id": ["a", "b", "c"],
        "age": pd.array([1, None, 40], dtype="Int64"),
        "score": [1.5, np.nan, -2.0],
        "city": pd.Series(["Oslo", None, "bergen"], dtype="str"),
        "first name": pd.Series(["Ada", "Åse", None], dtype="str"),
        "ok": pd.array([True, None, False], dtype="boolean"),
        "born": pd.Series(
            [pd.Timestamp("2020-10-15T06:38:00Z"), pd.NaT, pd.Timestamp("1999-01-01T00:00:00Z")]
        ).astype("datetime64[ms, UTC]"),
        "bio": pd.Series(["deep", "x", None], dtype="str"),
        "x": pd.Series([["a"], None, []], dtype="object"),
    }
)
VARIABLES = {"limit": 3, "cities": ["Oslo", "Bergen"]}


def random_strings(rng: random.Random, count: int) -> list[str]:
    texts: list[str] = []
    for index in range(count):
        shape = index % 4
        if shape == 0:  # characters
            texts.append("".join(rng.choice(CHARS) for _ in range(rng.randint(0, 40))))
        elif shape == 1:  # tokens
            texts.append(" ".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 12))))
        else:  # mutations of valid filters
            texts.append(mutate(rng, rng.choice(VALID), rng.randint(1, 4)))
    return texts


def mutate(rng: random.Random, text: str, times: int) -> str:
    for _ in range(times):
        position = rng.randint(0, len(text))
        action = rng.randrange(4)
        if action == 0:
            text = text[:position] + rng.choice(TOKENS) + text[position:]
        elif action == 1:
            text = text[:position] + text[position + rng.randint(1, 5) :]
        elif action == 2:
            text = text[:position] + rng.choice(CHARS) + text[position + 1 :]
        else:
            other = rng.choice(VALID)
            cut = rng.randint(0, len(other))
            text = text[:position] + other[cut:]
    return text


def test_random_and_mutated_strings_raise_nothing_but_filter_error() -> None:
    rng = random.Random(SEED)
    parsed = 0
    for text in random_strings(rng, 10_000):
        try:
            expr = parse(text, local_dict=VARIABLES)
        except FilterError as exc:
            assert exc.offset is not None and 0 <= exc.offset <= len(text), text
            continue
        parsed += 1
        with contextlib.suppress(FilterError):
            compile_filter(expr, SCHEMA)
        with contextlib.suppress(FilterError):
            evaluate(expr, FRAME)
    assert parsed > 500  # the mutations keep a good share of valid filters
