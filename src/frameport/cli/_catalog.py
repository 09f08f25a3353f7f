"""`frameport ls`, `head`, `count` and `drop`: look at the catalog and the rows, and delete
tables, databases and buckets (only with ``--yes``)."""

from __future__ import annotations

import argparse
from functools import partial
from typing import TYPE_CHECKING, Any

from ._common import (
    CommandError,
    Connection,
    add_system_argument,
    add_view_arguments,
    client_command,
    positive_int,
    view_from_args,
)

if TYPE_CHECKING:
    import pandas as pd

#: The columns `ls` shows of each listing.
DATABASE_COLUMNS = ["$id", "name", "enabled", "$createdAt"]
BUCKET_COLUMNS = ["$id", "name", "totalSize", "maximumFileSize", "$createdAt"]
TABLE_COLUMNS = ["$id", "name", "columns", "rowSecurity", "$createdAt"]
COLUMN_COLUMNS = ["key", "type", "array", "required", "size", "status", "dtype"]


def add_catalog_commands(commands: Any) -> None:
    with client_command(
        commands,
        "ls",
        _list,
        help="list the databases and buckets, a database's tables, or a table's columns",
        description="Without arguments, list the project's databases and buckets; with DB, "
        "the tables of that database; with DB TABLE, the columns of that table.",
    ) as ls:
        ls.add_argument("db", nargs="?", default=None, help="a database ID")
        ls.add_argument("table", nargs="?", default=None, help="a table ID of that database")

    with client_command(
        commands,
        "head",
        _head,
        help="print the first rows of a table (or of a filtered view of it)",
        description="Print the first rows of a table as a table of text.",
    ) as head:
        add_view_arguments(head, columns="columns to show, e.g. name,age")
        add_system_argument(head)
        head.add_argument(
            "-n", "--rows", type=positive_int, default=5, help="how many rows (default 5)"
        )

    with client_command(
        commands,
        "count",
        _count,
        help="print how many rows a table (or a filtered view of it) has",
        description="Print the number of rows matching the filter.",
    ) as count:
        add_view_arguments(count, columns=None)

    with client_command(
        commands,
        "drop",
        _drop,
        kept="the delete may or may not have reached the service; check with `frameport ls`",
        help="delete a table, a database or a bucket (asks for --yes)",
        description="Delete the table DB TABLE with its rows, the database DB with all its "
        "tables, or (with --bucket) a bucket with all its files. Without --yes it only says "
        "what would be deleted.",
    ) as drop:
        drop.add_argument("db", nargs="?", default=None, help="the database ID")
        drop.add_argument("table", nargs="?", default=None, help="the table ID of that database")
        drop.add_argument("--bucket", default=None, metavar="BUCKET", help="a bucket ID instead")
        drop.add_argument("--yes", action="store_true", help="delete it (without this: refuse)")


def _text(frame: pd.DataFrame, columns: list[str], empty: str) -> str:
    if frame.empty:
        return f"  ({empty})"
    shown = frame[columns].to_string(index=False)
    return "\n".join(f"  {line}" for line in shown.splitlines())


def _list(connection: Connection, args: argparse.Namespace) -> str:
    client = connection.client
    if args.db is None:
        databases = _text(client.databases(details=True), DATABASE_COLUMNS, "no database")
        buckets = _text(client.buckets(details=True), BUCKET_COLUMNS, "no bucket")
        return f"databases:\n{databases}\nbuckets:\n{buckets}"
    if args.table is None:
        tables = _text(client.tables(args.db, details=True), TABLE_COLUMNS, "no table")
        return f"tables of {args.db}:\n{tables}"
    columns = client.table(args.db, args.table).columns(details=True)
    return f"columns of {args.db}/{args.table}:\n{_text(columns, COLUMN_COLUMNS, 'no column')}"


def _head(connection: Connection, args: argparse.Namespace) -> str:
    view = view_from_args(connection, args).head(args.rows)
    frame = view.to_pandas(progress=False, system=args.system)
    return frame.to_string(index=False) if len(frame) else "(no rows)"


def _count(connection: Connection, args: argparse.Namespace) -> str:
    return str(view_from_args(connection, args).count())


def _drop(connection: Connection, args: argparse.Namespace) -> str:
    client = connection.client
    if (args.bucket is None) == (args.db is None):
        raise CommandError("name what to drop: DB TABLE, DB, or --bucket BUCKET", code=2)
    if args.bucket is not None:
        bucket = client.bucket(args.bucket)
        what = f"bucket {args.bucket} and its {len(bucket.list_files()):,} file(s)"
        delete = bucket.drop
    elif args.table is not None:
        table = client.table(args.db, args.table)
        what = f"table {args.db}/{args.table} and its {table.count():,} row(s)"
        delete = table.drop
    else:
        tables = client.tables(args.db)
        what = f"database {args.db} and its {len(tables):,} table(s)"
        delete = partial(client.drop_database, args.db)
    if not args.yes:
        raise CommandError(f"this deletes {what}; run it again with --yes to do it", code=2)
    delete()
    return f"deleted {what}"
