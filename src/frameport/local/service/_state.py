"""The configuration and shared state of one running local service."""

from __future__ import annotations

import os
import secrets
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..store._store import Store
from ._clock import ServiceClock
from ._ratelimit import RateLimiter
from .realtime._hub import RealtimeHub, RealtimeLimits
from .transactions._lifecycle import DEFAULT_MAX_TRANSACTION_BYTES
from .transactions._staged_log import StagedLogs

DEFAULT_MAX_FILE_SIZE = 5 * 1024**3
#: 16 MiB: a bulk write of 100 rows of 160 KB each still fits.
DEFAULT_MAX_BODY_SIZE = 16 * 1024 * 1024


@dataclass
class ServiceConfig:
    """What `frameport serve` and `LocalService` are started with."""

    data_dir: Path
    project: str = "demo"
    key: str | None = None
    rate_limits: bool = True
    rate_limit_overrides: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    faults: str | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    #: JSON bytes of staged operations one transaction may hold.
    max_transaction_bytes: int = DEFAULT_MAX_TRANSACTION_BYTES
    #: Bytes of parameters one request may send (a JSON body, form fields); more is 413.
    max_body_size: int = DEFAULT_MAX_BODY_SIZE
    latency: str | float | None = None  # milliseconds, "MS:JITTER_MS" (see `_distance`)
    bandwidth: float | None = None  # megabits per second per connection
    #: Compress answers as the service does (`_compression`); off separates the costs.
    compression: bool = True
    #: SQLite's `synchronous`: FULL survives a power cut; NORMAL only a process crash.
    sqlite_synchronous: str = "FULL"
    #: Open connections served at once (None: from the descriptor limit, see `_connections`).
    max_connections: int | None = None
    #: Seconds a request head may take to arrive; seconds a body may take beyond one per
    #: 500 bytes received (see `_connections`).
    header_timeout: float = 10.0
    body_timeout: float = 20.0
    #: Caps on realtime sockets, their subscriptions and their unsent frames (`realtime._hub`).
    realtime: RealtimeLimits = field(default_factory=RealtimeLimits)


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class ServiceState:
    """Everything the request handlers share: config, store, limiter, key, locks.

    Made by `open_state` (`_open`), which then settles what a crash left.
    """

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        config.data_dir.mkdir(parents=True, exist_ok=True)
        self.files_dir = config.data_dir / "files"
        self.files_dir.mkdir(exist_ok=True)
        self.functions_dir = config.data_dir / "functions"
        self.store = Store(config.data_dir / "service.sqlite3", config.sqlite_synchronous)
        self.limiter = RateLimiter()
        self.realtime = RealtimeHub()
        self.key, self.key_generated = self._persisted(
            "api_key", config.key, lambda: f"standard_{secrets.token_hex(32)}"
        )
        """The API key; `key_generated` says whether this start made it (neither given nor kept)."""
        self.jwt_secret, _ = self._persisted("jwt_secret", None, lambda: secrets.token_hex(32))
        self.clock = ServiceClock()
        self.staged_logs = StagedLogs()
        """What each pending transaction has staged, decoded once (`transactions._staged_log`)."""
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.rows_served = 0  # rows sent by row listings, so tests can see what a read pulled
        self.rows_served_by_table: Counter[tuple[str, str]] = Counter()
        """The same, by (database ID, table ID): a read's count, untouched by other reads."""
        self.page_builders = threading.BoundedSemaphore(usable_cores())
        """Row pages built at once: one per core. Building a page holds the GIL between
        SQLite steps, so more at once only take turns at it, each page slower."""

    def _persisted(self, name: str, given: str | None, make: Callable[[], str]) -> tuple[str, bool]:
        """The value kept under `name` (`given` replaces it; `make` makes the first one), and
        whether `make` made it now."""
        with self.store.write() as conn:
            row = conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
            if given is None and row is not None:
                return str(row[0]), False
            value = given if given is not None else make()
            conn.execute(
                "INSERT INTO meta (name, value) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                (name, value),
            )
            return str(value), given is None

    def lock(self, name: str) -> threading.Lock:
        """A named lock (e.g. one per uploading file), created on first use."""
        with self._locks_guard:
            return self._locks.setdefault(name, threading.Lock())

    def close(self) -> None:
        self.store.close()
