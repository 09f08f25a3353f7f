"""pandas 3 ``pd.col(...)`` expressions in `where()`: the rows equal `DataFrame.query` with
the same condition, and what has no frameport filter raises `FilterError` naming the part."""

from __future__ import annotations

import pandas as pd
import pytest
from pandas.api.typing import Expression

import frameport as fp
from frameport import Client, Table
from frameport._demo import sample_people
from tables_support import assert_same_rows, load, new_id

# The stubs' Expression leaves out the Series methods pandas forwards (isin, between, ...).
CASES = [
    (pd.col("age") > 40, "age > 40"),
    ((pd.col("age") <= 30) | (pd.col("city") == "Oslo"), "age <= 30 or city == 'Oslo'"),
    (
        pd.col("city").isin(["Bergen", "Tromsø"]) & ~pd.col("active"),  # type: ignore[attr-defined]
        "city in ['Bergen', 'Tromsø'] and not active",
    ),
    (pd.col("score").between(20, 60), "score.between(20, 60)"),  # type: ignore[attr-defined]
    (pd.col("age").isna() | (pd.col("score") < 20.0), "age.isna() or score < 20.0"),  # type: ignore[attr-defined]
    (pd.col("name").str.startswith("A"), "name.str.startswith('A')"),
    (~pd.col("name").str.contains("an"), "not name.str.contains('an')"),
    (pd.col("signup") >= pd.Timestamp("2023-01-01", tz="UTC"), "signup >= @SINCE"),
]  # fmt: skip
SINCE = pd.Timestamp("2023-01-01", tz="UTC")


@pytest.fixture(scope="module")
def loaded(key_client: Client) -> tuple[Table, pd.DataFrame]:
    return load(key_client, new_id("pdcol"), sample_people(250, seed=8))


@pytest.mark.parametrize(("expression", "query"), CASES, ids=[q for _, q in CASES])
def test_pd_col_filters_equal_dataframe_query(
    loaded: tuple[Table, pd.DataFrame], expression: Expression, query: str
) -> None:
    table, frame = loaded
    expected = frame.query(query, local_dict={"SINCE": SINCE})
    assert 0 < len(expected) < len(frame)
    assert frame.loc[expression].equals(expected)  # the pair means the same in pandas
    assert_same_rows(table.where(expression).to_pandas(progress=False, system=True), expected)


def test_pd_col_gives_the_same_filter_as_fp_col(loaded: tuple[Table, pd.DataFrame]) -> None:
    table, _ = loaded
    ours = table.where((fp.col("age") > 30) & fp.col("city").isin(["Oslo"]))
    theirs = table.where((pd.col("age") > 30) & pd.col("city").isin(["Oslo"]))  # type: ignore[attr-defined]
    assert theirs.explain() == ours.explain()


@pytest.mark.parametrize(
    ("expression", "part"),
    [
        (pd.col("age") + 1 > 30, r"\+ is not a filter operation"),
        (pd.col("name").str.lower() == "ada", r"\.lower is not a filter operation"),
        (pd.col("age") > pd.col("score"), "Comparing two columns"),
        (pd.col("age").abs() > 3, r"\.abs is not a filter operation"),  # type: ignore[attr-defined]
    ],
)
def test_untranslatable_pd_col_raises_filter_error(
    loaded: tuple[Table, pd.DataFrame], expression: Expression, part: str
) -> None:
    table, _ = loaded
    with pytest.raises(fp.FilterError, match=part):
        table.where(expression)
