"""Progress as users see it: a known total gives a percentage and the time left; written to a
file or a pipe (not a terminal) each state is a line of its own, never a carriage-return
redraw; the bar stays in its final state; and in a notebook the widget bar finishes green.
Uploads, downloads, row writes, column waits, reads and exports all go through the same
bars; a read's total is the service's count when exact, else an upper bound labelled so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

import frameport as fp
from frameport import Client, Table
from frameport._core import _progress
from frameport._core._progress import UPPER_BOUND
from tables_support import new_id
from test_notebooks import run_notebook

MIB = 1024 * 1024
BAR_LINE = re.compile(r"^(?P<desc>.+?): +(?P<percent>\d+)%\|.*\| (?P<done>\S+)/(?P<total>\S+) \[")


def bar_lines(err: str) -> list[re.Match[str]]:
    """The lines of `err`, each checked to be one state of a bar."""
    assert "\r" not in err
    assert err.endswith("\n")
    lines = err.splitlines()
    matches = [BAR_LINE.match(line) for line in lines]
    assert all(matches), lines
    return [match for match in matches if match is not None]


def read_bar_lines(err: str) -> list[re.Match[str]]:
    """The lines of a read's bar: it is drawn at once with ``progress=True``, before the first
    answer gives it a total (a line without one), then each state with its percentage."""
    first, rest = err.split("\n", 1)
    assert re.match(r"^.+: 0rows \[", first), first
    return bar_lines(rest)


@pytest.fixture
def every_state_a_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line for each state, however fast the work (the interval between lines is time)."""
    monkeypatch.setattr(_progress, "LINE_INTERVAL", 0.0)


def test_an_upload_and_a_download_print_lines_with_percentages(
    key_client: Client,
    tmp_path: Path,
    every_state_a_line: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bucket = key_client.create_bucket(new_id("progress"))
    source = tmp_path / "big.bin"
    source.write_bytes(bytes(range(256)) * (12 * MIB // 256))
    capsys.readouterr()
    uploaded = bucket.upload_file(source, progress=True, concurrency=1)
    lines = bar_lines(capsys.readouterr().err)
    assert len(lines) >= 3  # three parts acknowledged one after the other
    assert {line["desc"] for line in lines} == {"big.bin"}
    percents = [int(line["percent"]) for line in lines]
    assert percents == sorted(percents) and percents[-1] == 100
    assert (lines[-1]["done"], lines[-1]["total"]) == ("12.0M", "12.0M")

    bucket.download(uploaded.id, tmp_path / "copy.bin", progress=True)
    lines = bar_lines(capsys.readouterr().err)
    assert lines[-1]["percent"] == "100" and lines[-1]["total"] == "12.0M"


def test_writes_and_column_waits_have_a_total(
    key_client: Client, every_state_a_line: None, capsys: pytest.CaptureFixture[str]
) -> None:
    table = key_client.create_table(new_id("progress"), "t", schema={"n": "integer"})
    capsys.readouterr()
    table.insert(pd.DataFrame({"n": range(1000)}), progress=True)
    lines = bar_lines(capsys.readouterr().err)
    assert lines[-1]["desc"].startswith("inserting ")
    assert (lines[-1]["percent"], lines[-1]["done"], lines[-1]["total"]) == ("100", "1000", "1000")
    table.add_column("note", "string(20)", progress=True)
    lines = bar_lines(capsys.readouterr().err)
    assert lines[-1]["desc"] == f"columns of {table.database_id}/t"
    assert (lines[-1]["percent"], lines[-1]["done"], lines[-1]["total"]) == ("100", "1", "1")


def test_lines_come_at_an_interval_not_at_every_update(
    key_client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    table = key_client.create_table(new_id("progress"), "t", schema={"n": "integer"})
    capsys.readouterr()
    table.insert(pd.DataFrame({"n": range(2000)}), progress=True)  # 20 requests
    lines = bar_lines(capsys.readouterr().err)
    assert len(lines) < 20  # a line per LINE_INTERVAL, and the final state
    assert lines[-1]["percent"] == "100"


@pytest.fixture(scope="module")
def capped(key_client: Client) -> Table:
    """A table with more rows than the service counts (5,000), and a text column."""
    table = key_client.create_table(
        new_id("progress"), "t", schema={"n": "integer", "city": "string"}
    )
    rows = pd.DataFrame({"n": range(6000), "city": ["Oslo", "oslo", "Bergen"] * 2000})
    table.insert(rows, progress=False)
    return table


def test_a_read_shows_its_count_and_ends_at_100_percent(
    capped: Table, every_state_a_line: None, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert len(capped.where(fp.col("n") < 1200).to_pandas(progress=True)) == 1200
    lines = read_bar_lines(capsys.readouterr().err)
    assert {line["total"] for line in lines} == {"1200"}  # the service's exact count
    assert "upper bound" not in "".join(line.string for line in lines)
    assert (lines[-1]["percent"], lines[-1]["done"]) == ("100", "1200")


def test_a_capped_count_gives_an_upper_bound_from_sequence(
    key_client: Client,
    capped: Table,
    every_state_a_line: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    paged = key_client.table(capped.database_id, capped.id, page_size=1000)
    paged.to_arrow(progress=True)  # in ranges: the ends' $sequence come first
    *before, last = read_bar_lines(capsys.readouterr().err)
    assert all(line["total"] == "6000" for line in [*before, last])
    # States part-way through (six pages: a line after each) say the total is a bound.
    assert [line["done"] for line in before if line["done"] not in ("0", "6000")]
    assert before and all(UPPER_BOUND in line.string for line in before)
    assert (last["percent"], last["done"]) == ("100", "6000")
    assert UPPER_BOUND not in last.string  # what the read counted is the total

    sorted_read = capped.sort("n", ascending=False).iter_batches(page_size=200, progress=True)
    assert sum(len(batch) for batch in sorted_read) == 6000  # one page after another
    err = capsys.readouterr().err
    assert "\r" not in err and "of ≥ 5,000" in err  # the first page's count, capped
    bounded = [BAR_LINE.match(line) for line in err.splitlines() if UPPER_BOUND in line]
    assert bounded and {line["total"] for line in bounded if line} == {"6000"}
    final = BAR_LINE.match(err.splitlines()[-1])
    assert final and (final["percent"], final["done"], final["total"]) == ("100", "6000", "6000")


def test_rows_the_client_drops_make_the_count_an_upper_bound(
    capped: Table, every_state_a_line: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The service compares text without regard to case: its count of city == 'Oslo' holds
    'oslo' too, which the client drops; the export ends with the rows it wrote as total."""
    capsys.readouterr()
    view = capped.where((fp.col("city") == "Oslo") & (fp.col("n") < 1500))
    report = view.to_parquet(tmp_path / "oslo.parquet", progress=True)
    lines = read_bar_lines(capsys.readouterr().err)
    assert report.rows == 500
    assert lines[0]["total"] == "1000" and UPPER_BOUND in lines[0].string
    assert (lines[-1]["percent"], lines[-1]["done"], lines[-1]["total"]) == ("100", "500", "500")


@pytest.mark.slow
def test_a_notebook_bar_finishes(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from frameport.local import LocalService\n"
            "svc = LocalService().start()\n"
            "bucket = svc.client().create_bucket('b')\n"
            "bucket.upload_bytes(bytes(12 * 1024 * 1024), 'big.bin', progress=True)\n"
            "table = svc.client().create_table('d', 't', schema={'n': 'integer'})\n"
            "table.insert(__import__('pandas').DataFrame({'n': range(300)}), progress=False)\n"
            "assert len(table.to_pandas(progress=True)) == 300\n"
            "svc.stop()"
        )
    ]
    path = tmp_path / "bar.ipynb"
    nbformat.write(notebook, path)
    executed = run_notebook(path, tmp_path)
    state = executed.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    models = [model["state"] for model in state.values()]
    bars = [model for model in models if model.get("_model_name") == "FloatProgressModel"]
    assert all(bar["bar_style"] == "success" and bar["value"] == bar["max"] for bar in bars), bars
    assert {300, 12 * MIB} <= {bar["max"] for bar in bars}  # the read's, the upload's
    texts = [model.get("value", "") for model in models if model.get("_model_name") == "HTMLModel"]
    assert any("12.0M/12.0M" in text for text in texts), json.dumps(texts)
    assert any("300/300" in text for text in texts), json.dumps(texts)
