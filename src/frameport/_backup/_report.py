"""What a backup, a verification and a restore (or copy) did, returned to the caller and
printed by the command line.

>>> report = BackupReport("crm", "s1", None, False, 1, 3, 3, 0, 0, 0.5)
>>> report.summary()
'full snapshot s1 of 1 table(s) (3 rows, 3 read) and 0 file(s) (0 downloaded) in crm in 0.5 s'
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class BackupReport:
    """One backup: the `snapshot` written into `target` (incremental on `base`, or full when
    None), whether it `resumed` a killed run, the `tables` and the `rows` they hold, the
    rows this run read (`rows_read`), the `files` and how many were downloaded, and the
    `seconds` it took."""

    target: str
    snapshot: str
    base: str | None
    resumed: bool
    tables: int
    rows: int
    rows_read: int
    files: int
    files_downloaded: int
    seconds: float

    def summary(self) -> str:
        """The report as a line for people (what ``frameport backup`` prints)."""
        kind = "full snapshot" if self.base is None else f"incremental snapshot (on {self.base})"
        resumed = " (resumed)" if self.resumed else ""
        return (
            f"{kind} {self.snapshot}{resumed} of {self.tables} table(s) ({self.rows:,} rows, "
            f"{self.rows_read:,} read) and {self.files} file(s) ({self.files_downloaded} "
            f"downloaded) in {self.target} in {self.seconds:.1f} s"
        )


@dataclass(frozen=True)
class VerifyReport:
    """An archive checked again: the `snapshots` checked, the `files` they need, and each
    file `missing`, `altered` (a size or SHA-256 other than the one recorded) or `refused`
    (``<path>: <why>``: a path a restore must not open, or a file that is not what it should
    be); `unhashed`: the snapshots whose manifest and plan carry no hash (written by an
    earlier version of frameport; their files are checked all the same)."""

    target: str
    snapshots: list[str]
    files: int
    missing: list[str]
    altered: list[str]
    refused: list[str] = field(default_factory=list)
    unhashed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every file is there, as its manifest recorded it."""
        return not self.missing and not self.altered and not self.refused

    @property
    def problems(self) -> list[str]:
        """One line per bad file: ``<path>: missing``, ``<path>: altered`` or
        ``<path>: <why it is refused>``."""
        return (
            [f"{name}: missing" for name in self.missing]
            + [f"{name}: altered" for name in self.altered]
            + self.refused
        )

    def summary(self) -> str:
        """The report as lines for people (what ``frameport verify`` prints)."""
        found = (
            f"{len(self.missing)} missing, {len(self.altered)} altered, {len(self.refused)} refused"
        )
        head = (
            f"{self.target}: {len(self.snapshots)} snapshot(s), {self.files} file(s) checked: "
            f"{'all intact' if self.ok else found}"
        )
        notes = [
            f"snapshot {snapshot}: its manifest and plan carry no hash (written by an earlier "
            "version of frameport)"
            for snapshot in self.unhashed
        ]
        return "\n".join([head, *self.problems, *notes])


def conflict_advice(action: str) -> str:
    """The options of a restore (`action`: ``"restore"``) or copy (``"copy"``) for the rows
    and files the destination holds with other content than the source."""
    theirs = "snapshot's" if action == "restore" else "source's"
    return (
        f'on_conflict="skip" keeps the project\'s, on_conflict="replace" puts the {theirs} in '
        f"their place (on the command line: frameport {action} ... --on-conflict skip, or "
        "--on-conflict replace)"
    )


@dataclass
class TableOutcome:
    """What a restore did (or, in a dry run, would do) to one table's rows: the `rows` of
    the source, those `written` new, those left `unchanged` (the destination held them as
    the source does), and those that differ, `replaced` or `skipped` as `on_conflict`
    said."""

    table: str
    rows: int = 0
    written: int = 0
    replaced: int = 0
    skipped: int = 0
    unchanged: int = 0


@dataclass
class RestoreReport:
    """One restore (or copy: `action`): the `plan` it followed (what it creates, changes and
    finds differing: a dry run's lines), what it `created`, the rows of each table
    (`tables`), the `files` uploaded, unchanged (held already with the same content),
    skipped and replaced, every item the destination `rejected` (``(item, reason)``), what
    it could not keep (`not_kept`: e.g. times the service sets itself), whether it `resumed`
    a killed run, and whether it was a `dry_run`. A dry run fills the same counts with what
    the run would do, up to where it would `stop` (None: it would not)."""

    source: str
    snapshot: str | None
    dry_run: bool
    action: str = "restore"
    on_conflict: str = "fail"
    plan: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    tables: list[TableOutcome] = field(default_factory=list)
    files_uploaded: int = 0
    files_unchanged: int = 0
    files_skipped: int = 0
    files_replaced: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)
    not_kept: list[str] = field(default_factory=list)
    stop: str | None = None
    """Where the run would stop with ``on_conflict="fail"`` (the first table or file that
    differs), or None where it would not."""
    resumed: bool = False
    seconds: float = 0.0

    @property
    def written(self) -> int:
        """Rows written new, in every table."""
        return sum(table.written for table in self.tables)

    @property
    def unchanged(self) -> int:
        """Rows the destination held as the source does, left alone."""
        return sum(table.unchanged for table in self.tables)

    @property
    def replaced(self) -> int:
        """Rows that differed and replaced the destination's (``on_conflict="replace"``)."""
        return sum(table.replaced for table in self.tables)

    @property
    def skipped(self) -> int:
        """Rows that differed, left as the destination had them (``on_conflict="skip"``)."""
        return sum(table.skipped for table in self.tables)

    def _what_it_would_do(self) -> str:
        """A dry run's first line."""
        theirs = "snapshot's" if self.action == "restore" else "source's"
        differing = {
            "skip": f", keep {self.skipped:,} differing row(s) as they are",
            "replace": f", replace {self.replaced:,} differing row(s) with the {theirs}",
        }.get(self.on_conflict, "")
        files = {
            "skip": f", keep {self.files_skipped} differing file(s)",
            "replace": f", replace {self.files_replaced} differing file(s)",
        }.get(self.on_conflict, "")
        line = (
            f"dry run: the {self.action} would create {len(self.created)} item(s), write "
            f"{self.written:,} new row(s), leave {self.unchanged:,} row(s) unchanged"
            f"{differing}, upload {self.files_uploaded} file(s), leave "
            f"{self.files_unchanged} file(s) unchanged{files}"
        )
        if self.stop is not None:
            line += (
                f'; then it would stop at {self.stop} (on_conflict="fail"): '
                f"{conflict_advice(self.action)}"
            )
        return line + "; nothing was written"

    def summary(self) -> str:
        """The report as lines for people: a dry run's line saying what the run would do
        and its plan, else what was done, each item rejected and what could not be kept."""
        if self.dry_run:
            return "\n".join([self._what_it_would_do(), *self.plan])
        done = "restored" if self.action == "restore" else "copied"
        lines = [
            f"{done} {self.source}{'' if self.snapshot is None else f' ({self.snapshot})'}"
            f"{' (resumed)' if self.resumed else ''} in {self.seconds:.1f} s: "
            f"{len(self.created)} created; rows: {self.written:,} written, "
            f"{self.unchanged:,} unchanged, {self.replaced:,} replaced, {self.skipped:,} "
            f"skipped; files: {self.files_uploaded} uploaded, {self.files_unchanged} unchanged, "
            f"{self.files_replaced} replaced, {self.files_skipped} skipped; "
            f"{len(self.rejected)} rejected"
        ]
        lines.extend(f"rejected {item}: {reason}" for item, reason in self.rejected)
        lines.extend(f"not kept: {note}" for note in self.not_kept)
        return "\n".join(lines)
