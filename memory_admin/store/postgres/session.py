"""The primitives of one unit of work on a PostgreSQL connection: the write ops (locks
first, in one order), and the session that answers the pipeline with them and with the
search ops of :mod:`.search`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memory_admin.events import StoredEvent
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.scope import TENANT_KEY, Scope, scope_json
from memory_admin.store._sql import (
    RECORD_COLUMNS,
    Op,
    RecordCache,
    SqlSession,
    Statement,
    event_row,
    record_values,
)
from memory_admin.store.base import (
    Invalidation,
    Slot,
)
from memory_admin.store.plan import Candidate, Cursor, SearchPlan
from memory_admin.store.postgres.search import (
    DIALECT,
    RECORD_FROM,
    RECORD_SELECT,
    TermFrequencies,
    candidates_op,
    count_op,
    document,
    facets_op,
    kind_lexeme,
    list_op,
    pair_lexeme,
    scope_condition,
    scope_ids_op,
    scope_lexeme,
    scope_pair_lexemes,
)
from memory_admin.store.protocol import ScopeCounts, ScopeFacet
from memory_admin.store.vectors import VectorCache

# column, SQL array type — the order the insert statement binds them in
_INSERT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scope_id", "bigint"),
    ("tenant", "text"),
    *((c, "timestamptz" if c.endswith("_at") else "text") for c in RECORD_COLUMNS),
    ("n_tokens", "integer"),
    ("tsv", "tsvector"),
)


# --- write primitives -----------------------------------------------------------------


def fetch_op(ids: Sequence[str], records: RecordCache, *, lock: bool = False) -> Op[dict[str, MemoryRecord]]:
    if not ids:
        return {}
    sql = RECORD_SELECT + RECORD_FROM + " WHERE r.id = ANY(%s)"
    if lock:
        sql += " ORDER BY r.id FOR UPDATE OF r"
    rows = yield Statement(sql, [list(ids)])
    return {row["id"]: records(row) for row in rows}


def lock_scopes_op(scopes: Mapping[str, Scope]) -> Op[dict[str, int]]:
    """Create the missing scopes and lock every one of them, in scope order (so writers
    never deadlock); returns their ids by canonical JSON."""
    texts = sorted(scopes)
    rows = yield Statement(
        "INSERT INTO memory_scopes AS sc (scope, tenant, lexemes) "
        "SELECT v.scope, v.tenant, string_to_array(v.lexemes, ' ') "
        "FROM unnest(%s::text[], %s::text[], %s::text[]) AS v(scope, tenant, lexemes) ORDER BY v.scope "
        # DO UPDATE (not DO NOTHING) locks an existing row, and survives its concurrent deletion
        "ON CONFLICT (scope) DO UPDATE SET tenant = EXCLUDED.tenant RETURNING sc.scope_id, sc.scope",
        [
            texts,
            [scopes[text][TENANT_KEY] for text in texts],
            [" ".join(scope_pair_lexemes(scopes[text])) for text in texts],
        ],
    )
    return {row["scope"]: int(row["scope_id"]) for row in rows}


def insert_op(records: Sequence[MemoryRecord], scope_ids: Mapping[str, int]) -> Op[None]:
    columns: dict[str, list[Any]] = {name: [] for name, _ in _INSERT_COLUMNS}
    for record in records:
        text = scope_json(record.scope)
        values = record_values(record, DIALECT.to_db_time)
        tsv, n_tokens = document(
            record.content,
            record.tags,
            record.observed_at,
            [*scope_pair_lexemes(record.scope), scope_lexeme(record.scope), kind_lexeme(record.kind)],
        )
        values.update(scope_id=scope_ids[text], tenant=record.scope[TENANT_KEY], n_tokens=n_tokens, tsv=tsv)
        for name in columns:
            columns[name].append(values[name])
    names = ", ".join(name for name, _ in _INSERT_COLUMNS)
    arrays = ", ".join(f"%s::{kind}[]" for _, kind in _INSERT_COLUMNS)
    # unnest keeps input order, so seq (the batch tiebreak) follows it
    yield Statement(f"INSERT INTO memory_records ({names}) SELECT * FROM unnest({arrays})", list(columns.values()))


def invalidate_op(changes: Sequence[Invalidation]) -> Op[None]:
    yield Statement(
        "UPDATE memory_records r SET invalid_at = v.at, updated_at = v.at, invalid_reason = v.reason, "
        "superseded_by = v.successor "
        "FROM unnest(%s::text[], %s::timestamptz[], %s::text[], %s::text[]) AS v(id, at, reason, successor) "
        "WHERE r.id = v.id",
        [
            [c.record_id for c in changes],
            [c.at for c in changes],
            [c.reason for c in changes],
            [c.superseded_by for c in changes],
        ],
    )


def delete_op(record_id: str) -> Op[bool]:
    rows = yield Statement("SELECT scope_id FROM memory_records WHERE id = %s", [record_id])
    if not rows:
        return False
    scope_id = rows[0]["scope_id"]
    # the scope row first, as writers take it: the same lock order everywhere
    yield Statement("SELECT 1 FROM memory_scopes WHERE scope_id = %s FOR UPDATE", [scope_id])
    gone = yield Statement("DELETE FROM memory_records WHERE id = %s RETURNING 1", [record_id])
    yield Statement("DELETE FROM memory_scopes WHERE scope_id = %s AND n_records <= 0", [scope_id])
    return bool(gone)


def expired_ids_op(scope: Scope, now: datetime) -> Op[list[str]]:
    """The expired records under a scope, their scopes locked first (in scope order, as
    every writer locks them) since deleting each one takes its scope's lock."""
    scope_rows = yield Statement(
        "SELECT scope_id FROM memory_scopes WHERE lexemes @> %s::text[] ORDER BY scope FOR UPDATE",
        [[pair_lexeme(key, value) for key, value in scope.items()]],
    )
    rows = yield Statement(
        "SELECT id FROM memory_records WHERE scope_id = ANY(%s) AND expires_at <= %s ORDER BY id",
        [[row["scope_id"] for row in scope_rows], now],
    )
    return [row["id"] for row in rows]


def import_events_op(events: Sequence[StoredEvent]) -> Op[int]:
    columns = list(zip(*([stored.id, *event_row(DIALECT, stored.event)] for stored in events), strict=True))
    rows = yield Statement(
        "INSERT INTO memory_events (eid, type, at, tenant, scope, agent, preview, body) "
        "SELECT v.eid, v.type, v.at, v.tenant, v.scope::jsonb, v.agent, v.preview, v.body FROM unnest("
        "%s::bigint[], %s::text[], %s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::boolean[], %s::text[]"
        ") AS v(eid, type, at, tenant, scope, agent, preview, body) ON CONFLICT (eid) DO NOTHING RETURNING eid",
        [list(column) for column in columns],
    )
    # appends continue after the highest imported id
    yield Statement(
        "SELECT setval(pg_get_serial_sequence('memory_events', 'eid'), "
        "greatest((SELECT max(eid) FROM memory_events), 1))"
    )
    return len(rows)


def _lock_rows_op(
    ids: Sequence[str], slots: Sequence[Slot], scope_ids: Mapping[str, int], records: RecordCache
) -> Op[list[MemoryRecord]]:
    """The records with these ids and the live holders of these key slots, locked in id order."""
    keyed = sorted({(scope_ids[scope_json(scope)], kind, key) for scope, kind, key in slots})
    rows = yield Statement(
        RECORD_SELECT + RECORD_FROM + " WHERE r.seq IN ("
        "SELECT seq FROM memory_records WHERE id = ANY(%s::text[]) UNION "
        "SELECT h.seq FROM memory_records h "
        "JOIN unnest(%s::bigint[], %s::text[], %s::text[]) AS v(scope_id, kind, key) "
        "ON h.scope_id = v.scope_id AND h.kind = v.kind AND h.key = v.key "
        "WHERE h.key IS NOT NULL AND h.invalid_at IS NULL"
        ") ORDER BY r.id FOR UPDATE OF r",
        [list(ids), [k[0] for k in keyed], [k[1] for k in keyed], [k[2] for k in keyed]],
    )
    # the locked rows' latest versions: a holder invalidated while we waited for its
    # lock is no holder any more
    return list(map(records, rows))


class PostgresSession(SqlSession):
    """The primitives of one unit of work on a PostgreSQL connection."""

    dialect = DIALECT
    record_select = RECORD_SELECT + RECORD_FROM

    def __init__(
        self, frequencies: TermFrequencies, records: RecordCache, vector_cache: VectorCache | None = None
    ) -> None:
        self._frequencies = frequencies
        self._records = records
        self.vector_cache = vector_cache
        self._scope_ids: dict[str, int] = {}

    def records_under(self, scope: Scope) -> Op[tuple[str, list[Any]]]:
        return (
            "r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE sc.lexemes @> %s::text[])",
            [[pair_lexeme(key, value) for key, value in scope.items()]],
        )
        yield  # pragma: no cover - makes this an op

    def records_reached(self, plan: SearchPlan, *columns: str) -> Op[list[tuple[str, list[Any]]] | None]:
        scope_ids = yield from scope_ids_op(plan)
        if scope_ids is not None:
            return [(f"{column} = ANY(%s::bigint[])", [scope_ids]) for column in columns] if scope_ids else None
        scope_where, scope_params = scope_condition(plan)
        conditions = []
        for column in columns:
            within = f"{column} IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where})"
            if column.startswith("r."):  # the records' tenant index narrows first
                conditions.append((f"r.tenant = %s AND {within}", [plan.query.scope[TENANT_KEY], *scope_params]))
            else:
                conditions.append((within, scope_params))
        return conditions

    def _locked_scopes(self, scopes: Mapping[str, Scope]) -> Op[dict[str, int]]:
        missing = {text: scope for text, scope in scopes.items() if text not in self._scope_ids}
        if missing:
            self._scope_ids.update((yield from lock_scopes_op(missing)))
        return self._scope_ids

    def get_many(self, ids: Sequence[str], *, lock: bool = False) -> Op[dict[str, MemoryRecord]]:
        return (yield from fetch_op(ids, self._records, lock=lock))

    def batch_reads(self, ids: Sequence[str], slots: Sequence[Slot], scopes: Sequence[Scope]) -> Op[list[MemoryRecord]]:
        # every scope of the batch is locked first, in one order, before anything is read
        scope_ids = yield from self._locked_scopes({scope_json(s): s for s in scopes})
        return (yield from _lock_rows_op(ids, slots, scope_ids, self._records))

    def insert(self, records: Sequence[MemoryRecord]) -> Op[None]:
        scope_ids = yield from self._locked_scopes({scope_json(r.scope): r.scope for r in records})
        yield from insert_op(records, scope_ids)

    def invalidate(self, changes: Sequence[Invalidation]) -> Op[None]:
        yield from invalidate_op(changes)

    def delete(self, record_id: str) -> Op[bool]:
        return (yield from delete_op(record_id))

    def expired_ids(self, scope: Scope, now: datetime) -> Op[list[str]]:
        return (yield from expired_ids_op(scope, now))

    def scopes_under(self, scope: Scope, *, lock: bool) -> Op[list[tuple[int, Scope]]]:
        rows = yield Statement(
            "SELECT scope_id, scope FROM memory_scopes WHERE lexemes @> %s::text[] ORDER BY scope"
            + (" FOR UPDATE" if lock else ""),
            [[pair_lexeme(key, value) for key, value in scope.items()]],
        )
        return [(int(row["scope_id"]), json.loads(row["scope"])) for row in rows]

    def tenant_of(self, record_id: str) -> Op[str | None]:
        rows = yield Statement("SELECT tenant FROM memory_records WHERE id = %s", [record_id])
        return str(rows[0]["tenant"]) if rows else None

    def drop_scopes(self, scope_ids: Sequence[int]) -> Op[None]:
        yield Statement("DELETE FROM memory_records WHERE scope_id = ANY(%s)", [list(scope_ids)])
        yield Statement("DELETE FROM memory_scopes WHERE scope_id = ANY(%s)", [list(scope_ids)])

    def search(self, plan: SearchPlan) -> Op[tuple[list[MemoryHit], Cursor | None]]:
        return (yield from list_op(plan, self._frequencies, self._records))

    def keyword_candidates(self, plan: SearchPlan, limit: int) -> Op[list[Candidate]]:
        return (yield from candidates_op(plan, self._frequencies, limit))

    def count(self, plan: SearchPlan) -> Op[ScopeCounts]:
        return (yield from count_op(plan))

    def facets(self, scope: Scope | None, values_per_key: int) -> Op[list[ScopeFacet]]:
        return (yield from facets_op(scope, values_per_key))

    def import_events(self, events: Sequence[StoredEvent]) -> Op[int]:
        return (yield from import_events_op(events))

    def scrub(self, wait: float) -> Op[bool]:
        # a deleted row's bytes stay in the heap until VACUUM FULL, which no online
        # operation may run: the operator's procedure is in docs/privacy.md
        return True
        yield  # pragma: no cover - makes this an op

    def optimize(self) -> Op[None]:
        # VACUUM cannot run in a transaction; a maintain unit runs in autocommit
        yield Statement("VACUUM (ANALYZE) memory_records, memory_scopes, memory_events")
