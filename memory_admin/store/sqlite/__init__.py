"""The SQLite backend: the embedded default.

One file of its own (never shared with the dashboard's tables) and, beside it, the event
log's file (:func:`events_path`, attached to every connection as ``events``: a batch of
events commits there, so the memory file's readers keep their page caches), WAL, a busy timeout,
``BEGIN IMMEDIATE`` for every write, an FTS5 external-content index over terms Python
computes (:mod:`.terms`, registered on every connection), and a
``PRAGMA user_version`` migration ladder from 1 (:mod:`.schema`). Search lives in
:mod:`.search` and the primitives in :mod:`.session`; this module holds the connections,
their transactions per mode and the file's migrations.

Deleted and erased content does not survive in either file or their WALs:
``secure_delete`` zeroes freed space, the index is merged so no old segment keeps a
deleted token, and the WALs are checkpointed and truncated.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from memory_admin.errors import MemoryBusyError, MemoryStoreError, SchemaVersionError
from memory_admin.steps import Steps, run_steps
from memory_admin.store.base import BaseMemoryStore
from memory_admin.store.core import full_capabilities
from memory_admin.store.session import Mode, Statement
from memory_admin.store.sqlite import terms
from memory_admin.store.sqlite.schema import EVENT_FILE_SCHEMA, MIGRATIONS, SCHEMA_VERSION, statements
from memory_admin.store.sqlite.search import Search
from memory_admin.store.sqlite.session import (
    MERGE_INDEX,
    SqliteSession,
    begin_immediate,
    execute_statement,
    is_busy,
)
from memory_admin.store.vectors import VectorCache

T = TypeVar("T")

log = logging.getLogger(__name__)


class SqliteMemoryStore(BaseMemoryStore):
    """A memory store in one SQLite file, safe for several processes at once."""

    backend_name = "sqlite"
    capabilities_data = full_capabilities("sqlite")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        synchronous: str = "FULL",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if str(path) in ("", ":memory:"):
            raise MemoryStoreError("SqliteMemoryStore needs a file path; use memory:// for a store in RAM.")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._closed = False
        self._searcher = Search()
        self._vector_cache = VectorCache()
        self._migrate()

    # --- connections ----------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
            terms.register(conn)  # the index's match terms are computed in Python
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            _journal_in_wal(conn, "main", self.path, self._busy_timeout)
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("PRAGMA temp_store = MEMORY")
            # up to 32 MiB a connection: the index pages a search walks stay hot; the rest
            # come from the OS's cache as fast (measured at 1M records: 64 MiB searched
            # no faster and held 30 MB more)
            conn.execute("PRAGMA cache_size = -32768")
            conn.execute("ATTACH DATABASE ? AS events", [str(events_path(self.path))])
            _journal_in_wal(conn, "events", events_path(self.path), self._busy_timeout)
            conn.execute(f"PRAGMA events.synchronous = {self._synchronous}")
            conn.execute("PRAGMA events.secure_delete = ON")
        except BaseException as exc:
            if conn is not None:
                conn.close()  # a half-made connection holds the files open for nothing
            if isinstance(exc, sqlite3.DatabaseError):
                raise self._translate(exc) from None
            raise
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise MemoryStoreError("This store is closed.")
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._connect()
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.rollback()
            self._idle.put(conn)

    def _translate(self, exc: sqlite3.Error) -> MemoryStoreError:
        if is_busy(exc):
            return MemoryBusyError(
                f"{self.path} stayed locked by other writers for more than {self._busy_timeout:g}s; "
                "try again, or raise busy_timeout.",
                path=str(self.path),
            )
        if "not a database" in str(exc):
            return MemoryStoreError(
                f"{self.path} is not a SQLite memory file; point MEMORY_STORE_URL at another path.",
                path=str(self.path),
            )
        return MemoryStoreError(f"SQLite error on {self.path}: {exc}", path=str(self.path))

    @contextmanager
    def _open(self, mode: Mode) -> Iterator[tuple[SqliteSession, Callable[[Statement], list[Any]]]]:
        """``read`` and ``snapshot`` are one deferred transaction (one snapshot of the
        file); ``write`` takes the write lock first (``BEGIN IMMEDIATE``) and merges the
        full-text index before committing a unit that forgot something; ``append`` is a
        write whose commit skips the fsync (``synchronous = NORMAL``: it survives the
        process, and reaches the disk with the next durable commit or checkpoint);
        ``maintain`` runs outside any transaction."""
        with self._connection() as conn:
            session = SqliteSession(self._searcher, self._busy_timeout)
            session.vector_cache = self._vector_cache

            def execute(statement: Statement) -> list[Any]:
                return execute_statement(conn, statement)

            relaxed = mode == "append" and self._synchronous.upper() in ("FULL", "EXTRA", "2", "3")
            try:
                if mode == "maintain":
                    yield session, execute
                    return
                if relaxed:
                    conn.execute("PRAGMA synchronous = NORMAL")
                    conn.execute("PRAGMA events.synchronous = NORMAL")
                if mode in ("write", "append"):
                    _drive_now(conn, begin_immediate(self._busy_timeout))
                else:
                    conn.execute("BEGIN")
                yield session, execute
                if session.forgot:
                    conn.execute(MERGE_INDEX)
                conn.execute("COMMIT")
                if session.owed:
                    _clear_owed(conn, session.owed)
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.rollback()
                raise self._translate(exc) from None
            finally:
                if relaxed:
                    conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                    conn.execute(f"PRAGMA events.synchronous = {self._synchronous}")

    def _event_log_key(self) -> str:
        return f"sqlite:{os.path.abspath(self.path)}"

    def _forget_reads(self) -> None:
        super()._forget_reads()
        self._searcher.forget()

    def _release(self) -> None:
        self._closed = True
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()

    # --- schema -----------------------------------------------------------------------

    def schema_version(self) -> int:
        with self._connection() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self, migrations: Sequence[str] = MIGRATIONS) -> None:
        target = len(migrations)
        with self._connection() as conn:
            try:
                found = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if found > target:
                    raise SchemaVersionError(str(self.path), found, target)
                if found < target:
                    conn.execute("BEGIN IMMEDIATE")
                    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
                    for version in range(found + 1, target + 1):
                        for statement in statements(migrations[version - 1]):
                            conn.execute(statement)
                        conn.execute(f"PRAGMA user_version = {version}")
                    conn.execute("COMMIT")
                terms.rebuild_if_stale(conn)
                _settle_event_file(conn, self._searcher, self._busy_timeout)
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.rollback()
                raise self._translate(exc) from None


def _journal_in_wal(conn: sqlite3.Connection, schema: str, path: Path, timeout: float) -> None:
    """Switch ``schema``'s file to WAL journaling. A new file switches once, under an
    exclusive lock that SQLite does not wait for: when several processes open a new file
    at once, the others are told it is locked, and wait here until it has switched."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            mode = conn.execute(f"PRAGMA {schema}.journal_mode = WAL").fetchone()[0]
            break
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
    if str(mode).lower() != "wal":
        raise MemoryStoreError(f"{path} could not switch to WAL journaling (got {mode}).")


def _drive_now(conn: sqlite3.Connection, steps: Steps[Statement, T]) -> T:
    return run_steps(steps, lambda statement: execute_statement(conn, statement))


def _clear_owed(conn: sqlite3.Connection, owed: Sequence[int]) -> None:
    """Both files have committed: the log owes nothing more. The forgetting stands either
    way, so a failure here is only logged (the next store to open the file redoes the
    work, which changes nothing, and clears the note then)."""
    try:
        conn.execute("DELETE FROM memory_events_owed WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(owed)])
    except sqlite3.Error:
        log.warning("could not clear %d notes of forgetting owed to the event log; the next open will", len(owed))


def events_path(path: str | os.PathLike[str]) -> Path:
    """The event log's file beside the memory file ``path`` (``<file>-events``, with its
    own ``-wal`` and ``-shm``): the log's batches commit there, never to the memory file."""
    return Path(f"{path}-events")


def database_files(path: str | os.PathLike[str]) -> list[Path]:
    """A SQLite database file and the two SQLite keeps beside it in WAL mode."""
    return [Path(path), Path(f"{path}-wal"), Path(f"{path}-shm")]


def store_files(path: str | os.PathLike[str]) -> list[Path]:
    """Every file of the store whose memory file is ``path``: it, the event file, and theirs."""
    return [*database_files(path), *database_files(events_path(path))]


def _log_inside(conn: sqlite3.Connection) -> bool:
    """The memory file still holds an event table (a file from before the move, a backup)."""
    found = conn.execute("SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'memory_events'")
    return found.fetchone() is not None


def _settle_event_file(conn: sqlite3.Connection, searcher: Search, busy_timeout: float) -> None:
    """Make the event file whole when a store opens the memory file: its table; the rows
    of a log still inside the memory file (a file from before the move, a restored
    backup), copied and only then dropped there; and what a forgetting still owes the log
    after a crash between the two files' commits, done and only then cleared. Each step
    is safe to repeat, so a crash anywhere in here is settled by the next open."""
    for statement in statements(EVENT_FILE_SCHEMA):
        conn.execute(statement)
    # Several processes may open the file at once (agents and the dashboard starting
    # together): what one finds to do before it holds the write lock, another may have
    # done by the time it does, so each step looks again under the lock
    if _log_inside(conn):
        _drive_now(conn, begin_immediate(busy_timeout))
        if _log_inside(conn):
            conn.execute("INSERT OR IGNORE INTO events.memory_events SELECT * FROM main.memory_events")
        conn.execute("COMMIT")
        _drive_now(conn, begin_immediate(busy_timeout))
        if _log_inside(conn):
            conn.execute("DROP TABLE main.memory_events")
        conn.execute("COMMIT")
    session = SqliteSession(searcher, busy_timeout, owing=False)  # doing what was owed owes nothing new
    for (owed_id,) in conn.execute("SELECT id FROM memory_events_owed ORDER BY id").fetchall():
        _drive_now(conn, begin_immediate(busy_timeout))
        owed = conn.execute("SELECT tenant, record_ids, scope FROM memory_events_owed WHERE id = ?", [owed_id])
        found = owed.fetchone()
        if found is not None:
            tenant, record_ids, scope = found
            if scope is not None:
                _drive_now(conn, session.erase_events(json.loads(scope), dry_run=False))
            _drive_now(conn, session.forget_in_events(tenant, json.loads(record_ids)))
        conn.execute("COMMIT")
        conn.execute("DELETE FROM memory_events_owed WHERE id = ?", [owed_id])


def sqlite_file_stats(path: str | os.PathLike[str]) -> dict[str, int]:
    """Sizes of the memory file, the event file and their WALs, in bytes."""

    def size(file: Path) -> int:
        return file.stat().st_size if file.exists() else 0

    events = events_path(path)
    return {
        "file_bytes": size(Path(path)),
        "wal_bytes": size(Path(f"{path}-wal")),
        "events_bytes": size(events),
        "events_wal_bytes": size(Path(f"{events}-wal")),
    }


__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SqliteMemoryStore",
    "database_files",
    "events_path",
    "sqlite_file_stats",
    "store_files",
]
