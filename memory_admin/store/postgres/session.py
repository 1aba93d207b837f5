"""The primitives of one unit of work on a PostgreSQL connection: the write primitives
(locks first, in one order), the counts and facets, and the searches of :mod:`.search`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memory_admin.events import StoredEvent
from memory_admin.records import KINDS, MemoryHit, MemoryRecord
from memory_admin.scope import TENANT_KEY, Scope, scope_json
from memory_admin.steps import Steps
from memory_admin.store import ranking
from memory_admin.store.plan import Candidate, Cursor, SearchPlan
from memory_admin.store.postgres.index import document, kind_lexeme, pair_lexemes, scope_lexeme, scope_pair_lexemes
from memory_admin.store.postgres.search import PostgresSearch, scope_condition, scope_ids
from memory_admin.store.protocol import ScopeCounts, ScopeFacet
from memory_admin.store.session import Invalidation, Slot, Statement
from memory_admin.store.sql.dialect import POSTGRES
from memory_admin.store.sql.rows import (
    POSTGRES_COLUMNS,
    POSTGRES_INSERT_COLUMNS,
    POSTGRES_SELECT,
    RECORD_FROM,
    event_row,
    record_values,
)
from memory_admin.store.sql.session import SqlSession
from memory_admin.store.vectors import VectorCache


class PostgresSession(SqlSession):
    """The primitives of one unit of work on a PostgreSQL connection."""

    dialect = POSTGRES
    record_columns = POSTGRES_COLUMNS
    record_select = POSTGRES_SELECT + RECORD_FROM

    def __init__(self, searcher: PostgresSearch, vector_cache: VectorCache | None = None) -> None:
        self._searcher = searcher
        self.codec = searcher.records.codec
        self.record_cache = searcher.records
        self.vector_cache = vector_cache
        self._scope_ids: dict[str, int] = {}

    def records_under(self, scope: Scope) -> Steps[Statement, tuple[str, list[Any]]]:
        return (
            "r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE sc.lexemes @> %s::text[])",
            [pair_lexemes(scope)],
        )
        yield  # pragma: no cover - makes this a generator

    def records_reached(self, plan: SearchPlan, *columns: str) -> Steps[Statement, list[tuple[str, list[Any]]] | None]:
        found = yield from scope_ids(plan)
        if found is not None:
            return [(f"{column} = ANY(%s::bigint[])", [found]) for column in columns] if found else None
        scope_where, scope_params = scope_condition(plan)
        conditions = []
        for column in columns:
            within = f"{column} IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where})"
            if column.startswith("r."):  # the records' tenant index narrows first
                conditions.append((f"r.tenant = %s AND {within}", [plan.query.scope[TENANT_KEY], *scope_params]))
            else:
                conditions.append((within, scope_params))
        return conditions

    # --- writes: every scope of a batch locked first, in one order ----------------------

    def _locked_scopes(self, scopes: Mapping[str, Scope]) -> Steps[Statement, dict[str, int]]:
        """Create the missing scopes and lock every one of them, in scope order (so writers
        never deadlock); their ids by canonical JSON."""
        missing = sorted(text for text in scopes if text not in self._scope_ids)
        if missing:
            rows = yield Statement(
                "INSERT INTO memory_scopes AS sc (scope, tenant, lexemes) "
                "SELECT v.scope, v.tenant, string_to_array(v.lexemes, ' ') "
                "FROM unnest(%s::text[], %s::text[], %s::text[]) AS v(scope, tenant, lexemes) ORDER BY v.scope "
                # DO UPDATE (not DO NOTHING) locks an existing row, and survives its concurrent deletion
                "ON CONFLICT (scope) DO UPDATE SET tenant = EXCLUDED.tenant RETURNING sc.scope_id, sc.scope",
                [
                    missing,
                    [scopes[text][TENANT_KEY] for text in missing],
                    [" ".join(scope_pair_lexemes(scopes[text])) for text in missing],
                ],
                raw=True,
            )
            self._scope_ids.update((text, int(scope_id)) for scope_id, text in rows)
        return self._scope_ids

    def get_many(self, ids: Sequence[str], *, lock: bool = False) -> Steps[Statement, dict[str, MemoryRecord]]:
        if not ids:
            return {}
        sql = self.record_select + " WHERE r.id = ANY(%s)"
        if lock:
            sql += " ORDER BY r.id FOR UPDATE OF r"
        rows = yield Statement(sql, [list(ids)], raw=True)
        return {record.id: record for record in self._searcher.records.records(rows)}

    def batch_reads(
        self, ids: Sequence[str], slots: Sequence[Slot], scopes: Sequence[Scope]
    ) -> Steps[Statement, list[MemoryRecord]]:
        """The records with these ids and the live holders of these key slots, locked in id
        order, after every scope of the batch."""
        scope_ids = yield from self._locked_scopes({scope_json(s): s for s in scopes})
        keyed = sorted({(scope_ids[scope_json(scope)], kind, key) for scope, kind, key in slots})
        rows = yield Statement(
            self.record_select + " WHERE r.seq IN ("
            "SELECT seq FROM memory_records WHERE id = ANY(%s::text[]) UNION "
            "SELECT h.seq FROM memory_records h "
            "JOIN unnest(%s::bigint[], %s::text[], %s::text[]) AS v(scope_id, kind, key) "
            "ON h.scope_id = v.scope_id AND h.kind = v.kind AND h.key = v.key "
            "WHERE h.key IS NOT NULL AND h.invalid_at IS NULL"
            ") ORDER BY r.id FOR UPDATE OF r",
            [list(ids), [k[0] for k in keyed], [k[1] for k in keyed], [k[2] for k in keyed]],
            raw=True,
        )
        # the locked rows' latest versions: a holder invalidated while we waited for its
        # lock is no holder any more
        return self._searcher.records.records(rows)

    def insert(self, records: Sequence[MemoryRecord]) -> Steps[Statement, None]:
        scope_ids = yield from self._locked_scopes({scope_json(r.scope): r.scope for r in records})
        columns: dict[str, list[Any]] = {name: [] for name, _ in POSTGRES_INSERT_COLUMNS}
        for record in records:
            values = record_values(record, POSTGRES.to_db_time)
            tsv, n_tokens = document(
                record.content,
                record.tags,
                record.observed_at,
                [*scope_pair_lexemes(record.scope), scope_lexeme(record.scope), kind_lexeme(record.kind)],
            )
            values.update(
                scope_id=scope_ids[scope_json(record.scope)],
                tenant=record.scope[TENANT_KEY],
                n_tokens=n_tokens,
                tsv=tsv,
            )
            for name in columns:
                columns[name].append(values[name])
        names = ", ".join(name for name, _ in POSTGRES_INSERT_COLUMNS)
        arrays = ", ".join(f"%s::{kind}[]" for _, kind in POSTGRES_INSERT_COLUMNS)
        # unnest keeps input order, so seq (the batch tiebreak) follows it
        yield Statement(f"INSERT INTO memory_records ({names}) SELECT * FROM unnest({arrays})", list(columns.values()))

    def invalidate(self, changes: Sequence[Invalidation]) -> Steps[Statement, None]:
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

    def delete(self, record_id: str) -> Steps[Statement, bool]:
        rows = yield Statement("SELECT scope_id FROM memory_records WHERE id = %s", [record_id], raw=True)
        if not rows:
            return False
        scope_id = rows[0][0]
        # the scope row first, as writers take it: the same lock order everywhere
        yield Statement("SELECT 1 FROM memory_scopes WHERE scope_id = %s FOR UPDATE", [scope_id])
        gone = yield Statement("DELETE FROM memory_records WHERE id = %s RETURNING 1", [record_id])
        yield Statement("DELETE FROM memory_scopes WHERE scope_id = %s AND n_records <= 0", [scope_id])
        return bool(gone)

    def expired_ids(self, scope: Scope, now: datetime) -> Steps[Statement, list[str]]:
        """The expired records under a scope, their scopes locked first (in scope order, as
        every writer locks them) since deleting each one takes its scope's lock."""
        scope_rows = yield Statement(
            "SELECT scope_id FROM memory_scopes WHERE lexemes @> %s::text[] ORDER BY scope FOR UPDATE",
            [pair_lexemes(scope)],
            raw=True,
        )
        rows = yield Statement(
            "SELECT id FROM memory_records WHERE scope_id = ANY(%s) AND expires_at <= %s ORDER BY id",
            [[row[0] for row in scope_rows], now],
            raw=True,
        )
        return [row[0] for row in rows]

    def scopes_under(self, scope: Scope, *, lock: bool) -> Steps[Statement, list[tuple[int, Scope]]]:
        rows = yield Statement(
            "SELECT scope_id, scope FROM memory_scopes WHERE lexemes @> %s::text[] ORDER BY scope"
            + (" FOR UPDATE" if lock else ""),
            [pair_lexemes(scope)],
            raw=True,
        )
        return [(int(scope_id), json.loads(text)) for scope_id, text in rows]

    def tenant_of(self, record_id: str) -> Steps[Statement, str | None]:
        rows = yield Statement("SELECT tenant FROM memory_records WHERE id = %s", [record_id], raw=True)
        return str(rows[0][0]) if rows else None

    def drop_scopes(self, scope_ids: Sequence[int]) -> Steps[Statement, None]:
        yield Statement("DELETE FROM memory_records WHERE scope_id = ANY(%s)", [list(scope_ids)])
        yield Statement("DELETE FROM memory_scopes WHERE scope_id = ANY(%s)", [list(scope_ids)])

    def import_events(self, events: Sequence[StoredEvent]) -> Steps[Statement, int]:
        columns = list(zip(*([stored.id, *event_row(POSTGRES, stored.event)] for stored in events), strict=True))
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

    # --- reads ---------------------------------------------------------------------------

    def search(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        return (yield from self._searcher.page(plan))

    def keyword_candidates(self, plan: SearchPlan, limit: int) -> Steps[Statement, list[Candidate]]:
        return (yield from self._searcher.candidates(plan, limit))

    def count(self, plan: SearchPlan) -> Steps[Statement, ScopeCounts]:
        scope_where, scope_params = scope_condition(plan)
        rows = yield Statement(
            "SELECT r.kind, count(*) AS total, count(*) FILTER (WHERE r.invalid_at IS NOT NULL) AS invalidated, "
            "count(*) FILTER (WHERE r.expires_at <= %s) AS expired, "
            "count(*) FILTER (WHERE r.invalid_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > %s)) AS live "
            "FROM memory_records r WHERE r.tenant = %s "
            f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where}) GROUP BY r.kind",
            [plan.now, plan.now, plan.query.scope[TENANT_KEY], *scope_params],
        )
        by_kind = dict.fromkeys(KINDS, 0)
        for row in rows:
            by_kind[row["kind"]] = int(row["total"])
        return ScopeCounts(
            total=sum(int(row["total"]) for row in rows),
            live=sum(int(row["live"]) for row in rows),
            invalidated=sum(int(row["invalidated"]) for row in rows),
            expired=sum(int(row["expired"]) for row in rows),
            by_kind=by_kind,
        )

    def facets(self, scope: Scope | None, values_per_key: int) -> Steps[Statement, list[ScopeFacet]]:
        sql = "SELECT scope, n_records FROM memory_scopes WHERE n_records > 0"
        params: list[Any] = []
        if scope is not None:
            sql += " AND lexemes @> %s::text[]"
            params.append(pair_lexemes(scope))
        rows = yield Statement(sql, params, raw=True)
        counts: Counter[str] = Counter({text: int(n) for text, n in rows})
        return ranking.build_facets(counts, {text: json.loads(text) for text, _ in rows}, values_per_key)

    # --- maintenance ---------------------------------------------------------------------

    def scrub(self, wait: float) -> Steps[Statement, bool]:
        # a deleted row's bytes stay in the heap until VACUUM FULL, which no online
        # operation may run: the operator's procedure is in docs/privacy.md
        return True
        yield  # pragma: no cover - makes this a generator

    def optimize(self) -> Steps[Statement, None]:
        # VACUUM cannot run in a transaction; a maintain unit runs in autocommit
        yield Statement("VACUUM (ANALYZE) memory_records, memory_scopes, memory_events")
