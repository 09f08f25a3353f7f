"""`TableQuery.changes()`: a view's changes as Arrow batches, over the local service's real
realtime socket (a signed-in user or a JWT) or by polling (an API key), through drops,
reconnects, a closed iterator and a dropped table. Waiting for a change is a bounded wait on
the iterator, never a sleep."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence

import pandas as pd
import pyarrow as pa
import pytest

import frameport as fp
from conftest import LIVE_WAIT, UserLogin
from cutting_proxy import CuttingProxy
from frameport.local import LocalService


@pytest.fixture
def user(service: LocalService, make_user: Callable[..., UserLogin]) -> Iterator[fp.AsyncClient]:
    """An async client signed in as a new user (closed by the test's own loop)."""
    login = make_user()
    client = fp.AsyncClient(service.endpoint, service.project)
    asyncio.run(client.login(login.email, login.password))
    yield client


def rows(frame: Mapping[str, Sequence[object]]) -> pd.DataFrame:
    return pd.DataFrame(frame)


async def take(changes: AsyncIterator[pa.RecordBatch], count: int) -> list[dict[str, object]]:
    """The next `count` change rows (failing after `LIVE_WAIT` seconds)."""
    found: list[dict[str, object]] = []
    async with asyncio.timeout(LIVE_WAIT):
        while len(found) < count:
            found.extend((await anext(changes)).to_pylist())
    assert len(found) == count, found
    return found


async def pending(changes: fp.AsyncChanges, count: int) -> asyncio.Future[list[dict[str, object]]]:
    """`take` of `count` rows, running, once `changes` follows the table (its start read)."""
    task = asyncio.ensure_future(take(changes, count))
    async with asyncio.timeout(LIVE_WAIT):
        while changes.status.watermark is None and not task.done():
            await asyncio.sleep(0.01)
    return task


def ops(found: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(row["op"], row["$id"], row.get("name")) for row in found]


def in_background(call: Callable[[], object]) -> asyncio.Future[object]:
    """`call` (a blocking write) run in a thread, so the feed's loop keeps reading."""
    return asyncio.get_running_loop().run_in_executor(None, call)


def test_inserts_updates_and_deletes_arrive_with_their_ops(
    people: fp.Table, user: fp.AsyncClient
) -> None:
    async def follow() -> list[dict[str, object]]:
        table = user.table(people.database_id, people.id)
        async with table.changes() as changes:
            assert changes.status.polling is False
            first = await pending(changes, 1)
            await in_background(lambda: people.insert(rows({"$id": ["a"], "name": ["Ada"]})))
            found = await first
            assert changes.status.connected
            await in_background(lambda: people.insert(rows({"$id": ["b"], "name": ["Bo"]})))
            await in_background(lambda: people.upsert(rows({"$id": ["a"], "name": ["Ada L"]})))
            await in_background(lambda: people.where(fp.col("name") == "Bo").delete())
            found += await take(changes, 3)
        await user.close()
        return found

    found = asyncio.run(follow())
    assert ops(found) == [
        ("insert", "a", "Ada"),
        ("insert", "b", "Bo"),
        ("update", "a", "Ada L"),
        ("delete", "b", None),
    ]
    assert list(found[0]) == ["op", "$id", "$updatedAt", "name", "age"]
    assert all(row["$updatedAt"] is not None for row in found)


def test_a_filtered_projected_view_and_a_row_leaving_it(
    people: fp.Table, user: fp.AsyncClient
) -> None:
    people.insert(rows({"$id": ["old"], "name": ["Old"], "age": [70]}))

    async def follow() -> list[dict[str, object]]:
        view = user.table(people.database_id, people.id).where(fp.col("age") > 30).select("name")
        async with view.changes() as changes:
            first = await pending(changes, 2)
            young_and_old: dict[str, list[object]] = {
                "$id": ["y", "o"],
                "name": ["Young", "Older"],
                "age": [20, 40],
            }
            await in_background(lambda: people.insert(rows(young_and_old)))
            await in_background(lambda: people.upsert(rows({"$id": ["o"], "age": [25]})))
            found = await first
            await in_background(lambda: people.upsert(rows({"$id": ["old"], "age": [10]})))
            found += await take(changes, 1)
        await user.close()
        return found

    found = asyncio.run(follow())
    assert [(row["op"], row["$id"]) for row in found] == [
        ("insert", "o"),
        ("delete", "o"),  # the update took it out of the view
        ("delete", "old"),  # in the view before the feed started
    ]
    assert list(found[0]) == ["op", "$id", "$updatedAt", "name"]


def test_a_filter_the_service_cannot_apply_alone_is_applied_by_the_client(
    people: fp.Table, user: fp.AsyncClient
) -> None:
    # The service compares text regardless of case; the client keeps pandas' exact match.
    async def follow() -> list[dict[str, object]]:
        view = user.table(people.database_id, people.id).query("name == 'ada'")
        async with view.changes() as changes:
            first = await pending(changes, 1)
            both = {"$id": ["upper", "lower"], "name": ["Ada", "ada"]}
            await in_background(lambda: people.insert(rows(both)))
            found = await first
            await in_background(lambda: people.insert(rows({"$id": ["last"], "name": ["ada"]})))
            found += await take(changes, 1)
        await user.close()
        return found

    assert [row["$id"] for row in asyncio.run(follow())] == ["lower", "last"]


def test_since_a_watermark_then_live(
    service: LocalService, people: fp.Table, user: fp.AsyncClient
) -> None:
    people.insert(rows({"$id": ["before"], "name": ["Before"]}))
    service.advance_clock(60)
    watermark = people.to_pandas(system=True)["$updatedAt"].iloc[0] + pd.Timedelta(seconds=30)
    people.insert(rows({"$id": ["after"], "name": ["After"]}))
    people.upsert(rows({"$id": ["before"], "name": ["Changed"]}))

    async def follow() -> list[dict[str, object]]:
        table = user.table(people.database_id, people.id)
        async with table.changes(since=watermark.to_pydatetime(), lag=0) as changes:
            found = await take(changes, 2)
            await in_background(lambda: people.insert(rows({"$id": ["live"], "name": ["Live"]})))
            found += await take(changes, 1)
        await user.close()
        return found

    assert ops(asyncio.run(follow())) == [
        ("update", "before", "Changed"),  # the rows updated since, in $sequence order
        ("insert", "after", "After"),
        ("insert", "live", "Live"),
    ]


def test_a_snapshot_start_gives_every_row_first(people: fp.Table, user: fp.AsyncClient) -> None:
    people.insert(rows({"$id": ["a", "b"], "name": ["Ada", "Bo"]}))

    async def follow() -> list[dict[str, object]]:
        table = user.table(people.database_id, people.id)
        async with table.changes(since="snapshot") as changes:
            found = await take(changes, 2)
        await user.close()
        return found

    assert ops(asyncio.run(follow())) == [("insert", "a", "Ada"), ("insert", "b", "Bo")]


def test_changes_made_while_disconnected_arrive_by_catch_up(
    service: LocalService, people: fp.Table, make_user: Callable[..., UserLogin]
) -> None:
    login = make_user()
    people.insert(rows({"$id": ["kept", "doomed"], "name": ["Kept", "Doomed"]}))

    async def follow(proxy: CuttingProxy) -> list[dict[str, object]]:
        far = fp.AsyncClient(proxy.endpoint, service.project, retries=0)
        token = await far.login(login.email, login.password)
        assert token  # the session is held as cookies, sent in the socket's headers only
        table = far.table(people.database_id, people.id)
        async with table.changes() as changes:
            first = await pending(changes, 1)
            await in_background(lambda: people.insert(rows({"$id": ["a"], "name": ["Ada"]})))
            found = await first
            proxy.hold()  # cut every connection, refuse new ones
            await in_background(lambda: people.insert(rows({"$id": ["b"], "name": ["Bo"]})))
            await in_background(lambda: people.upsert(rows({"$id": ["kept"], "age": [3]})))
            await in_background(lambda: people.where(fp.col("name") == "Doomed").delete())
            proxy.release()
            found += await take(changes, 3)
            assert changes.status.catch_ups == 1 and changes.status.connected
        await far.close()
        return found

    with CuttingProxy(service.endpoint, cut_after=0, cuts=0) as proxy:
        found = asyncio.run(follow(proxy))
        handshakes = [line for line in proxy.request_lines() if "/realtime" in line]
    assert sorted(ops(found)[1:]) == [
        ("delete", "doomed", None),
        ("insert", "b", "Bo"),
        ("update", "kept", "Kept"),
    ]
    assert len(handshakes) == 2
    assert all(
        line.startswith(f"GET /v1/realtime?project={service.project} ") for line in handshakes
    )


def test_with_an_api_key_it_polls(people: fp.Table, service: LocalService) -> None:
    async def follow() -> list[dict[str, object]]:
        async with fp.AsyncClient(service.endpoint, service.project, key=service.key) as client:
            table = client.table(people.database_id, people.id)
            async with table.changes(poll=0.1) as changes:
                assert changes.status.polling
                first = await pending(changes, 2)
                both = {"$id": ["a", "b"], "name": ["Ada", "Bo"]}
                await in_background(lambda: people.insert(rows(both)))
                found = await first
                await in_background(lambda: people.where(fp.col("name") == "Bo").delete())
                found += await take(changes, 1)
        return found

    assert ops(asyncio.run(follow())) == [
        ("insert", "a", "Ada"),
        ("insert", "b", "Bo"),
        ("delete", "b", None),
    ]


def test_break_and_close_end_it_and_close_the_socket(
    service: LocalService, people: fp.Table, make_user: Callable[..., UserLogin]
) -> None:
    login = make_user()
    people.insert(rows({"$id": ["a"], "name": ["Ada"]}))
    with (
        CuttingProxy(service.endpoint, cut_after=0, cuts=0) as proxy,
        fp.Client(proxy.endpoint, service.project) as far,
    ):
        far.login(login.email, login.password)
        table = far.table(people.database_id, people.id)
        for batch in table.changes(since="snapshot"):
            assert batch.column("op").to_pylist() == ["insert"]
            break
        proxy.wait_closed("/realtime", LIVE_WAIT)
        changes = table.changes(since="snapshot")
        assert next(changes).num_rows == 1
        assert proxy.open_lines("/realtime")
        changes.close()
        proxy.wait_closed("/realtime", LIVE_WAIT)
        with pytest.raises(StopIteration):
            next(changes)


def test_a_dropped_table_ends_it_with_not_found(
    key_client: fp.Client, people: fp.Table, user: fp.AsyncClient
) -> None:
    async def follow() -> None:
        table = user.table(people.database_id, people.id)
        async with table.changes(heartbeat=1.0) as changes:
            first = await pending(changes, 1)
            await in_background(lambda: people.insert(rows({"$id": ["a"], "name": ["Ada"]})))
            await first
            await in_background(people.drop)
            with pytest.raises(fp.NotFoundError):
                await take(changes, 1)
        await user.close()

    asyncio.run(follow())
