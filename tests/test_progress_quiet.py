"""Progress bars appear only for work that outlasts `_progress.DELAY` (or when asked for with
progress=True): a few rows written or read print nothing, and a bar that was drawn stays in
its final state when the work ends."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from frameport import ID, Client, Table
from frameport._core import _progress
from frameport._core._progress import progress_bar


@pytest.fixture
def table(client: Client) -> Table:
    return client.create_table(ID.unique(), ID.unique(), schema={"n": "integer"})


@pytest.fixture
def default_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FRAMEPORT_PROGRESS", raising=False)


@pytest.mark.usefixtures("default_progress")
def test_a_small_insert_and_read_print_no_progress_bar(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    table.insert(pd.DataFrame({"n": [1, 2, 3, 4]}))
    assert len(table.head(2).to_pandas()) == 2
    assert table.count() == 4
    assert capsys.readouterr().err == ""


@pytest.mark.usefixtures("default_progress")
def test_progress_true_shows_a_small_read_at_once(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    table.insert(pd.DataFrame({"n": [1, 2]}), progress=False)
    capsys.readouterr()
    assert len(table.to_pandas(progress=True)) == 2
    assert "rows" in capsys.readouterr().err


@pytest.mark.usefixtures("default_progress")
def test_a_refresh_waits_for_the_delay_and_the_bar_it_draws_stays(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_progress, "DELAY", 0.05)
    with progress_bar(total=None, unit="rows", desc="t", enabled=None) as bar:
        bar.total = 10  # as the paging engine does once the service said the total
        bar.refresh()
        assert capsys.readouterr().err == ""
        time.sleep(0.1)
        bar.set_postfix_str("of 10", refresh=True)
        assert "t: " in capsys.readouterr().err
        bar.update(10)
    final = capsys.readouterr().err
    assert final.startswith("\nt: 100%|") and " 10/10 [" in final and final.endswith(", of 10]\n")
