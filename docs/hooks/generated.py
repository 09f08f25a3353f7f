"""A MkDocs hook: pages that say ``<!-- generated: NAME -->`` get that part written from the
code at build time (the dtype table, the command-line reference), so they cannot drift."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from frameport._schema import dtype_table_markdown, type_reads_markdown
from frameport.cli import build_parser

HELP_WIDTH = "88"


def cli_reference_markdown() -> str:
    """``frameport --help`` and every command's ``--help``, as the parser prints them."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        parser = build_parser()
        commands = next(a for a in parser._actions if a.dest == "command")
        sections = [f"```text\n{parser.format_help()}```"]
        for name, command in commands.choices.items():  # type: ignore[union-attr]
            sections.append(f"## frameport {name}\n\n```text\n{command.format_help()}```")
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "\n\n".join(sections)


GENERATORS: dict[str, Callable[[], str]] = {
    "dtype-table": dtype_table_markdown,
    "type-reads": type_reads_markdown,
    "cli-reference": cli_reference_markdown,
}


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    for name, generate in GENERATORS.items():
        marker = f"<!-- generated: {name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
