"""The in-memory backend: network-free, for tests and one-process use.

It passes the whole conformance kit, ranks with the same BM25 formula SQLite's FTS5
uses, and matches on the same terms (:func:`~memory_admin.store.ranking.record_text`), so development
on it behaves like production.

Why one module: it is a whole backend — the session's primitives over Python
collections, its search and its store class — kept together as the other backends'
packages are, so the conformance kit's reference backend reads in one place.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Container, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memory_admin.events import AnyEvent, EventQuery, StoredEvent, event_matches, forget_records
from memory_admin.promotion import (
    Promotion,
    PromotionQuery,
    PromotionState,
    Proposal,
    ProposalInput,
    ProposalStatus,
    RegisteredComposition,
    Transition,
    TransitionQuery,
    candidate_birth,
    state_after,
)
from memory_admin.records import KINDS, MemoryHit, MemoryRecord, Provenance
from memory_admin.scope import TENANT_KEY, Scope, is_subset_match, scope_json, scope_matches, visible_to_agent
from memory_admin.steps import Steps
from memory_admin.store import ranking
from memory_admin.store.base import BaseMemoryStore
from memory_admin.store.core import full_capabilities
from memory_admin.store.plan import Candidate, Cursor, SearchPlan, context, now_us
from memory_admin.store.protocol import CorruptionScan, ScopeCounts, ScopeFacet
from memory_admin.store.ranking import build_facets
from memory_admin.store.session import Invalidation, Mode, Slot, Statement, no_statements
from memory_admin.store.vectors import VectorSpace, centre, centre_keys, closest


@dataclass
class _Row:
    seq: int
    record: MemoryRecord
    terms: Counter[str]
    length: int


def _terms(record: MemoryRecord) -> Counter[str]:
    return ranking.record_terms(record.content, record.tags, record.observed_at)


@dataclass
class _State:
    rows: dict[str, _Row] = field(default_factory=dict)
    doc_freq: Counter[str] = field(default_factory=Counter)
    total_length: int = 0
    next_seq: int = 1
    events: list[StoredEvent] = field(default_factory=list)
    next_event: int = 1
    events_dropped: int = 0
    events_withheld: int = 0
    forgetting: dict[str, datetime] = field(default_factory=dict)
    vectors: dict[str, bytes] = field(default_factory=dict)
    space: VectorSpace | None = None
    promotions: dict[str, Promotion] = field(default_factory=dict)
    """Current promotion states, by record id (records are attached when read)."""
    history: dict[str, list[Transition]] = field(default_factory=dict)
    compositions: dict[str, tuple[str, str, datetime]] = field(default_factory=dict)
    uses: list[RegisteredComposition] = field(default_factory=list)
    proposals: dict[int, Proposal] = field(default_factory=dict)
    next_proposal: int = 1


def _context(record: MemoryRecord) -> Hashable:
    return context(scope_json(record.scope), record.observed_at)


def reaches(record: MemoryRecord, plan: SearchPlan) -> bool:
    """The plan's scope match and agent convention admit ``record``."""
    query = plan.query
    return scope_matches(record.scope, query.scope, query.scope_match) and visible_to_agent(record.scope, query.agent)


def passes_filters(record: MemoryRecord, plan: SearchPlan, promoted: Container[str] = ()) -> bool:
    """Every non-text filter of a search plan, for one record (``promoted``: the ids of
    the records whose promotion state is ``promoted``)."""
    query = plan.query
    if not reaches(record, plan):
        return False
    if query.promoted is not None and (record.id in promoted) != query.promoted:
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


class _Session:
    """The primitives over the store's state. Changes are buffered and applied when the
    unit ends without raising; the store's lock serialises units."""

    def __init__(self, store: InMemoryMemoryStore) -> None:
        self._store = store
        self._state = store._state
        self._inserts: list[MemoryRecord] = []
        self._updates: dict[str, MemoryRecord] = {}
        self._deletes: set[str] = set()
        self._erased_scopes: list[Scope] = []
        self._forgotten: dict[str, set[str]] = {}  # tenant -> record ids whose events lose their previews
        self._forgetting: dict[str, datetime] = {}  # tenant -> when it forgot, for the event log's batches
        self._handles: dict[int, Scope] = {}
        self._vectors: dict[str, bytes] = {}
        self._space: list[VectorSpace | None] = []  # a change of the vector space, when set
        self._promotions: dict[str, Promotion] = {}
        self._history: dict[str, list[Transition]] = {}
        self._compositions: dict[str, tuple[str, str, datetime]] = {}
        self._uses: list[RegisteredComposition] = []
        self._erased_uses: list[Scope] = []
        self._proposals: dict[int, Proposal] = {}
        self._replaced: set[str] = set()

    def _current(self, record_id: str) -> MemoryRecord | None:
        if record_id in self._deletes:
            return None
        if record_id in self._updates:
            return self._updates[record_id]
        row = self._state.rows.get(record_id)
        return row.record if row else None

    def _records(self) -> Iterator[MemoryRecord]:
        for record_id in list(self._state.rows):
            record = self._current(record_id)
            if record is not None:
                yield record

    def get_many(self, ids: Sequence[str], *, lock: bool = False) -> Steps[Statement, dict[str, MemoryRecord]]:
        found = {}
        for record_id in ids:
            record = self._current(record_id)
            if record is not None:
                found[record_id] = record
        return no_statements(found)

    def batch_reads(
        self, ids: Sequence[str], slots: Sequence[Slot], scopes: Sequence[Scope]
    ) -> Steps[Statement, list[MemoryRecord]]:
        wanted = {(scope_json(scope), kind, key) for scope, kind, key in slots}
        found = {record_id: record for record_id in ids if (record := self._current(record_id)) is not None}
        if wanted:
            for record in self._records():
                if (
                    record.key is not None
                    and record.invalid_at is None
                    and (scope_json(record.scope), record.kind, record.key) in wanted
                ):
                    found[record.id] = record
        return no_statements(list(found.values()))

    def insert(self, records: Sequence[MemoryRecord]) -> Steps[Statement, None]:
        self._inserts.extend(records)
        return no_statements(None)

    def invalidate(self, changes: Sequence[Invalidation]) -> Steps[Statement, None]:
        for change in changes:
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
        return no_statements(None)

    def delete(self, record_id: str) -> Steps[Statement, bool]:
        if self._current(record_id) is None:
            return no_statements(False)
        self._deletes.add(record_id)
        return no_statements(True)

    def expired_ids(self, scope: Scope, now: datetime) -> Steps[Statement, list[str]]:
        return no_statements([r.id for r in self._records() if r.is_expired(now) and is_subset_match(r.scope, scope)])

    def scopes_under(self, scope: Scope, *, lock: bool) -> Steps[Statement, list[tuple[int, Scope]]]:
        found = {scope_json(r.scope): r.scope for r in self._records() if is_subset_match(r.scope, scope)}
        self._handles = dict(enumerate(found[text] for text in sorted(found)))
        return no_statements(list(self._handles.items()))

    def _in(self, scope_ids: Sequence[int]) -> list[MemoryRecord]:
        wanted = {scope_json(self._handles[i]) for i in scope_ids}
        return [r for r in self._records() if scope_json(r.scope) in wanted]

    def tenant_of(self, record_id: str) -> Steps[Statement, str | None]:
        record = self._current(record_id)
        return no_statements(None if record is None else record.scope[TENANT_KEY])

    def ids_in_scopes(self, scope_ids: Sequence[int]) -> Steps[Statement, list[str]]:
        return no_statements([r.id for r in self._in(scope_ids)])

    def forget_in_events(self, tenant: str, record_ids: Sequence[str]) -> Steps[Statement, int]:
        forgotten = self._forgotten.setdefault(tenant, set())
        forgotten.update(record_ids)
        changed = sum(
            1
            for stored in self._state.events
            if stored.event.scope[TENANT_KEY] == tenant and forget_records(stored.event, forgotten) is not None
        )
        return no_statements(changed)

    def kind_counts(self, scope_ids: Sequence[int]) -> Steps[Statement, dict[str, int]]:
        return no_statements(dict(sorted(Counter(r.kind for r in self._in(scope_ids)).items())))

    def newest_ids(self, scope_ids: Sequence[int], limit: int) -> Steps[Statement, list[str]]:
        records = sorted(self._in(scope_ids), key=lambda r: (now_us(r.created_at), self._seq(r.id)), reverse=True)
        return no_statements([r.id for r in records[:limit]])

    def _seq(self, record_id: str) -> int:
        row = self._state.rows.get(record_id)
        return row.seq if row else 0

    def erase_events(self, scope: Scope, *, dry_run: bool) -> Steps[Statement, int]:
        if not dry_run:
            self._erased_scopes.append(scope)
        return no_statements(sum(1 for stored in self._state.events if is_subset_match(stored.event.scope, scope)))

    def drop_scopes(self, scope_ids: Sequence[int]) -> Steps[Statement, None]:
        self._deletes.update(r.id for r in self._in(scope_ids))
        return no_statements(None)

    def search(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        return no_statements(self._store._list(plan))

    def keyword_candidates(self, plan: SearchPlan, limit: int) -> Steps[Statement, list[Candidate]]:
        hits, _ = self._store._list(replace(plan, limit=limit, cursor=None))
        return no_statements(
            [
                Candidate(h.record.id, h.score or 0.0, h.terms, _context(h.record), length=len(h.record.content))
                for h in hits
            ]
        )

    def count(self, plan: SearchPlan) -> Steps[Statement, ScopeCounts]:
        promoted = self._store._promoted_ids(plan)
        records = [row.record for row in self._state.rows.values() if passes_filters(row.record, plan, promoted)]
        by_kind = Counter(r.kind for r in records)
        return no_statements(
            ScopeCounts(
                total=len(records),
                live=sum(1 for r in records if r.is_live(plan.now)),
                invalidated=sum(1 for r in records if r.invalid_at is not None),
                expired=sum(1 for r in records if r.is_expired(plan.now)),
                by_kind={kind: by_kind.get(kind, 0) for kind in KINDS},
            )
        )

    def facets(self, scope: Scope | None, values_per_key: int) -> Steps[Statement, list[ScopeFacet]]:
        scopes = [
            row.record.scope
            for row in self._state.rows.values()
            if scope is None or is_subset_match(row.record.scope, scope)
        ]
        counts = Counter(scope_json(s) for s in scopes)
        return no_statements(build_facets(counts, {scope_json(s): s for s in scopes}, values_per_key))

    def find_corrupt(self, scope: Scope | None, limit: int, max_rows: int | None) -> Steps[Statement, CorruptionScan]:
        # records are validated models here: nothing can rot underneath them
        rows = [r for r in self._state.rows.values() if scope is None or is_subset_match(r.record.scope, scope)]
        checked = len(rows) if max_rows is None else min(len(rows), max_rows)
        return no_statements(CorruptionScan(checked=checked, corrupt=[], complete=checked == len(rows)))

    def append_events(self, events: Sequence[AnyEvent]) -> Steps[Statement, list[int]]:
        ids = []
        for event in events:
            self._state.events.append(StoredEvent(id=self._state.next_event, event=event))
            ids.append(self._state.next_event)
            self._state.next_event += 1
        return no_statements(ids)

    def log_events(self, events: Sequence[AnyEvent], lost: int, withheld: int) -> Steps[Statement, None]:
        yield from self.append_events(events)
        self._state.events_dropped += lost
        self._state.events_withheld += withheld

    def events_missing(self) -> Steps[Statement, tuple[int, int]]:
        return no_statements((self._state.events_dropped, self._state.events_withheld))

    def begin_forgetting(self) -> Steps[Statement, None]:
        return no_statements(None)  # the store's lock serialises units

    def mark_forgetting(self, tenant: str, clock: Callable[[], datetime]) -> Steps[Statement, None]:
        self._forgetting[tenant] = clock()  # the commit keeps the later of it and the store's
        return no_statements(None)

    def forgetting_since(self, since: datetime) -> Steps[Statement, dict[str, datetime]]:
        return no_statements({tenant: at for tenant, at in self._state.forgetting.items() if at >= since})

    def query_events(self, query: EventQuery) -> Steps[Statement, list[StoredEvent]]:
        found = [
            stored
            for stored in reversed(self._state.events)
            if (query.before_id is None or stored.id < query.before_id) and event_matches(stored.event, query)
        ]
        return no_statements(found[: query.limit])

    def prune_events(self, before: datetime) -> Steps[Statement, int]:
        kept = [stored for stored in self._state.events if stored.event.at >= before]
        pruned = len(self._state.events) - len(kept)
        self._state.events = kept
        return no_statements(pruned)

    def import_events(self, events: Sequence[StoredEvent]) -> Steps[Statement, int]:
        state = self._state
        known = {stored.id for stored in state.events}
        fresh = list({stored.id: stored for stored in events if stored.id not in known}.values())
        # the log stays in id order: reads walk it newest (highest id) first
        state.events = sorted([*state.events, *fresh], key=lambda stored: stored.id)
        if state.events:
            state.next_event = max(state.next_event, state.events[-1].id + 1)
        return no_statements(len(fresh))

    def scrub(self, wait: float) -> Steps[Statement, bool]:
        return no_statements(True)  # nothing outlives a deleted row in RAM

    def vector_space(self) -> Steps[Statement, VectorSpace | None]:
        return no_statements(self._space[-1] if self._space else self._state.space)

    def set_vector_space(self, space: VectorSpace | None) -> Steps[Statement, None]:
        self._space.append(space)
        if space is None:
            self._vectors.clear()
        return no_statements(None)

    def insert_vectors(self, vectors: Sequence[tuple[str, bytes]]) -> Steps[Statement, None]:
        self._vectors.update(vectors)
        return no_statements(None)

    def _vector(self, record_id: str) -> bytes | None:
        if record_id in self._vectors:
            return self._vectors[record_id]
        if self._space and self._space[-1] is None:
            return None  # forgotten in this unit
        return self._state.vectors.get(record_id)

    def similar(self, plan: SearchPlan, limit: int, space: VectorSpace) -> Steps[Statement, list[Candidate]]:
        query = plan.query
        # measured from the mean of every vector in the scopes searched, as SQL stores do
        reached = [
            (r.id, blob)
            for r in self._records()
            if scope_matches(r.scope, query.scope, query.scope_match)
            and visible_to_agent(r.scope, query.agent)
            and (blob := self._vector(r.id)) is not None
        ]
        mean = centre(centre_keys(reached), len(reached), space.dimensions) if plan.by_centre else None
        promoted = self._store._promoted_ids(plan)
        admitted = {r.id: r for r in self._records() if passes_filters(r, plan, promoted)}
        rows = [(record_id, blob) for record_id in admitted if (blob := self._vector(record_id)) is not None]
        found = closest(plan.vector, rows, space.dimensions, limit, mean, by_centre=plan.by_centre, own=plan.own)
        return no_statements(
            [
                Candidate(i, score, context=_context(admitted[i]), cosine=cosine, length=len(admitted[i].content))
                for i, cosine, score in found
            ]
        )

    def unembedded(self, limit: int) -> Steps[Statement, list[MemoryRecord]]:
        missing = [r for r in self._records() if self._vector(r.id) is None]
        return no_statements(missing[:limit])

    def vector_counts(self) -> Steps[Statement, tuple[int, int]]:
        records = list(self._records())
        return no_statements((sum(1 for r in records if self._vector(r.id) is not None), len(records)))

    def optimize(self) -> Steps[Statement, None]:
        return no_statements(None)

    # --- learnings ---------------------------------------------------------------------

    def _promotion(self, record_id: str) -> Promotion | None:
        if self._current(record_id) is None:
            return None
        return self._promotions.get(record_id) or self._state.promotions.get(record_id)

    def _transitions(self, record_id: str) -> list[Transition]:
        if record_id in self._replaced:
            return list(self._history[record_id])
        return [*self._state.history.get(record_id, ()), *self._history.get(record_id, ())]

    def promotion_states(self, ids: Sequence[str], *, lock: bool = False) -> Steps[Statement, dict[str, Promotion]]:
        found = {}
        for record_id in ids:
            promotion, record = self._promotion(record_id), self._current(record_id)
            if promotion is not None and record is not None:
                found[record_id] = promotion.model_copy(update={"record": record})
        return no_statements(found)

    def add_candidates(self, records: Sequence[MemoryRecord]) -> Steps[Statement, None]:
        for record in records:
            if record.target is not None:
                birth = candidate_birth(record)
                self._promotions[record.id] = state_after(record, birth, primitive=record.target.primitive)
                self._history[record.id] = [birth]
        return no_statements(None)

    def add_transitions(self, transitions: Sequence[Transition]) -> Steps[Statement, None]:
        for transition in transitions:
            current = self._promotion(transition.record_id)
            record = self._current(transition.record_id)
            assert current is not None and record is not None
            self._promotions[transition.record_id] = state_after(record, transition, primitive=current.primitive)
            self._history.setdefault(transition.record_id, []).append(transition)
        return no_statements(None)

    def _as_of(self, record_id: str, as_of: datetime | None) -> Promotion | None:
        current = self._promotion(record_id)
        if current is None or as_of is None:
            return current
        then = [t for t in self._transitions(record_id) if t.at <= as_of]
        if not then:
            return None
        record = self._current(record_id)
        assert record is not None
        return state_after(record, then[-1], primitive=current.primitive)

    def _reached_promotions(self, plan: SearchPlan, as_of: datetime | None) -> list[tuple[Promotion, MemoryRecord]]:
        found = []
        for record_id in [*self._state.promotions, *(i for i in self._promotions if i not in self._state.promotions)]:
            record = self._current(record_id)
            if record is None or not reaches(record, plan):
                continue
            promotion = self._as_of(record_id, as_of)
            if promotion is not None:
                found.append((promotion, record))
        return found

    def _listed(self, query: PromotionQuery, plan: SearchPlan) -> list[tuple[Promotion, MemoryRecord]]:
        as_of = query.as_of
        found = []
        for promotion, record in self._reached_promotions(plan, as_of):
            if query.primitives is not None and promotion.primitive not in query.primitives:
                continue
            if query.tiers is not None and promotion.tier not in query.tiers:
                continue
            if query.record_ids is not None and record.id not in query.record_ids:
                continue
            if as_of is not None and record.created_at > as_of:
                continue
            invalid = record.invalid_at is not None and (as_of is None or record.invalid_at <= as_of)
            if invalid and not query.include_invalidated:
                continue
            found.append((promotion, record))
        return found

    def list_promotions(
        self, query: PromotionQuery, plan: SearchPlan, cursor: Cursor | None, limit: int
    ) -> Steps[Statement, list[tuple[Promotion, int]]]:
        found = [
            (promotion, record)
            for promotion, record in self._listed(query, plan)
            if query.states is None or promotion.state in query.states
        ]
        found.sort(key=lambda item: (now_us(item[0].at), self._seq(item[1].id)), reverse=True)
        if cursor is not None:
            bound = (cursor.created_us or 0, cursor.seq or 0)
            found = [item for item in found if (now_us(item[0].at), self._seq(item[1].id)) < bound]
        return no_statements(
            [
                (promotion.model_copy(update={"record": record}), self._seq(record.id))
                for promotion, record in found[:limit]
            ]
        )

    def count_promotions(self, query: PromotionQuery, plan: SearchPlan) -> Steps[Statement, dict[str, int]]:
        return no_statements(dict(Counter(promotion.state for promotion, _ in self._listed(query, plan))))

    def list_transitions(
        self, query: TransitionQuery, plan: SearchPlan, cursor: tuple[int, int, int] | None
    ) -> Steps[Statement, list[tuple[Transition, int]]]:
        found = []
        for promotion, record in self._reached_promotions(plan, None):
            for transition in self._transitions(promotion.record_id):
                if query.states is not None and transition.state not in query.states:
                    continue
                if query.since is not None and transition.at < query.since:
                    continue
                if query.until is not None and transition.at >= query.until:
                    continue
                key = (now_us(transition.at), self._seq(record.id), transition.revision)
                if cursor is None or key < cursor:
                    found.append((key, transition))
        found.sort(key=lambda item: item[0], reverse=True)
        return no_statements([(transition, key[1]) for key, transition in found[: query.limit + 1]])

    def transition_moments(
        self, query: TransitionQuery, plan: SearchPlan
    ) -> Steps[Statement, list[tuple[datetime, PromotionState]]]:
        listed = yield from self.list_transitions(query, plan, None)
        return [(transition.at, transition.state) for transition, _ in listed[: query.limit]]

    def restore_history(self, transitions: Sequence[Transition]) -> Steps[Statement, None]:
        record_id = transitions[0].record_id
        current, record = self._promotion(record_id), self._current(record_id)
        assert current is not None and record is not None
        self._replaced.add(record_id)  # the history is replaced at commit, not added to
        self._history[record_id] = list(transitions)
        self._promotions[record_id] = state_after(record, transitions[-1], primitive=current.primitive)
        return no_statements(None)

    def record_transitions(self, record_id: str) -> Steps[Statement, list[Transition]]:
        return no_statements(self._transitions(record_id) if self._current(record_id) is not None else [])

    def promoted_records(self, plan: SearchPlan, as_of: datetime | None) -> Steps[Statement, list[MemoryRecord]]:
        found = [record for promotion, record in self._reached_promotions(plan, as_of) if promotion.state == "promoted"]
        found.sort(key=lambda record: (now_us(record.created_at), self._seq(record.id)))
        return no_statements(found[: plan.limit])

    def promoted_fingerprint(self, plan: SearchPlan) -> Steps[Statement, tuple[Any, ...]]:
        found = sorted(
            (record.id, promotion.revision, len(record.supports))
            for promotion, record in self._reached_promotions(plan, None)
            if promotion.state == "promoted"
        )
        return no_statements(tuple(found))

    def set_supports(self, record_id: str, supports: Sequence[Provenance]) -> Steps[Statement, None]:
        current = self._current(record_id)
        assert current is not None
        self._updates[record_id] = current.model_copy(update={"supports": tuple(supports)})
        return no_statements(None)

    def put_composition(self, version: str, name: str, body: str, at: datetime) -> Steps[Statement, None]:
        if version not in self._state.compositions:
            self._compositions.setdefault(version, (name, body, at))
        return no_statements(None)

    def composition_body(self, version: str) -> Steps[Statement, tuple[str, str] | None]:
        found = self._compositions.get(version) or self._state.compositions.get(version)
        return no_statements(None if found is None else (found[0], found[1]))

    def add_composition_use(self, scope: Scope, version: str, at: datetime) -> Steps[Statement, None]:
        name = (self._compositions.get(version) or self._state.compositions[version])[0]
        self._uses.append(RegisteredComposition(version=version, name=name, scope=scope, registered_at=at))
        return no_statements(None)

    def composition_uses(
        self, scope: Scope, exact: bool, as_of: datetime | None
    ) -> Steps[Statement, list[RegisteredComposition]]:
        uses = [
            use
            for use in [*self._state.uses, *self._uses]
            if (use.scope == scope if exact else is_subset_match(use.scope, scope))
            and (as_of is None or use.registered_at <= as_of)
        ]
        return no_statements(sorted(uses, key=lambda use: use.registered_at, reverse=True))

    def erase_compositions(self, scope: Scope, *, dry_run: bool) -> Steps[Statement, int]:
        if not dry_run:
            self._erased_uses.append(scope)
        return no_statements(sum(1 for use in self._state.uses if is_subset_match(use.scope, scope)))

    def _all_proposals(self) -> list[Proposal]:
        merged = {**self._state.proposals, **self._proposals}
        return [p for _, p in sorted(merged.items()) if self._current(p.record_id) is not None]

    def add_proposals(self, proposals: Sequence[ProposalInput], at: datetime) -> Steps[Statement, list[Proposal]]:
        taken = {(p.record_id, p.kind) for p in self._all_proposals()}
        made = []
        for proposal in proposals:
            record = self._current(proposal.record_id)
            if record is None or (proposal.record_id, proposal.kind) in taken:
                continue
            other = proposal.other_id if proposal.other_id and self._current(proposal.other_id) else None
            pid = self._state.next_proposal + len(self._proposals)
            stored = Proposal(
                id=pid,
                kind=proposal.kind,
                record_id=proposal.record_id,
                other_id=other,
                scope=record.scope,
                status="pending",
                reason=proposal.reason,
                evidence=proposal.evidence,
                by=proposal.by,
                at=at,
            )
            self._proposals[pid] = stored
            taken.add((proposal.record_id, proposal.kind))
            made.append(stored)
        return no_statements(made)

    def list_proposals(
        self, plan: SearchPlan, statuses: Sequence[ProposalStatus] | None, before: int | None, limit: int
    ) -> Steps[Statement, list[Proposal]]:
        found = []
        for proposal in reversed(self._all_proposals()):
            record = self._current(proposal.record_id)
            if record is None or not reaches(record, plan):
                continue
            if (statuses is None or proposal.status in statuses) and (before is None or proposal.id < before):
                found.append(proposal)
        return no_statements(found[:limit])

    def get_proposal(self, proposal_id: int, *, lock: bool = False) -> Steps[Statement, Proposal | None]:
        return no_statements(next((p for p in self._all_proposals() if p.id == proposal_id), None))

    def settle_proposal(self, settled: Proposal) -> Steps[Statement, None]:
        self._proposals[settled.id] = settled
        return no_statements(None)

    def lock_learnings(self, tenant: str) -> Steps[Statement, None]:
        return no_statements(None)  # the store's lock serialises units

    def commit(self) -> None:
        state = self._state
        if self._space:
            state.space = self._space[-1]
            if state.space is None:
                state.vectors.clear()
        state.vectors.update(self._vectors)
        for scope in self._erased_scopes:
            state.events = [e for e in state.events if not is_subset_match(e.event.scope, scope)]
        for tenant, forgotten in self._forgotten.items():
            for index, stored in enumerate(state.events):
                if stored.event.scope[TENANT_KEY] == tenant:
                    scrubbed = forget_records(stored.event, forgotten)
                    if scrubbed is not None:
                        state.events[index] = StoredEvent(id=stored.id, event=scrubbed)
        for tenant, at in self._forgetting.items():
            state.forgetting[tenant] = max(at, state.forgetting.get(tenant, at))
        for record_id in self._deletes:
            self._store._remove(record_id)
        for record_id, record in self._updates.items():
            if record_id in state.rows:
                state.rows[record_id].record = record
        state.compositions.update(self._compositions)
        state.uses = [u for u in state.uses if not any(is_subset_match(u.scope, e) for e in self._erased_uses)]
        state.uses.extend(self._uses)
        for record_id, promotion in self._promotions.items():
            if record_id not in self._deletes:
                state.promotions[record_id] = promotion
        for record_id, added in self._history.items():
            if record_id in self._deletes:
                continue
            if record_id in self._replaced:
                state.history[record_id] = list(added)
            else:
                state.history.setdefault(record_id, []).extend(added)
        fresh = [pid for pid in self._proposals if pid not in state.proposals]
        state.proposals.update(self._proposals)
        state.next_proposal = max([state.next_proposal, *(pid + 1 for pid in fresh)])
        for record in self._inserts:
            terms = _terms(record)
            length = sum(terms.values())
            state.rows[record.id] = _Row(state.next_seq, record, terms, length)
            state.next_seq += 1
            state.doc_freq.update(terms.keys())
            state.total_length += length


def _no_sql(statement: Statement) -> list[Any]:
    raise AssertionError(f"the in-memory store runs no SQL: {statement.sql}")


class InMemoryMemoryStore(BaseMemoryStore):
    """A memory store held in a dict; gone when the process ends."""

    backend_name = "memory"
    capabilities_data = full_capabilities("memory")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._state = _State()
        self._lock = threading.RLock()

    @contextmanager
    def _open(self, mode: Mode) -> Iterator[tuple[_Session, Callable[[Statement], list[Any]]]]:
        with self._lock:
            session = _Session(self)
            yield session, _no_sql
            session.commit()

    def _promoted_ids(self, plan: SearchPlan) -> set[str]:
        """The records promoted now, when the plan filters on it."""
        if plan.query.promoted is None:
            return set()
        return {record_id for record_id, found in self._state.promotions.items() if found.state == "promoted"}

    def _remove(self, record_id: str) -> None:
        self._state.vectors.pop(record_id, None)
        self._state.promotions.pop(record_id, None)
        self._state.history.pop(record_id, None)
        for pid, proposal in list(self._state.proposals.items()):
            if record_id in (proposal.record_id, proposal.other_id):
                del self._state.proposals[pid]
        row = self._state.rows.pop(record_id, None)
        if row is not None:
            doc_freq = self._state.doc_freq
            for term in row.terms:
                doc_freq[term] -= 1
                if doc_freq[term] <= 0:
                    del doc_freq[term]
            self._state.total_length -= row.length

    def _weights(self, tokens: Sequence[str]) -> tuple[dict[str, float], float]:
        state = self._state
        total = len(state.rows)
        weights = {token: ranking.idf(total, state.doc_freq.get(token, 0)) for token in tokens}
        return weights, (state.total_length / total if total else 1.0)

    def _bm25(self, row: _Row, tokens: Sequence[str]) -> float:
        weights, average = self._weights(tokens)
        return ranking.score(row.terms, row.length, average, weights)

    def _parts(self, row: _Row, tokens: Sequence[str]) -> dict[str, float]:
        weights, average = self._weights(tokens)
        return ranking.contributions(row.terms, row.length, average, weights)

    def _list(self, plan: SearchPlan) -> tuple[list[MemoryHit], Cursor | None]:
        with self._lock:
            promoted = self._promoted_ids(plan)
            rows = [row for row in self._state.rows.values() if passes_filters(row.record, plan, promoted)]
            if plan.ranked:
                tokens = set(plan.tokens)
                scored = [(self._bm25(row, plan.tokens), row) for row in rows if tokens & row.terms.keys()]
                scored.sort(key=lambda item: (-item[0], -now_us(item[1].record.created_at), -item[1].seq))
                offset = (plan.cursor.offset or 0) if plan.cursor else 0
                page = scored[offset : offset + plan.limit]
                hits = [
                    MemoryHit(record=row.record, score=score, terms=self._parts(row, plan.tokens))
                    for score, row in page
                ]
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
