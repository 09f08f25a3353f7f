"""Awaiting several coroutines at once, none left running when one fails; and ending tasks.

`asyncio.gather` lets the others run on after the first failure, and a `TaskGroup` raises
an `ExceptionGroup` where the caller expects the error itself; `together` does neither.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def together(coroutines: Iterable[Awaitable[T]]) -> list[T]:
    """The results of `coroutines`, run at once, in their order; the first error cancels the
    others (and waits for them to end) and is raised."""
    tasks = [asyncio.ensure_future(coroutine) for coroutine in coroutines]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        await cancel_and_wait(*tasks)


async def cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    """Cancel `tasks` (those not done yet) and wait until every one has ended; their results
    and errors are let go."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
