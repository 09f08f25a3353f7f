"""The sync Client mirrors AsyncClient, and runs from a running event loop and other threads;
the AsyncClient works in the caller's own loop."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from frameport._client import AsyncClient, Client
from frameport._core._sync import SyncFacade, delegate, forward_property, iterate_sync, run_sync
from frameport._exceptions import NotFoundError
from frameport.local import LocalService

MakeUser = Callable[..., Any]  # conftest.make_user


def _public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_client_has_every_public_member_of_async_client() -> None:
    assert _public_names(Client) == _public_names(AsyncClient)


@pytest.mark.parametrize("name", [*sorted(_public_names(AsyncClient)), "__init__"])
def test_signatures_match(name: str) -> None:
    async_member = inspect.getattr_static(AsyncClient, name)
    sync_member = inspect.getattr_static(Client, name)
    if isinstance(async_member, property):
        assert isinstance(sync_member, property)
        assert sync_member.__doc__ == async_member.__doc__
        return
    async_signature = inspect.signature(getattr(AsyncClient, name))
    sync_signature = inspect.signature(getattr(Client, name))
    assert list(sync_signature.parameters.values()) == list(async_signature.parameters.values())
    assert inspect.iscoroutinefunction(getattr(Client, name)) is False


def test_sync_client_inside_a_running_event_loop(
    service: LocalService, make_user: MakeUser
) -> None:
    user = make_user()

    async def notebook_cell() -> str:
        asyncio.get_running_loop()  # as in Jupyter: a loop is running in this thread
        with Client(service.endpoint, service.project) as client:
            client.login(user.email, user.password)
            return str(client.account()["$id"])

    assert asyncio.run(notebook_cell()) == user.id


def test_sync_client_from_other_threads(client: Client, make_user: MakeUser) -> None:
    users = [make_user() for _ in range(4)]
    found: dict[str, str] = {}

    def worker(user_id: str) -> None:
        found[user_id] = client._request_json("GET", f"/users/{user_id}")["$id"]

    threads = [threading.Thread(target=worker, args=(u.id,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == {u.id: u.id for u in users}


def test_async_client_in_the_callers_loop(
    async_client: AsyncClient, service: LocalService, make_user: MakeUser
) -> None:
    users = [make_user() for _ in range(5)]

    async def main() -> list[str]:
        answers = await asyncio.gather(
            *(async_client._request_json("GET", f"/users/{u.id}") for u in users)
        )
        return [a["$id"] for a in answers]

    assert asyncio.run(main()) == [u.id for u in users]


def test_async_client_survives_a_second_asyncio_run(
    async_client: AsyncClient, make_user: MakeUser
) -> None:
    user = make_user()
    for _ in range(2):
        answer = asyncio.run(async_client._request_json("GET", f"/users/{user.id}"))
        assert answer["$id"] == user.id


def test_async_context_manager_and_close(service: LocalService, make_user: MakeUser) -> None:
    user = make_user()

    async def main() -> None:
        async with AsyncClient(service.endpoint, service.project) as client:
            await client.login(user.email, user.password)
            assert (await client.account())["$id"] == user.id
        with pytest.raises(ValueError, match="closed"):
            await client.account()

    asyncio.run(main())


def test_stream_reads_the_body_and_raises_before_yielding(
    async_client: AsyncClient, make_user: MakeUser
) -> None:
    user = make_user()

    async def main() -> bytes:
        with pytest.raises(NotFoundError):
            async with async_client._stream("GET", "/users/nobody"):
                raise AssertionError("an error status must not reach the body")
        async with async_client._stream("GET", f"/users/{user.id}") as response:
            return b"".join([chunk async for chunk in response.aiter_bytes()])

    assert user.id.encode() in asyncio.run(main())


class _AsyncLabel:
    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def shout(self) -> str:
        """The text in capitals."""
        return self.text.upper()


class _Label(SyncFacade[_AsyncLabel], wraps=_AsyncLabel):
    shout = forward_property("shout")


class _AsyncCounter:
    """A tiny async object, to check the facade mechanism on its own."""

    def __init__(self, start: int) -> None:
        self.value = start

    async def add(self, amount: int, *, times: int = 1) -> int:
        """Add `amount` `times` times."""
        self.value += amount * times
        return self.value

    async def countdown(self) -> AsyncIterator[int]:
        for number in range(self.value, 0, -1):
            yield number

    async def label(self) -> _AsyncLabel:
        return _AsyncLabel(f"count {self.value}")

    def sibling(self) -> _AsyncCounter:
        return _AsyncCounter(self.value * 10)

    @property
    def doubled(self) -> int:
        """Twice the value."""
        return self.value * 2


class _Counter(SyncFacade[_AsyncCounter], wraps=_AsyncCounter):
    add = delegate(_AsyncCounter.add)
    countdown = delegate(_AsyncCounter.countdown)
    label = delegate(_AsyncCounter.label, _Label)
    sibling = delegate(_AsyncCounter.sibling)
    doubled = forward_property("doubled")


def test_facade_mechanism() -> None:
    counter = _Counter._from_async(_AsyncCounter(1))
    assert counter.add(2, times=2) == 5
    assert inspect.signature(counter.add) == inspect.signature(_AsyncCounter(0).add)
    assert _Counter.add.__doc__ == "Add `amount` `times` times."
    assert _Counter.add.__qualname__.endswith("_Counter.add")
    assert list(counter.countdown()) == [5, 4, 3, 2, 1]
    label = counter.label()
    assert isinstance(label, _Label) and label.shout == "COUNT 5"
    sibling = counter.sibling()  # wrapped at run time through the registry
    assert isinstance(sibling, _Counter) and sibling.doubled == 100
    assert _Counter.doubled.__doc__ == "Twice the value."


def test_run_sync_on_the_loop_thread_refuses_instead_of_deadlocking() -> None:
    async def nested() -> None:
        run_sync(asyncio.sleep(0))

    with pytest.raises(RuntimeError, match="await the async API"):
        run_sync(nested())


def test_iterate_sync_closes_the_async_iterator_early() -> None:
    closed = []

    async def numbers() -> Any:
        try:
            for number in range(100):
                yield number
        finally:
            closed.append(True)

    for number in iterate_sync(numbers()):
        if number == 2:
            break
    assert closed == [True]
