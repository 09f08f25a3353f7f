"""`together`: coroutines awaited at once, results in order, and none left running when one
fails (the backup's tables and files run this way)."""

from __future__ import annotations

import asyncio

import pytest

from frameport import ArchiveError
from frameport._core._together import together


async def _after(seconds: float, value: int, ended: list[str]) -> int:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        ended.append(f"cancelled {value}")
        raise
    ended.append(f"done {value}")
    return value


async def _fails(seconds: float) -> int:
    await asyncio.sleep(seconds)
    raise ArchiveError("the archive is read-only; back up into another folder.")


def test_results_come_in_the_order_given() -> None:
    ended: list[str] = []
    results = asyncio.run(together(_after(0.03 - n * 0.01, n, ended) for n in range(3)))
    assert results == [0, 1, 2]
    assert ended == ["done 2", "done 1", "done 0"]


def test_the_first_error_is_raised_as_it_is_and_nothing_runs_on() -> None:
    ended: list[str] = []

    async def run() -> None:
        with pytest.raises(ArchiveError, match="read-only"):
            await together([_after(0.0, 1, ended), _fails(0.01), _after(5.0, 2, ended)])
        # Nothing is left to end later: the slow one was cancelled before the error came.
        assert ended == ["done 1", "cancelled 2"]
        assert len(asyncio.all_tasks()) == 1

    asyncio.run(run())
