"""`frameport backup`, `restore`, `verify` and `copy`: whole projects into an archive, back
out of it, checked again, or straight into another project."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ._common import CommandError, Connection, client_command, fail

TO_KEY_ENV = "FRAMEPORT_TO_KEY"
ON_CONFLICT_HELP = (
    "a row or file the destination holds with other content (one it holds as the source does "
    "is left alone): fail (stop, the default), skip (keep the destination's) or replace (put "
    "the source's in its place)"
)


def _ids(text: str | None) -> list[str] | None:
    return None if text is None else [item.strip() for item in text.split(",") if item.strip()]


TABLES_HELP = (
    "tables to {verb}, each as DATABASE/TABLE (table IDs are unique within their database "
    "only), e.g. crm/orders,crm/lines"
)


def _add_selection(parser: argparse.ArgumentParser, verb: str) -> None:
    for what in ("databases", "buckets", "functions"):
        parser.add_argument(
            f"--{what}",
            default=None,
            metavar="IDS",
            help=f"{what} to {verb}, e.g. a,b (default: all)",
        )


def _add_part(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--databases",
        "--database",
        default=None,
        metavar="IDS",
        help="restore only these databases, e.g. crm,sales (default: the whole snapshot)",
    )
    parser.add_argument(
        "--tables",
        "--table",
        default=None,
        metavar="NAMES",
        help=TABLES_HELP.format(verb="restore alone")
        + "; with --databases or --tables, the snapshot's buckets and functions are left out",
    )


def _add_write_choices(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    parser.add_argument(
        "--on-conflict", choices=("fail", "skip", "replace"), default="fail", help=ON_CONFLICT_HELP
    )


def add_project_commands(commands: Any) -> None:
    with client_command(
        commands,
        "backup",
        _backup,
        kept=lambda args: (
            f"the archive {args.target} holds the snapshot so far; run the "
            "command again to finish it"
        ),
        help="back up the project into a folder or an fsspec URL (verified, incremental)",
        description="Write the project's databases, tables (schema and rows as Parquet), "
        "buckets, files and functions into an archive; a second run into the same archive "
        "stores only what changed, as a new snapshot.",
    ) as backup:
        backup.add_argument("target", help="the archive: a folder, or a URL such as s3://b/crm")
        _add_selection(backup, "back up")

    with client_command(
        commands,
        "restore",
        _restore,
        kept="what was restored so far stays, and is recorded: run the command again to go on",
        help="restore a snapshot of an archive into the project",
        description="Verify an archive's snapshot, then create its databases, tables, "
        "columns, indexes, rows, buckets, files and functions in the project, keeping their "
        "IDs and permissions.",
    ) as restore:
        restore.add_argument("source", help="the archive: a folder, or a URL")
        restore.add_argument("--snapshot", default=None, help="its ID (default: the newest)")
        _add_part(restore)
        _add_write_choices(restore)

    with client_command(
        commands,
        "copy",
        _copy,
        kept="what was copied so far stays; run the command again to go on (what is there as "
        "the source holds it is left alone)",
        help="copy the project into another project, without an archive",
        description="Stream the project's databases, tables, rows, buckets, files and "
        "functions into another project (--to-endpoint, --to-project; its key in "
        f"{TO_KEY_ENV} or --to-key).",
    ) as copy:
        copy.add_argument("--to-endpoint", required=True, help="the destination's endpoint")
        copy.add_argument("--to-project", required=True, help="the destination's project")
        copy.add_argument("--to-key", default=None, help=f"default: ${TO_KEY_ENV}")
        _add_write_choices(copy)
        _add_selection(copy, "copy")
        copy.add_argument(
            "--tables", default=None, metavar="NAMES", help=TABLES_HELP.format(verb="copy")
        )

    verify = commands.add_parser(
        "verify",
        help="check an archive: every file there, with its recorded size and SHA-256",
        description="Check every file the archive's snapshots need; name each file missing "
        "or altered (exit status 1 when there is one).",
    )
    verify.add_argument("target", help="the archive: a folder, or a URL")
    verify.add_argument("--snapshot", default=None, help="check only this snapshot")
    verify.set_defaults(run=_verify)


def _backup(connection: Connection, args: argparse.Namespace) -> str:
    return connection.client.backup(
        args.target,
        databases=_ids(args.databases),
        buckets=_ids(args.buckets),
        functions=_ids(args.functions),
        progress=args.progress,
    ).summary()


def _restore(connection: Connection, args: argparse.Namespace) -> str:
    return connection.client.restore(
        args.source,
        snapshot=args.snapshot,
        databases=_ids(args.databases),
        tables=_ids(args.tables),
        dry_run=args.dry_run,
        on_conflict=args.on_conflict,
        progress=args.progress,
    ).summary()


def _copy(connection: Connection, args: argparse.Namespace) -> str:
    from .._client import Client
    from .._projects import copy

    key = args.to_key or os.environ.get(TO_KEY_ENV)
    if not key:
        raise CommandError(f"give the destination's API key in {TO_KEY_ENV} or --to-key", 2)
    with Client(args.to_endpoint, args.to_project, key=key) as destination:
        return copy(
            connection.client,
            destination,
            databases=_ids(args.databases),
            tables=_ids(args.tables),
            buckets=_ids(args.buckets),
            functions=_ids(args.functions),
            dry_run=args.dry_run,
            on_conflict=args.on_conflict,
            progress=args.progress,
        ).summary()


def _verify(args: argparse.Namespace) -> int:
    from .._exceptions import FrameportError
    from .._projects import verify

    try:
        report = verify(args.target, args.snapshot)
    except (FrameportError, OSError) as exc:
        return fail("verify", exc)
    print(report.summary())
    return 0 if report.ok else 1
