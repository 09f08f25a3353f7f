"""Batches regrouped into batches of a chosen number of rows or bytes."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence

import pyarrow as pa


async def rechunk(
    batches: AsyncIterator[pa.RecordBatch], *, rows: int | None = None, nbytes: int | None = None
) -> AsyncGenerator[pa.RecordBatch, None]:
    """`batches` regrouped into batches of exactly `rows` rows, or of about `nbytes` bytes
    (the last one may be smaller); with neither, `batches` as they come.

    >>> async for batch in rechunk(read, rows=50_000): ...       # doctest: +SKIP
    """
    if rows is None and nbytes is None:
        async for batch in batches:
            yield batch
        return
    if rows is not None and nbytes is not None:
        raise ValueError("give rows= or bytes=, not both")
    for name, value in (("rows", rows), ("bytes", nbytes)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{name} must be a whole number >= 1 (got {value!r})")
    buffered: list[pa.RecordBatch] = []
    count = 0
    async for batch in batches:
        buffered.append(batch)
        count += batch.num_rows
        target = rows if rows is not None else _rows_for_bytes(buffered, count, nbytes or 1)
        while count >= target:
            joined = pa.concat_batches(buffered)  # type: ignore[attr-defined]  # missing from the stubs
            yield joined.slice(0, target)
            rest = joined.slice(target)
            buffered, count = ([rest] if rest.num_rows else []), rest.num_rows
            if rows is None:
                target = _rows_for_bytes(buffered, count, nbytes or 1) if count else count + 1
    if count:
        yield pa.concat_batches(buffered)  # type: ignore[attr-defined]  # missing from the stubs


def _rows_for_bytes(batches: Sequence[pa.RecordBatch], count: int, nbytes: int) -> int:
    size = sum(batch.nbytes for batch in batches)
    return max(1, round(nbytes * count / size)) if size else count + 1
