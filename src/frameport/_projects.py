"""Whole projects beside a client: `copy` streams one project into another, `verify` checks a
backup archive again (backups and restores themselves are `Client.backup` and
`Client.restore`).

>>> fp.copy(source_client, destination_client, on_conflict="skip").summary()  # doctest: +SKIP
>>> fp.verify("backups/crm").ok                                               # doctest: +SKIP
True
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ._backup import RestoreReport, Selection, VerifyReport, copy_project
from ._backup import verify as verify_archive
from ._client import AsyncClient, Client, requester_of
from ._core._sync import run_sync
from ._tables.writes import OnConflict


def copy(
    source: Client | AsyncClient,
    destination: Client | AsyncClient,
    *,
    databases: Sequence[str] | None = None,
    tables: Sequence[str] | None = None,
    buckets: Sequence[str] | None = None,
    functions: Sequence[str] | None = None,
    dry_run: bool = False,
    on_conflict: OnConflict = "fail",
    progress: bool | None = None,
) -> RestoreReport:
    """Copy the project of `source` (or the `databases`, `buckets` and `functions` named;
    `tables`, each as ``"database/table"``, adds those tables alone to the databases) into
    the project of `destination`, without an archive: each table is read up to the
    ``$sequence`` it had when the copy started and written as it is read; files go through
    a temporary file one at a time. The order, the checks, `on_conflict` (for what the
    destination holds otherwise: what it holds as the source does is left alone) and the
    report are those of `Client.restore`; `dry_run` writes nothing and says what the copy
    would do. A copy keeps no checkpoint: after a crash, run it again.

    >>> fp.copy(staging, production, databases=["crm"], dry_run=True)  # doctest: +SKIP
    """
    selection = Selection(databases, buckets, functions, tables)
    return run_sync(
        copy_project(
            requester_of(source),
            requester_of(destination),
            selection,
            dry_run=dry_run,
            on_conflict=on_conflict,
            progress=progress,
        )
    )


def verify(target: str | os.PathLike[str], snapshot: str | None = None) -> VerifyReport:
    """Check the archive at `target` again: every file its snapshots (or the one `snapshot`)
    need is there with the size and SHA-256 its manifest recorded. The report names each
    file missing or altered (`VerifyReport.problems`); `ok` says whether there is none.

    >>> report = fp.verify("backups/crm")                          # doctest: +SKIP
    >>> report.ok, report.problems                                 # doctest: +SKIP
    (True, [])
    """
    return verify_archive(target, snapshot)
