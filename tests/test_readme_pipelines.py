"""The README's pipelines example runs as written and does what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _pipelines_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Pipelines") :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    return match.group(1)


def test_the_pipelines_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FRAMEPORT_PROGRESS", "0")
    exec(compile(_pipelines_example(), "README.md", "exec"), {})
    assert (tmp_path / "adults.parquet").exists()
    assert (tmp_path / "adults_delta" / "_delta_log").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adults.parquet", "adults_delta"]
