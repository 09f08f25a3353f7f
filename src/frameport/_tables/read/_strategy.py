"""How a read runs, serially or in ranges of ``$sequence``: the one rule that decides
(`range_obstacle`, `ReadStrategy.of`), the sentence `explain()` prints for it, and the
controller of how many ranges run at once (adaptive for ``"auto"``, pinned at N).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..._core._adaptive import AUTO, AdaptiveConcurrency, Auto, Parallel, check_concurrency
from ._plan import Plan

READ_CAP = 16
"""The most ranges ``parallel="auto"`` runs at once."""

READ_BUDGET = 64 * 2**20
"""Bytes of page bodies ``parallel="auto"`` lets its ranges hold at once, two per range (one
arriving, one waiting for or in the decoder)."""


class Obstacle(enum.Enum):
    """What keeps a query's rows from being read in ranges of ``$sequence``."""

    SORTED = "the rows are sorted by a column (the service sorts them in one read)"
    SEVERAL_REQUESTS = "the filter is sent as several requests, whose rows come in request order"
    INFERRED = "the column types are inferred from the rows, in row order"


def range_obstacle(plan: Plan, *, inferred: bool | None = None) -> Obstacle | None:
    """What keeps the rows of `plan` from being read in ranges, or None; `inferred`: whether
    its types are inferred from the rows (None: when it has no fetched schema)."""
    if inferred is None:
        inferred = plan.fetched is None
    if plan.spec.sequence_order is None:
        return Obstacle.SORTED
    if len(plan.filters) > 1:
        return Obstacle.SEVERAL_REQUESTS
    if inferred:
        return Obstacle.INFERRED
    return None


@dataclass(frozen=True)
class ReadStrategy:
    """How one read runs: `parallel` checked, and why it stays serial (None: in ranges)."""

    parallel: int | Auto
    serial_reason: str | None

    @classmethod
    def of(cls, plan: Plan, parallel: Parallel, *, inferred: bool | None = None) -> ReadStrategy:
        """The strategy of a read of `plan` (`inferred` as for `range_obstacle`)."""
        checked = 1 if parallel is None else check_concurrency(parallel, "parallel", also=", None")
        reason: str | None = None
        obstacle = range_obstacle(plan, inferred=inferred)
        if checked == 1:
            reason = "parallel is 1"
        elif checked == AUTO and plan.head is not None and plan.head <= plan.page_size:
            reason = "the head fits in one page"
        elif obstacle is not None:
            reason = obstacle.value
        return cls(checked, reason)

    @property
    def ranged(self) -> bool:
        return self.serial_reason is None

    def controller(self) -> AdaptiveConcurrency:
        """A new controller of how many ranges run at once: adaptive for ``"auto"`` (two to
        start with, each range holding at most two page bodies), else pinned."""
        if self.parallel == AUTO:
            return AdaptiveConcurrency(cap=READ_CAP, budget=READ_BUDGET, start=2, units_per_slot=2)
        return AdaptiveConcurrency.pinned_at(self.parallel)

    def describe(self) -> str:
        """How the read runs, in a sentence (the last line of `explain`)."""
        if self.serial_reason is not None:
            return f"The pages are read one after another, because {self.serial_reason}."
        if self.parallel == AUTO:
            return (
                "The first page is read and, at the same time, the rest of the rows in slices "
                "of the order they were stored in ($sequence), as many at once as this "
                f"machine keeps up with (at most {READ_CAP}), handed on in order; parallel=1 "
                "reads one page after another."
            )
        return (
            f"The rows are read in slices of the order they were stored in ($sequence), "
            f"{self.parallel} at once, handed on in order."
        )
