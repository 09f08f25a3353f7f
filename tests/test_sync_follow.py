"""`sync(follow=True)` and `frameport sync --follow`: a Delta table kept current in one commit
per interval while a writer inserts, updates (in bulk beyond the 100 rows that send events,
and in a committed transaction) and deletes; Ctrl-C of the command ends it after a whole
commit, and a rerun resumes. Under the random writer of the live tables' test, through a
proxy that cuts connections and a service restart, the follow ends equal to the view.
Waiting for a commit is a bounded wait on the Delta log."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pandas as pd
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

import frameport as fp
from cutting_proxy import CuttingProxy
from delta_support import assert_no_secret, assert_synced
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import load, new_id
from writer_support import KEY, people, write_through_cuts

INTERVAL = 0.5
WAIT = 30.0
"""Seconds a test waits for a commit before it fails."""


def write_changes(client: fp.Client, table: fp.Table, ids: list[str]) -> None:
    """Inserts, updates, deletes, a bulk update beyond 100 rows and a committed
    transaction."""
    ids.extend(table.insert(sample_people(5, seed=41), progress=False))
    table.upsert(pd.DataFrame({"$id": ids[:3], "name": ["one", "two", "three"]}), progress=False)
    table.where(fp.col("$id").isin(ids[3:7])).delete()
    table.where(fp.col("age") >= 30).update(set={"name": "bulk"})  # hundreds of rows
    with client.transaction() as tx:
        staged = tx.table(table.database_id, table.id)
        staged.insert(sample_people(2, seed=42))
        staged.where(fp.col("age") < 20).update(set={"name": "young"})
    table.where(fp.col("$id").isin(ids[7:9])).delete()


def committed(target: Path, row_id: str) -> bool:
    """Whether the Delta table at `target` holds the row `row_id`."""
    try:
        rows = DeltaTable(str(target)).to_pyarrow_table(columns=["$id"]).column("$id")
    except TableNotFoundError:  # the first commit is under way
        return False
    return row_id in rows.to_pylist()


async def wait_for(
    target: Path, row_id: str, following: asyncio.Task[object] | None = None
) -> None:
    """Wait until the row `row_id` is committed to `target` (the error of `following`, the
    sync, if it ends first)."""
    async with asyncio.timeout(WAIT):
        while not await asyncio.to_thread(committed, target, row_id):
            if following is not None and following.done():
                following.result()
            await asyncio.sleep(INTERVAL / 5)


async def until_it_holds_the_view(
    target: Path, table: fp.TableQuery, following: asyncio.Task[object]
) -> None:
    """Wait until the Delta table at `target` holds the rows of `table` (every change
    committed, the deletes too; the error of `following`, the sync, if it ends first)."""
    async with asyncio.timeout(WAIT):
        while not await asyncio.to_thread(holds_the_view, target, table):
            if following.done():
                following.result()
            await asyncio.sleep(INTERVAL / 5)


async def idle_then_stop(target: Path, following: asyncio.Task[object]) -> tuple[int, int]:
    """The Delta table's version before and after idle intervals, then `following` (the
    sync) cancelled: it ends."""
    settled = DeltaTable(str(target)).version()
    await asyncio.sleep(4 * INTERVAL)  # idle intervals: the client's own clock
    idle = DeltaTable(str(target)).version()
    following.cancel()
    with pytest.raises(asyncio.CancelledError):
        await following
    return settled, idle


def holds_the_view(target: Path, table: fp.TableQuery) -> bool:
    """Whether the Delta table at `target` holds the rows of `table`, as they are now."""
    expected = table.to_pandas(progress=False).set_index("$id").sort_index()
    synced = DeltaTable(str(target)).to_pandas().set_index("$id").sort_index()
    try:
        pd.testing.assert_frame_equal(synced[expected.columns], expected, check_dtype=False)
    except AssertionError:
        return False
    return True


def follow_commits(target: Path) -> list[dict[str, object]]:
    """The commits of the sync's follow phase (merges of the changes of an interval)."""
    history = DeltaTable(str(target)).history()
    return [commit for commit in history if "frameport.changed_rows" in commit]


def test_following_keeps_the_delta_table_equal_to_the_view(
    service: LocalService, key_client: fp.Client, tmp_path: Path
) -> None:
    table, frame = load(key_client, new_id("follow"), sample_people(400, seed=40))
    ids = list(frame["$id"])
    target = tmp_path / "people"

    async def run() -> tuple[int, int]:
        async with fp.AsyncClient(service.endpoint, service.project, key=service.key) as client:
            view = client.table(table.database_id, table.id)
            following = asyncio.create_task(view.sync(target, follow=True, interval=INTERVAL))
            async with asyncio.timeout(WAIT):
                while not target.exists() and not following.done():
                    await asyncio.sleep(0.05)
            await asyncio.to_thread(write_changes, key_client, table, ids)
            [marker] = await asyncio.to_thread(table.insert, sample_people(1, seed=43))
            await wait_for(target, marker)
            await until_it_holds_the_view(target, table, following)
            return await idle_then_stop(target, following)

    settled, idle = asyncio.run(run())
    assert idle == settled, "an interval without changes commits nothing"
    assert_synced(target, table, tmp_path)
    expected = table.to_pandas(progress=False).set_index("$id").sort_index()
    synced = DeltaTable(str(target)).to_pandas().set_index("$id").sort_index()
    pd.testing.assert_frame_equal(synced[expected.columns], expected, check_dtype=False)
    commits = follow_commits(target)
    assert commits and all(c["operation"] == "MERGE" for c in commits)
    assert len(commits) < 8, "one commit per interval, not per write"
    assert_no_secret(target, [service.key])


@pytest.mark.parametrize("seed", [11, 12])
def test_following_a_random_writer_through_cuts_and_a_restart(tmp_path: Path, seed: int) -> None:
    # The random writer of the live tables' test (bulk changes beyond 100 rows, committed
    # transactions); the sync goes through a proxy that cuts its connections at random, and
    # the service restarts half-way on the same data and port. No retries: a cut reaches the
    # follow itself, which must carry on from its last commit.
    rng, data_dir, target = random.Random(seed), tmp_path / "service", tmp_path / "people"
    service = LocalService(data_dir=data_dir, key=KEY).start()

    async def run(table: fp.Table, writer: fp.Client, proxy: CuttingProxy) -> tuple[int, int]:
        nonlocal service
        loop = asyncio.get_running_loop()
        endpoint = proxy.endpoint
        async with fp.AsyncClient(endpoint, service.project, key=KEY, retries=0) as client:
            view = client.table(table.database_id, table.id).where(fp.col("age") < 70)
            following = asyncio.create_task(view.sync(target, follow=True, interval=INTERVAL))
            started = loop.time()
            first = target / "_delta_log" / f"{0:020}.json"  # the first run's commit
            async with asyncio.timeout(WAIT):
                while not first.exists() and not following.done():
                    await asyncio.sleep(0.05)
            service = await asyncio.to_thread(
                write_through_cuts, table, writer, rng, proxy, service, data_dir
            )
            await until_it_holds_the_view(target, table.where(fp.col("age") < 70), following)
            intervals = (loop.time() - started) / INTERVAL
            settled, idle = await idle_then_stop(target, following)
        assert len(follow_commits(target)) <= intervals + 1, "one commit per interval at most"
        return settled, idle

    try:
        with (
            service.client() as writer,
            CuttingProxy(service.endpoint, cut_after=0, cuts=0) as proxy,
        ):
            table = people(writer, rng)
            settled, idle = asyncio.run(run(table, writer, proxy))
            assert idle == settled, "an interval without changes commits nothing"
            assert_synced(target, table.where(fp.col("age") < 70), tmp_path)
    finally:
        service.stop()
    commits = follow_commits(target)
    assert commits and all(c["operation"] == "MERGE" for c in commits)


def queries_text(*queries: Mapping[str, object]) -> str:
    """`queries` as they appear in a request's query string (for `CuttingProxy.hold_at`)."""
    encoded = [json.dumps(query, separators=(",", ":")) for query in queries]
    return str(httpx.QueryParams({"queries[]": encoded}))


def test_a_row_deleted_as_the_feed_starts_leaves_the_delta_table(
    service: LocalService, key_client: fp.Client, tmp_path: Path
) -> None:
    # Deleted after the first run committed and before the feed read the view's $ids (the
    # proxy holds that request): the feed never held it, yet the Delta table does.
    table, frame = load(key_client, new_id("follow"), sample_people(20, seed=50))
    ids = list(frame["$id"])
    target = tmp_path / "people"
    select, page = {"method": "select", "values": ["$id"]}, {"method": "limit", "values": [5000]}

    async def run() -> None:
        async with fp.AsyncClient(proxy.endpoint, service.project, key=service.key) as client:
            view = client.table(table.database_id, table.id)
            following = asyncio.create_task(view.sync(target, follow=True, interval=INTERVAL))
            async with asyncio.timeout(WAIT):
                while not proxy.held:
                    await asyncio.sleep(0.01)
            assert committed(target, ids[0])
            await asyncio.to_thread(table.where(fp.col("$id") == ids[0]).delete)
            proxy.release()
            await until_it_holds_the_view(target, table, following)
            await idle_then_stop(target, following)

    with CuttingProxy(service.endpoint, cut_after=0, cuts=0) as proxy:
        proxy.hold_at(queries_text(select, page))
        asyncio.run(run())
    assert not committed(target, ids[0])


def test_a_row_changed_then_deleted_during_a_run_leaves_the_delta_table(
    service: LocalService, key_client: fp.Client, tmp_path: Path
) -> None:
    # Updated after the first run; deleted after the next run read the changed rows and
    # before it scanned for the rows gone (the proxy holds that request): it is both.
    table, frame = load(key_client, new_id("follow"), sample_people(20, seed=51))
    row_id, target = frame["$id"][0], tmp_path / "people"
    scan = {"method": "greaterThan", "column": "$sequence", "values": [0]}
    with (
        CuttingProxy(service.endpoint, cut_after=0, cuts=0) as proxy,
        fp.Client(proxy.endpoint, service.project, key=service.key) as client,
        ThreadPoolExecutor(1) as pool,
    ):
        view = client.table(table.database_id, table.id)
        view.sync(target, progress=False)
        table.upsert(pd.DataFrame({"$id": [row_id], "name": ["changed"]}), progress=False)
        proxy.hold_at(queries_text(scan))
        run = pool.submit(view.sync, target, progress=False)
        deadline = time.monotonic() + WAIT
        while not proxy.held and not run.done():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        table.where(fp.col("$id") == row_id).delete()
        proxy.release()
        run.result(timeout=WAIT)
    assert not committed(target, row_id)
    assert_synced(target, table, tmp_path)


def test_interval_and_reconcile_must_be_positive(key_client: fp.Client, tmp_path: Path) -> None:
    table, _ = load(key_client, new_id("follow"), sample_people(3, seed=44))
    for options in ({"interval": 0}, {"reconcile": -1.0}):
        with pytest.raises(ValueError, match="must be a number of seconds > 0"):
            table.sync(tmp_path / "people", follow=True, **options)


@pytest.mark.slow
def test_ctrl_c_of_sync_follow_exits_130_after_a_whole_commit_and_a_rerun_resumes(
    service: LocalService, key_client: fp.Client, tmp_path: Path
) -> None:
    table, frame = load(key_client, new_id("follow"), sample_people(300, seed=45))
    ids = list(frame["$id"])
    target = tmp_path / "people"
    env = {**os.environ, "FRAMEPORT_ENDPOINT": service.endpoint,
           "FRAMEPORT_PROJECT": service.project, "FRAMEPORT_KEY": service.key,
           "FRAMEPORT_PROGRESS": "0"}  # fmt: skip
    command = [sys.executable, "-m", "frameport.cli", "sync", table.database_id, table.id]
    command += [str(target), "--follow", "--interval", str(INTERVAL)]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + WAIT
        for row_id in (ids[0], None):  # the first run's snapshot, then a commit of a change
            if row_id is None:
                [row_id] = table.insert(sample_people(1, seed=46), progress=False)
            while not committed(target, row_id):
                assert process.poll() is None and time.monotonic() < deadline, process.stderr
                time.sleep(INTERVAL / 5)
        write_changes(key_client, table, ids)  # some of these may come after the last commit
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "interrupted" in err and "run the command again" in err
    assert "incremental" in out  # a line per commit
    DeltaTable(str(target)).to_pyarrow_table()  # a whole version
    assert service.key not in out + err
    again = subprocess.run(command[:-3], env=env, capture_output=True, text=True, timeout=WAIT)
    assert again.returncode == 0, again.stderr
    assert_synced(target, table, tmp_path)
    assert_no_secret(target, [service.key])
