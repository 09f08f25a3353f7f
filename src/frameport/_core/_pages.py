"""The cursor loop of every list of the service (table rows, files, deployments, backups'
lists), beside the requester it pages through, as an HTTP client keeps its pagination. It
reads the cursor from the raw body (`last_row_id`), so decoding stays with the callers above.

>>> async for body in iter_pages(requester, "/storage/buckets/b/files", (), 100):
...     ...                                                       # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from .._exceptions import BadRequestError
from ._queries import cursor_after_query, limit_query, offset_query
from ._transport import queries_param

if TYPE_CHECKING:
    from ._connection import Requester

TOTAL_CAP = 5000
"""The service counts matching rows up to this number: a `total` of 5000 means "5000 or more"."""

_ORDER_NULL = "database_query_order_null"


def check_page_size(page_size: int) -> int:
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page_size must be a whole number of rows >= 1 (got {page_size!r}).")
    return page_size


async def iter_pages(
    requester: Requester,
    path: str,
    queries: Sequence[str],
    page_size: int,
    *,
    row_limit: int | None = None,
    with_total: bool = True,
    after: str | None = None,
    skipped: int = 0,
    last_sequence: int | None = None,
    first_page: Awaitable[bytes] | None = None,
) -> AsyncGenerator[bytes, None]:
    """Every page body of one list request (`queries`: everything but limit and cursor), in
    the service's order.

    Each page asks for `page_size` rows (`row_limit` in all) after the previous page's last
    ``$id``; the loop ends with a page shorter than asked (counted on the raw body), never at
    a row count, so nothing is cut off; or, up ``$sequence`` to `last_sequence`, with the page
    that ends there, a round trip before an empty page would. Only the first page is counted
    (`with_total`). A read that continues an earlier one starts after the row `after`,
    `skipped` rows in. `first_page` is the first page's body, when it was asked for already.
    """
    last = None if last_sequence is None else str(last_sequence)
    delivered = 0
    cursor = after
    while True:
        limit = page_size if row_limit is None else min(page_size, row_limit - delivered)
        if limit < 1:
            return
        if first_page is not None:
            body, first_page = await first_page, None
        else:
            body = await fetch_page(
                requester,
                path,
                queries,
                limit,
                cursor=cursor,
                delivered=skipped + delivered,
                with_total=with_total and delivered == 0,
            )
        cursor = last_row_id(body)
        yield body
        delivered += limit
        if cursor is None or rows_at_most(body) < limit:
            return
        if last is not None and last_row_value(body, b"$sequence") == last:
            return


async def fetch_page(
    requester: Requester,
    path: str,
    queries: Sequence[str],
    limit: int,
    *,
    cursor: str | None = None,
    delivered: int = 0,
    with_total: bool = True,
) -> bytes:
    """One page body of at most `limit` rows of the request `queries`, after the row `cursor`
    (None: from the start). `delivered` is how many rows of the request came before it, so
    that the page can be asked for by offset when the service refuses the cursor."""
    paging = [limit_query(limit)]
    if cursor is not None:
        paging.append(cursor_after_query(cursor))
    params: dict[str, Any] = queries_param([*queries, *paging])
    if not with_total:
        params["total"] = "false"  # counting is work for the service; only page one's is used
    try:
        return await requester.request_bytes("GET", path, params=params)
    except BadRequestError as exc:
        if cursor is None or exc.type != _ORDER_NULL:
            raise
    # The cursor row has null in a sort column: the service cannot continue after it.
    params.update(queries_param([*queries, limit_query(limit), offset_query(delivered)]))
    return await requester.request_bytes("GET", path, params=params)


def describe_total(total: int, *, exact: bool = True) -> str | None:
    """The service's `total` for people: a capped count is "≥ 5,000"; a count the client
    narrows afterwards (`exact=False`) is an upper bound, or None once capped.

    >>> describe_total(120), describe_total(5000), describe_total(120, exact=False)
    ('120', '≥ 5,000', '≤ 120')
    """
    if total >= TOTAL_CAP:
        return f"≥ {total:,}" if exact else None
    return f"{total:,}" if exact else f"≤ {total:,}"


def rows_at_most(body: bytes) -> int:
    """An upper bound of the rows in a page body: every row has an ``"$id"`` key, and that
    quoted text occurs unescaped nowhere else except as a string value or in a nested row.
    (``bytes.count`` runs on the event loop's thread, and was quicker than counting with
    numpy: benchmarks/README.md.)"""
    return body.count(b'"$id"')


def last_row_id(body: bytes) -> str | None:
    """The `$id` of the last row of a page body, or None for an empty page (see
    `last_row_value`).

    >>> last_row_id(b'{"total": 2, "rows": [{"$id": "a"}, {"$id": "b", "tags": ["$id"]}]}')
    'b'
    """
    return last_row_value(body, b"$id")


def last_row_value(body: bytes, key: bytes) -> str | None:
    """The value of `key` in the last row of a page body, as text (a string's text, or a
    number's, ``true``, ``false`` or ``null`` as written), or None for an empty page or a
    last row without `key`.

    Scans back from the end of the body over the last row only (strings are skipped by
    their quotes, nested arrays and objects by depth), so its cost does not grow with the
    page. Expects the envelope ``{"total": N, "<items>": [...]}`` in either key order.

    >>> last_row_value(b'{"rows": [{"$sequence": "1"}, {"$sequence": 2, "n": 3}]}', b"$sequence")
    '2'
    """
    depth = 0  # 1: in the envelope, 2: in the items array, 3: in the last row
    after = len(body)  # everything from here on has been scanned
    later_string: bytes | None = None  # the string token right after the current one
    while True:
        closing = _previous_unescaped_quote(body, after)
        for byte in reversed(body[closing + 1 : after]):
            if byte in b"}]":
                depth += 1
            elif byte in b"{[":
                depth -= 1
                if depth < 3:  # left the last row (or the items array was empty)
                    return None
        if closing < 0:
            return None
        opening = _previous_unescaped_quote(body, closing)
        if opening < 0:
            return None
        token = body[opening + 1 : closing]
        following = body[closing + 1 : after].strip()
        if depth == 3 and token == key and following.startswith(b":"):
            if following == b":":  # the value is the string after the key
                return None if later_string is None else _json_text(later_string)
            literal = following[1:].split(b",")[0].split(b"}")[0].strip()
            return literal.decode()
        later_string = token
        after = opening


def _previous_unescaped_quote(body: bytes, end: int) -> int:
    position = body.rfind(b'"', 0, end)
    while position >= 0 and not quote_is_unescaped(body, position):
        position = body.rfind(b'"', 0, position)
    return position


def quote_is_unescaped(body: bytes, position: int) -> bool:
    """Whether the quote at `position` of a JSON text is not escaped by a backslash."""
    backslashes = 0
    while position - backslashes > 0 and body[position - backslashes - 1] == 0x5C:
        backslashes += 1
    return backslashes % 2 == 0


def _json_text(token: bytes) -> str:
    if b"\\" not in token:
        return token.decode()
    text = json.loads(b'"' + token + b'"')
    assert isinstance(text, str)
    return text
