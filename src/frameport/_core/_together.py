"""Awaiting several coroutines at once, none left running when one fails.

`asyncio.gather` lets the others run on after the first failure, and a `TaskGroup` raises
an `ExceptionGroup` where the caller expects the error itself; `together` cancels the rest
and raises the first error as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def together(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """The results of `coroutines`, run at once, in their order; the first error cancels the
    others (and waits for them to end) and is raised."""
    tasks = [asyncio.ensure_future(coroutine) for coroutine in coroutines]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
