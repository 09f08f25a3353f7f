"""The `frameport` command: the local service (serve, demo), the catalog and the rows (ls,
head, count, drop), and the jobs built on the client (export, import, sync, backup, restore,
verify, copy, upload, login, logout)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ._catalog import add_catalog_commands
from ._examples import add_examples
from ._local import add_demo_command, add_serve_command
from ._login import add_login_commands
from ._projects import add_project_commands
from ._rows import add_row_commands
from ._upload import add_upload_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="frameport", description=__doc__)
    parser.add_argument("--version", action="version", version=f"frameport {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_serve_command(commands)
    add_catalog_commands(commands)
    add_row_commands(commands)
    add_project_commands(commands)
    add_upload_command(commands)
    add_login_commands(commands)
    add_demo_command(commands)
    add_examples(commands)
    return parser


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command's parser by name, in the order ``frameport --help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
