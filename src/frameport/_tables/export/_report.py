"""What an export did and the checks it passed, returned by `to_parquet` and printed by
``frameport export``.

>>> checks = ExportChecks(ids_unique=True, pages_in_order=True, rows_match=True)
>>> report = ExportReport("out.parquet", 3, 1, 2048, 0.5, checks)
>>> report.rows, report.ok
(3, True)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExportChecks:
    """The checks of an export. `pages_in_order` is None when the rows are sorted on a column
    (their ``$sequence`` order is then not the file's); `ids_unique` is None when the file
    has no ``$id`` column (exported with ``system=False``)."""

    ids_unique: bool | None
    pages_in_order: bool | None
    rows_match: bool

    @property
    def ok(self) -> bool:
        """Whether every check that applies holds."""
        return self.ids_unique is not False and self.pages_in_order is not False and self.rows_match


@dataclass(frozen=True)
class ExportReport:
    """One export: `rows` written to `path`, `pages` read by this run, the file's `bytes`,
    `seconds` taken, and its `checks`. A resumable export also says whether it `resumed`,
    after which ``$sequence`` it continued (`resumed_after`; None when it resumed before any
    segment was complete), the last ``$sequence`` it read (`upper_sequence`, fixed when it
    started) and how many rows were created since then (`rows_left`, left for the next
    export; the service counts up to 5,000)."""

    path: str
    rows: int
    pages: int
    bytes: int
    seconds: float
    checks: ExportChecks
    resumed: bool = False
    resumed_after: int | None = None
    upper_sequence: int | None = None
    rows_left: int | None = None

    @property
    def ok(self) -> bool:
        """Whether every check holds."""
        return self.checks.ok

    def summary(self) -> str:
        """The report as lines for people (what ``frameport export`` prints)."""
        checks = self.checks
        order = "not checked (sorted)"
        if checks.pages_in_order is not None:
            order = _yes(checks.pages_in_order)
        unique = "not checked (no $id column)"
        if checks.ids_unique is not None:
            unique = _yes(checks.ids_unique)
        lines = [
            f"wrote {self.rows:,} rows to {self.path} ({self.bytes:,} bytes) from "
            f"{self.pages:,} pages in {self.seconds:.1f} s",
            f"checks: $id unique: {unique}; pages in order: {order}"
            f"; rows written = rows listed: {_yes(checks.rows_match)}",
        ]
        if self.upper_sequence is not None:
            # A run stopped before its first segment was complete resumes from the start.
            after = self.resumed_after
            where = "from the start" if after is None else f"after $sequence {after:,}"
            lines.append(
                f"{'resumed' if self.resumed else 'started'} {where}; read up to "
                f"$sequence {self.upper_sequence:,}"
            )
        if self.rows_left:
            many = "≥ 5,000" if self.rows_left >= 5000 else f"{self.rows_left:,}"
            lines.append(f"{many} rows created since the export started are left for the next")
        return "\n".join(lines)


def _yes(value: bool) -> str:
    return "yes" if value else "NO"
