"""The parts of the documentation written from the code: the dtype tables, the command-line
synopsis and the command-line help.

Each part sits in the Markdown itself, between ``<!-- generated: NAME -->`` and
``<!-- end: NAME -->``, so a page reads the same on a forge, in an editor and on the site.
After a change in the code, ``.venv/bin/python docs/hooks/generated.py`` writes every part
again. As a MkDocs hook, this module fails the build when a part no longer matches the code,
and the tests check the same (tests/test_docs_generated.py).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from frameport._schema import dtype_table_markdown, system_fields_markdown, type_reads_markdown
from frameport._tables import DEFAULT_SYSTEM, system_fields
from frameport.cli import build_parser, command_parsers

DOCS = Path(__file__).resolve().parents[1]
HELP_WIDTH = "88"
PART = re.compile(
    r"(?P<start><!-- generated: (?P<name>[a-z-]+) -->\n)"
    r"(?P<text>.*?)"
    r"(?P<end><!-- end: (?P=name) -->)",
    re.DOTALL,
)


@contextmanager
def help_width() -> Iterator[None]:
    """argparse wraps help at $COLUMNS: the same width wherever the parts are written."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        yield
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def cli_reference_markdown() -> str:
    """``frameport --help`` and every command's ``--help``, as the parser prints them."""
    with help_width():
        parser = build_parser()
        sections = [f"```text\n{parser.format_help()}```"]
        for name, command in command_parsers(parser).items():
            sections.append(f"## frameport {name}\n\n```text\n{command.format_help()}```")
    return "\n\n".join(sections)


def cli_synopsis_markdown() -> str:
    """The usage of every command, as its ``--help`` starts (without the word "usage")."""
    prefix = "usage: "
    lines = []
    with help_width():
        for command in command_parsers(build_parser()).values():
            usage = command.format_usage().rstrip().removeprefix(prefix)
            lines.extend(line.removeprefix(" " * len(prefix)) for line in usage.splitlines())
    return "```text\n" + "\n".join(lines) + "\n```"


GENERATORS: dict[str, Callable[[], str]] = {
    "dtype-table": dtype_table_markdown,
    "type-reads": type_reads_markdown,
    "system-fields": lambda: system_fields_markdown(system_fields(DEFAULT_SYSTEM)),
    "cli-synopsis": cli_synopsis_markdown,
    "cli-reference": cli_reference_markdown,
}


def generated(markdown: str) -> str:
    """`markdown` with every generated part written from the code."""

    def write(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise ValueError(f"unknown generated part {name!r}; known: {', '.join(GENERATORS)}")
        return f"{match['start']}{GENERATORS[name]()}\n{match['end']}"

    return PART.sub(write, markdown)


def stale_parts(markdown: str) -> list[str]:
    """The names of the generated parts of `markdown` that differ from the code."""
    fresh = {match["name"]: match["text"] for match in PART.finditer(generated(markdown))}
    parts = PART.finditer(markdown)
    return [match["name"] for match in parts if match["text"] != fresh[match["name"]]]


def pages() -> list[Path]:
    """The documentation pages holding a generated part."""
    return sorted(page for page in DOCS.rglob("*.md") if PART.search(page.read_text("utf-8")))


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """The MkDocs hook: a page whose generated part no longer matches the code fails the build."""
    stale = stale_parts(markdown)
    if stale:
        raise ValueError(
            f"{page.file.src_path}: the generated part(s) {', '.join(stale)} differ from the "
            "code; run `.venv/bin/python docs/hooks/generated.py` to write them again."
        )
    return markdown


def main() -> int:
    for page in pages():
        text = page.read_text("utf-8")
        fresh = generated(text)
        if fresh != text:
            page.write_text(fresh, "utf-8")
            print(f"wrote {page.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
