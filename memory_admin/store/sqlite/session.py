"""The primitives of one unit of work on a SQLite connection: the dialect, how a record
becomes a row, and the session that answers the pipeline (search itself is
:mod:`.search`)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from memory_admin.events import StoredEvent
from memory_admin.records import KINDS, MemoryHit, MemoryRecord
from memory_admin.scope import TENANT_KEY, Scope, scope_json
from memory_admin.store._sql import (
    RECORD_COLUMNS,
    Dialect,
    Op,
    SqlSession,
    Statement,
    event_row,
    record_values,
    scope_tokens,
)
from memory_admin.store.base import (
    Invalidation,
    Slot,
)
from memory_admin.store.ids import from_value, ulid_value
from memory_admin.store.plan import Candidate, Cursor, SearchPlan, now_us
from memory_admin.store.protocol import ScopeCounts, ScopeFacet
from memory_admin.store.ranking import facets_from_counts
from memory_admin.store.sqlite.search import (
    PROVENANCE_COLUMNS,
    RECORD_FROM,
    RECORD_SELECT,
    Scopes,
    Search,
    json_list,
)


class SqliteDialect(Dialect):
    p = "?"
    key = "rid"
    true = "1"

    def to_db_time(self, value: datetime) -> int:
        return now_us(value)

    def from_db_time(self, value: Any) -> datetime:
        if not isinstance(value, int):
            raise TypeError(f"timestamp column holds {type(value).__name__}, expected integer microseconds")
        return datetime.fromtimestamp(value // 1_000_000, UTC).replace(microsecond=value % 1_000_000)

    def one_of(self, column: str, values: Iterable[Any]) -> tuple[str, list[Any]]:
        listed = list(values)
        if len(listed) == 1:  # the planner compares one value per row without a subquery
            return f"{column} = ?", listed
        return f"{column} IN (SELECT value FROM json_each(?))", [json_list(listed)]

    def tags_contain(self, column: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return " AND ".join(f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)" for _ in tags), list(tags)

    def key_prefix(self, column: str, prefixes: Sequence[str]) -> tuple[str, list[Any]]:
        clause = "(" + " OR ".join(f"substr({column}, 1, ?) = ?" for _ in prefixes) + ")"
        return clause, [value for prefix in prefixes for value in (len(prefix), prefix)]

    def events_under(self, scope: Scope) -> tuple[str, list[Any]]:
        clauses = ["tenant = ?"]
        params: list[Any] = [scope[TENANT_KEY]]
        for key, value in scope.items():
            if key != TENANT_KEY:
                # keys are validated identifiers, so the JSON path cannot be malformed
                clauses.append("json_extract(scope, ?) = ?")
                params += [f"$.{key}", value]
        return " AND ".join(clauses), params

    def flag(self, column: str, value: bool) -> str:
        return f"{column} = {int(value)}"

    def json_param(self) -> str:
        return "?"

    def id_param(self, record_id: str) -> Any:
        return id_key(record_id)

    def id_text(self, stored: Any) -> str:
        return _id_text(stored)

    def insert_rows(self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> Statement:
        # one statement over one JSON array of the rows: SQLite inserts them all in one
        # step, so the writing thread lets go of the GIL once, not once a row (a thread
        # that takes it back row by row slows every other thread of the process)
        names = ", ".join(name for name, _ in columns)
        values = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(columns)))
        return Statement(
            f"INSERT INTO {table} ({names}) SELECT {values} FROM json_each(?)",
            [json.dumps(rows, ensure_ascii=False)],
        )


DIALECT = SqliteDialect()

_ROW_COLUMNS = ("rid", "scope_id", *(c for c in RECORD_COLUMNS if c != "provenance"), *PROVENANCE_COLUMNS)
_INSERT_RECORD = f"INSERT INTO memory_records ({', '.join(_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(_ROW_COLUMNS))})"


def id_key(record_id: str) -> bytes | str:
    """How an id is stored: a canonical id as its 16 bytes (half the size of its text,
    in the row and in the unique index), any other id as text."""
    value = ulid_value(record_id)
    return record_id if value is None else value.to_bytes(16, "big")


def _id_text(stored: bytes | str) -> str:
    return from_value(int.from_bytes(stored, "big")) if isinstance(stored, bytes) else stored


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    values = {column[0]: value for column, value in zip(cursor.description, row, strict=True)}
    if "id" in values:
        values["id"] = _id_text(values["id"])
    return values


def _record_row(record: MemoryRecord, rid: int, scope_id: int) -> tuple[Any, ...]:
    """A record's row, in :data:`_ROW_COLUMNS` order (writing a batch builds thousands)."""
    values = record_values(record, now_us, provenance_json=False)
    values["id"] = id_key(record.id)
    values["rid"] = rid
    values["scope_id"] = scope_id
    provenance = record.provenance
    values["source"] = provenance.source
    values["author"] = provenance.author
    values["conversation_id"] = provenance.conversation_id
    values["run_id"] = provenance.run_id
    return tuple(values[column] for column in _ROW_COLUMNS)


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
    """The primitives of one unit of work on a SQLite connection."""

    dialect = DIALECT
    record_select = RECORD_SELECT + RECORD_FROM

    def __init__(self, searcher: Search, busy_timeout: float) -> None:
        self._searcher = searcher
        self._busy_timeout = busy_timeout
        self.forgot = False
        self.owed: list[int] = []
        """What this unit owes the event file (``memory_events_owed``), cleared once it commits."""

    def records_under(self, scope: Scope) -> Op[tuple[str, list[Any]]]:
        scopes = yield from Scopes.subset(scope, None)
        return "r.scope_id IN (SELECT value FROM json_each(?))", [json_list(sid for sid, _ in scopes)]

    def records_reached(self, plan: SearchPlan, *columns: str) -> Op[list[tuple[str, list[Any]]] | None]:
        scopes = yield from Scopes.reached(plan)
        if not scopes:
            return None
        ids = json_list(sid for sid, _ in scopes)
        return [(f"{column} IN (SELECT value FROM json_each(?))", [ids]) for column in columns]

    def get_many(self, ids: Sequence[str], *, lock: bool = False) -> Op[dict[str, MemoryRecord]]:
        found: dict[str, MemoryRecord] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))  # JSON cannot carry the binary form of an id
            rows = yield Statement(
                RECORD_SELECT + RECORD_FROM + f" WHERE r.id IN ({marks})", [id_key(i) for i in chunk], raw=True
            )
            found.update((record.id, record) for record in self._searcher.read_records(rows))
        return found

    def batch_reads(self, ids: Sequence[str], slots: Sequence[Slot], scopes: Sequence[Scope]) -> Op[list[MemoryRecord]]:
        found = yield from self.get_many(ids)  # the file's write lock covers every scope
        for scope, kind, key in {(scope_json(scope), kind, key) for scope, kind, key in slots}:
            rows = yield Statement(
                RECORD_SELECT + RECORD_FROM + " WHERE s.scope = ? AND r.kind = ? AND r.key = ? "
                "AND r.invalid_at IS NULL LIMIT 1",
                [scope, kind, key],
                raw=True,
            )
            found.update((record.id, record) for record in self._searcher.read_records(rows))
        return list(found.values())

    def _scope_ids(self, scopes: dict[str, Scope]) -> Op[dict[str, int]]:
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

    def insert(self, records: Sequence[MemoryRecord]) -> Op[None]:
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
            _record_row(record, first + offset, scope_ids[texts[tuple(record.scope.items())]])
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

    def invalidate(self, changes: Sequence[Invalidation]) -> Op[None]:
        yield Statement(
            "UPDATE memory_records SET invalid_at = ?, invalid_reason = ?, superseded_by = ?, updated_at = ? "
            "WHERE id = ?",
            [(now_us(c.at), c.reason, c.superseded_by, now_us(c.at), id_key(c.record_id)) for c in changes],
            many=True,
        )

    def _drop_empty_scopes(self, scope_ids: Iterable[int]) -> Op[None]:
        rows = yield Statement(
            "SELECT scope_id FROM memory_scopes WHERE n_records <= 0 AND scope_id IN (SELECT value FROM json_each(?))",
            [json_list(scope_ids)],
            raw=True,
        )
        if rows:
            yield from self._delete_scope_rows([row[0] for row in rows])

    def _delete_scope_rows(self, scope_ids: Sequence[int]) -> Op[None]:
        doomed = json_list(scope_ids)
        for table in ("memory_scope_pairs", "memory_scopes", "memory_scope_kinds"):
            yield Statement(f"DELETE FROM {table} WHERE scope_id IN (SELECT value FROM json_each(?))", [doomed])

    def tenant_of(self, record_id: str) -> Op[str | None]:
        rows = yield Statement(
            "SELECT s.tenant FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id WHERE r.id = ?",
            [id_key(record_id)],
            raw=True,
        )
        return str(rows[0][0]) if rows else None

    def delete(self, record_id: str) -> Op[bool]:
        key = id_key(record_id)
        rows = yield Statement("SELECT scope_id FROM memory_records WHERE id = ?", [key], raw=True)
        if not rows:
            return False
        yield Statement("DELETE FROM memory_records WHERE id = ?", [key])
        yield from self._drop_empty_scopes([rows[0][0]])
        self.forgot = True
        return True

    def expired_ids(self, scope: Scope, now: datetime) -> Op[list[str]]:
        scopes = yield from Scopes.subset(scope, None)
        rows = yield Statement(
            "SELECT id FROM memory_records INDEXED BY memory_records_expiring "
            "WHERE scope_id IN (SELECT value FROM json_each(?)) AND expires_at IS NOT NULL AND expires_at <= ?",
            [json_list(sid for sid, _ in scopes), now_us(now)],
        )
        return [row["id"] for row in rows]

    def scopes_under(self, scope: Scope, *, lock: bool) -> Op[list[tuple[int, Scope]]]:
        # a write unit holds the file's write lock already: nothing to lock row by row
        scopes = yield from Scopes.subset(scope, None)
        rows = yield Statement(
            "SELECT scope_id, scope FROM memory_scopes WHERE scope_id IN (SELECT value FROM json_each(?))",
            [json_list(sid for sid, _ in scopes)],
            raw=True,
        )
        return [(int(sid), json.loads(text)) for sid, text in rows]

    def mark_forgetting(self, tenant: str, clock: Callable[[], datetime]) -> Op[None]:
        if self.forgot:
            # merge now (about a second at a million records), so the mark's time is read
            # just before the commit: an event is withheld up to FORGET_MARGIN after it
            yield Statement(MERGE_INDEX)
            self.forgot = False
        yield from super().mark_forgetting(tenant, clock)

    def _owe(self, tenant: str, record_ids: Sequence[str], scope: Scope | None) -> Op[None]:
        # noted in the memory file, which commits first: a crash before the event file
        # commits leaves the note, and the next store to open the file does the work again
        rows = yield Statement(
            "INSERT INTO memory_events_owed (tenant, record_ids, scope) VALUES (?, ?, ?) RETURNING id",
            [tenant, json.dumps(list(record_ids)), None if scope is None else json.dumps(scope)],
        )
        self.owed.append(int(rows[0]["id"]))

    def erase_events(self, scope: Scope, *, dry_run: bool) -> Op[int]:
        if not dry_run:
            yield from self._owe(scope[TENANT_KEY], [], scope)
        return (yield from super().erase_events(scope, dry_run=dry_run))

    def forget_in_events(self, tenant: str, record_ids: Sequence[str]) -> Op[int]:
        if record_ids:
            yield from self._owe(tenant, record_ids, None)
        return (yield from super().forget_in_events(tenant, record_ids))

    def drop_scopes(self, scope_ids: Sequence[int]) -> Op[None]:
        yield Statement(
            "DELETE FROM memory_records WHERE scope_id IN (SELECT value FROM json_each(?))", [json_list(scope_ids)]
        )
        yield from self._delete_scope_rows(scope_ids)
        self.forgot = True

    def search(self, plan: SearchPlan) -> Op[tuple[list[MemoryHit], Cursor | None]]:
        return (yield from self._searcher(plan))

    def keyword_candidates(self, plan: SearchPlan, limit: int) -> Op[list[Candidate]]:
        return (yield from self._searcher.candidates(plan, limit))

    def count(self, plan: SearchPlan) -> Op[ScopeCounts]:
        scopes = yield from Scopes.reached(plan)
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

    def facets(self, scope: Scope | None, values_per_key: int) -> Op[list[ScopeFacet]]:
        sql = (
            "SELECT p.key, p.value, sum(s.n_records) FROM memory_scope_pairs p "
            "JOIN memory_scopes s ON s.scope_id = p.scope_id WHERE s.n_records > 0"
        )
        params: list[Any] = []
        if scope is not None:
            sql += " AND s.scope_id IN (SELECT value FROM json_each(?))"
            params.append(json_list(sid for sid, _ in (yield from Scopes.subset(scope, None))))
        by_key: dict[str, Counter[str]] = {}
        for key, value, count in (yield Statement(sql + " GROUP BY p.key, p.value", params, raw=True)):
            by_key.setdefault(key, Counter())[value] = int(count)
        return facets_from_counts(by_key, values_per_key)

    def import_events(self, events: Sequence[StoredEvent]) -> Op[int]:
        added = 0
        for stored in events:
            rows = yield Statement(
                "INSERT INTO memory_events (eid, type, at, tenant, scope, agent, preview, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (eid) DO NOTHING RETURNING eid",
                [stored.id, *event_row(DIALECT, stored.event)],
            )
            added += len(rows)
        return added

    def scrub(self, wait: float) -> Op[bool]:
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

    def optimize(self) -> Op[None]:
        """Merge the full-text index into one segment (every query opens each segment)."""
        yield from begin_immediate(self._busy_timeout)
        yield Statement("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        yield Statement("COMMIT")
        yield from self.scrub(self._busy_timeout)


def begin_immediate(timeout: float) -> Op[None]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            yield Statement("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
