"""The `frameport` command: serve, and the jobs built on the client."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PARQUET_CODECS = ("zstd", "snappy", "gzip", "brotli", "lz4", "none")


def _fail(command: str, message: object, code: int = 1) -> int:
    """Say what went wrong on one line of stderr; return the exit code."""
    print(f"frameport {command}: {message}", file=sys.stderr)
    return code


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of 1 or more, got {value}")
    return value


def _port_in_use(host: str, port: int) -> OSError | None:
    """The error binding `host:port` gives, or None when it is free (checked before the
    service prints its key, so that a busy port is said plainly)."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        return exc
    return None


def _serve(args: argparse.Namespace) -> int:
    try:
        from .local._faults import parse_fault_spec
        from .local._server import serve
        from .local._state import ServiceConfig
    except ImportError as exc:  # the `local` extra is missing
        return _fail(
            "serve", f"needs the local extra: pip install 'frameport[local]' ({exc})", code=2
        )
    if args.faults is not None:
        try:
            parse_fault_spec(args.faults)
        except ValueError as exc:
            return _fail("serve", exc, code=2)
    busy = _port_in_use(args.host, args.port)
    if busy is not None:
        where = f"{args.host}:{args.port} ({busy.strerror or busy})"
        return _fail("serve", f"cannot listen on {where}; choose another --port (or --host)")
    config = ServiceConfig(
        data_dir=Path(args.data),
        project=args.project,
        key=args.key,
        rate_limits=not args.no_rate_limits,
        faults=args.faults,
    )
    if args.max_file_size is not None:
        config.max_file_size = args.max_file_size
    try:
        serve(config, args.host, args.port)
    except OSError as exc:  # e.g. a data directory that cannot be created
        return _fail("serve", exc)
    except KeyboardInterrupt:
        return 130
    return 0


def _export(args: argparse.Namespace) -> int:
    from ._client import DEFAULT_ENDPOINT_ENV, JWT_ENV, KEY_ENV, PROJECT_ENV, Client
    from ._exceptions import AuthenticationError, FrameportError, PermissionDeniedError

    endpoint = args.endpoint or os.environ.get(DEFAULT_ENDPOINT_ENV)
    project = args.project or os.environ.get(PROJECT_ENV)
    if not endpoint or not project:
        return _fail(
            "export",
            f"give --endpoint and --project, or set {DEFAULT_ENDPOINT_ENV} and {PROJECT_ENV}",
            code=2,
        )
    output = Path(args.output)
    if output.is_dir() or not output.name:
        return _fail("export", f"{args.output} is a directory; give a file name with -o", 2)
    if not output.parent.is_dir():
        return _fail("export", f"the directory {str(output.parent)!r} does not exist", code=2)
    key = args.key or os.environ.get(KEY_ENV) or None
    jwt = None if key else os.environ.get(JWT_ENV) or None
    try:
        with Client(endpoint, project, key=key, jwt=jwt) as client:
            table = (client.collection if args.collection else client.table)(args.db, args.table)
            query = table.query(args.where, local_dict={}) if args.where else table
            if args.columns:
                query = query.select(*[c.strip() for c in args.columns.split(",") if c.strip()])
            progress = False if args.no_progress else None
            rows = query.to_parquet(output, compression=args.compression, progress=progress)
    except (AuthenticationError, PermissionDeniedError) as exc:
        credential = "--key / FRAMEPORT_KEY" if key else "FRAMEPORT_JWT" if jwt else None
        if credential is None:
            hint = f"give an API key with --key or {KEY_ENV} (or a JWT in {JWT_ENV})"
        elif exc.hint is not None:  # the client already said what to check
            hint = f"the credential came from {credential}"
        else:
            hint = f"check that {credential} holds a valid credential for project {project!r}"
        return _fail("export", f"{exc}; {hint}")
    except (FrameportError, OSError, ValueError) as exc:
        return _fail("export", exc)
    except KeyboardInterrupt:
        return 130
    print(f"wrote {rows:,} rows of {args.db}/{args.table} to {args.output}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    try:
        from ._demo import run_demo
    except ImportError as exc:  # the `local` extra is missing
        return _fail(
            "demo", f"needs the local extra: pip install 'frameport[local]' ({exc})", code=2
        )
    try:
        run_demo(args.out, args.rows)
    except OSError as exc:  # e.g. an --out directory that cannot be written
        return _fail("demo", exc)
    except KeyboardInterrupt:
        return 130
    return 0


def _add_export_command(commands: Any) -> None:
    export = commands.add_parser(
        "export",
        help="export a table (or a filtered view of it) to a Parquet file",
        description="Stream a table's rows to a Parquet file. Credentials: --key, or "
        "FRAMEPORT_KEY / FRAMEPORT_JWT in the environment (preferred: a key on the command "
        "line is visible to other users of the machine).",
    )
    export.add_argument("db", help="the database ID")
    export.add_argument("table", help="the table ID")
    export.add_argument("-o", "--output", required=True, help="the Parquet file to write")
    export.add_argument("--where", default=None, help='a filter, e.g. "age > 30"')
    export.add_argument(
        "--columns",
        default=None,
        help="columns to export, e.g. name,age (the $id, $sequence, $createdAt, $updatedAt "
        "and $permissions columns always come first)",
    )
    export.add_argument(
        "--compression", default="zstd", choices=PARQUET_CODECS, help="Parquet codec (default zstd)"
    )
    export.add_argument("--collection", action="store_true", help="use the legacy interface")
    export.add_argument("--no-progress", action="store_true", help="no progress bar")
    export.add_argument("--endpoint", default=None, help="default: $FRAMEPORT_ENDPOINT")
    export.add_argument("--project", default=None, help="default: $FRAMEPORT_PROJECT")
    export.add_argument("--key", default=None, help="default: $FRAMEPORT_KEY")
    export.set_defaults(run=_export)


def _add_demo_command(commands: Any) -> None:
    demo = commands.add_parser(
        "demo", help="load a sample table into the local service and export it to ./out"
    )
    demo.add_argument("--out", default="out", help="directory for the files (default ./out)")
    demo.add_argument(
        "--rows", type=_positive_int, default=100_000, help="people to generate (default 100000)"
    )
    demo.set_defaults(run=_demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="frameport", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the local service in the foreground")
    serve.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument(
        "--data",
        default="./frameport-data",
        help="data directory (default ./frameport-data)",
    )
    serve.add_argument("--project", default="demo", help="the project ID")
    serve.add_argument("--key", default=None, help="fix the API key (default: generated once)")
    serve.add_argument("--no-rate-limits", action="store_true", help="do not enforce limits")
    serve.add_argument("--faults", default=None, metavar="RATE[:SEED]", help="inject faults")
    serve.add_argument(
        "--max-file-size", type=_positive_int, default=None, help="bytes (default 5 GiB)"
    )
    serve.set_defaults(run=_serve)
    _add_export_command(commands)
    _add_demo_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
