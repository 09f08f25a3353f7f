"""Work in a worker thread that is allowed to end before a cancellation goes on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


async def in_thread_to_the_end(function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``function(*args, **kwargs)`` in a worker thread, as `asyncio.to_thread` runs it; when
    the caller is cancelled, it waits for the thread to finish before the cancellation goes
    on, since a thread cannot be stopped and what it works on (an open file writer) must not
    be closed under it."""
    work = asyncio.ensure_future(asyncio.to_thread(function, *args, **kwargs))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.wait([work])
        raise
