"""An atomic load whose commit outlasts the client's timeout: the load waits for the commit's
outcome and reports what the service did, so nobody reruns a load that was written.

The local service's test hook `FRAMEPORT_LOCAL_PAUSE_AT` holds the commit at
`transaction.committing` (status `committing` recorded, nothing applied) for longer than the
client waits for an answer.
"""

from __future__ import annotations

import pandas as pd
import pytest

from frameport.local import LocalService
from frameport.local.service._crash_points import PAUSE_VARIABLE
from tables_support import new_id

TIMEOUT = 1.0
COMMIT_SECONDS = 2.5


def test_an_atomic_load_whose_commit_outlasts_the_timeout_reports_success_once(
    service: LocalService, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = pd.DataFrame({"name": [f"name {i}" for i in range(150)], "age": range(150)})
    with service.client(timeout=TIMEOUT) as client:
        database = new_id("slowcommit")
        client.create_database(database)
        schema = {"name": "string(20)", "age": "integer"}
        table = client.create_table(database, new_id("t"), schema=schema)
        monkeypatch.setenv(PAUSE_VARIABLE, f"transaction.committing:{COMMIT_SECONDS}")
        report = table.load(frame, atomic=True, progress=False)
        monkeypatch.delenv(PAUSE_VARIABLE)
        assert (report.written, report.batches) == (150, 1)
        assert table.count() == 150, "the rows are in the table once"
