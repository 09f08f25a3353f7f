"""`frameport serve` and `frameport demo`: the embedded local service."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path
from typing import Any

from .._core import ID
from .._core._config import LOCAL_SERVICE_PORT
from ._common import fail, positive_int

LOCAL_EXTRA = "needs the local extra: pip install 'frameport[local]'"


def add_serve_command(commands: Any) -> None:
    serve = commands.add_parser("serve", help="run the local service in the foreground")
    serve.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=int,
        default=LOCAL_SERVICE_PORT,
        help=f"port (default {LOCAL_SERVICE_PORT})",
    )
    serve.add_argument(
        "--data",
        default="./frameport-data",
        help="data directory (default ./frameport-data)",
    )
    serve.add_argument("--project", default="demo", help="the project ID")
    serve.add_argument(
        "--key", default=None,
        help="fix the API key (default: generated once, shown once on a terminal)",
    )  # fmt: skip
    serve.add_argument("--no-rate-limits", action="store_true", help="do not enforce limits")
    serve.add_argument("--faults", default=None, metavar="RATE[:SEED]", help="inject faults")
    serve.add_argument(
        "--max-file-size", type=positive_int, default=None, help="bytes (default 5 GiB)"
    )
    serve.add_argument(
        "--max-transaction-bytes", type=positive_int, default=None,
        help="JSON bytes one transaction may stage (default 256 MiB)",
    )  # fmt: skip
    serve.add_argument(
        "--max-body-size", type=positive_int, default=None,
        help="bytes of parameters one request may send (default 16 MiB)",
    )  # fmt: skip
    serve.add_argument(
        "--access-log", action="store_true", help="print one line per request (uvicorn's log)"
    )
    serve.add_argument(
        "--latency", default=None, metavar="MS[:JITTER_MS]",
        help="delay every answer, as a service that far away (e.g. 50:10)",
    )  # fmt: skip
    serve.add_argument(
        "--bandwidth", type=float, default=None, metavar="MBIT",
        help="cap each connection at this many megabits per second",
    )  # fmt: skip
    serve.add_argument(
        "--compression", choices=("on", "off"), default="on",
        help="compress answers as the service does (default on)",
    )  # fmt: skip
    serve.set_defaults(run=_serve)


def add_demo_command(commands: Any) -> None:
    demo = commands.add_parser(
        "demo", help="load a sample table into the local service and export it to ./out"
    )
    demo.add_argument("--out", default="out", help="directory for the files (default ./out)")
    demo.add_argument(
        "--rows", type=positive_int, default=100_000, help="people to generate (default 100000)"
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="leave the service running afterwards (until Ctrl-C), its settings in "
        "OUT/frameport.env",
    )
    demo.set_defaults(run=_demo)


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
        from ..local._distance import check_distance
        from ..local._faults import parse_fault_spec
        from ..local._server import ServiceConfig, serve
    except ImportError as exc:  # the `local` extra is missing
        return fail("serve", f"{LOCAL_EXTRA} ({exc})", code=2)
    config = ServiceConfig(
        data_dir=Path(args.data),
        project=args.project,
        key=args.key,
        rate_limits=not args.no_rate_limits,
        faults=args.faults,
        latency=args.latency,
        bandwidth=args.bandwidth,
        compression=args.compression == "on",
    )
    try:
        ID.custom(args.project)
        if args.faults is not None:
            parse_fault_spec(args.faults)
        check_distance(config)
    except ValueError as exc:
        return fail("serve", exc, code=2)
    busy = _port_in_use(args.host, args.port)
    if busy is not None:
        where = f"{args.host}:{args.port} ({busy.strerror or busy})"
        return fail("serve", f"cannot listen on {where}; choose another --port (or --host)")
    if args.max_file_size is not None:
        config.max_file_size = args.max_file_size
    if args.max_transaction_bytes is not None:
        config.max_transaction_bytes = args.max_transaction_bytes
    if args.max_body_size is not None:
        config.max_body_size = args.max_body_size
    try:
        serve(config, args.host, args.port, access_log=args.access_log)
    except OSError as exc:  # e.g. a data directory that cannot be created
        return fail("serve", exc)
    except KeyboardInterrupt:
        return 130
    return 0


def _demo(args: argparse.Namespace) -> int:
    try:
        from .._demo import run_demo
    except ImportError as exc:  # the `local` extra is missing
        return fail("demo", f"{LOCAL_EXTRA} ({exc})", code=2)
    try:
        run_demo(args.out, args.rows, keep=args.keep)
    except OSError as exc:  # e.g. an --out directory that cannot be written
        return fail("demo", exc)
    except KeyboardInterrupt:
        kept = f"the local service is gone; the files in {args.out} stay"
        return fail("demo", f"stopped; {kept}", 130)
    return 0
