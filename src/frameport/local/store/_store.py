"""The local service's SQLite file: thread-local connections, one serialised writer.

Each worker thread reads and writes on a connection of its own, closed when the thread ends
(the server's worker threads come and go as they idle), so connections and their file
descriptors do not pile up.

The store creates the service's metadata tables (`_metadata_tables`) when it opens and
registers the text functions of `_collation` on every connection.

>>> store = Store(Path(tmp) / "service.sqlite3")
>>> with store.write() as conn:
...     conn.execute("INSERT INTO ...", params)
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._collation import register_text_functions
from ._metadata_tables import METADATA_TABLES

SYNCHRONOUS_SETTINGS = ("OFF", "NORMAL", "FULL", "EXTRA")


class Store:
    """One SQLite database in WAL mode, shared by the request threads of one service.

    `synchronous` is SQLite's setting: FULL (the default) is durable through a power cut;
    NORMAL is faster and loses the last commits then, as the durability benchmark shows.
    """

    def __init__(self, path: Path, synchronous: str = "FULL") -> None:
        if synchronous not in SYNCHRONOUS_SETTINGS:
            raise ValueError(
                f"synchronous must be one of {SYNCHRONOUS_SETTINGS}, not {synchronous!r}"
            )
        self.path = path
        self.synchronous = synchronous
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        with self.write() as conn:
            for ddl in METADATA_TABLES:
                _run_script(conn, ddl)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        conn.execute("PRAGMA journal_mode=WAL")
        # FULL: each commit is fsynced to the WAL before it is acknowledged, so acknowledged
        # writes survive a power cut, not only a crash of the process (NORMAL's promise).
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA cache_size=-65536")
        register_text_functions(conn)
        with self._all_lock:
            self._all.append(conn)
        return conn

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use, closed when the thread ends)."""
        held: _ThreadConnection | None = getattr(self._local, "held", None)
        if held is None:
            held = _ThreadConnection(self._connect())
            self._local.held = held
            weakref.finalize(held, self._close_one, held.conn)
        return held.conn

    def _close_one(self, conn: sqlite3.Connection) -> None:
        with self._all_lock:
            if conn in self._all:
                self._all.remove(conn)
                conn.close()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads; WAL lets reads run beside the writer."""
        conn = self.connection()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one serialised write transaction (rolled back on error)."""
        with self._write_lock:
            conn = self.connection()
            if conn.in_transaction:
                yield conn
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()


class _ThreadConnection:
    """A thread's connection, held by the thread's local storage only: when the thread ends,
    this is dropped and its finalizer closes the connection."""

    __slots__ = ("__weakref__", "conn")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn


def _run_script(conn: sqlite3.Connection, ddl: str) -> None:
    for statement in ddl.split(";"):
        if statement.strip():
            conn.execute(statement)
