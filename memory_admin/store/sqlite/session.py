"""The primitives of one unit of work on a SQLite connection (search itself is
:mod:`.search`; the dialect and the record's row are :mod:`memory_admin.store.sql`)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from memory_admin.events import StoredEvent
from memory_admin.records import KINDS, MemoryHit, MemoryRecord
from memory_admin.scope import TENANT_KEY, Scope, scope_json
from memory_admin.steps import Steps
from memory_admin.store.plan import Candidate, Cursor, SearchPlan, now_us
from memory_admin.store.protocol import ScopeCounts, ScopeFacet
from memory_admin.store.ranking import facets_from_counts
from memory_admin.store.session import Invalidation, Slot, Statement
from memory_admin.store.sql.dialect import SQLITE, id_key, json_list
from memory_admin.store.sql.rows import (
    RECORD_FROM,
    SQLITE_COLUMNS,
    SQLITE_ROW_COLUMNS,
    SQLITE_SELECT,
    event_row,
    scope_tokens,
    sqlite_row,
)
from memory_admin.store.sql.session import SqlSession
from memory_admin.store.sqlite.search import Search, stored_reached, stored_subset

_INSERT_RECORD = (
    f"INSERT INTO memory_records ({', '.join(SQLITE_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(SQLITE_ROW_COLUMNS))})"
)


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    values = {column[0]: value for column, value in zip(cursor.description, row, strict=True)}
    if "id" in values:
        values["id"] = SQLITE.id_text(values["id"])
    return values


def is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def execute_statement(conn: sqlite3.Connection, statement: Statement) -> list[Any]:
    cursor = conn.cursor()
    if not statement.raw:
        cursor.row_factory = _dict_row
    if statement.many:
        cursor.executemany(statement.sql, statement.params)
        return []
    return cursor.execute(statement.sql, statement.params).fetchall()


MERGE_INDEX = "INSERT INTO memory_fts (memory_fts) VALUES ('optimize')"
"""FTS5 keeps a deleted row's words in older segments until they merge: a unit that
forgot something merges the index before it commits."""


class SqliteSession(SqlSession):
    """The primitives of one unit of work on a SQLite connection. ``owing``: a forgetting
    notes in the memory file what it owes the event file (off while that note's own work
    is done, when a store opens the file)."""

    dialect = SQLITE
    record_columns = SQLITE_COLUMNS
    record_select = SQLITE_SELECT + RECORD_FROM

    def __init__(self, searcher: Search, busy_timeout: float, *, owing: bool = True) -> None:
        self._searcher = searcher
        self.codec = searcher.records.codec
        self.record_cache = searcher.records
        self._busy_timeout = busy_timeout
        self._owing = owing
        self.forgot = False
        self.owed: list[int] = []
        """What this unit owes the event file (``memory_events_owed``), cleared once it commits."""

    def records_under(self, scope: Scope) -> Steps[Statement, tuple[str, list[Any]]]:
        scopes = yield from stored_subset(scope, None)
        return "r.scope_id IN (SELECT value FROM json_each(?))", [json_list(sid for sid, _ in scopes)]

    def records_reached(self, plan: SearchPlan, *columns: str) -> Steps[Statement, list[tuple[str, list[Any]]] | None]:
        scopes = yield from stored_reached(plan)
        if not scopes:
            return None
        ids = json_list(sid for sid, _ in scopes)
        return [(f"{column} IN (SELECT value FROM json_each(?))", [ids]) for column in columns]

    def get_many(self, ids: Sequence[str], *, lock: bool = False) -> Steps[Statement, dict[str, MemoryRecord]]:
        found: dict[str, MemoryRecord] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))  # JSON cannot carry the binary form of an id
            rows = yield Statement(
                SQLITE_SELECT + RECORD_FROM + f" WHERE r.id IN ({marks})", [id_key(i) for i in chunk], raw=True
            )
            found.update((record.id, record) for record in self._searcher.read_records(rows))
        return found

    def batch_reads(
        self, ids: Sequence[str], slots: Sequence[Slot], scopes: Sequence[Scope]
    ) -> Steps[Statement, list[MemoryRecord]]:
        found = yield from self.get_many(ids)  # the file's write lock covers every scope
        for scope, kind, key in {(scope_json(scope), kind, key) for scope, kind, key in slots}:
            rows = yield Statement(
                SQLITE_SELECT + RECORD_FROM + " WHERE s.scope = ? AND r.kind = ? AND r.key = ? "
                "AND r.invalid_at IS NULL LIMIT 1",
                [scope, kind, key],
                raw=True,
            )
            found.update((record.id, record) for record in self._searcher.read_records(rows))
        return list(found.values())

    def _scope_ids(self, scopes: dict[str, Scope]) -> Steps[Statement, dict[str, int]]:
        """The ids of these scopes (keyed by canonical JSON), creating the missing ones."""
        rows = yield Statement(
            "SELECT scope, scope_id FROM memory_scopes WHERE scope IN (SELECT value FROM json_each(?))",
            [json_list(scopes)],
            raw=True,
        )
        found = {text: int(scope_id) for text, scope_id in rows}
        missing = [text for text in scopes if text not in found]
        if missing:
            top = yield Statement("SELECT coalesce(max(scope_id), 0) + 1 FROM memory_scopes", raw=True)
            new = {text: int(top[0][0]) + offset for offset, text in enumerate(missing)}
            yield Statement(
                "INSERT INTO memory_scopes (scope_id, scope, tenant, n_pairs, fts_tokens) VALUES (?, ?, ?, ?, ?)",
                [
                    (sid, text, scopes[text][TENANT_KEY], len(scopes[text]), scope_tokens(scopes[text], sid))
                    for text, sid in new.items()
                ],
                many=True,
            )
            yield Statement(
                "INSERT INTO memory_scope_pairs (scope_id, key, value) VALUES (?, ?, ?)",
                [(sid, key, value) for text, sid in new.items() for key, value in scopes[text].items()],
                many=True,
            )
            found.update(new)
        return found

    def insert(self, records: Sequence[MemoryRecord]) -> Steps[Statement, None]:
        texts: dict[tuple[tuple[str, str], ...], str] = {}
        scopes: dict[str, Scope] = {}
        for record in records:
            items = tuple(record.scope.items())
            if items not in texts:
                texts[items] = text = scope_json(record.scope)
                scopes[text] = record.scope
        scope_ids = yield from self._scope_ids(scopes)
        top = yield Statement("SELECT coalesce(max(rid), 0) + 1 FROM memory_records", raw=True)
        first = int(top[0][0])
        rows = [
            sqlite_row(record, first + offset, scope_ids[texts[tuple(record.scope.items())]])
            for offset, record in enumerate(records)
        ]
        yield Statement(_INSERT_RECORD, rows, many=True)
        # one INSERT … SELECT per batch indexes three times faster than a per-row trigger
        yield Statement(
            "INSERT INTO memory_fts (rowid, terms, meta) "
            "SELECT rid, terms, meta FROM memory_fts_source WHERE rid BETWEEN ? AND ?",
            [first, first + len(rows) - 1],
        )
        yield Statement(
            "UPDATE memory_scopes SET n_records = n_records + ? WHERE scope_id = ?",
            [(count, scope_id) for scope_id, count in Counter(row[1] for row in rows).items()],
            many=True,
        )
        yield Statement(
            "INSERT INTO memory_scope_kinds (scope_id, kind, n) VALUES (?, ?, ?) "
            "ON CONFLICT (scope_id, kind) DO UPDATE SET n = n + excluded.n",
            [
                (scope_id, kind, count)
                for (scope_id, kind), count in Counter(
                    (row[1], r.kind) for row, r in zip(rows, records, strict=True)
                ).items()
            ],
            many=True,
        )

    def invalidate(self, changes: Sequence[Invalidation]) -> Steps[Statement, None]:
        yield Statement(
            "UPDATE memory_records SET invalid_at = ?, invalid_reason = ?, superseded_by = ?, updated_at = ? "
            "WHERE id = ?",
            [(now_us(c.at), c.reason, c.superseded_by, now_us(c.at), id_key(c.record_id)) for c in changes],
            many=True,
        )

    def _drop_empty_scopes(self, scope_ids: Iterable[int]) -> Steps[Statement, None]:
        rows = yield Statement(
            "SELECT scope_id FROM memory_scopes WHERE n_records <= 0 AND scope_id IN (SELECT value FROM json_each(?))",
            [json_list(scope_ids)],
            raw=True,
        )
        if rows:
            yield from self._delete_scope_rows([row[0] for row in rows])

    def _delete_scope_rows(self, scope_ids: Sequence[int]) -> Steps[Statement, None]:
        doomed = json_list(scope_ids)
        for table in ("memory_scope_pairs", "memory_scopes", "memory_scope_kinds"):
            yield Statement(f"DELETE FROM {table} WHERE scope_id IN (SELECT value FROM json_each(?))", [doomed])

    def tenant_of(self, record_id: str) -> Steps[Statement, str | None]:
        rows = yield Statement(
            "SELECT s.tenant FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id WHERE r.id = ?",
            [id_key(record_id)],
            raw=True,
        )
        return str(rows[0][0]) if rows else None

    def delete(self, record_id: str) -> Steps[Statement, bool]:
        key = id_key(record_id)
        rows = yield Statement("SELECT scope_id FROM memory_records WHERE id = ?", [key], raw=True)
        if not rows:
            return False
        yield Statement("DELETE FROM memory_records WHERE id = ?", [key])
        yield from self._drop_empty_scopes([rows[0][0]])
        self.forgot = True
        return True

    def expired_ids(self, scope: Scope, now: datetime) -> Steps[Statement, list[str]]:
        scopes = yield from stored_subset(scope, None)
        rows = yield Statement(
            "SELECT id FROM memory_records INDEXED BY memory_records_expiring "
            "WHERE scope_id IN (SELECT value FROM json_each(?)) AND expires_at IS NOT NULL AND expires_at <= ?",
            [json_list(sid for sid, _ in scopes), now_us(now)],
        )
        return [row["id"] for row in rows]

    def scopes_under(self, scope: Scope, *, lock: bool) -> Steps[Statement, list[tuple[int, Scope]]]:
        # a write unit holds the file's write lock already: nothing to lock row by row
        scopes = yield from stored_subset(scope, None)
        rows = yield Statement(
            "SELECT scope_id, scope FROM memory_scopes WHERE scope_id IN (SELECT value FROM json_each(?))",
            [json_list(sid for sid, _ in scopes)],
            raw=True,
        )
        return [(int(sid), json.loads(text)) for sid, text in rows]

    def mark_forgetting(self, tenant: str, clock: Callable[[], datetime]) -> Steps[Statement, None]:
        if self.forgot:
            # merge now (about a second at a million records), so the mark's time is read
            # just before the commit: an event is withheld up to FORGET_MARGIN after it
            yield Statement(MERGE_INDEX)
            self.forgot = False
        yield from super().mark_forgetting(tenant, clock)

    def _owe(self, tenant: str, record_ids: Sequence[str], scope: Scope | None) -> Steps[Statement, None]:
        # noted in the memory file, which commits first: a crash before the event file
        # commits leaves the note, and the next store to open the file does the work again
        rows = yield Statement(
            "INSERT INTO memory_events_owed (tenant, record_ids, scope) VALUES (?, ?, ?) RETURNING id",
            [tenant, json.dumps(list(record_ids)), None if scope is None else json.dumps(scope)],
        )
        self.owed.append(int(rows[0]["id"]))

    def erase_events(self, scope: Scope, *, dry_run: bool) -> Steps[Statement, int]:
        if not dry_run and self._owing:
            yield from self._owe(scope[TENANT_KEY], [], scope)
        return (yield from super().erase_events(scope, dry_run=dry_run))

    def forget_in_events(self, tenant: str, record_ids: Sequence[str]) -> Steps[Statement, int]:
        if record_ids and self._owing:
            yield from self._owe(tenant, record_ids, None)
        return (yield from super().forget_in_events(tenant, record_ids))

    def drop_scopes(self, scope_ids: Sequence[int]) -> Steps[Statement, None]:
        yield Statement(
            "DELETE FROM memory_records WHERE scope_id IN (SELECT value FROM json_each(?))", [json_list(scope_ids)]
        )
        yield from self._delete_scope_rows(scope_ids)
        self.forgot = True

    def search(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        return (yield from self._searcher.page(plan))

    def keyword_candidates(self, plan: SearchPlan, limit: int) -> Steps[Statement, list[Candidate]]:
        return (yield from self._searcher.candidates(plan, limit))

    def count(self, plan: SearchPlan) -> Steps[Statement, ScopeCounts]:
        scopes = yield from stored_reached(plan)
        ids = json_list(sid for sid, _ in scopes)
        in_scopes = "scope_id IN (SELECT value FROM json_each(?))"
        by_kind = dict.fromkeys(KINDS, 0)
        rows = yield Statement(
            f"SELECT kind, sum(n) FROM memory_scope_kinds WHERE {in_scopes} GROUP BY kind", [ids], raw=True
        )
        for kind, count in rows:
            by_kind[kind] = int(count)
        rows = yield Statement(
            f"SELECT count(*) FROM memory_records INDEXED BY memory_records_invalid "
            f"WHERE {in_scopes} AND invalid_at IS NOT NULL",
            [ids],
            raw=True,
        )
        invalidated = int(rows[0][0])
        rows = yield Statement(
            f"SELECT count(*), coalesce(sum(invalid_at IS NULL), 0) FROM memory_records "
            f"INDEXED BY memory_records_expiring WHERE {in_scopes} AND expires_at IS NOT NULL AND expires_at <= ?",
            [ids, now_us(plan.now)],
            raw=True,
        )
        expired, expired_valid = rows[0]
        total = sum(by_kind.values())
        return ScopeCounts(
            total=total,
            live=total - invalidated - int(expired_valid),
            invalidated=invalidated,
            expired=int(expired),
            by_kind=by_kind,
        )

    def facets(self, scope: Scope | None, values_per_key: int) -> Steps[Statement, list[ScopeFacet]]:
        sql = (
            "SELECT p.key, p.value, sum(s.n_records) FROM memory_scope_pairs p "
            "JOIN memory_scopes s ON s.scope_id = p.scope_id WHERE s.n_records > 0"
        )
        params: list[Any] = []
        if scope is not None:
            sql += " AND s.scope_id IN (SELECT value FROM json_each(?))"
            params.append(json_list(sid for sid, _ in (yield from stored_subset(scope, None))))
        by_key: dict[str, Counter[str]] = {}
        for key, value, count in (yield Statement(sql + " GROUP BY p.key, p.value", params, raw=True)):
            by_key.setdefault(key, Counter())[value] = int(count)
        return facets_from_counts(by_key, values_per_key)

    def import_events(self, events: Sequence[StoredEvent]) -> Steps[Statement, int]:
        added = 0
        for stored in events:
            rows = yield Statement(
                "INSERT INTO memory_events (eid, type, at, tenant, scope, agent, preview, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (eid) DO NOTHING RETURNING eid",
                [stored.id, *event_row(SQLITE, stored.event)],
            )
            added += len(rows)
        return added

    def scrub(self, wait: float) -> Steps[Statement, bool]:
        """Checkpoint and truncate the WAL so no frame keeps forgotten content; a reader
        holding an older snapshot keeps the checkpoint from finishing."""
        deadline = time.monotonic() + wait
        # a checkpoint waits for readers through the busy handler: bound each try by ``wait``
        yield Statement(f"PRAGMA busy_timeout = {max(1, int(wait * 1000))}", raw=True)
        try:
            while True:
                try:
                    busy = (yield Statement("PRAGMA wal_checkpoint(TRUNCATE)", raw=True))[0][0]
                except sqlite3.OperationalError as exc:
                    if not is_busy(exc):
                        raise
                    busy = 1
                if not busy:
                    return True
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.02)
        finally:
            yield Statement(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}", raw=True)

    def optimize(self) -> Steps[Statement, None]:
        """Merge the full-text index into one segment (every query opens each segment)."""
        yield from begin_immediate(self._busy_timeout)
        yield Statement("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        yield Statement("COMMIT")
        yield from self.scrub(self._busy_timeout)


def begin_immediate(timeout: float) -> Steps[Statement, None]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            yield Statement("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
