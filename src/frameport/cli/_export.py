"""`frameport export`: a table, or a filtered view of it, to a Parquet file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._common import (
    CREDENTIALS_HELP,
    CommandError,
    Connection,
    add_client_command,
    add_connection_arguments,
    add_system_argument,
    add_view_arguments,
    view_from_args,
)

PARQUET_CODECS = ("zstd", "snappy", "gzip", "brotli", "lz4", "none")


def add_export_command(commands: Any) -> None:
    export = add_client_command(
        commands,
        "export",
        _write,
        kept=_kept,
        help="export a table (or a filtered view of it) to a Parquet file",
        description=f"Stream a table's rows to a Parquet file. {CREDENTIALS_HELP}",
    )
    add_view_arguments(
        export,
        columns="columns to export, e.g. name,age (after the $ fields of --system)",
    )
    add_system_argument(export)
    export.add_argument("-o", "--output", required=True, help="the Parquet file to write")
    export.add_argument(
        "--compression", default="zstd", choices=PARQUET_CODECS, help="Parquet codec (default zstd)"
    )
    export.add_argument(
        "--resume",
        action="store_true",
        help="keep a checkpoint beside the output after each segment of rows, and continue "
        "from it when the same export runs again after being stopped",
    )
    add_connection_arguments(export)


def _kept(args: argparse.Namespace) -> str:
    if args.resume:
        return (
            f"the rows exported so far are kept beside {args.output}; run the same command "
            "again to resume from them"
        )
    return f"{args.output} was not written (with --resume, a rerun resumes a stopped export)"


def _write(connection: Connection, args: argparse.Namespace) -> str:
    output = Path(args.output)
    if output.is_dir() or not output.name:
        raise CommandError(f"{args.output} is a directory; give a file name with -o", code=2)
    if not output.parent.is_dir():
        raise CommandError(f"the directory {str(output.parent)!r} does not exist", code=2)
    query = view_from_args(connection, args)
    progress = False if args.no_progress else None
    report = query.to_parquet(
        output,
        compression=args.compression,
        progress=progress,
        resume=args.resume,
        system=args.system,
    )
    if not report.ok:
        raise CommandError(f"the export's checks failed:\n{report.summary()}", code=1)
    return f"{args.db}/{args.table}: {report.summary()}"
