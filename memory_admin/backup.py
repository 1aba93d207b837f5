"""Backing up a SQLite memory file while agents write to it, and restoring a backup.

:func:`backup_sqlite` copies the file through SQLite's online backup API inside one
read transaction: the copy is the file exactly as it stood when that transaction began
(every write acknowledged before then is in it, none that started later is), however
many writers keep committing meanwhile, and they are never blocked. The copy is written
beside the destination, checked (:func:`check_sqlite`: ``PRAGMA integrity_check``, the
full-text index against its rows, the counts the source held at that moment), made a
self-contained file (no ``-wal``), and only then moved into place, owner-readable only.
The event log, which a live store keeps in a file of its own beside the memory file,
travels inside the backup (read in the same transaction); a store that opens the
restored file moves it back out.

:func:`restore_sqlite` refuses a destination that any process has open (an agent or the
dashboard would keep writing into the file being replaced), refuses a backup from a
newer memory_admin (:class:`~memory_admin.errors.SchemaVersionError`) or one that fails
its check, and writes through SQLite itself, so a stale ``-wal`` beside the destination
can never be replayed over the restored pages; the destination's old event file goes
with the store it belonged to.

PostgreSQL stores are backed up with ``pg_dump`` (docs/operations.md).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memory_admin.errors import MemoryStoreError, SchemaVersionError
from memory_admin.store.sqlite import database_files, events_path, store_files, terms
from memory_admin.store.sqlite.schema import EVENT_TABLE, SCHEMA_VERSION, statements
from memory_admin.tokenize import TERMS_IDENTITY

Progress = Callable[[int, int], object]
"""Called as ``progress(pages_done, pages_total)`` after every step of a copy."""

PAGES_PER_STEP = 256  # 1 MiB at the default page size: a smooth progress bar, little overhead
COUNTED_TABLES = {"records": "memory_records", "scopes": "memory_scopes"}
"""Tables a memory file holds, counted by a check (the event log is counted apart: it may
sit in the event file beside the memory file, or inside a backup)."""
_FTS_TABLE = "memory_fts"


class BackupError(MemoryStoreError):
    """A backup or restore could not be made safely; nothing was replaced."""

    code = "backup_error"


class FileInUseError(BackupError):
    """The destination of a restore is open in another process (an agent, the dashboard)."""

    code = "file_in_use"


@dataclass(frozen=True)
class FileCheck:
    """What :func:`check_sqlite` found in a memory file."""

    path: Path
    schema_version: int
    counts: dict[str, int]
    size_bytes: int

    @property
    def records(self) -> int:
        return self.counts["records"]

    @property
    def events(self) -> int:
        return self.counts["events"]


@dataclass(frozen=True)
class BackupReport:
    source: Path
    target: Path
    check: FileCheck
    pages: int
    seconds: float


@dataclass(frozen=True)
class RestoreReport:
    backup: Path
    target: Path
    check: FileCheck
    replaced: bool
    migrates_from: int | None
    """The backup's schema version when it is older than this code's (the store migrates
    it in place when it is next opened), else ``None``."""


def backup_sqlite(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    pages_per_step: int = PAGES_PER_STEP,
    busy_timeout: float = 30.0,
) -> BackupReport:
    """Copy the memory file ``source`` to the new file ``target`` while it stays in use.

    Raises :class:`BackupError` when ``source`` is not a memory file, ``target`` already
    exists, or the copy fails its check (the partial copy is removed)."""
    source, target = Path(source), Path(target)
    if not source.is_file():
        raise BackupError(f"{source} does not exist; point --store at the memory file the agents write.")
    if target.exists():
        raise BackupError(f"{target} already exists; choose another name (a backup never overwrites a file).")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    started = time.monotonic()
    with _connect(source, busy_timeout) as src:
        _attach_event_file(src, source)
        # one read transaction for the whole copy: the backup never restarts when a
        # writer commits, and the counts below describe exactly what it copies
        src.execute("BEGIN")
        version = _memory_schema_version(src, source)
        expected = _counts(src)
        _create_private(partial)
        try:
            with _connect(partial, busy_timeout) as dst:
                pages = _copy(src, dst, progress, pages_per_step)
                dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
                _copy_event_file(src, dst)
            src.execute("COMMIT")
            check = check_sqlite(partial)
            if check.counts != expected or check.schema_version != version:
                raise BackupError(
                    f"The copy of {source} holds {check.counts} at schema {check.schema_version}, but the source "
                    f"held {expected} at schema {version}; nothing was written to {target}.",
                )
            partial.replace(target)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    return BackupReport(source, target, _moved(check, target), pages, time.monotonic() - started)


def check_sqlite(path: str | os.PathLike[str]) -> FileCheck:
    """Verify a memory file without changing it: ``PRAGMA integrity_check``, the FTS5
    index against the rows it indexes, and the schema version; count what it holds.

    Raises :class:`BackupError` on any failure, :class:`SchemaVersionError` for a file
    from a newer memory_admin."""
    path = Path(path)
    if not path.is_file():
        raise BackupError(f"{path} does not exist.")
    try:
        # FTS5's integrity check is written as an INSERT, so the connection may write;
        # everything runs in one transaction that is rolled back
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot open {path}: {exc}") from None
    try:
        terms.register(conn)  # the index's content is its records' terms, computed in Python
        _attach_event_file(conn, path)
        conn.execute("BEGIN")
        version = _memory_schema_version(conn, path)
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
        if problems != ["ok"]:
            raise BackupError(f"{path} fails its integrity check: {'; '.join(problems[:5])}", problems=problems[:20])
        # rank 1: compare the index with the rows of its external content — unless it
        # holds another stemmer's terms, which the store rebuilds when it opens the file
        rank = 1 if terms.indexed_identity(conn) in (None, TERMS_IDENTITY) else 0
        try:
            conn.execute(f"INSERT INTO {_FTS_TABLE} ({_FTS_TABLE}, rank) VALUES ('integrity-check', ?)", [rank])
        except sqlite3.Error as exc:
            raise BackupError(f"{path}: the full-text index does not match the records ({exc}).") from None
        counts = _counts(conn)
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{path} is not a readable SQLite file ({exc}).") from None
    finally:
        if conn.in_transaction:
            conn.rollback()
        conn.close()
    return FileCheck(path, version, counts, path.stat().st_size)


def restore_sqlite(
    backup: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    replace: bool = False,
    progress: Progress | None = None,
    pages_per_step: int = PAGES_PER_STEP,
) -> RestoreReport:
    """Write the backup ``backup`` into the memory file ``target``.

    Checks the backup first (:func:`check_sqlite`). A ``target`` that holds records is
    replaced only with ``replace=True``; one that any process has open is never
    touched (:class:`FileInUseError`: stop the agents and the dashboard first)."""
    backup, target = Path(backup), Path(target)
    if any(_same_file(backup, own) for own in store_files(target)):
        # it would wait on its own lock for ever, holding the file it reads from
        raise BackupError(
            f"{backup} is the memory file itself, or one of its own files; restore from a backup "
            "(memory-admin backup makes one). Nothing was changed.",
        )
    check = check_sqlite(backup)
    existed = target.exists()
    orphan_wal = target.with_name(target.name + "-wal")
    if not existed and orphan_wal.exists():
        raise BackupError(
            f"{orphan_wal} is there without its database; SQLite would replay it into the restored file. Move it aside."
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with _connect(target, 0.0) as dst, _connect(backup, 0.0, read_only=True) as src:
        _hold_exclusively(dst, target)
        if existed and not replace and _holds_records(dst):
            raise BackupError(
                f"{target} already holds memory records; pass replace (--replace) to overwrite it with {backup}.",
            )
        # a WAL-mode destination cannot take pages of another size; we hold it alone
        dst.execute("PRAGMA journal_mode = DELETE")
        _copy(src, dst, progress, pages_per_step)
        # the log of the store this file replaces: the restored file carries its own
        for stale in database_files(events_path(target)):
            stale.unlink(missing_ok=True)
    restored = check_sqlite(target)
    if restored.counts != check.counts:
        raise BackupError(f"{target} holds {restored.counts} after the restore, but {backup} holds {check.counts}.")
    migrates_from = check.schema_version if check.schema_version < SCHEMA_VERSION else None
    return RestoreReport(backup, target, restored, existed, migrates_from)


# --- helpers ------------------------------------------------------------------------------


@contextlib.contextmanager
def _connect(path: Path, busy_timeout: float, *, read_only: bool = False) -> Iterator[sqlite3.Connection]:
    uri = f"{path.resolve().as_uri()}?mode={'ro' if read_only else 'rwc'}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot open {path}: {exc}") from None
    try:
        yield conn
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise BackupError(f"{path} stayed locked for longer than {busy_timeout:g}s ({exc}); try again.") from None
        raise BackupError(f"SQLite error on {path}: {exc}") from None
    finally:
        conn.close()


def _copy(src: sqlite3.Connection, dst: sqlite3.Connection, progress: Progress | None, pages_per_step: int) -> int:
    copied = [0]

    def step(status: int, remaining: int, total: int) -> None:
        copied[0] = total
        if progress is not None:
            progress(total - remaining, total)

    src.backup(dst, pages=pages_per_step, progress=step)
    return copied[0]


def _same_file(one: Path, other: Path) -> bool:
    """The same file, whatever the path says (a symlink, a hard link, ``..``)."""
    try:
        return os.path.samefile(one, other)
    except OSError:  # one of them does not exist
        return one.resolve() == other.resolve()


def _hold_exclusively(conn: sqlite3.Connection, path: Path) -> None:
    """Take the file's exclusive lock and keep it until ``conn`` closes. In WAL mode every
    open connection holds a shared lock, idle or not, so this fails while any process has
    the file open — and no process can open it while we hold it."""
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        raise FileInUseError(
            f"{path} is open in another process (an agent or the dashboard); stop every process that uses it, "
            "then restore. Nothing was changed.",
            path=str(path),
        ) from None


def _attach_event_file(conn: sqlite3.Connection, path: Path) -> None:
    """Attach the event file beside ``path`` as ``events``, if there is one (a backup has
    none: its log is inside it)."""
    events = events_path(path)
    if events.is_file():
        conn.execute("ATTACH DATABASE ? AS events", [str(events)])


def _event_sources(conn: sqlite3.Connection) -> list[str]:
    """Where ``conn``'s file keeps event rows: the event file, the memory file itself (a
    backup, a file from before the move), or both (a move a crash interrupted)."""
    sources = []
    for schema in ("main", "events"):
        try:
            found = conn.execute(
                f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = 'memory_events'"
            ).fetchone()
        except sqlite3.OperationalError:  # no such database: nothing attached
            continue
        if found:
            sources.append(f"{schema}.memory_events")
    return sources


def _event_rows(conn: sqlite3.Connection) -> str:
    """A select of every event row of ``conn``'s file, each once (by event id)."""
    sources = _event_sources(conn)
    if not sources:
        return "SELECT * FROM (SELECT 1) WHERE 0"
    return " UNION ".join(f"SELECT * FROM {source}" for source in sources)


def _copy_event_file(src: sqlite3.Connection, dst: sqlite3.Connection) -> None:
    """Put the rows of the event file, read in ``src``'s transaction, into the copy."""
    if "events.memory_events" not in _event_sources(src):
        return
    for statement in statements(EVENT_TABLE.format(schema="")):
        dst.execute(statement)
    dst.execute("BEGIN")
    dst.executemany(
        "INSERT OR IGNORE INTO memory_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        src.execute("SELECT * FROM events.memory_events"),
    )
    dst.execute("COMMIT")


def _memory_schema_version(conn: sqlite3.Connection, path: Path) -> int:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if version < 1 or not set(COUNTED_TABLES.values()) <= tables:
        raise BackupError(f"{path} is not a memory_admin SQLite memory file (schema version {version}).")
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(str(path), version, SCHEMA_VERSION)
    return version


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    counts = {
        name: int(conn.execute(f"SELECT count(*) FROM main.{table}").fetchone()[0])
        for name, table in COUNTED_TABLES.items()
    }
    counts["events"] = int(conn.execute(f"SELECT count(*) FROM ({_event_rows(conn)})").fetchone()[0])
    return counts


def _holds_records(conn: sqlite3.Connection) -> bool:
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_records'").fetchone()
    return exists is not None and conn.execute("SELECT 1 FROM memory_records LIMIT 1").fetchone() is not None


def _create_private(path: Path) -> None:
    # memory content is personal data: the copy is readable by its owner only
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _moved(check: FileCheck, path: Path) -> FileCheck:
    return FileCheck(path, check.schema_version, check.counts, check.size_bytes)


__all__ = [
    "BackupError",
    "BackupReport",
    "FileCheck",
    "FileInUseError",
    "RestoreReport",
    "backup_sqlite",
    "check_sqlite",
    "restore_sqlite",
]
