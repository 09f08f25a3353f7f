"""Ranges of ``$sequence``: how the rows of one read are cut into parts read at once.

``$sequence`` numbers a table's rows in insertion order, is the service's default order and
can be filtered: a range adds ``greaterThan``/``lessThanEqual`` on it to a request's filters.
`split_ranges` cuts the rows between two bounds into parts of nearly equal width (the strata
the partition planner samples); `tapering_ranges` cuts them as they are
asked for, each the pages left divided by the ranges that run at once, so that a read ends
with every slot busy on single pages rather than one long range alone.

>>> split_ranges(1, 10, 3)
[SequenceRange(after=0, upto=3), SequenceRange(after=3, upto=6), SequenceRange(after=6, upto=10)]
>>> SequenceRange(0, 3).queries("column")
('{"method":"greaterThan","column":"$sequence","values":[0]}', \
'{"method":"lessThanEqual","column":"$sequence","values":[3]}')
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..._core._queries import ServiceQuery, check_member, render_query

SEQUENCE = "$sequence"

PAGES_PER_RANGE = 4
"""A range of a ranged read spans at most this many pages' worth of ``$sequence`` values."""


@dataclass(frozen=True)
class SequenceRange:
    """The rows with ``after < $sequence <= upto``."""

    after: int
    upto: int

    @property
    def span(self) -> int:
        """How many ``$sequence`` values the range covers: an upper bound of its rows."""
        return self.upto - self.after

    def queries(self, member: str) -> tuple[str, str]:
        """The two filter query strings that keep the range's rows."""
        upto = ServiceQuery("lessThanEqual", SEQUENCE, (self.upto,))
        return sequence_above(self.after, member), render_query(upto, check_member(member))


def sequence_above(value: int, member: str) -> str:
    """The filter query string that keeps the rows after ``$sequence`` `value`."""
    return render_query(ServiceQuery("greaterThan", SEQUENCE, (value,)), check_member(member))


def split_ranges(first: int, last: int, parts: int) -> list[SequenceRange]:
    """``(first - 1, last]`` cut into at most `parts` ranges of nearly equal width, in order."""
    after, span = first - 1, last - first + 1
    parts = max(1, min(parts, span))
    edges = [after + span * index // parts for index in range(parts + 1)]
    return [SequenceRange(low, high) for low, high in itertools.pairwise(edges)]


def tapering_ranges(
    after: int,
    upto: int,
    page_size: int,
    width: int | Callable[[], int],
    *,
    descending: bool = False,
) -> Iterator[SequenceRange]:
    """``(after, upto]`` cut into ranges as they are asked for, in reading order (from the top
    when `descending`): each spans the pages left divided by the ranges that run at once
    (`width`, asked again for each range), at least one page and at most `PAGES_PER_RANGE`.

    >>> [(r.after, r.upto) for r in tapering_ranges(0, 10, 1, 2)]
    [(0, 4), (4, 7), (7, 8), (8, 9), (9, 10)]
    """
    while after < upto:
        pages_left = -(-(upto - after) // page_size)
        running = width() if callable(width) else width
        pages = max(1, min(PAGES_PER_RANGE, pages_left // max(1, running)))
        span = pages * page_size
        if descending:
            yield SequenceRange(max(after, upto - span), upto)
            upto -= span
        else:
            yield SequenceRange(after, min(upto, after + span))
            after += span
