"""The in-memory backend: network-free, for tests and one-process use.

It passes the whole conformance kit, ranks with the same BM25 formula SQLite's FTS5
uses, and matches on the same :func:`~memory_admin.tokenize.tokenize`, so development
on it behaves like production.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from memory_admin.events import AnyEvent, EventQuery, StoredEvent, event_matches
from memory_admin.records import KINDS, MemoryHit, MemoryRecord
from memory_admin.scope import Scope, is_subset_match, scope_json, scope_matches, visible_to_agent
from memory_admin.store import ranking
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
from memory_admin.store.protocol import (
    CorruptionScan,
    ErasureReport,
    MemoryStoreCapabilities,
    ScopeCounts,
    ScopeFacet,
    ScopeValueCount,
)


@dataclass
class _Row:
    seq: int
    record: MemoryRecord
    terms: Counter[str]
    length: int


def _terms(record: MemoryRecord) -> Counter[str]:
    return ranking.record_terms(record.content, record.tags)


@dataclass
class _State:
    rows: dict[str, _Row] = field(default_factory=dict)
    doc_freq: Counter[str] = field(default_factory=Counter)
    total_length: int = 0
    next_seq: int = 1
    events: list[StoredEvent] = field(default_factory=list)
    next_event: int = 1


def passes_filters(record: MemoryRecord, plan: SearchPlan) -> bool:
    """Every non-text filter of a search plan, for one record."""
    query = plan.query
    if not scope_matches(record.scope, query.scope, query.scope_match):
        return False
    if not visible_to_agent(record.scope, query.agent):
        return False
    if query.kinds is not None and record.kind not in query.kinds:
        return False
    if query.tags is not None and not set(query.tags) <= set(record.tags):
        return False
    if query.keys is not None:
        if record.key is None:
            return False
        if query.key_match == "exact" and record.key not in query.keys:
            return False
        if query.key_match == "prefix" and not any(record.key.startswith(k) for k in query.keys):
            return False
    if query.targeted is not None and (record.target is not None) != query.targeted:
        return False
    if not plan.include_expired and record.is_expired(plan.now):
        return False
    if query.as_of is not None:
        if record.created_at > query.as_of or record.is_expired(query.as_of):
            return False
        if not query.include_invalidated and record.invalid_at is not None and record.invalid_at <= query.as_of:
            return False
    elif not query.include_invalidated and record.invalid_at is not None:
        return False
    return True


class _Transaction:
    """Buffers changes and applies them on commit; the store lock serialises writers."""

    def __init__(self, store: InMemoryMemoryStore) -> None:
        self._store = store
        self._inserts: list[MemoryRecord] = []
        self._updates: dict[str, MemoryRecord] = {}
        self._deletes: set[str] = set()
        self._erased_scopes: list[Scope] = []

    def _current(self, record_id: str) -> MemoryRecord | None:
        if record_id in self._deletes:
            return None
        if record_id in self._updates:
            return self._updates[record_id]
        row = self._store._state.rows.get(record_id)
        return row.record if row else None

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        found = {}
        for record_id in ids:
            record = self._current(record_id)
            if record is not None:
                found[record_id] = record
        return found

    def find_valid_keyed(self, scope: Scope, kind: str, key: str) -> MemoryRecord | None:
        for row in self._store._state.rows.values():
            record = self._current(row.record.id)
            if (
                record is not None
                and record.key == key
                and record.kind == kind
                and record.invalid_at is None
                and record.scope == scope
            ):
                return record
        return None

    def insert(self, records: Sequence[MemoryRecord]) -> None:
        self._inserts.extend(records)

    def invalidate(self, change: Invalidation) -> None:
        current = self._current(change.record_id)
        assert current is not None
        self._updates[change.record_id] = current.model_copy(
            update={
                "invalid_at": change.at,
                "invalid_reason": change.reason,
                "superseded_by": change.superseded_by,
                "updated_at": change.at,
            }
        )

    def delete(self, record_id: str) -> bool:
        if self._current(record_id) is None:
            return False
        self._deletes.add(record_id)
        return True

    def erase(self, scope: Scope, now: datetime, *, dry_run: bool) -> ErasureReport:
        doomed = [row.record for row in self._store._state.rows.values() if is_subset_match(row.record.scope, scope)]
        events = sum(1 for stored in self._store._state.events if is_subset_match(stored.event.scope, scope))
        if not dry_run:
            self._deletes.update(record.id for record in doomed)
            self._erased_scopes.append(scope)
        scopes = {scope_json(r.scope): r.scope for r in doomed}
        return ErasureReport(
            scope=scope,
            dry_run=dry_run,
            records=len(doomed),
            by_kind=dict(Counter(r.kind for r in doomed)),
            events=events,
            scopes=[scopes[k] for k in sorted(scopes)],
            sample_ids=[r.id for r in doomed[:10]],
            at=now,
        )

    def expired_ids(self, scope: Scope, now: datetime) -> list[str]:
        return [
            row.record.id
            for row in self._store._state.rows.values()
            if row.record.is_expired(now) and is_subset_match(row.record.scope, scope)
        ]

    def commit(self) -> None:
        state = self._store._state
        for scope in self._erased_scopes:
            state.events = [e for e in state.events if not is_subset_match(e.event.scope, scope)]
        for record_id in self._deletes:
            self._store._remove(record_id)
        for record_id, record in self._updates.items():
            if record_id in state.rows:
                state.rows[record_id].record = record
        for record in self._inserts:
            terms = _terms(record)
            length = sum(terms.values())
            state.rows[record.id] = _Row(state.next_seq, record, terms, length)
            state.next_seq += 1
            state.doc_freq.update(terms.keys())
            state.total_length += length


class InMemoryMemoryStore(BaseMemoryStore):
    """A memory store held in a dict; gone when the process ends."""

    backend_name = "memory"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._state = _State()
        self._lock = threading.RLock()

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

    @contextmanager
    def _transaction(self) -> Iterator[_Transaction]:
        with self._lock:
            tx = _Transaction(self)
            yield tx
            tx.commit()

    def _remove(self, record_id: str) -> None:
        row = self._state.rows.pop(record_id, None)
        if row is not None:
            doc_freq = self._state.doc_freq
            for term in row.terms:
                doc_freq[term] -= 1
                if doc_freq[term] <= 0:
                    del doc_freq[term]
            self._state.total_length -= row.length

    def _append_event(self, event: AnyEvent) -> StoredEvent:
        with self._lock:
            stored = StoredEvent(id=self._state.next_event, event=event)
            self._state.next_event += 1
            self._state.events.append(stored)
            return stored

    def _query_events(self, query: EventQuery) -> list[StoredEvent]:
        with self._lock:
            found = [
                stored
                for stored in reversed(self._state.events)
                if (query.before_id is None or stored.id < query.before_id) and event_matches(stored.event, query)
            ]
        return found[: query.limit]

    def _prune_events(self, before: datetime) -> int:
        with self._lock:
            kept = [stored for stored in self._state.events if stored.event.at >= before]
            pruned = len(self._state.events) - len(kept)
            self._state.events = kept
            return pruned

    def _import_events(self, events: Sequence[StoredEvent]) -> int:
        with self._lock:
            known = {stored.id for stored in self._state.events}
            fresh = list({stored.id: stored for stored in events if stored.id not in known}.values())
            # the log stays in id order: reads walk it newest (highest id) first
            self._state.events = sorted([*self._state.events, *fresh], key=lambda stored: stored.id)
            if self._state.events:
                self._state.next_event = max(self._state.next_event, self._state.events[-1].id + 1)
            return len(fresh)

    def _get_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        with self._lock:
            return {i: self._state.rows[i].record for i in ids if i in self._state.rows}

    def _bm25(self, row: _Row, tokens: Sequence[str]) -> float:
        state = self._state
        total = len(state.rows)
        weights = {token: ranking.idf(total, state.doc_freq.get(token, 0)) for token in tokens}
        average = state.total_length / total if total else 1.0
        return ranking.score(row.terms, row.length, average, weights)

    def _list(self, plan: SearchPlan) -> tuple[list[MemoryHit], Cursor | None]:
        with self._lock:
            rows = [row for row in self._state.rows.values() if passes_filters(row.record, plan)]
            if plan.ranked:
                tokens = set(plan.tokens)
                scored = [(self._bm25(row, plan.tokens), row) for row in rows if tokens & row.terms.keys()]
                scored.sort(key=lambda item: (-item[0], -now_us(item[1].record.created_at), -item[1].seq))
                offset = (plan.cursor.offset or 0) if plan.cursor else 0
                page = scored[offset : offset + plan.limit]
                hits = [MemoryHit(record=row.record, score=score) for score, row in page]
                more = len(scored) > offset + plan.limit
                return hits, Cursor(offset=offset + plan.limit) if more else None
            rows.sort(key=lambda row: (now_us(row.record.created_at), row.seq), reverse=True)
            if plan.cursor is not None:
                bound = (plan.cursor.created_us or 0, plan.cursor.seq or 0)
                rows = [row for row in rows if (now_us(row.record.created_at), row.seq) < bound]
            page_rows = rows[: plan.limit]
            hits = [MemoryHit(record=row.record) for row in page_rows]
            if len(rows) > plan.limit and page_rows:
                last = page_rows[-1]
                return hits, Cursor(created_us=now_us(last.record.created_at), seq=last.seq)
            return hits, None

    def _find_corrupt(self, scope: Scope | None, limit: int, max_rows: int | None) -> CorruptionScan:
        # records are validated models here: nothing can rot underneath them
        with self._lock:
            rows = [r for r in self._state.rows.values() if scope is None or is_subset_match(r.record.scope, scope)]
        checked = len(rows) if max_rows is None else min(len(rows), max_rows)
        return CorruptionScan(checked=checked, corrupt=[], complete=checked == len(rows))

    def _scope_facets(self, scope: Scope | None, values_per_key: int) -> list[ScopeFacet]:
        with self._lock:
            scopes = [
                row.record.scope
                for row in self._state.rows.values()
                if scope is None or is_subset_match(row.record.scope, scope)
            ]
        return build_facets(Counter(scope_json(s) for s in scopes), {scope_json(s): s for s in scopes}, values_per_key)

    def _count_records(self, plan: SearchPlan) -> ScopeCounts:
        with self._lock:
            records = [row.record for row in self._state.rows.values() if passes_filters(row.record, plan)]
        expired = sum(1 for r in records if r.is_expired(plan.now))
        invalidated = sum(1 for r in records if r.invalid_at is not None)
        live = sum(1 for r in records if r.is_live(plan.now))
        by_kind = Counter(r.kind for r in records)
        return ScopeCounts(
            total=len(records),
            live=live,
            invalidated=invalidated,
            expired=expired,
            by_kind={kind: by_kind.get(kind, 0) for kind in KINDS},
        )


def build_facets(counts_by_scope: Counter[str], scopes: dict[str, Scope], values_per_key: int) -> list[ScopeFacet]:
    """Facets from record counts per distinct scope."""
    by_key: dict[str, Counter[str]] = {}
    for key_json, count in counts_by_scope.items():
        for key, value in scopes[key_json].items():
            by_key.setdefault(key, Counter())[value] += count
    return facets_from_counts(by_key, values_per_key)


def facets_from_counts(by_key: dict[str, Counter[str]], values_per_key: int) -> list[ScopeFacet]:
    """Facets from record counts per scope key and value: the tenant first, then keys
    alphabetically; values by count, then name (shared by every backend)."""
    facets = []
    for key in sorted(by_key, key=lambda k: (k != "tenant", k)):
        values = by_key[key]
        ordered = sorted(values.items(), key=lambda item: (-item[1], item[0]))
        facets.append(
            ScopeFacet(
                key=key,
                records=sum(values.values()),
                values=[ScopeValueCount(value=v, records=n) for v, n in ordered[:values_per_key]],
                more_values=len(ordered) > values_per_key,
            )
        )
    return facets
