"""The public store API, written once over a backend's primitives.

Every store operation (write a batch, search, list, get, invalidate, delete, erase,
sweep, the event log) is written here once, as steps (:mod:`memory_admin.steps`): an
operation validates its input and yields :class:`~memory_admin.store.session.Unit` objects —
one unit of work, run in one transaction of a given mode — whose steps call the backend's
:class:`~memory_admin.store.session.Session` primitives, themselves steps that yield SQL
statements (or nothing, in the in-memory backend). Two drivers run every operation:
:meth:`_drive` (sync) and :meth:`_adrive` (async). How a backend answers a unit is its
driver choice — SQLite runs the sync driver on a worker thread, PostgreSQL runs the same
statements on an async connection — never a second copy of a rule. No backend overrides
a public method of :class:`BaseMemoryStore`.

The class is built of three parts: :class:`~memory_admin.store.core.StoreCore` (how units
run, the drivers, the plans reads share), :class:`~memory_admin.store.event_log.BaseEventLogStore`
(sinks and the buffered log) and :class:`~memory_admin.store.admin.BaseAdminStore` (the
admin extension); this module holds the protocol's own operations.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from itertools import islice
from typing import TypeVar

from memory_admin.errors import (
    MemoryCorruptionError,
    MemoryNotFoundError,
)
from memory_admin.events import (
    MemorySearchEvent,
    agent_of,
    preview,
)
from memory_admin.promotion import Promotion, Transition
from memory_admin.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    SearchMode,
)
from memory_admin.scope import TENANT_KEY, Scope, canonical_scope, format_scope, is_subset_match, scope_json
from memory_admin.steps import Steps
from memory_admin.store.admin import BaseAdminStore
from memory_admin.store.arguments import check_id, clean_reason
from memory_admin.store.batch import BatchReads, plan_batch, validate_batch, write_events
from memory_admin.store.core import MAX_MENTIONS
from memory_admin.store.event_log import forget_in_log
from memory_admin.store.learnings import BaseLearningStore, demote_invalidated
from memory_admin.store.protocol import ErasureReport, SearchQueryLike, WriteInputLike
from memory_admin.store.session import Invalidation, PlannedBatch, Session, Statement, Unit, Work
from memory_admin.tokenize import tokenize, unique_words

T = TypeVar("T")


def search_event(
    query: MemorySearchQuery,
    at: datetime,
    limit: int,
    mode: SearchMode | None,
    record_ids: list[str],
    duration_ms: float,
) -> MemorySearchEvent:
    """The event of a search of ``query`` that found ``record_ids``."""
    text, clipped = preview(query.query)
    return MemorySearchEvent(
        at=at,
        scope=query.scope,
        agent=query.agent or agent_of(query.scope),
        scope_match=query.scope_match,
        query_preview=text,
        query_clipped=clipped,
        count=len(record_ids),
        limit=limit,
        record_ids=record_ids,
        duration_ms=duration_ms,
        mode=mode,
    )


class BaseMemoryStore(BaseLearningStore, BaseAdminStore):
    """The public API of every backend, written once (see the module docstring and
    :class:`~memory_admin.store.core.StoreCore` for what a backend implements)."""

    def write(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]:
        return self._drive(self._write(inputs))

    async def awrite(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]:
        return await self._adrive(self._write(inputs))

    def _write(self, inputs: Sequence[WriteInputLike]) -> Steps[Work, list[MemoryRecord]]:
        yield from self._adopt_embedder()
        items = validate_batch(inputs, self.capabilities())
        if not items:
            return []
        blobs = yield from self._document_vectors(items)
        batch: PlannedBatch = yield Unit("write", lambda s: self._write_steps(s, items, blobs))
        self._emit_all(write_events(batch))
        self._emit_learnings(batch.demoted)
        return batch.records

    def _write_steps(
        self, s: Session, items: list[MemoryWriteInput], blobs: Sequence[bytes] = ()
    ) -> Steps[Statement, PlannedBatch]:
        """Read (and lock) what the batch names, plan it, apply it — the records' vectors
        (``blobs``, in input order), the targeted ones' birth as candidates and the
        demotion of promoted predecessors in the same transaction."""
        slots = [(item.scope, item.kind, item.key) for item in items if item.key is not None]
        named = sorted({item.supersedes for item in items if item.supersedes})
        scopes = [item.scope for item in items]
        reads = BatchReads((yield from s.batch_reads(named, slots, scopes)), slots)
        batch = plan_batch(reads, items, clock=self._clock, id_factory=self._ids)
        if blobs:
            yield from self._vector_space(s, claim=True)  # before any change: a mismatch writes nothing
        if batch.invalidations:
            yield from s.invalidate(batch.invalidations)
        yield from s.insert(batch.records)
        yield from s.add_candidates(batch.records)
        yield from self._store_vectors(s, batch.records, blobs)
        if batch.invalidations:
            before = reads.get_many(change.record_id for change in batch.invalidations)
            invalidated = [
                before[change.record_id].model_copy(
                    update={
                        "invalid_at": change.at,
                        "invalid_reason": change.reason,
                        "superseded_by": change.superseded_by,
                        "updated_at": change.at,
                    }
                )
                for change in batch.invalidations
                if change.record_id in before
            ]
            batch.demoted = yield from demote_invalidated(s, invalidated)
        return batch

    def get(self, record_id: str) -> MemoryRecord | None:
        return self._drive(self._get(record_id))

    async def aget(self, record_id: str) -> MemoryRecord | None:
        return await self._adrive(self._get(record_id))

    def _get(self, record_id: str) -> Steps[Work, MemoryRecord | None]:
        check_id(record_id)
        found: dict[str, MemoryRecord] = yield Unit("read", lambda s: s.get_many([record_id]))
        return found.get(record_id)

    def search(self, query: SearchQueryLike, *, emit_event: bool = True) -> list[MemoryHit]:
        """See :meth:`MemoryStore.search`."""
        return self._drive(self._search(query, emit_event))

    async def asearch(self, query: SearchQueryLike, *, emit_event: bool = True) -> list[MemoryHit]:
        return await self._adrive(self._search(query, emit_event))

    def _search(self, query: SearchQueryLike, emit_event: bool) -> Steps[Work, list[MemoryHit]]:
        started = time.perf_counter()
        yield from self._adopt_embedder()
        plan = self._plan(query)
        hits: list[MemoryHit] = (yield from self._page(plan))[0]
        if emit_event and self._observed:
            # what the event needs, taken now; the model is built off the search's path
            self._emit_later(
                partial(
                    search_event,
                    plan.query,
                    plan.now,
                    plan.limit,
                    plan.mode if plan.ranked else None,
                    [hit.record.id for hit in hits],
                    round((time.perf_counter() - started) * 1000, 3),
                )
            )
        return hits

    def invalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        return self._drive(self._invalidate(record_id, reason))

    async def ainvalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        return await self._adrive(self._invalidate(record_id, reason))

    def _invalidate(self, record_id: str, reason: str | None) -> Steps[Work, MemoryRecord]:
        check_id(record_id)
        cleaned = clean_reason(reason)

        def steps(s: Session) -> Steps[Statement, tuple[MemoryRecord, list[tuple[MemoryRecord, Transition]]]]:
            current = (yield from s.get_many([record_id], lock=True)).get(record_id)
            result, change = self._invalidation(record_id, current, cleaned)
            if change is None:
                return result, []
            yield from s.invalidate([change])
            return result, (yield from demote_invalidated(s, [result]))

        done: tuple[MemoryRecord, list[tuple[MemoryRecord, Transition]]] = yield Unit("write", steps)
        record, demoted = done
        self._emit_learnings(demoted)
        return record

    def _invalidation(
        self, record_id: str, current: MemoryRecord | None, reason: str | None
    ) -> tuple[MemoryRecord, Invalidation | None]:
        """The record after invalidating it, and the change to apply (``None``: it was
        already invalid, and repeating keeps the first reason)."""
        if current is None:
            raise MemoryNotFoundError(record_id)
        if current.invalid_at is not None:
            return current, None
        now = max(self._clock(), current.updated_at)
        change = Invalidation(record_id, now, reason)
        return current.model_copy(update={"invalid_at": now, "invalid_reason": reason, "updated_at": now}), change

    def delete(self, record_id: str) -> bool:
        self.flush_events()
        return self._drive(self._delete(record_id))

    async def adelete(self, record_id: str) -> bool:
        await asyncio.to_thread(self.flush_events)
        return await self._adrive(self._delete(record_id))

    def _delete(self, record_id: str) -> Steps[Work, bool]:
        check_id(record_id)

        def steps(s: Session) -> Steps[Statement, tuple[bool, list[Promotion]]]:
            tenant = yield from s.tenant_of(record_id)
            if tenant is None:
                return False, []
            yield from s.begin_forgetting()
            promoted = yield from self._promoted_among(s, [record_id])
            yield from s.delete(record_id)
            yield from forget_in_log(s, tenant, [record_id], self._clock)
            return True, promoted

        done: tuple[bool, list[Promotion]] = yield Unit("write", steps)
        existed, promoted = done
        self._log_forgotten_demotions(promoted, "deleted")
        if existed:
            yield from self._scrub(f"Record {record_id}")
        return existed

    def erase(self, scope: Mapping[str, str]) -> ErasureReport:
        self.flush_events()
        return self._drive(self._erase(scope, dry_run=False))

    async def aerase(self, scope: Mapping[str, str]) -> ErasureReport:
        await asyncio.to_thread(self.flush_events)
        return await self._adrive(self._erase(scope, dry_run=False))

    def preview_erase(self, scope: Mapping[str, str]) -> ErasureReport:
        self.flush_events()
        return self._drive(self._erase(scope, dry_run=True))

    def _erase(self, scope: Mapping[str, str], *, dry_run: bool) -> Steps[Work, ErasureReport]:
        canonical = canonical_scope(scope)
        now = self._clock()

        def steps(s: Session) -> Steps[Statement, ErasureReport]:
            if not dry_run:
                yield from s.begin_forgetting()
            scopes = yield from s.scopes_under(canonical, lock=not dry_run)
            ids = [sid for sid, _ in scopes]
            by_kind = yield from s.kind_counts(ids)
            sample = yield from s.newest_ids(ids, 10)
            events = yield from s.erase_events(canonical, dry_run=dry_run)
            registrations = yield from s.erase_compositions(canonical, dry_run=dry_run)
            if not dry_run:
                erased = yield from s.ids_in_scopes(ids)
                yield from s.drop_scopes(ids)
                # tenant-wide events that found an erased record keep no text that may quote it
                yield from forget_in_log(s, canonical[TENANT_KEY], erased, self._clock)
            return ErasureReport(
                scope=canonical,
                dry_run=dry_run,
                records=sum(by_kind.values()),
                by_kind=by_kind,
                events=events,
                scopes=sorted((found for _, found in scopes), key=scope_json),
                sample_ids=sample,
                at=now,
                registrations=registrations,
            )

        report: ErasureReport = yield Unit("snapshot" if dry_run else "write", steps)
        if dry_run:
            mentioned = yield from self._mentions(canonical)
            return report.model_copy(update={"mentions": list(mentioned), "mentioned_words": mentioned})
        yield from self._scrub(f"Scope {format_scope(canonical)}", report)
        return report

    def _mentions(self, scope: Scope) -> Steps[Work, dict[str, list[str]]]:
        """Records elsewhere in the tenant that name the scope's values, each with the
        words it names — a keyword search, whatever the store's default: a record close
        in meaning names nobody (a dry run's advice, so a corrupt row on the way skips
        it rather than failing the preview)."""
        words = sorted({t for k, v in scope.items() if k != TENANT_KEY for t in unique_words(v) if len(t) >= 3})
        if not words:
            return {}
        word_of = {term: word for word in words for term in tokenize(word)}
        tenant = {TENANT_KEY: scope[TENANT_KEY]}
        query = {"scope": tenant, "query": " ".join(words), "include_invalidated": True, "limit": 100}
        plan = self._plan({**query, "mode": "keyword"})
        try:
            hits, _ = yield from self._page(plan)
        except MemoryCorruptionError:
            return {}
        named = (hit for hit in hits if not is_subset_match(hit.record.scope, scope))
        return {
            hit.record.id: sorted({word_of[term] for term in hit.terms or {} if term in word_of})
            for hit in islice(named, MAX_MENTIONS)
        }


__all__ = ["BaseMemoryStore", "search_event"]
