"""The one write path: any source into a table, checked, in parallel batches, resumable.

`load_rows` reads the table's columns, opens the source (`_sources`), refuses a source that
does not fit (`RowPreparer.check_columns`), then streams it chunk by chunk: each chunk is
checked and given IDs (`_prepare`), cut into batches of `batch_size` rows (the service's
bulk limit, 100 unless a plan raises it) and at most the body the service takes
(`cut_requests`), and sent through the writes' one loop (`_ordered.SendLoop`) by
`RowSender` (`_sending`), as many at once as the shared concurrency controller says
(`_core._adaptive`: from each request's wait and each batch's preparation time), or one at
a time with ``ordered=True``. Memory holds one chunk and the batches in flight, whatever
the source's size.

With ``resume=True`` a checkpoint (`LoadCheckpoint`) records the finished prefix of the
source (`done`: batches finish out of order; every row before it is written, skipped,
replaced or rejected) and, before a chunk's batches go out, where the rows sent end
(`sent`). A load run again with the same source and options skips the prefix and sends the
rest, the rows between `done` and `sent` as rows that may be there already (`_sending`:
found there, they count as written). The counts, the service's refusals and the run ID of
the IDs made for the load (`_row_ids`) are kept too, so a resumed load reports every
rejected row of the source. Checkpoints (`_core._checkpoint`) live in ``<cache>/loads/``
(``$FRAMEPORT_CACHE_DIR``, else the user's cache folder), named by a hash of the endpoint,
project, table, source and options; a finished load removes its own.

With ``atomic=True`` the same loop stages the rows in one transaction instead
(`_atomic.AtomicLoad` is its sender), its own or a person's (`transaction`); with
``dry_run=True`` its sender sends nothing.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from ..._core._adaptive import AUTO, AdaptiveConcurrency, Auto
from ..._core._checkpoint import checkpoint_path, read_checkpoint, save_checkpoint
from ..._core._config import default_cache_dir
from ..._core._progress import progress_bar
from ..._core._sync import warn_caller
from ..._exceptions import FrameportWarning, LoadError, RowsRejectedError
from ..._schema import ColumnRules
from ..read import column_models
from ._atomic import AtomicLoad
from ._ordered import DRY_RUN, Sender, Sending, SendLoop
from ._prepare import (
    PreparedChunk,
    RowPreparer,
    rejected_frame,
    rejected_value_name,
    rejections,
)
from ._report import REJECTED_COLUMNS, WriteReport
from ._row_ids import ID_COLUMN, IdFrom, id_keys
from ._sending import (
    MAX_ROWS_PER_REQUEST,
    OnConflict,
    RowSender,
    check_on_conflict,
    cut_requests,
)
from ._sources import Source, open_source
from ._text_files import TextReading, null_strings
from ._transaction import StagedTransaction

if TYPE_CHECKING:
    from ..._core import Requester
    from .._location import TableLocation

DEFAULT_ON_CONFLICT: OnConflict = "skip"
_VERBS = {"fail": "inserting", "replace": "upserting", "skip": "loading"}
_SAVE_INTERVAL = 0.2  # seconds between checkpoint saves of the finished prefix
RERUN_ADVICE = (
    "give id_from= the column whose values are the IDs, or id_hash= the key columns hashed "
    "into them (e.g. id_hash=['email']), and a rerun skips the rows written already"
)


_FILES = ("parquet|", "csv|", "json|")  # the identities of files, the same in every version


@dataclass
class LoadCheckpoint:
    """How far a resumable load came (see the module docstring)."""

    run_id: str
    source: str = ""
    """The source's identity (`_sources.Source.identity`): a checkpoint serves only its own
    source."""
    done: int = 0
    sent: int = 0
    written: int = 0
    skipped: int = 0
    replaced: int = 0
    rejected: int = 0
    batches: int = 0
    refused: list[tuple[int, str, str]] = field(default_factory=list)
    """The rows the service refused: (place in the source, column, message)."""


def load_checkpoint(path: Path, source: str) -> LoadCheckpoint | None:
    """The checkpoint at `path` of the source named `source`, or None when there is none.
    One of another source (or of a frame, from a version that kept no identity) is not
    used: the load starts from the start, and its checkpoint replaces that one."""
    data = read_checkpoint(path, "delete it to load from the start")
    if data is None:
        return None
    checkpoint = LoadCheckpoint(**data)
    if checkpoint.source != source and (checkpoint.source or not source.startswith(_FILES)):
        return None
    return checkpoint


@dataclass(frozen=True)
class LoadOptions:
    """How a load writes (`Table.load` documents each)."""

    on_conflict: OnConflict = DEFAULT_ON_CONFLICT
    id_from: IdFrom = None  # a column of IDs (a list: the spelling of 0.1.0 of id_hash)
    id_hash: str | Sequence[str] | None = None  # the key columns hashed into the IDs
    atomic: bool = False
    resume: bool = False
    dry_run: bool = False
    ordered: bool = False
    batch_size: int = MAX_ROWS_PER_REQUEST
    concurrency: int | Auto = AUTO
    progress: bool | None = None
    keep_ids: bool = False  # insert / upsert: every row's ID; a rejected row is an error
    transaction: StagedTransaction | None = None  # with atomic: a person's, left uncommitted
    null_values: Sequence[str] | None = None

    def check(self) -> None:
        try:
            check_on_conflict(self.on_conflict)
        except ValueError as exc:
            raise LoadError(str(exc)) from None
        if not _whole(self.batch_size):
            raise LoadError(f"batch_size must be a whole number >= 1 (got {self.batch_size!r})")
        if self.concurrency != AUTO and not _whole(self.concurrency):
            raise LoadError(
                f'concurrency must be "auto" or a whole number >= 1 (got {self.concurrency!r})'
            )
        id_from, id_hash = self.id_from, self.id_hash
        if id_from is not None and id_hash is not None:
            raise LoadError(
                "give one of id_from= or id_hash=: id_from= names the column whose values are "
                "the IDs, id_hash= the key columns hashed into the IDs"
            )
        if not (id_from is None or isinstance(id_from, str) or _names(id_from)):
            raise LoadError(
                "id_from takes the name of the column whose values are the IDs (for IDs "
                f"hashed from key columns, id_hash= takes their names); got {id_from!r}"
            )
        if not (id_hash is None or isinstance(id_hash, str) or _names(id_hash)):
            raise LoadError(
                "id_hash takes the names of the key columns hashed into the IDs, e.g. "
                f"id_hash=['email']; got {id_hash!r}"
            )
        if id_from is not None and not isinstance(id_from, str):
            warn_caller(
                f"id_from={list(id_from)!r} hashes the columns into the IDs; that is now "
                f"spelled id_hash={list(id_from)!r} (id_from= takes one column whose values "
                "are the IDs), and the list spelling goes in the next release",
                FutureWarning,
            )
        if self.atomic and self.resume:
            raise LoadError(
                "atomic=True writes all rows or none, so there is nothing to resume: drop "
                "resume=True"
            )

    @property
    def keys(self) -> IdFrom:
        """Where the IDs come from, as `RowPreparer` takes it: a column of IDs (a name), or
        the key columns hashed into them (a list)."""
        if self.id_hash is not None:
            return [self.id_hash] if isinstance(self.id_hash, str) else list(self.id_hash)
        return self.id_from

    def identity(self) -> str:
        nulls = null_strings(self.null_values)
        named = "" if nulls is None else f"|{nulls!r}"
        return f"{self.on_conflict}|{','.join(id_keys(self.keys))}|{self.batch_size}{named}"


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _names(value: object) -> bool:
    return isinstance(value, Sequence) and bool(value) and all(isinstance(v, str) for v in value)


@dataclass
class LoadResult:
    report: WriteReport
    ids: list[str | None] | None  # with keep_ids: each source row's ID (None: rejected)


async def load_rows(
    requester: Requester, location: TableLocation, source: object, options: LoadOptions
) -> LoadResult:
    """Write `source` into the table at `location` (see the module docstring)."""
    options.check()
    started = time.perf_counter()
    models = await column_models(requester, location)
    rules = None
    if models is not None:
        rules = {
            str(m["key"]): ColumnRules.from_model(m)
            for m in models
            if m.get("status", "available") == "available"
        }
    reading = TextReading(
        columns=[*(rules or {}), ID_COLUMN, *id_keys(options.keys)],
        json_text=[
            ID_COLUMN,
            *(key for key, rule in (rules or {}).items() if rule.kind in ("string", "datetime")),
        ],
        null_values=null_strings(options.null_values),
    )
    opened = open_source(source, reading=reading)
    stored_at = None
    checkpoint = LoadCheckpoint(run_id=secrets.token_hex(8))
    if options.resume and not options.dry_run:
        identity = opened.identity()
        if identity is None:
            raise LoadError(
                f"resume=True cannot tell {opened.description} from another stream of its "
                "columns before reading it: load a frame or a file (e.g. the stream collected "
                "with .arrow() or .collect()), or give id_from= or id_hash= and run again "
                "without resume (on_conflict='skip' leaves the rows already written as they are)"
            )
        key = [requester.endpoint, requester.project, str(location), identity, options.identity()]
        stored_at = checkpoint_path(default_cache_dir() / "loads", "\n".join(key))
        checkpoint = load_checkpoint(stored_at, identity) or checkpoint
        checkpoint.source = identity
    preparer = RowPreparer(rules, options.keys, checkpoint.run_id)
    preparer.check_columns(opened.schema.names)
    atomic = options.atomic and not options.dry_run
    units = 1 if options.ordered or atomic else options.concurrency
    row_sender = RowSender(requester, location, options.on_conflict, units)
    sender: Sender = row_sender
    if atomic:
        sender = run = AtomicLoad(
            requester, location, options.on_conflict, opened.rows, options.transaction
        )
    elif options.dry_run:
        sender = DRY_RUN
    stream = _Stream(options, checkpoint, stored_at, str(location))
    result = await stream.run(opened, preparer, sender, row_sender.concurrency)
    if atomic:
        await run.finish(result.report)
    result.report.seconds = time.perf_counter() - started
    result.report.dry_run = options.dry_run
    result.report.null_values = opened.null_values
    result.report.rerun_safe = bool(options.keys) or ID_COLUMN in opened.schema.names
    if not (result.report.rerun_safe or options.dry_run or options.keep_ids):
        warn_caller(
            f"this load of {location} made new IDs for its rows, so running it again writes "
            f"these rows again: {RERUN_ADVICE}",
            FrameportWarning,
        )
    return result


def rows_rejected(report: WriteReport) -> RowsRejectedError:
    """The error of a write that had to be whole (`insert`, `upsert`) with rejected rows."""
    rejected = report.rejected
    first = rejected.iloc[0]
    return RowsRejectedError(
        f"{len(rejected):,} rows were rejected, e.g. row {first['row']}: column "
        f"{first['column']!r}, {first['message']}; the error's report.rejected lists them. "
        "Fix them, or use table.load(...), which writes the other rows and reports these",
        report=report,
    )


def _keep(rejected: list[pd.DataFrame], chunk: PreparedChunk) -> None:
    if len(chunk.rejected):
        rejected.append(chunk.rejected)


def _note_ids(ids: list[str | None] | None, chunk: PreparedChunk, count: int) -> None:
    if ids is None:
        return
    ids.extend([None] * count)
    for row, position in zip(chunk.rows, chunk.positions, strict=True):
        ids[int(position)] = str(row[ID_COLUMN])


def _rejected(parts: list[pd.DataFrame]) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame(columns=list(REJECTED_COLUMNS))
    return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True)
class _Part:
    """Where a batch's rows are in the source, and where its part of the source ends."""

    positions: Sequence[int]
    end: int


class _Stream:
    """A load's chunks prepared and sent through the one loop (`_ordered.SendLoop`), the
    finished prefix kept in the checkpoint (when `stored_at` is set)."""

    def __init__(
        self,
        options: LoadOptions,
        checkpoint: LoadCheckpoint,
        stored_at: Path | None,
        description: str,
    ) -> None:
        self._options = options
        self._checkpoint = checkpoint
        self._stored_at = stored_at
        self._resumed_sent = checkpoint.sent
        self._rejected: list[pd.DataFrame] = []
        self._report = WriteReport(
            written=checkpoint.written,
            skipped=checkpoint.skipped,
            replaced=checkpoint.replaced,
            batches=checkpoint.batches,
        )
        self._saved_at = 0.0
        self._description = description
        self._bar: Any = None

    async def run(
        self,
        opened: Source,
        preparer: RowPreparer,
        sender: Sender,
        concurrency: AdaptiveConcurrency,
    ) -> LoadResult:
        options = self._options
        ids: list[str | None] | None = [] if options.keep_ids else None
        done = self._checkpoint.done
        verb = _VERBS[options.on_conflict] if options.keep_ids else "loading"
        self._bar = bar = progress_bar(
            total=opened.rows,
            unit="rows",
            desc=f"{verb} {self._description}",
            enabled=options.progress,
        )
        bar.update(done)
        with bar:
            async with SendLoop(sender, concurrency, self._finished) as loop:
                position = 0
                for batch in opened.batches():
                    first, end = position, position + batch.num_rows
                    position = end
                    if first < done:
                        self._rejected_before(preparer, batch.slice(0, done - first), first)
                        if end <= done:
                            continue
                        batch, first = batch.slice(done - first), done
                    worked = time.perf_counter()
                    chunk = preparer.prepare(batch, first)
                    _keep(self._rejected, chunk)
                    if options.keep_ids and len(chunk.rejected):
                        self._report.rejected = _rejected(self._rejected)
                        raise rows_rejected(self._report)
                    bar.update(len(chunk.rejected))
                    _note_ids(ids, chunk, batch.num_rows)
                    if options.atomic and self._rejected:
                        continue  # rolled back at the end: nothing more is staged
                    batches = self._batches(chunk, end)
                    if self._stored_at is not None and end > self._checkpoint.sent:
                        self._checkpoint.sent = end
                        self._save(force=True)
                    await loop.send(batches, time.perf_counter() - worked)
                await loop.drain()
        self._report.rejected = _rejected(self._rejected)
        if self._stored_at is not None:
            self._stored_at.unlink(missing_ok=True)
        return LoadResult(self._report, ids)

    def _rejected_before(self, preparer: RowPreparer, part: pa.RecordBatch, first: int) -> None:
        """Report the rejected rows of `part`, which a stopped run of this load finished: the
        rules' rejections found again, and the service's refusals the checkpoint keeps."""
        _keep(self._rejected, preparer.prepare(part, first))
        within = {
            r[0]: r for r in self._checkpoint.refused if first <= r[0] < first + part.num_rows
        }
        refused = [within[place] for place in sorted(within)]
        if refused:
            places, columns, messages = zip(*refused, strict=True)
            rows = [place - first for place in places]
            table = rejections(rows, columns, "service", messages)
            self._rejected.append(rejected_frame(table, part, first))

    def _batches(self, chunk: PreparedChunk, end: int) -> list[Sending[_Part]]:
        """The chunk's rows in batches of at most `batch_size` rows and of a body the
        service takes (`cut_requests`); each batch's part of the source ends where the next
        batch's first row is (the last at the chunk's end), so rows rejected between count
        as done with it."""
        rows, positions = chunk.rows, chunk.positions.tolist()
        batches = []
        for start, part in cut_requests(rows, self._options.batch_size):
            following = start + len(part)
            part_end = positions[following] if following < len(rows) else end
            places = positions[start:following]
            maybe_written = bool(places) and places[0] < self._resumed_sent
            batches.append(Sending(part, maybe_written, _Part(places, part_end)))
        return batches

    def _finished(self, item: Sending[_Part]) -> None:
        """Move the finished prefix past `item`: count it, note the rows refused."""
        outcome, part = item.outcome, item.mark
        assert outcome is not None
        checkpoint, report = self._checkpoint, self._report
        refused = [
            {
                "row": int(part.positions[r.index]),
                "column": r.column or "",
                "rule": "service",
                "message": r.message,
                **{rejected_value_name(k): v for k, v in item.rows.rows[r.index].items()},
            }
            for r in outcome.refused
        ]
        checkpoint.refused += [(r["row"], r["column"], r["message"]) for r in refused]
        if refused:
            self._rejected.append(pd.DataFrame(refused))
        self._bar.update(len(item.rows))
        report.written += outcome.written
        report.skipped += outcome.skipped
        report.replaced += outcome.replaced
        report.retries += outcome.retries
        report.batches += 1 if item.rows else 0
        checkpoint.done = part.end
        checkpoint.written, checkpoint.skipped = report.written, report.skipped
        checkpoint.replaced, checkpoint.batches = report.replaced, report.batches
        self._save()

    def _save(self, *, force: bool = False) -> None:
        if self._stored_at is None:
            return
        now = time.monotonic()
        if force or now - self._saved_at >= _SAVE_INTERVAL:
            save_checkpoint(self._stored_at, asdict(self._checkpoint))
            self._saved_at = now
