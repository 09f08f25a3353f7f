"""Whole projects: backups into an archive (a folder or any fsspec URL), checked, resumable
and incremental; their verification; restores from them; copies between projects."""

from ._apply import copy_project, restore
from ._project import Selection
from ._report import BackupReport, RestoreReport, TableOutcome, VerifyReport
from ._snapshot import backup
from ._verify import verify

__all__ = [
    "BackupReport",
    "RestoreReport",
    "Selection",
    "TableOutcome",
    "VerifyReport",
    "backup",
    "copy_project",
    "restore",
    "verify",
]
