"""The sync Client mirrors AsyncClient, and runs from a running event loop and other threads;
the AsyncClient works in the caller's own loop."""

from __future__ import annotations

import asyncio
import inspect
import pydoc
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import frameport as fp
from frameport import (
    AsyncBucket,
    AsyncFunction,
    AsyncTable,
    AsyncTableQuery,
    Bucket,
    Function,
    Table,
    TableQuery,
)
from frameport._client import AsyncClient, Client
from frameport._core._sync import SyncFacade, delegate, forward_property, iterate_sync, run_sync
from frameport._exceptions import NotFoundError
from frameport.local import LocalService

MakeUser = Callable[..., Any]  # conftest.make_user


FACES: dict[type, type] = {
    Client: AsyncClient,
    TableQuery: AsyncTableQuery,
    Table: AsyncTable,
    Bucket: AsyncBucket,
    Function: AsyncFunction,
}


def _public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _members() -> list[tuple[type, str]]:
    return [
        (face, name)
        for face, async_class in FACES.items()
        for name in [*sorted(_public_names(async_class)), "__init__"]
        if not (name == "__init__" and face is not Client)  # the others come from a client
    ]


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_each_face_has_every_public_member_of_its_async_class(face: type) -> None:
    assert _public_names(face) >= _public_names(FACES[face])
    assert _public_names(Client) == _public_names(AsyncClient)


def _returned(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else annotation.__name__


@pytest.mark.parametrize(("face", "name"), _members(), ids=lambda x: getattr(x, "__name__", x))
def test_each_sync_member_declares_the_async_parameters_and_a_sync_return_type(
    face: type, name: str
) -> None:
    async_class = FACES[face]
    async_member = inspect.getattr_static(async_class, name)
    sync_member = inspect.getattr_static(face, name)
    if isinstance(async_member, property):
        assert isinstance(sync_member, property)
        assert (sync_member.__doc__ or "") == (async_member.__doc__ or "").replace("Async", "")
        return
    sync_function = getattr(face, name)
    async_function = getattr(async_class, name)
    # The face's own declared signature: not the async function reached through __wrapped__.
    assert inspect.unwrap(sync_function) is sync_function
    own = inspect.signature(sync_function, follow_wrapped=False)
    real = inspect.signature(async_function)
    assert list(own.parameters.values()) == list(real.parameters.values())
    assert not inspect.iscoroutinefunction(sync_function)
    returned = _returned(own.return_annotation)
    assert "Async" not in returned and "Coroutine" not in returned
    if inspect.isasyncgenfunction(async_function):
        assert returned.startswith("Iterator[")
    assert "await " not in (sync_function.__doc__ or "")


@pytest.mark.parametrize(
    ("method", "returned"),
    [
        (Client.table, "Table"),
        (Client.create_table, "Table"),
        (Client.create_bucket, "Bucket"),
        (Client.create_function, "Function"),
        (Client.impersonate, "Client"),
        (Client.databases, "pd.DataFrame"),
        (TableQuery.where, "TableQuery"),
        (TableQuery.to_pandas, "pd.DataFrame"),
        (TableQuery.iter_batches, "Iterator[pd.DataFrame | pa.RecordBatch]"),
        (Table.columns, "pd.DataFrame"),
        (Function.deployments, "pd.DataFrame"),
    ],
    ids=lambda x: getattr(x, "__qualname__", x),
)
def test_sync_return_types(method: Any, returned: str) -> None:
    assert _returned(inspect.signature(method).return_annotation) == returned


def test_no_internal_parameter_is_visible() -> None:
    for face in FACES:
        for name in _public_names(face):
            member = getattr(face, name)
            if callable(member):
                assert "requester" not in inspect.signature(member).parameters, (face, name)


def test_help_shows_the_sync_types_and_examples_without_await() -> None:
    text = pydoc.plain(pydoc.render_doc(Client))
    assert "table(self, database_id: 'str', table_id: 'str', *, page_size: 'int | None' = None)" \
        " -> 'Table'" in text  # fmt: skip
    assert "create_bucket(self, bucket_id: 'str'" in text and "-> 'Bucket'" in text
    assert "AsyncTable" not in text and "AsyncBucket" not in text and "requester" not in text
    assert "await " not in text
    assert '>>> people = client.create_table("crm", "people", schema=df, exist_ok=True)' in text
    query = pydoc.plain(pydoc.render_doc(TableQuery))
    assert "-> 'Iterator[pd.DataFrame | pa.RecordBatch]'" in query
    assert "-> 'TableQuery'" in query and "-> 'AsyncTableQuery'" not in query
    assert "await " not in query


def test_a_misspelled_keyword_names_the_face_and_sends_nothing(service: LocalService) -> None:
    with Client("http://127.0.0.1:9/v1", "demo") as unreachable:  # nothing listens on port 9
        people = unreachable.table("crm", "people")
        with pytest.raises(TypeError) as caught:
            people.where(fp.col("age") > 1).to_pandas(progess=False)  # type: ignore[call-arg]
        message = str(caught.value)
        assert message == "TableQuery.to_pandas() got an unexpected keyword argument 'progess'"
        with pytest.raises(TypeError, match=r"^Table\.to_pandas\(\) got an unexpected"):
            people.to_pandas(progess=False)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"^Client\.table\(\) missing a required argument"):
            unreachable.table("crm")  # type: ignore[call-arg]


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
    assert inspect.signature(_Counter.label).return_annotation == "_Label"
    assert inspect.signature(_Counter.countdown).return_annotation == "Iterator[int]"
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
