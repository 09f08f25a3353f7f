"""How many rows a query's HTML preview says it has (`rows_text`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core._pages import TOTAL_CAP, describe_total

if TYPE_CHECKING:
    from .read import TableRead

PREVIEW_EXACT_UP_TO = 20_000
"""A preview counts the rows exactly up to this many; past it, it says "≥" this many. The
service counts up to `TOTAL_CAP`: each further `TOTAL_CAP` rows cost a one-row request and a
count."""


async def rows_text(read: TableRead, total: int | None) -> str:
    """What a preview says of the rows of `read` ("5,982 rows", "≥ 20,000 rows", "1 row"),
    given the service's count `total` of its first request (None: none was sent). Past
    `TOTAL_CAP` the rows are counted on after the row at that position, up to
    `PREVIEW_EXACT_UP_TO` or the read's head; with rows the client drops, the count is an
    upper bound ("≤")."""
    if total is None:
        return "no rows"
    plan = read.plan
    head = plan.head
    if plan.every_row_kept and len(plan.filters) == 1:
        limit = PREVIEW_EXACT_UP_TO if head is None else min(head, PREVIEW_EXACT_UP_TO)
        counted = total
        while total >= TOTAL_CAP and counted < limit:
            last = await read.sequence_at(TOTAL_CAP - 1)
            if last is None:  # rows deleted since the first count
                break
            read = read.after(last)
            total = await read.service_count()
            counted += total
        capped = total >= TOTAL_CAP
        if head is not None and head <= counted:
            counted, capped = head, False
        described: str | None = f"≥ {counted:,}" if capped else f"{counted:,}"
    else:
        described = describe_total(
            total if head is None else min(total, head), exact=plan.every_row_kept
        )
    if described is None:
        return "rows"
    return f"{described} row{'' if described == '1' else 's'}"
