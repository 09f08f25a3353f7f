"""Synchronous faces of frameport's async objects, run on one private event-loop thread.

All I/O is implemented once, in async code; a sync face holds its async object in
`self._async` and forwards to it. The caller's own event loop (Jupyter's, a callback's) is
never touched and nothing in asyncio is patched (no ``nest_asyncio``), so the same call works
in a script, a notebook cell, a callback and any thread. Signatures and docstrings of the
forwarding methods are generated from the async ones, so a misspelled keyword names the face.

    class Bucket(SyncFacade["AsyncBucket"], wraps=AsyncBucket):
        id = forward_property("id")
        download = delegate(AsyncBucket.download)
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import threading
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextvars import ContextVar
from types import TracebackType
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from ._call_stack import user_frame_depth

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
A = TypeVar("A")
F = TypeVar("F", bound="SyncFacade[Any]")

_caller_warnings: ContextVar[list[tuple[str, type[Warning]]] | None] = ContextVar(
    "frameport_caller_warnings", default=None
)
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _forget_loop_after_fork() -> None:
    global _loop, _thread
    _loop, _thread = None, None


os.register_at_fork(after_in_child=_forget_loop_after_fork)


def event_loop() -> asyncio.AbstractEventLoop:
    """frameport's private event loop, running in its daemon thread (started on first use)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="frameport-loop", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run `awaitable` on frameport's loop thread and return its result (or raise its error).

    Works from any thread, including one whose own event loop is running. If the caller is
    interrupted (KeyboardInterrupt in a notebook, Ctrl-C in a command), the coroutine is
    cancelled, and its cleanup given up to `CANCEL_GRACE` seconds before the error goes on.
    """
    loop = event_loop()
    if on_loop_thread():
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise RuntimeError(
            "A synchronous frameport call was made from frameport's own event loop; "
            "await the async API (AsyncClient) there instead."
        )
    started, finished = threading.Event(), threading.Event()
    pending: list[tuple[str, type[Warning]]] = []

    async def watched() -> T:
        _caller_warnings.set(pending)
        started.set()
        try:
            return await awaitable
        finally:
            finished.set()

    future = asyncio.run_coroutine_threadsafe(watched(), loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        # The coroutine's cleanup runs before the caller goes on: a command that returns
        # after Ctrl-C would otherwise exit while the loop thread is still inside Arrow.
        if started.is_set():
            finished.wait(CANCEL_GRACE)
        raise
    finally:
        for message, category in pending:
            warnings.warn(message, category, stacklevel=1 + user_frame_depth())


def warn_caller(message: str, category: type[Warning]) -> None:
    """Warn the user's code about this call: at once from async code; inside a synchronous
    call, in the caller's thread when the call returns (raised on the loop thread, a warning
    would name a line of asyncio's, not the user's)."""
    pending = _caller_warnings.get()
    if pending is None:
        warnings.warn(message, category, stacklevel=1 + user_frame_depth())
    else:
        pending.append((message, category))


def on_loop_thread() -> bool:
    """Whether the caller runs on frameport's loop thread (as the sync faces' coroutines do)."""
    return threading.current_thread() is _thread


CANCEL_GRACE = 5.0
"""Seconds an interrupted call waits for its cancelled coroutine to clean up."""


def iterate_sync(iterator: AsyncIterator[T]) -> Iterator[T]:
    """A plain iterator over an async iterator, each step run with `run_sync`.

    Closing the plain iterator early (``break``) closes the async one on the loop thread.
    """
    try:
        while True:
            try:
                item = run_sync(anext(iterator))
            except StopAsyncIteration:
                return
            yield item
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None and on_loop_thread():
            # collected unfinished on the loop thread itself: close it there, without waiting
            closing = asyncio.ensure_future(aclose())
            _closing.add(closing)
            closing.add_done_callback(_closing.discard)
        elif aclose is not None:
            run_sync(aclose())


_closing: set[asyncio.Future[Any]] = set()  # closes under way, kept until done
_faces: dict[type, type[SyncFacade[Any]]] = {}


class Closing:
    """``with`` for an object that `close` ends: the block gives the object, and leaving it
    (an error or not) closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClosing:
    """``async with`` for an object that the coroutine `close` ends: the block gives the
    object, and leaving it (an error or not) closes it."""

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()


class SyncFacade(Generic[A]):
    """Base class of a synchronous face; the async object it forwards to is ``self._async``."""

    _async: A
    _async_type: ClassVar[type | None] = None

    def __init_subclass__(cls, *, wraps: type | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if wraps is not None:
            cls._async_type = wraps
            _faces[wraps] = cls
        for name, member in list(vars(cls).items()):
            if getattr(member, "_frameport_delegate", False):
                member.__qualname__ = f"{cls.__qualname__}.{name}"
                member.__module__ = cls.__module__
            elif getattr(getattr(member, "fget", None), "_frameport_delegate", False):
                source = getattr(cls._async_type, name, None)
                doc = sync_docstring(getattr(source, "__doc__", None))
                setattr(cls, name, property(member.fget, doc=doc))

    @classmethod
    def _from_async(cls, async_object: A) -> Self:
        """The face of an existing async object (no constructor call)."""
        face = cls.__new__(cls)
        face._async = async_object
        return face

    def __repr__(self) -> str:
        inner = repr(self._async)
        async_name = type(self._async).__name__
        if inner.startswith(async_name):
            return type(self).__name__ + inner[len(async_name) :]
        return f"{type(self).__name__}({inner})"


def async_twin(face: SyncFacade[A]) -> A:
    """The async object behind a sync face (for code that runs several of its calls at once)."""
    return face._async


def to_sync(value: Any) -> Any:
    """`value`, or its registered sync face if it is an async object with one."""
    face = _faces.get(type(value))
    return face._from_async(value) if face is not None else value


_ASYNC_PREFIX = re.compile(r"(?<![A-Za-z0-9])Async(?=[A-Z])")
_EXAMPLE_LINE = re.compile(r"^(\s*(?:>>>|\.\.\.)\s.*)$", re.MULTILINE)


def sync_name(text: str) -> str:
    """`text` with each ``AsyncX`` name replaced by its face's name ``X``.

    >>> sync_name("AsyncIterator[AsyncTable]")
    'Iterator[Table]'
    """
    return _ASYNC_PREFIX.sub("", text)


def sync_signature(method: Callable[..., Any]) -> inspect.Signature:
    """The signature of `method`'s sync face: the same parameters, and the return type a
    sync caller gets."""
    signature = inspect.signature(method)
    returned = signature.return_annotation
    if isinstance(returned, str):
        returned = sync_name(returned)
    elif isinstance(returned, type) and returned in _faces:
        returned = _faces[returned]
    return signature.replace(return_annotation=returned)


def sync_docstring(doc: str | None) -> str | None:
    """`doc` as the sync face says it: examples without ``await``, ``AsyncX`` names as ``X``."""
    if doc is None:
        return None
    doc = _EXAMPLE_LINE.sub(lambda line: line[1].replace("await ", ""), doc)
    return sync_name(doc)


@overload
def delegate(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Any, P], R]: ...
@overload
def delegate(
    method: Callable[Concatenate[Any, P], AsyncIterator[R]],
) -> Callable[Concatenate[Any, P], Iterator[R]]: ...
@overload
def delegate(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]: ...
@overload
def delegate(
    method: Callable[Concatenate[Any, P], Any], face: type[F] | Callable[[], type[F]]
) -> Callable[Concatenate[Any, P], F]: ...
def delegate(
    method: Callable[..., Any], face: type[Any] | Callable[[], type[Any]] | None = None
) -> Callable[..., Any]:
    """A sync method forwarding to the async method of the same name on ``self._async``
    (see the module). For a method returning an async object, name its face so type checkers
    see it: ``table = delegate(AsyncClient.table, Table)``, or lazily inside the face's own
    class body: ``where = delegate(AsyncTableQuery.where, lambda: TableQuery)``.
    """
    name = method.__name__
    signature = sync_signature(method)

    def forward(self: SyncFacade[Any], *args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{type(self).__name__}.{name}() {exc}") from None
        result = getattr(self._async, name)(*args, **kwargs)
        if inspect.isawaitable(result):
            result = run_sync(result)
        elif isinstance(result, AsyncIterator) and type(result) not in _faces:
            return iterate_sync(result)
        result = to_sync(result)
        if face is not None:
            declared = face if isinstance(face, type) else face()
            if not isinstance(result, declared):
                raise TypeError(
                    f"{name}() gave {type(result).__name__}, not the declared {declared}."
                )
        return result

    forward.__name__ = name
    forward.__doc__ = sync_docstring(method.__doc__)
    forward.__signature__ = signature  # type: ignore[attr-defined]
    forward._frameport_delegate = True  # type: ignore[attr-defined]
    return forward


def forward_property(name: str) -> property:
    """A read-only property returning the async object's attribute `name` (through
    `to_sync`), documented by the async class's docstring for `name`."""

    def get(self: SyncFacade[Any]) -> Any:
        return to_sync(getattr(self._async, name))

    get.__name__ = name
    get._frameport_delegate = True  # type: ignore[attr-defined]
    return property(get)
