"""Waiting for the service to finish something it does in the background (columns becoming
available, a deployment being built): ask again until the answer is final or time is up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def poll_until(
    probe: Callable[[], Awaitable[T | None]],
    *,
    timeout: float,
    delay: float,
    max_delay: float | None = None,
    timed_out: Callable[[], Exception],
) -> T:
    """The first result of `probe` that is not None. Between tries it waits `delay` seconds,
    doubling up to `max_delay` (default: a fixed `delay`); once `timeout` seconds have passed
    it raises ``timed_out()``. `probe` raises to end the wait with an error.

    >>> async def ready() -> str: return "ready"
    >>> asyncio.run(poll_until(ready, timeout=1, delay=0.1, timed_out=TimeoutError))
    'ready'
    """
    ceiling = delay if max_delay is None else max_delay
    deadline = time.monotonic() + timeout
    while True:
        result = await probe()
        if result is not None:
            return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise timed_out()
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, ceiling)
