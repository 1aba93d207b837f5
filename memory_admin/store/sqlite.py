"""The SQLite backend: the embedded default.

One file of its own (never shared with the dashboard's tables), WAL, a busy timeout,
``BEGIN IMMEDIATE`` for every write, an FTS5 external-content index kept in sync by
triggers, and a ``PRAGMA user_version`` migration ladder from 1.

Scoped search stays fast at a million records because each record's scope pairs are in
the full-text index as hidden tokens: a user-scoped query is one FTS5 expression,
``pair-tokens AND (q1 OR q2 …)``, ranked with bm25 in a subquery, and only the top rows
are joined back to their records. User text is only ever matched as quoted tokens of
:func:`~memory_admin.tokenize.tokenize`; it can never be FTS syntax.

Deleted and erased content does not survive in the file or its WAL: ``secure_delete``
zeroes freed space, the index is merged so no old segment keeps a deleted token, and
the WAL is checkpointed and truncated.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any, NoReturn

from memory_admin.errors import (
    MemoryBusyError,
    MemoryCorruptionError,
    MemoryStoreError,
    MemoryValidationError,
    SchemaVersionError,
)
from memory_admin.events import AnyEvent, EventQuery, StoredEvent, parse_event
from memory_admin.records import KINDS, MemoryHit, MemoryRecord
from memory_admin.scope import AGENT_KEY, TENANT_KEY, Scope, scope_json
from memory_admin.store import ranking
from memory_admin.store._sql import (
    AGENT_MARK,
    RECORD_COLUMNS,
    dumps,
    filter_tokens,
    record_from_row,
    record_values,
    scope_tokens,
    tenant_pair_token,
)
from memory_admin.store.base import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_CONTENT_CHARS,
    DEFAULT_MAX_LIMIT,
    BaseMemoryStore,
    Cursor,
    Invalidation,
    SearchPlan,
    now_us,
)
from memory_admin.store.ids import from_value, ulid_value
from memory_admin.store.memory import facets_from_counts
from memory_admin.store.protocol import (
    CorruptionScan,
    CorruptRecord,
    ErasureReport,
    MemoryStoreCapabilities,
    ScopeCounts,
    ScopeFacet,
)
from memory_admin.tokenize import tokenize

# --- schema ----------------------------------------------------------------------------

MIGRATIONS: list[str] = [
    # 1: records, normalised scopes, the FTS5 index and the triggers that keep it in sync
    """
    CREATE TABLE memory_scopes (
        scope_id   INTEGER PRIMARY KEY,
        scope      TEXT NOT NULL UNIQUE,
        tenant     TEXT NOT NULL,
        n_pairs    INTEGER NOT NULL,
        fts_tokens TEXT NOT NULL DEFAULT '',
        n_records  INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE memory_scope_pairs (
        scope_id INTEGER NOT NULL,
        key      TEXT NOT NULL,
        value    TEXT NOT NULL,
        PRIMARY KEY (scope_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX memory_scope_pairs_kv ON memory_scope_pairs (key, value);
    CREATE INDEX memory_scopes_tenant ON memory_scopes (tenant);
    CREATE TABLE memory_records (
        rid            INTEGER PRIMARY KEY,
        id             BLOB NOT NULL UNIQUE,  -- 16 bytes for a canonical id, else its text
        scope_id       INTEGER NOT NULL,
        kind           TEXT NOT NULL,
        key            TEXT,
        content        TEXT NOT NULL,
        tags           TEXT,
        source          TEXT,
        author          TEXT,
        conversation_id TEXT,
        run_id          TEXT,
        created_at     INTEGER NOT NULL,
        updated_at     INTEGER,
        invalid_at     INTEGER,
        invalid_reason TEXT,
        superseded_by  TEXT,
        supersedes     TEXT,
        expires_at     INTEGER,
        target         TEXT,
        payload        TEXT,
        supports       TEXT
    );
    CREATE INDEX memory_records_scope_recent ON memory_records (scope_id, created_at);
    CREATE INDEX memory_records_recent ON memory_records (created_at, scope_id);
    CREATE INDEX memory_records_key ON memory_records (scope_id, kind, key) WHERE key IS NOT NULL;
    CREATE VIEW memory_fts_source AS
        SELECT r.rid AS rid, r.content AS content, coalesce(r.tags, '') AS tags,
               s.fts_tokens || ' k' || r.kind AS meta
        FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id;
    CREATE VIRTUAL TABLE memory_fts USING fts5(
        content, tags, meta,
        content='memory_fts_source', content_rowid='rid',
        tokenize='unicode61 remove_diacritics 2',
        -- the index only finds candidates (ranking is BM25 in Python): no positions,
        -- no per-row sizes, a third smaller
        detail=column, columnsize=0
    );
    -- Inserts are indexed in bulk by the store (one INSERT … SELECT per batch is three
    -- times faster than a per-row trigger); deletes and content edits by triggers, so
    -- the index cannot drift from the rows it describes.
    CREATE TRIGGER memory_records_ad AFTER DELETE ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, tags, meta)
            SELECT 'delete', old.rid, old.content, coalesce(old.tags, ''), s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
    END;
    CREATE TRIGGER memory_records_au AFTER UPDATE OF content, tags, kind, scope_id ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, tags, meta)
            SELECT 'delete', old.rid, old.content, coalesce(old.tags, ''), s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        INSERT INTO memory_fts (rowid, content, tags, meta)
            SELECT new.rid, new.content, coalesce(new.tags, ''), s.fts_tokens || ' k' || new.kind
            FROM memory_scopes s WHERE s.scope_id = new.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records + 1 WHERE scope_id = new.scope_id;
    END;
    """,
]

MIGRATIONS.append(
    # 2: the event log, beside the records and erased with them
    """
    CREATE TABLE memory_events (
        eid     INTEGER PRIMARY KEY,
        type    TEXT NOT NULL,
        at      INTEGER NOT NULL,
        tenant  TEXT NOT NULL,
        scope   TEXT NOT NULL,
        agent   TEXT,
        preview INTEGER NOT NULL DEFAULT 0,
        body    TEXT NOT NULL
    );
    CREATE INDEX memory_events_type_at ON memory_events (type, at);
    CREATE INDEX memory_events_tenant_at ON memory_events (tenant, at);
    """
)

MIGRATIONS.append(
    # 3: counts per scope and kind, and partial indexes over the rare states, so a
    # tenant's summary adds a few thousand counters instead of scanning its records
    """
    CREATE TABLE memory_scope_kinds (
        scope_id INTEGER NOT NULL,
        kind     TEXT NOT NULL,
        n        INTEGER NOT NULL,
        PRIMARY KEY (scope_id, kind)
    ) WITHOUT ROWID;
    INSERT INTO memory_scope_kinds (scope_id, kind, n)
        SELECT scope_id, kind, count(*) FROM memory_records GROUP BY scope_id, kind;
    CREATE INDEX memory_records_invalid ON memory_records (scope_id) WHERE invalid_at IS NOT NULL;
    CREATE INDEX memory_records_expiring ON memory_records (scope_id, expires_at) WHERE expires_at IS NOT NULL;
    DROP TRIGGER memory_records_ad;
    CREATE TRIGGER memory_records_ad AFTER DELETE ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, tags, meta)
            SELECT 'delete', old.rid, old.content, coalesce(old.tags, ''), s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
        UPDATE memory_scope_kinds SET n = n - 1 WHERE scope_id = old.scope_id AND kind = old.kind;
    END;
    DROP TRIGGER memory_records_au;
    CREATE TRIGGER memory_records_au AFTER UPDATE OF content, tags, kind, scope_id ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, tags, meta)
            SELECT 'delete', old.rid, old.content, coalesce(old.tags, ''), s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        INSERT INTO memory_fts (rowid, content, tags, meta)
            SELECT new.rid, new.content, coalesce(new.tags, ''), s.fts_tokens || ' k' || new.kind
            FROM memory_scopes s WHERE s.scope_id = new.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records + 1 WHERE scope_id = new.scope_id;
        UPDATE memory_scope_kinds SET n = n - 1 WHERE scope_id = old.scope_id AND kind = old.kind;
        INSERT INTO memory_scope_kinds (scope_id, kind, n) VALUES (new.scope_id, new.kind, 1)
            ON CONFLICT (scope_id, kind) DO UPDATE SET n = n + 1;
    END;
    """
)

SCHEMA_VERSION = len(MIGRATIONS)

_PROVENANCE_COLUMNS = ("source", "author", "conversation_id", "run_id")
# provenance is four plain columns here (queryable, and half the bytes of its JSON)
_STORED_COLUMNS = tuple(c for c in RECORD_COLUMNS if c != "provenance") + _PROVENANCE_COLUMNS
_RECORD_SELECT = (
    "SELECT r.rid AS rid, s.scope AS scope, "
    + ", ".join(f"r.{c} AS {c}" for c in RECORD_COLUMNS if c != "provenance")
    + ", json_object("
    + ", ".join(f"'{c}', r.{c}" for c in _PROVENANCE_COLUMNS)
    + ") AS provenance"
)
_RECORD_FROM = " FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id"
_FEW_SCOPES = 16  # listings over this many scopes walk one index instead of merging each scope's
_SMALL_SCOPE = 500  # scopes this size are ranked exhaustively, from one index query
_CANDIDATE_BUDGET = 120  # in larger scopes, records scored per query at most
_DF_SAMPLE = 2000  # document frequencies above this are estimated from how far back the newest matches reach
_STATS_TTL_S = 300.0
_VISIBLE_ENUMERATION_LIMIT = 12  # viewer pairs; 2^11 candidate scopes at most


def _to_db_time(value: datetime) -> int:
    return now_us(value)


def _from_db_time(value: Any) -> datetime:
    if not isinstance(value, int):
        raise TypeError(f"timestamp column holds {type(value).__name__}, expected integer microseconds")
    return datetime.fromtimestamp(value // 1_000_000, UTC).replace(microsecond=value % 1_000_000)


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip():
        yield buffer.strip()


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    values = {column[0]: value for column, value in zip(cursor.description, row, strict=True)}
    if "id" in values:
        values["id"] = _id_text(values["id"])
    return values


def _id_key(record_id: str) -> bytes | str:
    """How an id is stored: a canonical id as its 16 bytes (half the size of its text,
    in the row and in the unique index), any other id as text."""
    value = ulid_value(record_id)
    return record_id if value is None else value.to_bytes(16, "big")


def _id_text(stored: bytes | str) -> str:
    return from_value(int.from_bytes(stored, "big")) if isinstance(stored, bytes) else stored


_ROW_COLUMNS = ("rid", "scope_id", *_STORED_COLUMNS)
_INSERT_RECORD = f"INSERT INTO memory_records ({', '.join(_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(_ROW_COLUMNS))})"


def _record_row(record: MemoryRecord, rid: int, scope_id: int) -> tuple[Any, ...]:
    """A record's row, in :data:`_ROW_COLUMNS` order (writing a batch builds thousands)."""
    values = record_values(record, _to_db_time, provenance_json=False)
    values["id"] = _id_key(record.id)
    values["rid"] = rid
    values["scope_id"] = scope_id
    provenance = record.provenance
    values["source"] = provenance.source
    values["author"] = provenance.author
    values["conversation_id"] = provenance.conversation_id
    values["run_id"] = provenance.run_id
    return tuple(values[column] for column in _ROW_COLUMNS)


def _in_ids(ids: Sequence[str]) -> tuple[str, list[bytes | str]]:
    """``IN (?, ?, …)`` for a list of ids (JSON cannot carry the binary form)."""
    return "(" + ", ".join("?" * len(ids)) + ")", [_id_key(i) for i in ids]


def _record_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    cursor = conn.cursor()
    cursor.row_factory = _dict_row
    return cursor.execute(sql, params).fetchall()


def _quote(token: str) -> str:
    # tokens hold letters and digits only, so quoting cannot be escaped out of
    return '"' + token.replace('"', '""') + '"'


def _json_list(values: Iterable[Any]) -> str:
    return json.dumps(list(values))


def _event_values(event: AnyEvent) -> tuple[Any, ...]:
    """The event log columns after ``eid``, in table order."""
    return (
        event.type,
        _to_db_time(event.at),
        event.scope[TENANT_KEY],
        scope_json(event.scope),
        event.agent,
        int(getattr(event, "preview_run", False)),
        event.model_dump_json(),
    )


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Transaction:
    def __init__(self, conn: sqlite3.Connection, store: SqliteMemoryStore) -> None:
        self.conn = conn
        self.store = store
        self.forgot = False

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        return self.store._fetch_by_ids(self.conn, list(ids))

    def find_valid_keyed(self, scope: Scope, kind: str, key: str) -> MemoryRecord | None:
        rows = _record_rows(
            self.conn,
            _RECORD_SELECT + _RECORD_FROM + " WHERE s.scope = ? AND r.kind = ? AND r.key = ? "
            "AND r.invalid_at IS NULL LIMIT 1",
            (scope_json(scope), kind, key),
        )
        return record_from_row(rows[0], _from_db_time) if rows else None

    def _scope_ids(self, scopes: dict[str, Scope]) -> dict[str, int]:
        """The ids of these scopes (keyed by canonical JSON), creating the missing ones."""
        found = {
            text: int(scope_id)
            for text, scope_id in self.conn.execute(
                "SELECT scope, scope_id FROM memory_scopes WHERE scope IN (SELECT value FROM json_each(?))",
                (_json_list(scopes),),
            )
        }
        missing = [text for text in scopes if text not in found]
        if missing:
            first = int(self.conn.execute("SELECT coalesce(max(scope_id), 0) + 1 FROM memory_scopes").fetchone()[0])
            new = {text: first + offset for offset, text in enumerate(missing)}
            self.conn.executemany(
                "INSERT INTO memory_scopes (scope_id, scope, tenant, n_pairs, fts_tokens) VALUES (?, ?, ?, ?, ?)",
                [
                    (sid, text, scopes[text][TENANT_KEY], len(scopes[text]), scope_tokens(scopes[text], sid))
                    for text, sid in new.items()
                ],
            )
            self.conn.executemany(
                "INSERT INTO memory_scope_pairs (scope_id, key, value) VALUES (?, ?, ?)",
                [(sid, key, value) for text, sid in new.items() for key, value in scopes[text].items()],
            )
            found.update(new)
        return found

    def insert(self, records: Sequence[MemoryRecord]) -> None:
        texts: dict[tuple[tuple[str, str], ...], str] = {}
        scopes: dict[str, Scope] = {}
        for record in records:
            items = tuple(record.scope.items())
            if items not in texts:
                texts[items] = text = scope_json(record.scope)
                scopes[text] = record.scope
        scope_ids = self._scope_ids(scopes)
        first = int(self.conn.execute("SELECT coalesce(max(rid), 0) + 1 FROM memory_records").fetchone()[0])
        rows = [
            _record_row(record, first + offset, scope_ids[texts[tuple(record.scope.items())]])
            for offset, record in enumerate(records)
        ]
        self.conn.executemany(_INSERT_RECORD, rows)
        self.conn.execute(
            "INSERT INTO memory_fts (rowid, content, tags, meta) "
            "SELECT rid, content, tags, meta FROM memory_fts_source WHERE rid BETWEEN ? AND ?",
            (first, first + len(rows) - 1),
        )
        self.conn.executemany(
            "UPDATE memory_scopes SET n_records = n_records + ? WHERE scope_id = ?",
            [(count, scope_id) for scope_id, count in Counter(row[1] for row in rows).items()],
        )
        self.conn.executemany(
            "INSERT INTO memory_scope_kinds (scope_id, kind, n) VALUES (?, ?, ?) "
            "ON CONFLICT (scope_id, kind) DO UPDATE SET n = n + excluded.n",
            [
                (scope_id, kind, count)
                for (scope_id, kind), count in Counter(
                    (row[1], r.kind) for row, r in zip(rows, records, strict=True)
                ).items()
            ],
        )

    def invalidate(self, change: Invalidation) -> None:
        at = _to_db_time(change.at)
        self.conn.execute(
            "UPDATE memory_records SET invalid_at = ?, invalid_reason = ?, superseded_by = ?, updated_at = ? "
            "WHERE id = ?",
            (at, change.reason, change.superseded_by, at, _id_key(change.record_id)),
        )

    def _drop_empty_scopes(self, scope_ids: Iterable[int]) -> None:
        ids = _json_list(scope_ids)
        empty = [
            row[0]
            for row in self.conn.execute(
                "SELECT scope_id FROM memory_scopes WHERE n_records <= 0 "
                "AND scope_id IN (SELECT value FROM json_each(?))",
                (ids,),
            )
        ]
        if empty:
            doomed = _json_list(empty)
            self.conn.execute(
                "DELETE FROM memory_scope_pairs WHERE scope_id IN (SELECT value FROM json_each(?))", (doomed,)
            )
            self.conn.execute("DELETE FROM memory_scopes WHERE scope_id IN (SELECT value FROM json_each(?))", (doomed,))
            self.conn.execute(
                "DELETE FROM memory_scope_kinds WHERE scope_id IN (SELECT value FROM json_each(?))", (doomed,)
            )

    def delete(self, record_id: str) -> bool:
        key = _id_key(record_id)
        row = self.conn.execute("SELECT scope_id FROM memory_records WHERE id = ?", (key,)).fetchone()
        if row is None:
            return False
        self.conn.execute("DELETE FROM memory_records WHERE id = ?", (key,))
        self._drop_empty_scopes([row[0]])
        self.forgot = True
        return True

    def expired_ids(self, scope: Scope, now: datetime) -> list[str]:
        ids = _json_list(sid for sid, _ in self.store._subset_scopes(self.conn, scope, agent=None))
        return [
            _id_text(row[0])
            for row in self.conn.execute(
                "SELECT id FROM memory_records INDEXED BY memory_records_expiring "
                "WHERE scope_id IN (SELECT value FROM json_each(?)) AND expires_at IS NOT NULL AND expires_at <= ?",
                (ids, _to_db_time(now)),
            )
        ]

    def erase(self, scope: Scope, now: datetime, *, dry_run: bool) -> ErasureReport:
        scope_rows = self.store._subset_scopes(self.conn, scope, agent=None)
        ids = _json_list(sid for sid, _ in scope_rows)
        in_scopes = "r.scope_id IN (SELECT value FROM json_each(?))"
        by_kind = dict(
            self.conn.execute(
                f"SELECT r.kind, count(*) FROM memory_records r WHERE {in_scopes} GROUP BY r.kind", (ids,)
            ).fetchall()
        )
        sample = [
            _id_text(row[0])
            for row in self.conn.execute(
                f"SELECT r.id FROM memory_records r WHERE {in_scopes} ORDER BY r.created_at DESC LIMIT 10", (ids,)
            )
        ]
        scopes = [
            json.loads(row[0])
            for row in self.conn.execute(
                "SELECT scope FROM memory_scopes WHERE scope_id IN (SELECT value FROM json_each(?)) ORDER BY scope",
                (ids,),
            )
        ]
        events = self.store._erase_events(self.conn, scope, dry_run=dry_run)
        if not dry_run:
            self.conn.execute(f"DELETE FROM memory_records AS r WHERE {in_scopes}", (ids,))
            self.conn.execute(
                "DELETE FROM memory_scope_pairs WHERE scope_id IN (SELECT value FROM json_each(?))", (ids,)
            )
            self.conn.execute("DELETE FROM memory_scopes WHERE scope_id IN (SELECT value FROM json_each(?))", (ids,))
            self.conn.execute(
                "DELETE FROM memory_scope_kinds WHERE scope_id IN (SELECT value FROM json_each(?))", (ids,)
            )
            self.forgot = True
        return ErasureReport(
            scope=scope,
            dry_run=dry_run,
            records=sum(by_kind.values()),
            by_kind=by_kind,
            events=events,
            scopes=scopes,
            sample_ids=sample,
            at=now,
        )

    def scrub_index(self) -> None:
        """Merge the full-text index. FTS5 (before 3.42's secure-delete) keeps a deleted
        row's words in older index segments until they are merged; merging everything
        leaves none behind. Run once per forgetting transaction, before it commits."""
        self.conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")


class TermStatistics:
    """Corpus statistics for BM25, cached in the process and refreshed as the corpus
    changes: record count, average record length, and per-token document frequency.

    Frequencies are exact up to :data:`_DF_SAMPLE`; beyond it they are estimated from
    how much of the id space the newest matches span, which is plenty for a weight that
    is nearly zero anyway.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs = 0
        self._average = 1.0
        self._df: dict[str, int] = {}
        self._mark = -1
        self._at = 0.0

    def reset(self) -> None:
        with self._lock:
            self._mark = -1

    def statistics(self, conn: sqlite3.Connection, tokens: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        top = int(conn.execute("SELECT coalesce(max(rid), 0) FROM memory_records").fetchone()[0])
        with self._lock:
            # small stores refresh on any change (it is cheap); large ones when they grew 5%
            changed = top != self._mark and (top < 10_000 or abs(top - self._mark) > self._mark // 20)
            stale = changed or time.monotonic() - self._at > _STATS_TTL_S
            if stale:
                self._refresh(conn, top)
            known = {t: self._df[t] for t in tokens if t in self._df}
            docs, average = self._docs, self._average
        for token in tokens:
            if token not in known:
                known[token] = self._frequency(conn, token, top, docs)
        with self._lock:
            if len(self._df) > 200_000:
                self._df.clear()
            self._df.update(known)
        return docs, average, known

    def _refresh(self, conn: sqlite3.Connection, top: int) -> None:
        self._docs = int(conn.execute("SELECT coalesce(sum(n_records), 0) FROM memory_scopes").fetchone()[0])
        # a sample for the average length; tags are counted by their raw text, which a
        # corrupt row cannot break (the row itself is reported when a query reaches it)
        lengths = [
            len(tokenize(f"{content} {tags or ''}"))
            for content, tags in conn.execute("SELECT content, tags FROM memory_records ORDER BY rid DESC LIMIT 1000")
        ]
        self._average = (sum(lengths) / len(lengths)) if lengths else 1.0
        self._df.clear()
        self._mark = top
        self._at = time.monotonic()

    @staticmethod
    def _frequency(conn: sqlite3.Connection, token: str, top: int, docs: int) -> int:
        oldest, count = conn.execute(
            "SELECT min(rid), count(*) FROM (SELECT rowid AS rid FROM memory_fts WHERE memory_fts MATCH ? "
            "ORDER BY rowid DESC LIMIT ?)",
            (f"{{content tags}} : {_quote(token)}", _DF_SAMPLE),
        ).fetchone()
        matched = int(count)
        if matched < _DF_SAMPLE:
            return matched
        return min(docs, round(matched * top / max(top - int(oldest) + 1, 1)))


class SqliteMemoryStore(BaseMemoryStore):
    """A memory store in one SQLite file, safe for several processes at once."""

    backend_name = "sqlite"

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
        self._terms = TermStatistics()
        self._migrate()

    # --- connections ----------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise MemoryStoreError(f"{self.path} could not switch to WAL journaling (got {mode}).")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute("PRAGMA cache_size = -65536")  # up to 64 MiB: index pages stay hot at scale
        except sqlite3.DatabaseError as exc:
            raise self._translate(exc) from None
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
        if _is_busy(exc):
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
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one snapshot."""
        with self._connection() as conn:
            try:
                conn.execute("BEGIN")
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._translate(exc) from None

    @contextmanager
    def _transaction(self) -> Iterator[_Transaction]:
        with self._connection() as conn:
            deadline = time.monotonic() + self._busy_timeout
            while True:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or time.monotonic() >= deadline:
                        raise self._translate(exc) from None
                    time.sleep(0.01)
            tx = _Transaction(conn, self)
            try:
                yield tx
                if tx.forgot:
                    tx.scrub_index()
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                conn.rollback()
                raise self._translate(exc) from None
            except BaseException:
                conn.rollback()
                raise

    def close(self) -> None:
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
                if found == target:
                    return
                conn.execute("BEGIN IMMEDIATE")
                found = int(conn.execute("PRAGMA user_version").fetchone()[0])
                for version in range(found + 1, target + 1):
                    for statement in _statements(migrations[version - 1]):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {version}")
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.rollback()
                raise self._translate(exc) from None

    def capabilities(self) -> MemoryStoreCapabilities:
        return MemoryStoreCapabilities(
            backend=self.backend_name,
            search="keyword",
            erasure=True,
            admin=True,
            events=True,
            max_content_chars=DEFAULT_MAX_CONTENT_CHARS,
            max_limit=DEFAULT_MAX_LIMIT,
            max_batch=DEFAULT_MAX_BATCH,
        )

    # --- forgetting ---------------------------------------------------------------------

    def optimize(self) -> None:
        """Merge the full-text index into one segment (every query opens each segment)."""
        with self._transaction() as tx:
            tx.scrub_index()
        self._after_forget()

    def _find_corrupt(self, scope: Scope | None, limit: int, max_rows: int | None) -> CorruptionScan:
        corrupt: list[CorruptRecord] = []
        checked = 0
        last = 0
        with self._read() as conn:
            where = ""
            params: list[Any] = []
            if scope is not None:
                where = " AND r.scope_id IN (SELECT value FROM json_each(?))"
                params.append(_json_list(sid for sid, _ in self._subset_scopes(conn, scope, None)))
            while len(corrupt) < limit and (max_rows is None or checked < max_rows):
                chunk = 1000 if max_rows is None else min(1000, max_rows - checked)
                rows = _record_rows(
                    conn,
                    _RECORD_SELECT + _RECORD_FROM + f" WHERE r.rid > ?{where} ORDER BY r.rid LIMIT ?",
                    [last, *params, chunk],
                )
                for row in rows:
                    try:
                        record_from_row(row, _from_db_time)
                    except MemoryCorruptionError as exc:
                        corrupt.append(CorruptRecord(id=exc.record_id, detail=exc.extras["detail"], raw=exc.raw))
                checked += len(rows)
                if len(rows) < chunk:
                    return CorruptionScan(checked=checked, corrupt=corrupt[:limit], complete=True)
                last = int(rows[-1]["rid"])
        return CorruptionScan(checked=checked, corrupt=corrupt[:limit], complete=False)

    def _after_forget(self) -> None:
        """Checkpoint and truncate the WAL so no frame keeps forgotten content."""
        self._terms.reset()
        deadline = time.monotonic() + self._busy_timeout
        with self._connection() as conn:
            while True:
                try:
                    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc):
                        raise self._translate(exc) from None
                    busy = 1
                if not busy or time.monotonic() >= deadline:
                    return
                time.sleep(0.02)

    @staticmethod
    def _events_under(scope: Scope) -> tuple[str, list[Any]]:
        clauses = ["tenant = ?"]
        params: list[Any] = [scope[TENANT_KEY]]
        for key, value in scope.items():
            if key != TENANT_KEY:
                # keys are validated identifiers, so the JSON path cannot be malformed
                clauses.append("json_extract(scope, ?) = ?")
                params += [f"$.{key}", value]
        return " AND ".join(clauses), params

    def _erase_events(self, conn: sqlite3.Connection, scope: Scope, *, dry_run: bool) -> int:
        where, params = self._events_under(scope)
        if dry_run:
            return int(conn.execute(f"SELECT count(*) FROM memory_events WHERE {where}", params).fetchone()[0])
        return conn.execute(f"DELETE FROM memory_events WHERE {where}", params).rowcount

    def _append_event(self, event: AnyEvent) -> StoredEvent:
        with self._transaction() as tx:
            cur = tx.conn.execute(
                "INSERT INTO memory_events (type, at, tenant, scope, agent, preview, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                _event_values(event),
            )
            return StoredEvent(id=int(cur.lastrowid or 0), event=event)

    def _query_events(self, query: EventQuery) -> list[StoredEvent]:
        clauses: list[str] = []
        params: list[Any] = []
        if query.types is not None:
            clauses.append("type IN (SELECT value FROM json_each(?))")
            params.append(_json_list(query.types))
        if query.since is not None:
            clauses.append("at >= ?")
            params.append(_to_db_time(query.since))
        if query.until is not None:
            clauses.append("at < ?")
            params.append(_to_db_time(query.until))
        if query.scope is not None:
            where, scope_params = self._events_under(query.scope)
            clauses.append(where)
            params += scope_params
        if query.agent is not None:
            clauses.append("agent = ?")
            params.append(query.agent)
        if query.before_id is not None:
            clauses.append("eid < ?")
            params.append(query.before_id)
        if not query.include_previews:
            clauses.append("preview = 0")
        sql = "SELECT eid, body FROM memory_events"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        sql += " ORDER BY eid DESC LIMIT ?"
        with self._read() as conn:
            rows = conn.execute(sql, [*params, query.limit]).fetchall()
        return [StoredEvent(id=int(eid), event=parse_event(body)) for eid, body in rows]

    def _prune_events(self, before: datetime) -> int:
        with self._transaction() as tx:
            return int(tx.conn.execute("DELETE FROM memory_events WHERE at < ?", (_to_db_time(before),)).rowcount)

    def _import_events(self, events: Sequence[StoredEvent]) -> int:
        with self._transaction() as tx:
            before = tx.conn.total_changes
            tx.conn.executemany(
                "INSERT OR IGNORE INTO memory_events (eid, type, at, tenant, scope, agent, preview, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(stored.id, *_event_values(stored.event)) for stored in events],
            )
            return tx.conn.total_changes - before

    # --- reads --------------------------------------------------------------------------

    def _fetch_by_ids(self, conn: sqlite3.Connection, ids: list[str]) -> dict[str, MemoryRecord]:
        if not ids:
            return {}
        found: dict[str, MemoryRecord] = {}
        for start in range(0, len(ids), 500):
            marks, keys = _in_ids(ids[start : start + 500])
            for row in _record_rows(conn, _RECORD_SELECT + _RECORD_FROM + f" WHERE r.id IN {marks}", keys):
                found[row["id"]] = record_from_row(row, _from_db_time)
        return found

    def _get_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        with self._read() as conn:
            return self._fetch_by_ids(conn, list(ids))

    def _subset_scopes(self, conn: sqlite3.Connection, scope: Scope, agent: str | None) -> list[tuple[int, int]]:
        """``(scope_id, n_records)`` of every stored scope containing ``scope``'s pairs."""
        # the tenant column narrows; the other pairs' (small) scope lists are intersected
        pairs = [(key, value) for key, value in scope.items() if key != TENANT_KEY]
        sql = "SELECT s.scope_id, s.n_records FROM memory_scopes s WHERE s.tenant = ?"
        params: list[Any] = [scope[TENANT_KEY]]
        if pairs:
            sql += (
                " AND s.scope_id IN ("
                + " INTERSECT ".join(
                    "SELECT scope_id FROM memory_scope_pairs WHERE key = ? AND value = ?" for _ in pairs
                )
                + ")"
            )
            params += [item for pair in pairs for item in pair]
        if agent is not None:
            sql += (
                " AND NOT EXISTS (SELECT 1 FROM memory_scope_pairs a WHERE a.scope_id = s.scope_id "
                "AND a.key = ? AND a.value <> ?)"
            )
            params += [AGENT_KEY, agent]
        return [(int(r[0]), int(r[1])) for r in conn.execute(sql, params)]

    def _visible_scopes(self, conn: sqlite3.Connection, viewer: Scope, agent: str | None) -> list[tuple[int, int]]:
        """``(scope_id, n_records)`` of every stored scope whose pairs all lie in ``viewer``."""
        others = [key for key in viewer if key != TENANT_KEY]
        if len(viewer) > _VISIBLE_ENUMERATION_LIMIT:
            raise MemoryValidationError(
                f"A visible-match scope holds at most {_VISIBLE_ENUMERATION_LIMIT} pairs.",
                [{"loc": "scope", "msg": "too many pairs for visible match"}],
            )
        candidates = []
        for size in range(len(others) + 1):
            for keys in combinations(others, size):
                subset = {TENANT_KEY: viewer[TENANT_KEY], **{k: viewer[k] for k in keys}}
                if agent is not None and subset.get(AGENT_KEY, agent) != agent:
                    continue
                candidates.append(scope_json(subset))
        return [
            (int(r[0]), int(r[1]))
            for r in conn.execute(
                "SELECT scope_id, n_records FROM memory_scopes WHERE scope IN (SELECT value FROM json_each(?))",
                (_json_list(candidates),),
            )
        ]

    def _scopes_for(self, conn: sqlite3.Connection, plan: SearchPlan) -> list[tuple[int, int]]:
        query = plan.query
        if query.scope_match == "visible":
            return self._visible_scopes(conn, query.scope, query.agent)
        return self._subset_scopes(conn, query.scope, query.agent)

    def _record_filters(self, plan: SearchPlan) -> tuple[str, list[Any]]:
        """SQL conditions on ``r`` for every filter except scope and text."""
        query = plan.query
        clauses: list[str] = []
        params: list[Any] = []
        if query.kinds is not None:
            clauses.append("r.kind IN (SELECT value FROM json_each(?))")
            params.append(_json_list(query.kinds))
        for tag in query.tags or ():
            clauses.append("EXISTS (SELECT 1 FROM json_each(r.tags) WHERE value = ?)")
            params.append(tag)
        if query.keys is not None:
            if query.key_match == "exact":
                clauses.append("r.key IN (SELECT value FROM json_each(?))")
                params.append(_json_list(query.keys))
            else:
                clauses.append("(" + " OR ".join("substr(r.key, 1, ?) = ?" for _ in query.keys) + ")")
                for prefix in query.keys:
                    params += [len(prefix), prefix]
        if query.targeted is not None:
            clauses.append("r.target IS NOT NULL" if query.targeted else "r.target IS NULL")
        if not plan.include_expired:
            clauses.append("(r.expires_at IS NULL OR r.expires_at > ?)")
            params.append(_to_db_time(plan.now))
        if query.as_of is not None:
            as_of = _to_db_time(query.as_of)
            clauses.append("r.created_at <= ? AND (r.expires_at IS NULL OR r.expires_at > ?)")
            params += [as_of, as_of]
            if not query.include_invalidated:
                clauses.append("(r.invalid_at IS NULL OR r.invalid_at > ?)")
                params.append(as_of)
        elif not query.include_invalidated:
            clauses.append("r.invalid_at IS NULL")
        return (" AND ".join(clauses) or "1"), params

    def _list(self, plan: SearchPlan) -> tuple[list[MemoryHit], Cursor | None]:
        with self._read() as conn:
            if plan.ranked:
                return self._ranked(conn, plan)
            return self._recent(conn, plan)

    def _recent(self, conn: sqlite3.Connection, plan: SearchPlan) -> tuple[list[MemoryHit], Cursor | None]:
        scopes = self._scopes_for(conn, plan)
        matching = sum(n for _, n in scopes)
        if matching <= 0:
            return [], None
        filters, params = self._record_filters(plan)
        if plan.cursor is not None:
            filters += " AND (r.created_at, r.rid) < (?, ?)"
            params += [plan.cursor.created_us, plan.cursor.seq]
        order = "ORDER BY r.created_at DESC, r.rid DESC LIMIT ?"
        select = _RECORD_SELECT + " FROM memory_records r {index} JOIN memory_scopes s ON s.scope_id = r.scope_id"
        args: list[Any]
        if len(scopes) <= _FEW_SCOPES:
            # a few scopes: walk each one's index newest-first, stop at the limit, merge
            part = f"SELECT * FROM ({select.format(index='INDEXED BY memory_records_scope_recent')} "
            part += f"WHERE r.scope_id = ? AND {filters} {order})"
            sql = " UNION ALL ".join([part] * len(scopes)) + " ORDER BY created_at DESC, rid DESC LIMIT ?"
            args = [value for sid, _ in scopes for value in (sid, *params, plan.limit + 1)]
        else:
            store_size = int(conn.execute("SELECT coalesce(max(rid), 0) FROM memory_records").fetchone()[0])
            # walking the global recency index costs about limit / (share of matching rows)
            # entries; gathering and sorting the scopes' rows costs about `matching`
            walk_cost = (plan.limit + 1) * max(store_size, 1) / matching / 8
            index = "memory_records_recent" if walk_cost < matching else "memory_records_scope_recent"
            sql = (
                select.format(index=f"INDEXED BY {index}")
                + f" WHERE r.scope_id IN (SELECT value FROM json_each(?)) AND {filters} {order}"
            )
            args = [_json_list(sid for sid, _ in scopes), *params]
        rows = _record_rows(conn, sql, [*args, plan.limit + 1])
        hits = [MemoryHit(record=record_from_row(row, _from_db_time)) for row in rows[: plan.limit]]
        if len(rows) > plan.limit:
            last = rows[plan.limit - 1]
            return hits, Cursor(created_us=int(last["created_at"]), seq=int(last["rid"]))
        return hits, None

    def _filter_expression(self, conn: sqlite3.Connection, plan: SearchPlan) -> tuple[str, int] | None:
        """The hidden-token part of a MATCH (scope, kinds, the agent convention) and how
        many records the scope holds. ``None`` when no stored scope can match."""
        query = plan.query
        parts: list[str] = []
        if query.scope_match == "visible":
            scopes = self._visible_scopes(conn, query.scope, None)
            parts.append("meta : (" + " OR ".join(f"s{sid}" for sid, _ in scopes) + ")")
        else:
            scopes = self._subset_scopes(conn, query.scope, None)
            parts.append("meta : (" + " AND ".join(filter_tokens(query.scope)) + ")")
        if not scopes:
            return None
        if query.kinds is not None:
            parts.append("meta : (" + " OR ".join(f"k{kind}" for kind in query.kinds) + ")")
        expression = " AND ".join(f"({part})" for part in parts)
        if query.agent is not None:
            mine = tenant_pair_token(query.scope[TENANT_KEY], AGENT_KEY, query.agent)
            expression = f"({expression}) NOT (meta : ({AGENT_MARK} NOT {mine}))"
        return expression, sum(n for _, n in scopes)

    @staticmethod
    def _raise_corrupt(conn: sqlite3.Connection, rid: int) -> NoReturn:
        rows = _record_rows(conn, _RECORD_SELECT + _RECORD_FROM + " WHERE r.rid = ?", (rid,))
        record_from_row(rows[0], _from_db_time)  # raises MemoryCorruptionError with the raw row
        raise MemoryStoreError(f"row {rid} failed to index but validates; run PRAGMA integrity_check")

    def _ranked(self, conn: sqlite3.Connection, plan: SearchPlan) -> tuple[list[MemoryHit], Cursor | None]:
        """Relevance search: FTS5 finds candidates, BM25 ranks them in Python.

        FTS5's own bm25() scans every query token's whole posting list to weigh it, so
        a common word (or a tenant's scope token) costs O(records containing it) per
        query. Instead, weights come from cached document frequencies and candidates are
        gathered token by token, rarest first, stopping as soon as the tokens left
        cannot lift any unseen record into the page (MaxScore pruning). The ranking is
        exhaustive in scopes of up to :data:`_SMALL_SCOPE` records, and in larger ones
        exact unless a token's matches exhaust :data:`_CANDIDATE_BUDGET`; then the most
        common tokens contribute only their newest matches — a query of stopwords ranks
        recent memories, not the whole tenant.
        """
        found = self._filter_expression(conn, plan)
        if found is None:
            return [], None
        scope_filter, scope_size = found
        docs, average, frequencies = self._terms.statistics(conn, plan.tokens)
        weights = {token: ranking.idf(docs, frequencies[token]) for token in plan.tokens}
        offset = (plan.cursor.offset or 0) if plan.cursor is not None else 0
        needed = offset + plan.limit + 1
        budget = max(_CANDIDATE_BUDGET, needed * 4)
        filters, params = self._record_filters(plan)
        scored: dict[int, tuple[float, int]] = {}  # rid -> (score, created_at)

        def matches(tokens: Sequence[str], limit: int) -> list[int]:
            words = " OR ".join(_quote(t) for t in tokens)
            return [
                int(row[0])
                for row in conn.execute(
                    "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                    (f"({scope_filter}) AND ({{content tags}} : ({words}))", limit),
                )
            ]

        def score_rows(rows: Iterable[tuple[Any, ...]], *, matched: bool) -> None:
            for rid, content, tags, created in rows:
                try:
                    if not isinstance(created, int):
                        raise TypeError(created)
                    text = content + " " + " ".join(json.loads(tags)) if tags else content
                except (ValueError, TypeError):
                    self._raise_corrupt(conn, rid)
                value = ranking.score_text(text, average, weights)
                if matched or value > 0:  # every weight is positive: 0 means no query word
                    scored[rid] = (value, created)

        def score(rids: Sequence[int]) -> None:
            for start in range(0, len(rids), 500):
                score_rows(
                    conn.execute(
                        "SELECT r.rid, r.content, r.tags, r.created_at FROM memory_records r "
                        f"WHERE r.rid IN (SELECT value FROM json_each(?)) AND {filters}",
                        [_json_list(rids[start : start + 500]), *params],
                    ),
                    matched=True,
                )

        def order() -> list[tuple[int, tuple[float, int]]]:
            return sorted(scored.items(), key=lambda item: (-item[1][0], -item[1][1], -item[0]))

        if scope_size <= max(_SMALL_SCOPE, budget) and max(frequencies.values()) > scope_size:
            # a small scope and a word commoner than the scope is large: reading the
            # scope's rows is cheaper than probing that word's posting list per record
            scope_ids = _json_list(sid for sid, _ in self._scopes_for(conn, plan))
            score_rows(
                conn.execute(
                    "SELECT r.rid, r.content, r.tags, r.created_at FROM memory_records r "
                    f"WHERE r.scope_id IN (SELECT value FROM json_each(?)) AND {filters}",
                    [scope_ids, *params],
                ),
                matched=False,
            )
            ranked = order()
        elif scope_size <= max(_SMALL_SCOPE, budget):
            # a small scope of rare words: one index query finds every candidate
            score(matches(plan.tokens, scope_size))
            ranked = order()
        else:
            ranked = []
            by_rarity = sorted(plan.tokens, key=lambda t: frequencies[t])
            for index, token in enumerate(by_rarity):
                bound = ranking.upper_bound(weights[t] for t in by_rarity[index:])
                if len(ranked) >= needed and ranked[needed - 1][1][0] > bound:
                    break  # no record holding only the remaining tokens can reach the page
                room = budget - len(scored)
                if room <= 0:
                    break
                score([rid for rid in matches([token], room) if rid not in scored])
                ranked = order()
        page = ranked[offset : offset + plan.limit]
        rows = {
            row["rid"]: row
            for row in _record_rows(
                conn,
                _RECORD_SELECT + _RECORD_FROM + " WHERE r.rid IN (SELECT value FROM json_each(?))",
                [_json_list(rid for rid, _ in page)],
            )
        }
        hits = [MemoryHit(record=record_from_row(rows[rid], _from_db_time), score=value) for rid, (value, _) in page]
        return hits, Cursor(offset=offset + plan.limit) if len(ranked) > offset + plan.limit else None

    # --- admin --------------------------------------------------------------------------

    def _scope_facets(self, scope: Scope | None, values_per_key: int) -> list[ScopeFacet]:
        sql = (
            "SELECT p.key, p.value, sum(s.n_records) FROM memory_scope_pairs p "
            "JOIN memory_scopes s ON s.scope_id = p.scope_id WHERE s.n_records > 0"
        )
        params: list[Any] = []
        with self._read() as conn:
            if scope is not None:
                sql += " AND s.scope_id IN (SELECT value FROM json_each(?))"
                params.append(_json_list(sid for sid, _ in self._subset_scopes(conn, scope, None)))
            rows = conn.execute(sql + " GROUP BY p.key, p.value", params).fetchall()
        by_key: dict[str, Counter[str]] = {}
        for key, value, count in rows:
            by_key.setdefault(key, Counter())[value] = int(count)
        return facets_from_counts(by_key, values_per_key)

    def _count_records(self, plan: SearchPlan) -> ScopeCounts:
        now = _to_db_time(plan.now)
        with self._read() as conn:
            ids = _json_list(sid for sid, _ in self._scopes_for(conn, plan))
            in_scopes = "scope_id IN (SELECT value FROM json_each(?))"
            by_kind = {kind: 0 for kind in KINDS}
            for kind, count in conn.execute(
                f"SELECT kind, sum(n) FROM memory_scope_kinds WHERE {in_scopes} GROUP BY kind", (ids,)
            ):
                by_kind[kind] = int(count)
            invalidated = int(
                conn.execute(
                    f"SELECT count(*) FROM memory_records INDEXED BY memory_records_invalid "
                    f"WHERE {in_scopes} AND invalid_at IS NOT NULL",
                    (ids,),
                ).fetchone()[0]
            )
            expired, expired_valid = conn.execute(
                f"SELECT count(*), coalesce(sum(invalid_at IS NULL), 0) FROM memory_records "
                f"INDEXED BY memory_records_expiring WHERE {in_scopes} AND expires_at IS NOT NULL AND expires_at <= ?",
                (ids, now),
            ).fetchone()
        total = sum(by_kind.values())
        return ScopeCounts(
            total=total,
            live=total - invalidated - int(expired_valid),
            invalidated=invalidated,
            expired=int(expired),
            by_kind=by_kind,
        )


def sqlite_file_stats(path: str | os.PathLike[str]) -> dict[str, int]:
    """Sizes of the memory file and its WAL, in bytes."""
    main = Path(path)
    wal = Path(str(path) + "-wal")
    return {
        "file_bytes": main.stat().st_size if main.exists() else 0,
        "wal_bytes": wal.stat().st_size if wal.exists() else 0,
    }


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SqliteMemoryStore", "dumps", "sqlite_file_stats"]
