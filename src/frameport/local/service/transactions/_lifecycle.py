"""Transactions (service interface, "Transactions"): who sees which, the states a transaction
goes through, what may be staged into it and when.

A transaction is `pending` while operations are staged, `committing` while its commit runs,
then `committed` or `failed` (a rollback also writes `failed`). It expires `ttl` seconds after
it was made: from then on every staging, commit and rollback is 410 `transaction_expired`,
and the next request that makes, stages into, commits, rolls back or deletes a transaction
purges: it closes the expired pending ones (`failed`, their staged data deleted) and deletes
those expired `EXPIRED_KEPT` seconds ago. Users see and use only their own transactions; API
keys see all of them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from enum import Enum
from typing import Any

from ...store._store import Store
from ...store._transactions import (
    TransactionRecord,
    append_operations,
    insert_transaction,
    load_transaction,
    purge_expired,
)
from ...wire._errors import ServiceError
from ...wire._params import unique_id
from ...wire._timefmt import from_timestamp, stamps
from .._clock import ServiceClock
from ..accounts._caller import Caller
from ._staged_log import StagedLogs

MIN_TTL, MAX_TTL, DEFAULT_TTL = 60, 3600, 300
#: Operations one transaction may hold; a bulk operation counts once.
MAX_OPERATIONS = 100
#: JSON bytes of staged operations one transaction may hold (`max_transaction_bytes`).
DEFAULT_MAX_TRANSACTION_BYTES = 256 * 1024 * 1024
#: Seconds an expired transaction's record is kept (closed, without its data) and answers
#: 410 `transaction_expired`, before it is deleted.
EXPIRED_KEPT = 3600
SINGLE_ACTIONS = ("create", "update", "upsert", "delete", "increment", "decrement")
BULK_ACTIONS = ("bulkCreate", "bulkUpdate", "bulkUpsert", "bulkDelete")
ACTIONS = SINGLE_ACTIONS + BULK_ACTIONS


class Stager(Enum):
    """Who stages an operation: each answers a missing, closed or expired transaction in
    its own way."""

    SINGLE_ROUTE = "single"  # single-row create, update, upsert, delete
    BULK_ROUTE = "bulk"  # bulk routes
    COUNTER_ROUTE = "counter"  # increment and decrement
    ENDPOINT = "endpoint"  # the operations endpoint


def transaction_model(record: TransactionRecord) -> dict[str, Any]:
    return {
        **stamps(record.id, record.created_at, record.updated_at),
        "status": record.status,
        "operations": record.operations,
        "expiresAt": record.expires_at,
    }


def require_member(caller: Caller) -> None:
    """Transactions are for API keys and signed-in users."""
    if caller.role == "guests":
        raise ServiceError(
            "user_unauthorized",
            "Transactions are for API keys and signed-in users: sign in or send an API key.",
        )


def create_transaction(
    conn: sqlite3.Connection, caller: Caller, ttl: int, clock: ServiceClock
) -> TransactionRecord:
    transaction_id = unique_id()
    owner = None if caller.is_key else caller.user_id
    now = clock.now()  # one reading, so the lifetime is exactly `ttl`
    insert_transaction(conn, transaction_id, owner, from_timestamp(now), from_timestamp(now + ttl))
    record = load_transaction(conn, transaction_id)
    assert record is not None  # inserted just above, in the same SQLite transaction
    return record


def owner_clause(caller: Caller) -> list[tuple[str, list[Any]]]:
    """The SQL condition on `transactions` a caller's list sees."""
    return [] if caller.is_key else [("owner = ?", [caller.user_id])]


def not_found() -> ServiceError:
    return ServiceError(
        "transaction_not_found", "Transaction with the requested ID could not be found."
    )


def find_transaction(
    conn: sqlite3.Connection, caller: Caller, transaction_id: str
) -> TransactionRecord | None:
    """The transaction if it exists and the caller may see it."""
    record = load_transaction(conn, transaction_id)
    if record is None or not (caller.is_key or record.owner == caller.user_id):
        return None
    return record


def transaction_or_404(
    conn: sqlite3.Connection, caller: Caller, transaction_id: str
) -> TransactionRecord:
    record = find_transaction(conn, caller, transaction_id)
    if record is None:
        raise not_found()
    return record


def expired(record: TransactionRecord, clock: ServiceClock) -> ServiceError | None:
    """410 `transaction_expired` once the transaction's time is up."""
    if record.expires_at > clock.text():
        return None
    return ServiceError(
        "transaction_expired", "Transaction has expired. Create a new transaction and retry."
    )


def not_ready() -> ServiceError:
    return ServiceError(
        "transaction_not_ready",
        "Transaction is not pending: it was committed, rolled back or failed. Create a new "
        "transaction.",
    )


def _invalid_or_closed() -> ServiceError:
    return ServiceError("general_bad_request", "Invalid or non-pending transaction")


def open_for_staging(
    conn: sqlite3.Connection,
    caller: Caller,
    transaction_id: str,
    stager: Stager,
    clock: ServiceClock,
) -> TransactionRecord:
    """The pending transaction operations are staged into, with each stager's answers. An
    expired one is 410 for every stager (the bulk routes included: its data is purged)."""
    require_member(caller)
    record = find_transaction(conn, caller, transaction_id)
    lenient = stager in (Stager.BULK_ROUTE, Stager.COUNTER_ROUTE)
    if record is None:
        raise _invalid_or_closed() if lenient else not_found()
    error = expired(record, clock)
    if error is not None:
        raise error
    if record.status != "pending":
        raise not_ready() if stager is Stager.SINGLE_ROUTE else _invalid_or_closed()
    return record


def purge(store: Store, clock: ServiceClock, logs: StagedLogs) -> None:
    """Close the expired pending transactions and delete the long expired (module
    docstring), in a SQLite transaction of its own: it holds whatever the request then
    answers."""
    now = clock.now()
    with store.write() as conn:
        purged = purge_expired(conn, from_timestamp(now), from_timestamp(now - EXPIRED_KEPT))
    logs.drop(purged)


def stage(
    conn: sqlite3.Connection,
    record: TransactionRecord,
    operations: Sequence[str],
    clock: ServiceClock,
    *,
    staged_bytes: int,
    max_bytes: int,
) -> None:
    """Append operations (each `encoded`) in order: 400 `transaction_limit_exceeded` past
    the maximum operations, or past `max_bytes` with the `staged_bytes` already held."""
    if record.operations + len(operations) > MAX_OPERATIONS:
        raise ServiceError(
            "transaction_limit_exceeded",
            f"A transaction holds at most {MAX_OPERATIONS} operations (a bulk operation counts "
            f"once); it has {record.operations}. Commit it and stage the rest in another.",
        )
    adding = sum(len(text) for text in operations)
    if staged_bytes + adding > max_bytes:
        raise ServiceError(
            "transaction_limit_exceeded",
            f"A transaction holds at most {max_bytes:,} bytes of staged data; it holds "
            f"{staged_bytes:,} and this adds {adding:,}. Commit it and stage the rest in "
            "another (the local service's max_transaction_bytes sets the limit).",
        )
    append_operations(conn, record, list(operations), clock.text())
