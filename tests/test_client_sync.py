"""Each sync face (Client, Table, TableQuery, Bucket, Function) has every public member of its
async class, and each member runs its async twin and gives back what a sync caller gets; the
sync Client runs from a running event loop and other threads; the AsyncClient works in the
caller's own loop."""

from __future__ import annotations

import asyncio
import inspect
import pydoc
import signal
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import frameport as fp
from frameport import (
    AsyncBucket,
    AsyncClient,
    AsyncFunction,
    AsyncTable,
    AsyncTableQuery,
    Bucket,
    Client,
    Function,
    NotFoundError,
    Table,
    TableQuery,
)
from frameport._core._sync import (
    SyncFacade,
    async_twin,
    delegate,
    forward_property,
    iterate_sync,
    run_sync,
    sync_docstring,
)
from frameport.local import LocalService

MakeUser = Callable[..., Any]  # conftest.make_user


FACES: dict[type[SyncFacade[Any]], type] = {
    Client: AsyncClient,
    TableQuery: AsyncTableQuery,
    Table: AsyncTable,
    Bucket: AsyncBucket,
    Function: AsyncFunction,
    fp.Transaction: fp.AsyncTransaction,
    fp.TransactionQuery: fp.AsyncTransactionQuery,
    fp.TransactionTable: fp.AsyncTransactionTable,
    fp.Changes: fp.AsyncChanges,
    fp.LiveTable: fp.AsyncLiveTable,
}
ASYNC_CLASSES = {async_class.__name__: async_class for async_class in FACES.values()}

# Members a face writes out because a delegate cannot serve: the class methods that make the
# face itself (run by the tests of each), and `impersonate`, a plain method returning a client.
WRITTEN_BY_HAND = {"from_env", "from_saved", "impersonate"}
CONSTRUCTORS = {"from_env", "from_saved"}


# Members of an async class with no sync twin: an async iterator's `aclose` (its face's is
# `close`, as its own is too).
ASYNC_ONLY = {"aclose"}


def _public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")} - ASYNC_ONLY


def _members() -> list[tuple[type[SyncFacade[Any]], str]]:
    return [(face, name) for face, twin in FACES.items() for name in sorted(_public_names(twin))]


def test_every_face_of_the_package_is_checked() -> None:
    faces = {
        value
        for value in vars(fp).values()
        if isinstance(value, type) and issubclass(value, SyncFacade) and value is not SyncFacade
    }
    assert faces == set(FACES)


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_each_face_has_every_public_member_of_its_async_class(face: type) -> None:
    assert _public_names(face) == _public_names(FACES[face])


def _returned(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else annotation.__name__


def _result_of(annotation: str) -> Any:
    """A value standing for what an async member declared as `annotation` returns: an
    instance (its constructor not run) of a faced async class it names, else a bare object."""
    named = annotation.removeprefix("AsyncIterator[").removesuffix("]")
    async_class = ASYNC_CLASSES.get(named)
    return object() if async_class is None else object.__new__(async_class)


def _probe(async_class: type, name: str, returned: Any, calls: list[Any]) -> Any:
    """An instance of `async_class` (its constructor not run) whose member `name`, of the same
    kind (property, coroutine, async iterator or plain method), records each call's arguments
    in `calls` and gives `returned`."""
    member = getattr(async_class, name)
    override: Any
    if isinstance(inspect.getattr_static(async_class, name), property):
        override = property(lambda self: returned)
    elif inspect.isasyncgenfunction(member):

        async def override(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            calls.append((args, kwargs))
            yield returned

    elif inspect.iscoroutinefunction(member):

        async def override(self: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append((args, kwargs))
            return returned

    else:

        def override(self: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append((args, kwargs))
            return returned

    probe_class = type(f"Probe{async_class.__name__}", (async_class,), {name: override})
    return object.__new__(probe_class)


def _arguments(signature: inspect.Signature) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A distinct object for each parameter after ``self`` (and one more for ``*args`` and
    ``**kwargs``): positional-only ones by position, the others by name."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in list(signature.parameters.values())[1:]:
        if (
            parameter.kind is parameter.POSITIONAL_ONLY
            or parameter.kind is parameter.VAR_POSITIONAL
        ):
            args.append(object())
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs["another"] = object()
        else:
            kwargs[parameter.name] = object()
    return tuple(args), kwargs


def _as_sync(returned: Any) -> Callable[[Any], bool]:
    """Whether a sync member's result is what a sync caller gets for `returned`: the face
    around an async object, else the value itself."""
    face = next((f for f, twin in FACES.items() if type(returned) is twin), None)
    if face is None:
        return lambda result: result is returned
    return lambda result: isinstance(result, face) and async_twin(result) is returned


@pytest.mark.parametrize(("face", "name"), _members(), ids=lambda x: getattr(x, "__name__", x))
def test_each_sync_member_runs_its_async_twin_and_gives_the_sync_type(
    face: type[SyncFacade[Any]], name: str
) -> None:
    """Run on an async object whose member `name` records its call: the sync member calls it
    with the arguments it was given, and gives back its result as a sync caller gets it (a
    face for an async object, an iterator for an async iterator). Each delegated member's
    docstring is its twin's as a sync caller reads it (`sync_docstring`: examples without
    ``await``, ``AsyncX`` named ``X``)."""
    async_class = FACES[face]
    async_member = inspect.getattr_static(async_class, name)
    sync_member = inspect.getattr_static(face, name)
    delegated = getattr(getattr(sync_member, "fget", sync_member), "_frameport_delegate", False)
    assert delegated == (name not in WRITTEN_BY_HAND), f"{face.__name__}.{name}"
    if delegated:
        assert sync_member.__doc__ == sync_docstring(async_member.__doc__)
    if name in CONSTRUCTORS:
        return
    calls: list[Any] = []
    if isinstance(async_member, property):
        returned = object()
        sync_face = face._from_async(_probe(async_class, name, returned, calls))
        assert isinstance(sync_member, property) and getattr(sync_face, name) is returned
        return
    own = inspect.signature(getattr(face, name), follow_wrapped=False)
    real = inspect.signature(getattr(async_class, name))
    assert list(own.parameters.values()) == list(real.parameters.values())
    declared = _returned(own.return_annotation)
    assert "Async" not in declared and "Coroutine" not in declared
    returned = _result_of(_returned(real.return_annotation))
    sync_face = face._from_async(_probe(async_class, name, returned, calls))
    args, kwargs = _arguments(own)
    result = getattr(sync_face, name)(*args, **kwargs)
    is_sync = _as_sync(returned)
    if inspect.isasyncgenfunction(getattr(async_class, name)):
        assert declared.startswith("Iterator[")
        assert not calls  # an iterator runs its twin when it is read
        (item,) = list(result)
        assert is_sync(item)
    else:
        assert is_sync(result)
    assert calls == [(args, kwargs)]


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


def test_an_interrupted_call_lets_its_coroutine_clean_up_before_it_raises() -> None:
    # A command that returns after Ctrl-C exits at once: the cancelled coroutine must have
    # finished its cleanup by then, or the process ends with the loop thread still in it.
    cleaned = threading.Event()

    async def slow_with_cleanup() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(0.3)
            cleaned.set()

    main = threading.main_thread().ident
    assert main is not None and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            run_sync(slow_with_cleanup())
        assert cleaned.is_set()
    finally:
        signal.signal(signal.SIGINT, previous)
