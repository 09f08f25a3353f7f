"""`frameport import`: a frame file (Parquet, CSV, NDJSON; local or any fsspec URL) loaded
into a table through `Table.load`."""

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
)


def add_import_command(commands: Any) -> None:
    command = add_client_command(
        commands,
        "import",
        _import,
        kept=_kept,
        help="load a Parquet, CSV or NDJSON file into a table",
        description=(
            "Load a file's rows into a table: each row is checked against the table's "
            "columns, rows that break a rule are reported (and not written), the rest go in "
            f"parallel batches. Exits 1 when rows were rejected, unless --allow-rejects. "
            f"{CREDENTIALS_HELP}"
        ),
    )
    command.add_argument("db", help="the database ID")
    command.add_argument("table", help="the table ID")
    command.add_argument("source", help="the file: a path or URL (s3://, gs://, https://, ...)")
    ids = command.add_mutually_exclusive_group()
    ids.add_argument("--id-column", default=None, help="a column whose values are the row IDs")
    ids.add_argument(
        "--id-from",
        default=None,
        help="columns whose values are hashed into the row IDs, e.g. email or first,last "
        "(a rerun then never duplicates rows)",
    )
    command.add_argument(
        "--on-conflict",
        choices=("skip", "replace", "fail"),
        default="skip",
        help="for a row whose ID exists: keep it (skip, the default), replace it, or fail",
    )
    command.add_argument(
        "--atomic", action="store_true", help="all rows in one transaction, or none"
    )
    command.add_argument(
        "--resume",
        action="store_true",
        help="keep a checkpoint, and continue from it when run again",
    )
    command.add_argument("--dry-run", action="store_true", help="check and report; write nothing")
    command.add_argument("--ordered", action="store_true", help="keep the file's order ($sequence)")
    command.add_argument(
        "--rejects",
        default=None,
        help="write the rejected rows to this file (.csv, .parquet or .ndjson)",
    )
    command.add_argument(
        "--allow-rejects", action="store_true", help="exit 0 even when rows were rejected"
    )
    add_connection_arguments(command)


def _kept(args: argparse.Namespace) -> str:
    if args.atomic or args.dry_run:
        return "nothing was written"
    if args.resume:
        return "the rows written so far stay written; run the same command again to continue"
    return (
        "the rows written so far stay written; run again with --resume (and --id-from) to "
        "continue without duplicates"
    )


def _import(connection: Connection, args: argparse.Namespace) -> str:
    from .._exceptions import RowsRejectedError

    table = connection.client.table(args.db, args.table)
    id_from: str | list[str] | None = args.id_column
    if args.id_from:
        id_from = [name.strip() for name in args.id_from.split(",") if name.strip()]
    if args.rejects is not None and not Path(args.rejects).parent.is_dir():
        raise CommandError(f"the directory of --rejects {args.rejects!r} does not exist", code=2)
    try:
        report = table.load(
            args.source,
            on_conflict=args.on_conflict,
            id_from=id_from,
            atomic=args.atomic,
            resume=args.resume,
            dry_run=args.dry_run,
            ordered=args.ordered,
            progress=False if args.no_progress else None,
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
