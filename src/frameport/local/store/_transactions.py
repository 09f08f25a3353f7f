"""Transactions and their staged operations in the service's SQLite file.

A transaction is one row of `transactions`; its operations are rows of
`transaction_operations`, numbered in staging order, each the JSON of one operation of the
operations endpoint's body with the instant it was staged.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._query import Field, Schema
from ._sql import Source

_COLUMNS = "seq, id, status, operations, owner, expires_at, created_at, updated_at"


@dataclass(frozen=True)
class TransactionRecord:
    seq: int
    id: str
    status: str
    operations: int
    owner: str | None
    expires_at: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class StagedOperation:
    """One staged operation: the operations endpoint's form and when it was staged."""

    position: int
    operation: Mapping[str, Any]
    staged_at: str


TRANSACTION_SOURCE = Source("transactions", "seq", "id")
TRANSACTION_SCHEMA = Schema(
    {
        "$id": Field("$id", "id", "id", "id"),
        "$sequence": Field("$sequence", "sequence", "seq", "seq"),
        "$createdAt": Field("$createdAt", "datetime", "created_at", "created_at"),
        "$updatedAt": Field("$updatedAt", "datetime", "updated_at", "updated_at"),
        "status": Field("status", "string", "status", "status"),
        "expiresAt": Field("expiresAt", "datetime", "expires_at", "expires_at"),
    }
)


def insert_transaction(
    conn: sqlite3.Connection, transaction_id: str, owner: str | None, now: str, expires_at: str
) -> None:
    conn.execute(
        "INSERT INTO transactions (id, status, operations, owner, expires_at, created_at, "
        "updated_at) VALUES (?, 'pending', 0, ?, ?, ?, ?)",
        (transaction_id, owner, expires_at, now, now),
    )


def load_transaction(conn: sqlite3.Connection, transaction_id: str) -> TransactionRecord | None:
    found = conn.execute(
        f"SELECT {_COLUMNS} FROM transactions WHERE id = ?", (transaction_id,)
    ).fetchone()
    return None if found is None else TransactionRecord(*found)


def set_status(conn: sqlite3.Connection, transaction_id: str, status: str, now: str) -> None:
    conn.execute(
        "UPDATE transactions SET status = ?, updated_at = ? WHERE id = ?",
        (status, now, transaction_id),
    )


def encoded(operation: Mapping[str, Any]) -> str:
    """An operation as it is stored: ASCII JSON, so its length is its size in bytes."""
    return json.dumps(operation)


def append_operations(
    conn: sqlite3.Connection, record: TransactionRecord, operations: list[str], now: str
) -> None:
    """Stage `operations` (each `encoded`) after the ones already staged; `operations`
    rises by their count."""
    conn.executemany(
        "INSERT INTO transaction_operations (transaction_seq, position, operation, staged_at) "
        "VALUES (?, ?, ?, ?)",
        [
            (record.seq, record.operations + offset, text, now)
            for offset, text in enumerate(operations)
        ],
    )
    conn.execute(
        "UPDATE transactions SET operations = operations + ?, updated_at = ? WHERE seq = ?",
        (len(operations), now, record.seq),
    )


def staged_operations(conn: sqlite3.Connection, record: TransactionRecord) -> list[StagedOperation]:
    """The transaction's operations in staging order."""
    rows = conn.execute(
        "SELECT position, operation, staged_at FROM transaction_operations "
        "WHERE transaction_seq = ? ORDER BY position",
        (record.seq,),
    )
    return [StagedOperation(position, json.loads(text), at) for position, text, at in rows]


def staged_size(conn: sqlite3.Connection, record: TransactionRecord) -> int:
    """The bytes of the transaction's staged operations."""
    found = conn.execute(
        "SELECT COALESCE(SUM(length(CAST(operation AS BLOB))), 0) FROM transaction_operations "
        "WHERE transaction_seq = ?",
        (record.seq,),
    ).fetchone()
    return int(found[0])


def drop_operations(conn: sqlite3.Connection, record: TransactionRecord) -> None:
    """Delete the staged log (after a commit, a rollback or a failure)."""
    conn.execute("DELETE FROM transaction_operations WHERE transaction_seq = ?", (record.seq,))


def delete_transaction(conn: sqlite3.Connection, record: TransactionRecord) -> None:
    drop_operations(conn, record)
    conn.execute("DELETE FROM transactions WHERE seq = ?", (record.seq,))


def purge_expired(conn: sqlite3.Connection, now: str, forgotten_before: str) -> list[int]:
    """Close the transactions pending past their expiry (`failed`, staged log deleted) and
    delete those that expired before `forgotten_before` (a commit under way is left alone);
    the `seq` of every transaction closed or deleted."""
    closed = [
        seq
        for (seq,) in conn.execute(
            "SELECT seq FROM transactions WHERE status = 'pending' AND expires_at <= ?", (now,)
        )
    ]
    forgotten = [
        seq
        for (seq,) in conn.execute(
            "SELECT seq FROM transactions WHERE status != 'committing' AND expires_at <= ?",
            (forgotten_before,),
        )
    ]
    conn.executemany(
        "UPDATE transactions SET status = 'failed', operations = 0, updated_at = ? WHERE seq = ?",
        [(now, seq) for seq in closed],
    )
    conn.executemany(
        "DELETE FROM transaction_operations WHERE transaction_seq = ?",
        [(seq,) for seq in {*closed, *forgotten}],
    )
    conn.executemany("DELETE FROM transactions WHERE seq = ?", [(seq,) for seq in forgotten])
    return [*closed, *forgotten]


def fail_interrupted_commits(conn: sqlite3.Connection, now: str) -> int:
    """Commits a crash interrupted applied nothing (one SQLite transaction): they failed."""
    cursor = conn.execute(
        "UPDATE transactions SET status = 'failed', updated_at = ? WHERE status = 'committing'",
        (now,),
    )
    conn.execute(
        "DELETE FROM transaction_operations WHERE transaction_seq IN "
        "(SELECT seq FROM transactions WHERE status = 'failed')"
    )
    return cursor.rowcount
