"""The `frameport` command: serve, and the jobs built on the client."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _serve(args: argparse.Namespace) -> int:
    try:
        from .local._server import serve
        from .local._state import ServiceConfig
    except ImportError as exc:  # the `local` extra is missing
        print(f"frameport serve needs the local extra: pip install 'frameport[local]' ({exc})")
        return 2
    config = ServiceConfig(
        data_dir=Path(args.data),
        project=args.project,
        key=args.key,
        rate_limits=not args.no_rate_limits,
        faults=args.faults,
    )
    if args.max_file_size is not None:
        config.max_file_size = args.max_file_size
    serve(config, args.host, args.port)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="frameport", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the local service in the foreground")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--data", default="./frameport-data", help="directory for the data")
    serve.add_argument("--project", default="demo", help="the project ID")
    serve.add_argument("--key", default=None, help="fix the API key (default: generated once)")
    serve.add_argument("--no-rate-limits", action="store_true", help="do not enforce limits")
    serve.add_argument("--faults", default=None, metavar="RATE[:SEED]", help="inject faults")
    serve.add_argument("--max-file-size", type=int, default=None, help="bytes (default 5 GiB)")
    serve.set_defaults(run=_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
