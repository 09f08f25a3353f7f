"""A table's HTML preview says how many rows it has: the exact count past the service's
5,000 when a few more counts give it, "≥" only past those."""

from __future__ import annotations

import pytest

import frameport as fp
from frameport._demo import sample_people
from tables_support import load, new_id

ROWS = 5982


@pytest.fixture(scope="module")
def table(key_client: fp.Client) -> fp.Table:
    return load(key_client, new_id("preview"), sample_people(ROWS, seed=49))[0]


def test_the_preview_counts_past_the_services_cap(table: fp.Table) -> None:
    shown = table._repr_html_()
    assert f"· {ROWS:,} rows<" in shown and "≥" not in shown
    adults = table.query("age >= 18")
    expected = len(adults.to_pandas(progress=False))
    assert expected > 5000
    assert f"· {expected:,} rows<" in adults._repr_html_()


def test_head_bounds_the_previews_count(table: fp.Table) -> None:
    assert "· 5,500 rows<" in table.head(5500)._repr_html_()
    assert "· 12 rows<" in table.head(12)._repr_html_()
    assert f"· {ROWS:,} rows<" in table.head(9000)._repr_html_()
