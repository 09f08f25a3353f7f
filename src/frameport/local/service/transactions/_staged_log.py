"""What each pending transaction has staged, decoded once and kept (service interface,
"Transactions"): its size and the staged state of each table it touches.

Reads with `transactionId` and staging calls use the kept `StagedLog` instead of decoding
every staged operation again. A log is read from SQLite when none is kept or when the
transaction's `operations` count shows it is not the latest (a service restart, a staging
whose SQLite transaction was rolled back, another thread's newer log); a staging replaces
it once its own SQLite transaction is committed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...store._schema_store import load_table
from ...store._transactions import TransactionRecord, staged_operations, staged_size
from ._view import StagedTable, committed_rows, staged_table

#: A table as staged operations name it: (database ID, table ID).
TableKey = tuple[str, str]


@dataclass(frozen=True)
class StagedLog:
    """The transaction's staged log as of `operations` operations: `size` bytes of JSON and
    the staged state of each table. Shared by concurrent reads: never changed."""

    operations: int
    size: int
    tables: Mapping[TableKey, StagedTable]

    def table(self, key: TableKey) -> StagedTable:
        """The staged state of one table (empty when nothing of it is staged)."""
        found = self.tables.get(key)
        return StagedTable() if found is None else found


def _read(conn: sqlite3.Connection, record: TransactionRecord) -> StagedLog:
    """The log decoded from SQLite."""
    operations = staged_operations(conn, record)
    keys = dict.fromkeys(
        (str(staged.operation.get("databaseId")), str(staged.operation.get("tableId")))
        for staged in operations
    )
    tables: dict[TableKey, StagedTable] = {}
    for database_id, table_id in keys:
        table = load_table(conn, database_id, table_id)
        if table is not None:
            committed = committed_rows(conn, table)
            tables[database_id, table_id] = staged_table(
                operations, database_id, table_id, committed
            )
    return StagedLog(len(operations), staged_size(conn, record), tables)


class StagedLogs:
    """The kept `StagedLog` of each transaction, by its `seq`; safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # one log read from SQLite at a time
        self._logs: dict[int, StagedLog] = {}

    def _kept(self, record: TransactionRecord) -> StagedLog | None:
        with self._lock:
            kept = self._logs.get(record.seq)
        return kept if kept is not None and kept.operations == record.operations else None

    def of(self, conn: sqlite3.Connection, record: TransactionRecord) -> StagedLog:
        """The transaction's log as `record` (read on `conn`) counts its operations. Reads
        that find none kept wait for the one reading it rather than each decoding it."""
        kept = self._kept(record)
        if kept is not None:
            return kept
        with self._reading:
            kept = self._kept(record)
            if kept is not None:
                return kept
            log = _read(conn, record)
        with self._lock:
            newer = self._logs.get(record.seq)
            if newer is None or newer.operations <= log.operations:
                self._logs[record.seq] = log
        return log

    def replace(self, seq: int, before: StagedLog, after: StagedLog) -> None:
        """Keep `after` (a committed staging's result) unless `before` is no longer the kept
        log (another one kept meanwhile is checked by its count when used)."""
        with self._lock:
            if self._logs.get(seq) is before:
                self._logs[seq] = after

    def drop(self, seqs: Iterable[int]) -> None:
        """Forget the logs of transactions no longer pending."""
        with self._lock:
            for seq in seqs:
                self._logs.pop(seq, None)
