"""The parts of the documentation written from the code (the dtype tables, the command-line
synopsis and help) are committed into the Markdown, and match the code."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from frameport.cli import build_parser, command_parsers

REPO = Path(__file__).resolve().parents[1]


def load_generated() -> ModuleType:
    sys.path.insert(0, str(REPO / "docs" / "hooks"))
    try:
        return importlib.import_module("generated")
    finally:
        sys.path.pop(0)


generated = load_generated()
PAGES = generated.pages()


def test_the_generated_parts_are_where_readers_look() -> None:
    parts = {
        match["name"]: page.relative_to(REPO).as_posix()
        for page in PAGES
        for match in generated.PART.finditer(page.read_text("utf-8"))
    }
    assert parts.keys() == generated.GENERATORS.keys()
    assert parts["cli-synopsis"] == "docs/guides/command-line.md"
    assert parts["cli-reference"] == "docs/reference/cli.md"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_generated_parts_match_the_code(page: Path) -> None:
    text = page.read_text("utf-8")
    assert generated.stale_parts(text) == [], "run .venv/bin/python docs/hooks/generated.py"
    assert generated.generated(text) == text


def test_a_stale_part_is_found_and_written_again() -> None:
    stale = "intro\n<!-- generated: dtype-table -->\n| old |\n<!-- end: dtype-table -->\nafter\n"
    assert generated.stale_parts(stale) == ["dtype-table"]
    fresh = generated.generated(stale)
    assert generated.stale_parts(fresh) == []
    assert "| old |" not in fresh and fresh.startswith("intro\n") and fresh.endswith("after\n")


def test_the_synopsis_is_what_each_help_prints() -> None:
    guide = (REPO / "docs" / "guides" / "command-line.md").read_text("utf-8")
    env = {**os.environ, "COLUMNS": generated.HELP_WIDTH}
    for name in command_parsers(build_parser()):
        printed = subprocess.run(
            [sys.executable, "-m", "frameport.cli", name, "--help"],
            capture_output=True, text=True, check=True, env=env,
        ).stdout  # fmt: skip
        usage = printed.split("\n\n", 1)[0].removeprefix("usage: ")
        shown = "\n".join(line.removeprefix(" " * len("usage: ")) for line in usage.splitlines())
        assert shown in guide, name
