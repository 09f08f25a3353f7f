"""The README starts with the two commands, links every guide and reference page and only
pages that exist, and nothing in the repository points outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def test_readme_starts_with_the_two_commands() -> None:
    lines = [line.strip() for line in README.read_text(encoding="utf-8").splitlines()]
    commands = [line.split("#")[0].strip() for line in lines[:5] if line.startswith("make")]
    assert commands == ["make demo", "make test"]


def test_readme_links_to_documentation_pages_that_exist() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", README.read_text(encoding="utf-8"))
    assert "docs/getting-started.md" in links
    assert [link for link in links if not (REPO / link).exists()] == []


def test_readme_links_every_guide_and_reference_page() -> None:
    links = set(re.findall(r"\]\(([^)#]+)\)", README.read_text(encoding="utf-8")))
    pages = {
        page.relative_to(REPO).as_posix()
        for folder in ("docs/guides", "docs/reference")
        for page in (REPO / folder).glob("*.md")
    }
    assert sorted(pages - links) == []


def test_the_docs_index_links_every_guide() -> None:
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    links = set(re.findall(r"\]\(([^)#]+)\)", index))
    guides = {f"guides/{page.name}" for page in (REPO / "docs" / "guides").glob("*.md")}
    assert sorted(guides - links) == []


def test_the_data_moving_commands_are_shown_where_newcomers_look() -> None:
    """`import`, `backup`, `verify`, `restore` and `copy` each have a word in the README and
    the docs index, and a heading of the command-line guide that names them."""
    commands = ("import", "backup", "verify", "restore", "copy")
    readme = README.read_text(encoding="utf-8")
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    guide = (REPO / "docs" / "guides" / "command-line.md").read_text(encoding="utf-8")
    headings = " ".join(line for line in guide.splitlines() if line.startswith("#"))
    for command in commands:
        assert f"`{command}`" in index, command
        assert f"frameport {command}" in readme or command == "copy", command
        assert command in headings, command
    assert "frameport copy" in guide


def test_the_api_reference_says_in_its_raw_form_how_to_read_it() -> None:
    page = (REPO / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    before_the_first_name = page.split("\n::: ", 1)[0]
    assert "make docs" in before_the_first_name
    assert "help(" in before_the_first_name


def test_nothing_in_the_repository_points_outside_it() -> None:
    """Every relative path written in a tracked text file (``../x/y``) stays inside it."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    relative_path = re.compile(r"(?<![\w.])(?:\.\./)+[\w.-][\w./-]*")
    outside = []
    for name in tracked:
        if not name.endswith((".md", ".py", ".toml", ".yml", ".ipynb", ".txt", "Makefile")):
            continue
        text = (REPO / name).read_text(encoding="utf-8", errors="replace")
        for path in relative_path.findall(text):
            if not (REPO / name).parent.joinpath(path).resolve().is_relative_to(REPO):
                outside.append(f"{name}: {path}")
    assert outside == []
