"""A test hook that ends the service at a named point, as a SIGKILL or a power cut would.

With `FRAMEPORT_LOCAL_CRASH_AT=<point>` in its environment, the service process calls
`os._exit` the first time it reaches `<point>`: no cleanup, no answer sent. Tests use it to
place a crash exactly inside a window (e.g. between joining a file and recording it) instead
of relying on timing. The points:

- `upload.joined`: a file's parts are joined, its completion not yet recorded;
- `upload.recorded`: the completion is recorded, the joined file not yet in place;
- `upload.placed`: the file is in place, its parts not yet deleted;
- `chunk.staged`: a chunk is copied to the staging area, not yet kept as a part;
- `transaction.committing`: a commit's status `committing` is recorded, nothing applied yet;
- `transaction.applying`: the commit's first operation is applied inside its SQLite
  transaction, the rest and the status `committed` not yet;
- `transaction.committed`: the commit is recorded, its answer not yet sent.
"""

from __future__ import annotations

import os

ENVIRONMENT_VARIABLE = "FRAMEPORT_LOCAL_CRASH_AT"
#: The exit status of a crash point (what a shell reports for SIGKILL).
CRASH_EXIT_STATUS = 137


def crash_point(name: str) -> None:
    """End the process now when the environment names this point."""
    if os.environ.get(ENVIRONMENT_VARIABLE) == name:
        os._exit(CRASH_EXIT_STATUS)
