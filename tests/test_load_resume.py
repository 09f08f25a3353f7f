"""Resuming loads across processes: a load killed with SIGKILL at a random point, then run
again with ``resume=True``, leaves the table exactly equal to the source — the same IDs
(made for the load, so only the checkpoint can give them back), the same values, no
duplicates — and the resumed run sends only what the killed one had not finished: a relay
between the loads and the service shows the rows each run's requests carried.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameport as fp
from cutting_proxy import CuttingProxy
from frameport import Client
from frameport.local import LocalService
from tables_support import new_id

ROWS = 30_000

KILLED_LOAD = textwrap.dedent(
    """
    import sys
    from frameport import Client

    database, table, path = sys.argv[1:]
    Client.from_env().table(database, table).load(path, resume=True, progress=False)
    sys.exit("the load finished before it was killed")
    """
)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    frame = pa.table(
        {
            "n": pa.array(np.arange(ROWS)),
            "word": [f"w{i % 977}" for i in range(ROWS)],
            "x": pa.array(rng.random(ROWS)),
        }
    )
    path = tmp_path / "rows.parquet"
    pq.write_table(frame, path, row_group_size=5_000)
    return path


@pytest.fixture
def relay(service: LocalService) -> Iterator[CuttingProxy]:
    """A relay to the service that cuts nothing: it keeps what the loads sent through it."""
    with CuttingProxy(service.endpoint, cut_after=0, cuts=0) as proxy:
        yield proxy


@pytest.fixture
def environment(
    service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The environment of a load in a process of its own; this process shares its cache."""
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(tmp_path / "cache"))
    return {
        **os.environ,
        "FRAMEPORT_ENDPOINT": service.endpoint,
        "FRAMEPORT_PROJECT": service.project,
        "FRAMEPORT_KEY": service.key,
    }


def positions_sent(relay: CuttingProxy) -> set[int]:
    """The `n` (the row's place in the source) of every row the relay's requests carried."""
    return {int(n) for n in re.findall(rb'"n":(\d+)', relay.sent())}


@pytest.mark.slow
def checkpoints(tmp_path: Path) -> list[bytes]:
    """What the loads' checkpoint files hold now (one deleted as it is read is left out)."""
    held = []
    for path in sorted((tmp_path / "cache" / "loads").glob("*.json")):
        with suppress(FileNotFoundError):
            held.append(path.read_bytes())
    return held


def test_a_load_killed_at_random_points_then_resumed_equals_its_source(
    key_client: Client,
    service: LocalService,
    relay: CuttingProxy,
    source: Path,
    tmp_path: Path,
    environment: dict[str, str],
) -> None:
    # A load's checkpoint is its endpoint's: every run of the load goes through the relay.
    through = {**environment, "FRAMEPORT_ENDPOINT": relay.endpoint}
    database = new_id("resume")
    key_client.create_database(database)
    chance = random.Random(29)
    for run in range(3):
        table = key_client.create_table(
            database, f"run{run}", schema={"n": "integer", "word": "string", "x": "float"}
        )
        for _ in range(2):  # killed twice, then finished
            # Only the running load writes its checkpoint: a change of it is that load's own
            # progress, where the table's count could still grow by the killed run's
            # requests in flight.
            before = checkpoints(tmp_path)
            killed = subprocess.Popen(
                [sys.executable, "-c", KILLED_LOAD, database, table.id, str(source)],
                env=through,
            )
            while checkpoints(tmp_path) == before and killed.poll() is None:
                time.sleep(0.05)  # until the load has written something
            time.sleep(chance.uniform(0.0, 1.0))
            killed.send_signal(signal.SIGKILL)
            assert killed.wait() == -signal.SIGKILL
        held = set(table.to_pandas(progress=False)["n"].astype(int))
        assert 0 < len(held) < ROWS
        relay.forget()
        with fp.Client(relay.endpoint, service.project, key=service.key) as through_relay:
            resumed = through_relay.table(database, table.id)
            report = resumed.load(source, resume=True, progress=False)
        # The resumed run sent the rows from the killed runs' finished prefix on, and only
        # them: the prefix is not empty, and every row in it was in the table already.
        sent = positions_sent(relay)
        first = min(sent)
        assert first > 0 and sent == set(range(first, ROWS))
        assert set(range(first)) <= held
        assert report.written == ROWS
        read = table.to_pandas(progress=False)
        assert read["$id"].is_unique and len(read) == ROWS
        by_n = read.astype({"n": "int64"}).set_index("n").sort_index()
        expected = pq.read_table(source).to_pandas().set_index("n")
        pd.testing.assert_frame_equal(
            by_n[["word", "x"]], expected[["word", "x"]], check_dtype=False
        )
        # the IDs the killed runs made are the ones the finished run made
        assert by_n["$id"].str[:16].nunique() == 1
        assert not list((tmp_path / "cache" / "loads").glob("*.json"))


def test_a_resumed_load_reports_the_rows_rejected_before_the_kill(
    key_client: Client, source: Path, environment: dict[str, str]
) -> None:
    database = new_id("rejects")
    key_client.create_database(database)
    table = key_client.create_table(database, "t", schema={"word": "string"})
    table.add_column("n", "integer")
    table.add_column("x", "float", maximum=0.99)  # a rule the client checks
    key_client._request(
        "POST",
        f"/tablesdb/{database}/tables/t/indexes",
        json={"key": "one_n", "type": "unique", "columns": ["n"]},
    )
    table.insert(pd.DataFrame({"n": [1_000], "word": ["there"], "x": [0.5]}), progress=False)
    expected = pq.read_table(source).to_pandas()
    # the service refuses row 1,000 (its n is taken); the client, the rows with x above 0.99
    bad = sorted([1_000, *expected.index[expected["x"] > 0.99]])
    killed = subprocess.Popen(
        [sys.executable, "-c", KILLED_LOAD, database, table.id, str(source)],
        env=environment,
    )
    while table.count() < ROWS // 2 and killed.poll() is None:
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    assert killed.wait() == -signal.SIGKILL
    report = table.load(source, resume=True, progress=False)
    assert sorted(report.rejected["row"]) == bad
    assert set(report.rejected.loc[report.rejected["row"] == 1_000, "rule"]) == {"service"}
    assert report.written == ROWS - len(bad) == table.count() - 1
