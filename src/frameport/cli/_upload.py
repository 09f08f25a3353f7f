"""`frameport upload`: files to a bucket, in parts, resumable."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._common import CommandError, Connection, client_command, positive_int


def add_upload_command(commands: Any) -> None:
    with client_command(
        commands,
        "upload",
        _send,
        kept="the files reported above are uploaded, and the parts of the next one the service "
        "acknowledged are recorded: run the command again with --resume to send only what is "
        "missing",
        help="upload files to a bucket (in 5 MiB parts, several at a time, resumable)",
        description="Upload files to a bucket and print each file's ID.",
    ) as upload:
        upload.add_argument("bucket", help="the bucket ID")
        upload.add_argument("paths", nargs="+", metavar="path", help="the files to upload")
        upload.add_argument("--name", default=None, help="the file's name (one path only)")
        upload.add_argument("--file-id", default=None, help="the file's ID (one path only)")
        upload.add_argument(
            "--permission",
            action="append",
            default=None,
            metavar="PERMISSION",
            help="a permission string, e.g. 'read(\"any\")' (repeat for several; default: the "
            "bucket's)",
        )
        upload.add_argument(
            "--resume",
            action="store_true",
            help="continue an interrupted upload of the same file from its last acknowledged part",
        )
        upload.add_argument(
            "--concurrency",
            type=positive_int,
            default=None,
            help="parts in flight (default: chosen as the upload goes)",
        )


def _send(connection: Connection, args: argparse.Namespace) -> str:
    paths = [Path(path) for path in args.paths]
    if len(paths) > 1 and (args.name is not None or args.file_id is not None):
        raise CommandError("--name and --file-id name one file; give one path", code=2)
    for path in paths:
        if not path.is_file():
            raise CommandError(f"{str(path)!r} is not a file", code=2)
    bucket = connection.client.bucket(args.bucket)
    for path in paths:
        uploaded = bucket.upload_file(
            path,
            name=args.name,
            file_id=args.file_id,
            permissions=args.permission,
            resume=args.resume,
            progress=args.progress,
            concurrency=args.concurrency or "auto",
        )
        print(
            f"uploaded {path} to bucket {args.bucket} as {uploaded.name!r}, file "
            f"{uploaded.id} ({uploaded.size:,} bytes)",
            flush=True,
        )
    return ""
