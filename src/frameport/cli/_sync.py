"""`frameport sync`: keep a Delta Lake table equal to a table (or a filtered view of it)."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import (
    CREDENTIALS_HELP,
    Connection,
    add_client_command,
    add_connection_arguments,
    add_view_arguments,
    view_from_args,
)


def add_sync_command(commands: Any) -> None:
    sync = add_client_command(
        commands,
        "sync",
        _sync,
        kept=lambda args: (
            f"the Delta table {args.target} is as the last complete run left it "
            "(a run commits once, at its end); run the command again to sync"
        ),
        help="keep a Delta Lake table in step with a table (needs the delta extra)",
        description="Write a table's rows to a Delta Lake table, then on each later run merge "
        f"only the rows changed since the last one. {CREDENTIALS_HELP}",
    )
    add_view_arguments(sync, columns="columns to sync, e.g. name,age")
    sync.add_argument("target", help="the Delta table's folder (created by the first run)")
    sync.add_argument(
        "--deletes",
        choices=("scan", "ignore"),
        default="scan",
        help="scan: read the IDs of the view and remove the rows that are gone (default); "
        "ignore: keep them",
    )
    sync.add_argument(
        "--lag",
        type=float,
        default=5.0,
        help="seconds before the last run's start to read from (default 5)",
    )
    add_connection_arguments(sync)


def _sync(connection: Connection, args: argparse.Namespace) -> str:
    query = view_from_args(connection, args)
    progress = False if args.no_progress else None
    report = query.sync(args.target, deletes=args.deletes, lag=args.lag, progress=progress)
    return f"{args.db}/{args.table} → {args.target}: {report.summary()}"
