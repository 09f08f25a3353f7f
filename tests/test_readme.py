"""The README publishes the write → read dtype table; it must be the one the code uses."""

from pathlib import Path

from frameport._schema import dtype_table_markdown

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_publishes_the_dtype_table_the_code_uses() -> None:
    assert dtype_table_markdown() in README.read_text(encoding="utf-8")


def test_readme_starts_with_the_two_commands() -> None:
    lines = [line.strip() for line in README.read_text(encoding="utf-8").splitlines()]
    commands = [line.split("#")[0].strip() for line in lines[:5] if line.startswith("make")]
    assert commands == ["make demo", "make test"]
