"""`frameport export`, `sync` and `import`: a table (or a filtered view of it) to a Parquet file
or kept in step in a Delta Lake table, and a frame file (Parquet, CSV, NDJSON; local or any
fsspec URL) loaded into a table through `Table.load`."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

from ._common import (
    CommandError,
    Connection,
    add_system_argument,
    add_view_arguments,
    client_command,
    view_from_args,
)

PARQUET_CODECS = ("zstd", "snappy", "gzip", "brotli", "lz4", "none")


def add_row_commands(commands: Any) -> None:
    with client_command(
        commands,
        "export",
        _export,
        kept=_export_kept,
        help="export a table (or a filtered view of it) to a Parquet file",
        description="Stream a table's rows to a Parquet file.",
    ) as export:
        add_view_arguments(
            export,
            columns="columns to export, e.g. name,age (after the $ fields of --system)",
        )
        add_system_argument(export)
        export.add_argument("-o", "--output", required=True, help="the Parquet file to write")
        export.add_argument(
            "--compression",
            default="zstd",
            choices=PARQUET_CODECS,
            help="Parquet codec (default zstd)",
        )
        export.add_argument(
            "--resume",
            action="store_true",
            help="keep a checkpoint beside the output after each segment of rows, and continue "
            "from it when the same export runs again after being stopped",
        )

    with client_command(
        commands,
        "import",
        _import,
        kept=_import_kept,
        help="load a Parquet, CSV or NDJSON file into a table",
        description=(
            "Load a file's rows into a table: each row is checked against the table's "
            "columns, rows that break a rule are reported (and not written), the rest go in "
            "parallel batches. Exits 1 when rows were rejected, unless --allow-rejects."
        ),
    ) as load:
        _add_import_arguments(load)

    with client_command(
        commands,
        "sync",
        _sync,
        kept=_sync_kept,
        help="keep a Delta Lake table in step with a table (needs the delta extra)",
        description="Write a table's rows to a Delta Lake table, then on each later run merge "
        "only the rows changed since the last one; with --follow, keep merging the changes "
        "in one commit per interval until Ctrl-C.",
    ) as sync:
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
        sync.add_argument(
            "--follow",
            action="store_true",
            help="after the run, follow the table's changes and commit them every --interval "
            "seconds (none when nothing changed) until Ctrl-C",
        )
        sync.add_argument(
            "--interval",
            type=float,
            default=10.0,
            help="with --follow: seconds between commits (default 10)",
        )
        sync.add_argument(
            "--reconcile",
            type=float,
            default=60.0,
            help="with --follow over realtime (a signed-in user): seconds between the sync "
            "runs that catch up the bulk changes that send no events (default 60)",
        )


def _add_import_arguments(load: argparse.ArgumentParser) -> None:
    load.add_argument("db", help="the database ID")
    load.add_argument("table", help="the table ID")
    load.add_argument("source", help="the file: a path or URL (s3://, gs://, https://, ...)")
    ids = load.add_mutually_exclusive_group()
    ids.add_argument("--id-column", default=None, help="a column whose values are the row IDs")
    ids.add_argument(
        "--id-hash",
        default=None,
        help="key columns whose values are hashed into the row IDs, e.g. email or first,last "
        "(a rerun then never duplicates rows)",
    )
    ids.add_argument("--id-from", default=None, help=argparse.SUPPRESS)  # --id-hash's old name
    load.add_argument(
        "--on-conflict",
        choices=("skip", "replace", "fail"),
        default="skip",
        help="for a row whose ID exists: keep it (skip, the default), replace it, or fail",
    )
    load.add_argument("--atomic", action="store_true", help="all rows in one transaction, or none")
    load.add_argument(
        "--resume",
        action="store_true",
        help="keep a checkpoint, and continue from it when run again",
    )
    load.add_argument("--dry-run", action="store_true", help="check and report; write nothing")
    load.add_argument("--ordered", action="store_true", help="keep the file's order ($sequence)")
    load.add_argument(
        "--null-values",
        default=None,
        help="the CSV fields read as null, comma-separated, e.g. ',NA,n/a' (an empty item is "
        "the empty field; default: only the empty field)",
    )
    load.add_argument(
        "--rejects",
        default=None,
        help="write the rejected rows to this file (.csv, .parquet or .ndjson)",
    )
    load.add_argument(
        "--allow-rejects", action="store_true", help="exit 0 even when rows were rejected"
    )


def _export_kept(args: argparse.Namespace) -> str:
    if args.resume:
        return (
            f"the rows exported so far are kept beside {args.output}; run the same command "
            "again to resume from them"
        )
    return f"{args.output} was not written (with --resume, a rerun resumes a stopped export)"


def _export(connection: Connection, args: argparse.Namespace) -> str:
    output = Path(args.output)
    if output.is_dir() or not output.name:
        raise CommandError(f"{args.output} is a directory; give a file name with -o", code=2)
    if not output.parent.is_dir():
        raise CommandError(f"the directory {str(output.parent)!r} does not exist", code=2)
    report = view_from_args(connection, args).to_parquet(
        output,
        compression=args.compression,
        progress=args.progress,
        resume=args.resume,
        system=args.system,
    )
    if not report.ok:
        raise CommandError(f"the export's checks failed:\n{report.summary()}", code=1)
    return f"{args.db}/{args.table}: {report.summary()}"


def _sync_kept(args: argparse.Namespace) -> str:
    if args.follow:
        return (
            f"the Delta table {args.target} is as the last commit left it; the changes after "
            "it are read again when you run the command again"
        )
    return (
        f"the Delta table {args.target} is as the last complete run left it "
        "(a run commits once, at its end); run the command again to sync"
    )


def _sync(connection: Connection, args: argparse.Namespace) -> str:
    if args.follow:  # a line per commit, as it happens
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger = logging.getLogger("frameport.sync")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    report = view_from_args(connection, args).sync(
        args.target,
        deletes=args.deletes,
        lag=args.lag,
        progress=args.progress,
        follow=args.follow,
        interval=args.interval,
        reconcile=args.reconcile,
    )
    return f"{args.db}/{args.table} → {args.target}: {report.summary()}"


def _import_kept(args: argparse.Namespace) -> str:
    if args.atomic or args.dry_run:
        return "nothing was written"
    if args.resume:
        return "the rows written so far stay written; run the same command again to continue"
    return (
        "the rows written so far stay written; run again with --resume (and --id-hash) to "
        "continue without duplicates"
    )


def _import(connection: Connection, args: argparse.Namespace) -> str:
    from .._exceptions import FrameportWarning, RowsRejectedError

    table = connection.client.table(args.db, args.table)
    if args.id_from:
        print("frameport import: --id-from is now --id-hash (the same hash)", file=sys.stderr)
    hashed = args.id_hash or args.id_from
    id_hash = None if not hashed else [name.strip() for name in hashed.split(",") if name.strip()]
    if args.rejects is not None and not Path(args.rejects).parent.is_dir():
        raise CommandError(f"the directory of --rejects {args.rejects!r} does not exist", code=2)
    # the report's summary says what a load's rerun warning says
    warnings.filterwarnings("ignore", "this load of", FrameportWarning)
    try:
        report = table.load(
            args.source,
            on_conflict=args.on_conflict,
            id_from=args.id_column,
            id_hash=id_hash,
            atomic=args.atomic,
            resume=args.resume,
            dry_run=args.dry_run,
            ordered=args.ordered,
            progress=args.progress,
            null_values=None if args.null_values is None else args.null_values.split(","),
        )
    except RowsRejectedError as exc:
        report = exc.report
    lines = [f"{args.db}/{args.table}: {report.summary()}"]
    rejected = report.rejected
    if len(rejected):
        counts = rejected.groupby(["column", "rule"]).size().sort_values(ascending=False)
        for (column, rule), count in zip(counts.index.tolist(), counts.tolist(), strict=True):
            lines.append(f"  rejected {count:,}: column {column!r}, rule {rule}")
        if args.rejects is not None:
            _write_rejects(rejected, Path(args.rejects))
            lines.append(f"  the rejected rows are in {args.rejects}")
        if not args.allow_rejects:
            print("\n".join(lines))
            raise CommandError(
                f"{len(rejected):,} rows were rejected (--allow-rejects exits 0 for them)", code=1
            )
    return "\n".join(lines)


def _write_rejects(rejected: Any, path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        rejected.to_parquet(path, index=False)
    elif suffix == ".csv":
        rejected.to_csv(path, index=False)
    else:
        rejected.to_json(path, orient="records", lines=True, date_format="iso")
