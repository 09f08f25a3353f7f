"""What a load did: `WriteReport`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

REJECTED_COLUMNS = ("row", "column", "rule", "message")
RERUN = (
    " · new IDs: a rerun writes these rows again (id_from= a column of IDs, or id_hash= key "
    "columns, makes it skip them)"
)


@dataclass
class WriteReport:
    """The outcome of a load (`Table.load`, ``frameport import``).

    * `written` — rows created (or, when an earlier run of the same load had written them
      already, found there);
    * `skipped` — rows whose ID already existed, left as they were (``on_conflict="skip"``);
    * `replaced` — rows whose ID already existed, replaced (``on_conflict="replace"``);
    * `rejected` — the rows that were not written, one per row: ``row`` (its position in the
      source), ``column``, ``rule`` (the rules are listed in the guide "Loading data into
      tables"; ``id`` for an
      unusable ID; ``service`` when the service refused the row) and ``message`` (a row
      breaking several rules names each, separated by ``; ``), then the row's own values;
    * `batches` — bulk requests (or transaction operations) that wrote rows;
    * `retries` — batches sent again: split after the service refused one of their rows,
      or completed after a conflict or an answer lost on the way;
    * `seconds` — the load's duration; `dry_run` — nothing was written: `written` counts the
      rows that would have been sent;
    * `null_values` — the fields of a CSV file read as null (``("",)``, the empty field,
      unless the load named others); None when the source was no CSV file.
    * `rerun_safe` — whether the same load run again meets the rows it wrote (their IDs come
      from `id_from`, `id_hash` or the source's ``$id``); False: the IDs were made for this
      load, so a rerun writes every row again (the summary says so, and the load warns).

    >>> print(report.summary())                                         # doctest: +SKIP
    written 9,998 · skipped 0 · replaced 0 · rejected 2 · 100 batches · 0 retries · 1.2 s
    """

    written: int = 0
    skipped: int = 0
    replaced: int = 0
    rejected: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=REJECTED_COLUMNS))
    batches: int = 0
    retries: int = 0
    seconds: float = 0.0
    dry_run: bool = False
    null_values: tuple[str, ...] | None = None
    """The fields of a CSV file read as null; None when the source was no CSV file."""
    rerun_safe: bool = True
    """Whether the same load run again meets the rows it wrote (False: a rerun writes them
    again)."""

    @property
    def ok(self) -> bool:
        """Whether no row was rejected."""
        return len(self.rejected) == 0

    def summary(self) -> str:
        """One line: the counts, the batches, the retries and the time."""
        prefix = "dry run: would write" if self.dry_run else "written"
        return (
            f"{prefix} {self.written:,} · skipped {self.skipped:,} · replaced "
            f"{self.replaced:,} · rejected {len(self.rejected):,} · {self.batches:,} batches · "
            f"{self.retries:,} retries · {self.seconds:.1f} s{self._nulls()}"
            f"{'' if self.rerun_safe else RERUN}"
        )

    def _nulls(self) -> str:
        if self.null_values is None:
            return ""
        named = ["empty fields" if v == "" else json.dumps(v) for v in self.null_values]
        return f" · read as null: {', '.join(named) or 'nothing'}"

    def __repr__(self) -> str:
        return f"WriteReport({self.summary()})"
