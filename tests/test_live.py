"""`TableQuery.live()`: a view's current rows kept current over the local service's real
realtime socket (a signed-in user) or by polling (an API key): its faces, its callbacks and
iterator, its reconciliation of bulk changes that send no events, a column added and a table
dropped under it. Waiting for the live table is a bounded wait on its state, never a sleep."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

import pandas as pd
import pyarrow as pa
import pytest

import frameport as fp
from conftest import LIVE_WAIT, UserLogin
from cutting_proxy import CuttingProxy
from frameport.local import LocalService


@pytest.fixture
def user(service: LocalService, make_user: Callable[..., UserLogin]) -> Iterator[fp.Client]:
    """A client signed in as a new user."""
    login = make_user()
    with fp.Client(service.endpoint, service.project) as client:
        client.login(login.email, login.password)
        yield client


def wait_for(done: Callable[[], bool], what: str) -> None:
    """Wait until `done()` (failing after `LIVE_WAIT` seconds)."""
    deadline = time.monotonic() + LIVE_WAIT
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def sorted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("$id").reset_index(drop=True)


@contextmanager
def live_behind_proxy(
    service: LocalService, table: fp.Table, login: UserLogin
) -> Iterator[tuple[CuttingProxy, fp.LiveTable]]:
    """`table` live for the user `login`, signed in through a proxy that can cut the
    connection (the client does not retry, so a cut is the live table's to handle)."""
    with (
        CuttingProxy(service.endpoint, cut_after=0, cuts=0) as proxy,
        fp.Client(proxy.endpoint, service.project, retries=0) as far,
    ):
        far.login(login.email, login.password)
        with far.table(table.database_id, table.id).live(reconcile=None) as live:
            yield proxy, live


def same_as_read(live: fp.LiveTable, view: fp.TableQuery) -> bool:
    """Whether the live table's frame equals a read of `view` (rows, values, dtypes)."""
    try:
        pd.testing.assert_frame_equal(sorted_frame(live.frame), sorted_frame(view.to_pandas()))
    except AssertionError:
        return False
    return True


def test_it_starts_from_a_snapshot_and_follows_every_change(
    people: fp.Table, user: fp.Client
) -> None:
    people.insert(pd.DataFrame({"$id": ["a", "b"], "name": ["Ada", "Bo"], "age": [36, 41]}))
    view = user.table(people.database_id, people.id).where(fp.col("age") > 30)
    applied: list[pa.RecordBatch] = []
    with view.live() as live:
        assert len(live) == 2 and live.status.connected and not live.status.polling
        pd.testing.assert_frame_equal(sorted_frame(live.frame), sorted_frame(view.to_pandas()))
        live.on_change(applied.append)
        people.insert(pd.DataFrame({"$id": ["c"], "name": ["Cy"], "age": [52]}))
        people.upsert(pd.DataFrame({"$id": ["a"], "age": [37]}))
        people.upsert(pd.DataFrame({"$id": ["b"], "age": [12]}))  # leaves the view
        wait_for(lambda: same_as_read(live, view), "the live frame to follow")
        assert sorted(live.frame["$id"]) == ["a", "c"]
        assert live.to_arrow().column_names == ["$id", "name", "age"]
        assert live.to_polars()["age"].sort().to_list() == [37, 52]
        wait_for(lambda: live.status.last_event is not None, "the status of the last event")
        assert live.status.lag is not None  # the service's clock may be set ahead
    changed = [row["$id"] for batch in applied for row in batch.to_pylist()]
    assert changed == ["c", "a", "b"]


def test_its_async_iterator_gives_the_applied_batches(
    service: LocalService, people: fp.Table, make_user: Callable[..., UserLogin]
) -> None:
    login = make_user()

    async def follow() -> list[tuple[str, str]]:
        async with fp.AsyncClient(service.endpoint, service.project) as client:
            await client.login(login.email, login.password)
            table = client.table(people.database_id, people.id)
            async with await table.live() as live:
                assert len(live) == 0 and list(live.frame.columns) == ["$id"]  # as a read infers
                batches = aiter(live)
                write = asyncio.get_running_loop().run_in_executor(
                    None, lambda: people.insert(pd.DataFrame({"$id": ["a"], "name": ["Ada"]}))
                )
                async with asyncio.timeout(LIVE_WAIT):
                    batch = await anext(batches)
                await write
                assert len(live) == 1
        return [(row["op"], row["$id"]) for row in batch.to_pylist()]

    assert asyncio.run(follow()) == [("insert", "a")]


def test_an_iterator_gives_the_batches_applied_after_it_was_made(
    people: fp.Table, user: fp.Client
) -> None:
    with user.table(people.database_id, people.id).live() as live:
        changes = iter(live)  # made before the write, read after it
        people.insert(pd.DataFrame({"$id": ["a"], "name": ["Ada"]}))
        assert [row["$id"] for row in next(changes).to_pylist()] == ["a"]


def test_a_catch_up_cut_short_loses_nothing(
    service: LocalService, people: fp.Table, make_user: Callable[..., UserLogin]
) -> None:
    # The connection drops during a catch-up, after it read the changed rows and before it
    # found the rows gone: the next catch-up hands those changed rows on all the same.
    login = make_user()
    people.insert(pd.DataFrame({"$id": ["a", "b"], "name": ["Ada", "Bo"]}))
    with live_behind_proxy(service, people, login) as (proxy, live):
        proxy.hold()
        people.upsert(pd.DataFrame({"$id": ["a"], "name": ["Ada L"]}))
        proxy.hold_at("lessThanEqual")  # the first count of the rows gone
        proxy.release()
        wait_for(lambda: proxy.held, "the catch-up's probe")
        proxy.release()
        wait_for(lambda: "Ada L" in set(live.frame["name"]), "the changed row")
        assert live.status.catch_ups >= 1


def test_a_session_revoked_during_a_drop_ends_the_live_table_with_a_clear_error(
    service: LocalService, people: fp.Table, make_user: Callable[..., UserLogin]
) -> None:
    # The user signs out everywhere while the connection is down: when it comes back, the
    # live table does not go on as a guest with a frame that no longer changes; it ends, and
    # its status and its iterator say why.
    login = make_user()
    people.insert(pd.DataFrame({"$id": ["a"], "name": ["Ada"]}))
    with live_behind_proxy(service, people, login) as (proxy, live):
        proxy.hold()
        with fp.Client(service.endpoint, service.project) as elsewhere:
            elsewhere.login(login.email, login.password)
            elsewhere._request("DELETE", "/account/sessions")  # signs out everywhere
        people.insert(pd.DataFrame({"$id": ["b"], "name": ["Bo"]}))
        proxy.release()
        wait_for(lambda: live.status.error is not None, "the live table's error")
        assert isinstance(live.status.error, fp.AuthenticationError)
        with pytest.raises(fp.AuthenticationError):
            next(iter(live))


def test_its_iterator_collected_unfinished_on_the_loop_thread_closes_there(
    people: fp.Table, user: fp.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sync iterator left unfinished and collected by code on frameport's loop thread (an
    # on_change callback) closes its async iterator there: no error goes to the garbage
    # collector's caller (it used to call run_sync from the loop thread, which raises).
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    collected, on_loop = threading.Event(), []
    with user.table(people.database_id, people.id).live(reconcile=None) as live:
        batches = iter(live)
        people.insert(pd.DataFrame({"$id": ["a"], "name": ["Ada"]}))
        assert next(batches).column("$id").to_pylist() == ["a"]  # started, not finished
        cycle: list[object] = [batches]
        cycle.append(cycle)  # only the garbage collector frees it
        gone = weakref.ref(batches)
        del batches, cycle

        def collect(batch: pa.RecordBatch) -> None:
            on_loop.append(threading.current_thread().name)
            gc.collect()
            if gone() is None:
                collected.set()

        gc.disable()
        try:
            live.on_change(collect)
            people.insert(pd.DataFrame({"$id": ["b"], "name": ["Bo"]}))
            assert collected.wait(LIVE_WAIT), "the iterator was not collected"
        finally:
            gc.enable()
        wait_for(lambda: len(live) == 2, "the live table going on")
    assert set(on_loop) == {"frameport-loop"} and not unraisable, unraisable


def test_it_reconciles_bulk_changes_that_send_no_events(people: fp.Table, user: fp.Client) -> None:
    many = 130
    people.insert(pd.DataFrame({"$id": [f"r{i:03}" for i in range(many)], "age": [1] * many}))
    view = user.table(people.database_id, people.id)
    with view.live(reconcile=0.5, lag=1) as live:
        assert len(live) == many
        people.where(fp.col("age") == 1).update({"age": 2})  # events for 100 rows only
        wait_for(lambda: same_as_read(live, view), "the reconciliation")
        assert live.status.catch_ups >= 1 and live.status.connected
        assert set(live.frame["age"]) == {2}


def test_with_an_api_key_it_polls(people: fp.Table, service: LocalService) -> None:
    with fp.Client(service.endpoint, service.project, key=service.key) as client:
        view = client.table(people.database_id, people.id)
        with view.live(poll=0.1) as live:
            assert live.status.polling and not live.status.connected
            people.insert(pd.DataFrame({"$id": ["a", "b"], "name": ["Ada", "Bo"]}))
            people.where(fp.col("name") == "Bo").delete()
            wait_for(lambda: same_as_read(live, view), "the polls")
            assert list(live.frame["$id"]) == ["a"]


def holds_only(live: fp.LiveTable, age: int) -> bool:
    """Whether every row of `live` has `age`."""
    return set(live.to_arrow().column("age").to_pylist()) == {age}


def test_a_reader_in_another_thread_never_sees_half_a_batch(
    people: fp.Table, service: LocalService
) -> None:
    # Polling, each bulk update of the rows comes as one change batch (one page of a catch-up):
    # every snapshot a reader thread takes holds every row, all of one update or all of the
    # one before.
    many, updates = 50, 6
    people.insert(pd.DataFrame({"$id": [f"r{i:02}" for i in range(many)], "age": [0] * many}))
    taken: list[tuple[int, frozenset[object]]] = []
    with (
        fp.Client(service.endpoint, service.project, key=service.key) as client,
        client.table(people.database_id, people.id).live(poll=0.05) as live,
    ):
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                for ages in (live.to_arrow().column("age").to_pylist(), list(live.frame["age"])):
                    taken.append((len(ages), frozenset(ages)))

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for update in range(1, updates + 1):
                people.where(fp.col("age") >= 0).update({"age": update})
                wait_for(partial(holds_only, live, update), f"update {update}")
        finally:
            stop.set()
            reader.join()
    halves = [(count, set(ages)) for count, ages in taken if count != many or len(ages) != 1]
    assert not halves, f"{len(halves)} of {len(taken)} snapshots held half a batch: {halves[:3]}"
    assert len({ages for _, ages in taken}) > 2, "the reader saw the updates come"


def test_a_column_added_under_it_appears_with_nulls(
    key_client: fp.Client, people: fp.Table, user: fp.Client
) -> None:
    people.insert(pd.DataFrame({"$id": ["a"], "name": ["Ada"]}))
    view = user.table(people.database_id, people.id)
    with view.live() as live:
        people.add_column("city", "string(20)")
        people.insert(pd.DataFrame({"$id": ["b"], "name": ["Bo"], "city": ["Oslo"]}))
        wait_for(lambda: len(live) == 2, "the new row")
        frame = sorted_frame(live.frame)
        assert list(frame.columns) == ["$id", "name", "age", "city"]
        assert frame["city"].isna().tolist() == [True, False]


def test_with_an_api_key_a_column_added_appears_with_nulls(
    people: fp.Table, service: LocalService
) -> None:
    people.insert(pd.DataFrame({"$id": ["a"], "name": ["Ada"]}))
    with fp.Client(service.endpoint, service.project, key=service.key) as client:
        view = client.table(people.database_id, people.id)
        with view.live(poll=0.1) as live:
            people.add_column("city", "string(20)")
            people.insert(pd.DataFrame({"$id": ["b"], "name": ["Bo"], "city": ["Oslo"]}))
            wait_for(lambda: same_as_read(live, view), "the new column")
            assert sorted_frame(live.frame)["city"].isna().tolist() == [True, False]


def test_a_dropped_table_ends_it_with_not_found(people: fp.Table, user: fp.Client) -> None:
    people.insert(pd.DataFrame({"$id": ["a"], "name": ["Ada"]}))
    view = user.table(people.database_id, people.id)
    with view.live(heartbeat=0.2) as live:
        batches = iter(live)
        people.drop()
        with pytest.raises(fp.NotFoundError):
            next(batches)
        assert isinstance(live.status.error, fp.NotFoundError)
        assert not live.status.connected
        assert len(live) == 1  # the rows stay as they were
