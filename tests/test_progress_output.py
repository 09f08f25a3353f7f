"""Progress as users see it: a known total gives a percentage and the time left; written to a
file or a pipe (not a terminal) each state is a line of its own, never a carriage-return
redraw; the bar stays in its final state; and in a notebook the widget bar finishes green.
Uploads, downloads, row writes and column waits all go through the same bars."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from frameport._client import Client
from frameport._core import _progress
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
            "svc.stop()"
        )
    ]
    path = tmp_path / "bar.ipynb"
    nbformat.write(notebook, path)
    executed = run_notebook(path, tmp_path)
    state = executed.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    models = [model["state"] for model in state.values()]
    [bar] = [model for model in models if model.get("_model_name") == "FloatProgressModel"]
    assert bar["bar_style"] == "success" and bar["value"] == bar["max"]
    texts = [model.get("value", "") for model in models if model.get("_model_name") == "HTMLModel"]
    assert any("12.0M/12.0M" in text for text in texts), json.dumps(texts)
