"""Test hooks that end the service at a named point, as a SIGKILL or a power cut would, or
hold it there, as a slow step would.

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

With `FRAMEPORT_LOCAL_PAUSE_AT=<point>:<seconds>` the request reaching `<point>` waits that
many seconds there instead (e.g. a commit that outlasts a client's timeout, still
`committing` while the client asks for its status).
"""

from __future__ import annotations

import os
import time

ENVIRONMENT_VARIABLE = "FRAMEPORT_LOCAL_CRASH_AT"
PAUSE_VARIABLE = "FRAMEPORT_LOCAL_PAUSE_AT"
#: The exit status of a crash point (what a shell reports for SIGKILL).
CRASH_EXIT_STATUS = 137


def crash_point(name: str) -> None:
    """End the process now when the environment names this point; wait there when the
    pause names it."""
    if os.environ.get(ENVIRONMENT_VARIABLE) == name:
        os._exit(CRASH_EXIT_STATUS)
    point, _, seconds = os.environ.get(PAUSE_VARIABLE, "").partition(":")
    if point == name:
        time.sleep(float(seconds or 0))
