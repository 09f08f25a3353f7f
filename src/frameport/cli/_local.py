"""`frameport serve` and `frameport demo`: the embedded local service."""

from __future__ import annotations

import argparse
import os
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._core import ID
from .._core._config import LOCAL_SERVICE_PORT
from ._common import fail, positive_int

LOCAL_EXTRA = "needs the local extra: pip install 'frameport[local]'"

#: The service's bounds `serve` sets, as `ServiceConfig` fields and `--max-...` flags.
SERVICE_LIMITS = (
    ("max_file_size", "bytes (default 5 GiB)"),
    ("max_body_size", "bytes of parameters one request may send (default 16 MiB)"),
    ("max_transaction_bytes", "JSON bytes one transaction may stage (default 256 MiB)"),
    ("max_connections", "connections open at once (default from the descriptor limit)"),
)
#: The realtime sockets' bounds, as `RealtimeLimits` fields and `--max-...` flags.
SOCKET_LIMITS = (
    ("max_sockets", "realtime sockets open at once (default half of --max-connections)"),
    ("max_sockets_per_ip", "realtime sockets from one address (default 128)"),
    ("max_subscriptions", "subscriptions one socket may hold (default 100)"),
    ("max_channels", "channels one subscription may list (default 100)"),
    ("max_outbox_bytes", "unsent frames a socket may leave before it is closed (default 1 MiB)"),
)


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
        "--key",
        default=None,
        help="fix the API key (default: $FRAMEPORT_KEY, else one generated once and kept in "
        "DATA/api-key, readable by you only)",
    )
    serve.add_argument(
        "--print-key",
        action="store_true",
        help="print the API key kept in the data directory, and exit",
    )
    serve.add_argument("--no-rate-limits", action="store_true", help="do not enforce limits")
    serve.add_argument("--faults", default=None, metavar="RATE[:SEED]", help="inject faults")
    for name, help_text in SERVICE_LIMITS + SOCKET_LIMITS:
        flag = "--" + name.replace("_", "-")
        serve.add_argument(flag, type=positive_int, default=None, help=help_text)
    serve.add_argument(
        "--access-log", action="store_true", help="print one line per request (uvicorn's log)"
    )
    serve.add_argument(
        "--latency",
        default=None,
        metavar="MS[:JITTER_MS]",
        help="delay every answer, as a service that far away (e.g. 50:10)",
    )
    serve.add_argument(
        "--bandwidth",
        type=float,
        default=None,
        metavar="MBIT",
        help="cap each connection at this many megabits per second",
    )
    serve.add_argument(
        "--compression",
        choices=("on", "off"),
        default="on",
        help="compress answers as the service does (default on)",
    )
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


def _print_key(data_dir: Path, given: str | None) -> int:
    """`serve --print-key`: the key a start with these options uses."""
    from ..local._key_file import NoKeyYet, read_key

    try:
        print(given or read_key(data_dir))
    except NoKeyYet as exc:
        return fail("serve", exc)
    return 0


def _serve(args: argparse.Namespace) -> int:
    key = args.key or os.environ.get("FRAMEPORT_KEY") or None
    if args.print_key:
        return _print_key(Path(args.data), key)
    try:
        from ..local._distance import check_distance
        from ..local._faults import parse_fault_spec
        from ..local._server import ServiceConfig, serve
    except ImportError as exc:  # the `local` extra is missing
        return fail("serve", f"{LOCAL_EXTRA} ({exc})", code=2)
    config = ServiceConfig(
        data_dir=Path(args.data),
        project=args.project,
        key=key,
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
    for name, _ in SERVICE_LIMITS:
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    sockets = {name: getattr(args, name) for name, _ in SOCKET_LIMITS}
    config.realtime = replace(
        config.realtime, **{name: value for name, value in sockets.items() if value is not None}
    )
    try:
        serve(config, args.host, args.port, access_log=args.access_log)
    except ValueError as exc:  # limits that contradict each other
        return fail("serve", exc, code=2)
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
