"""The public store API, written once over a backend's primitives.

Every store operation (write a batch, search, list, get, invalidate, delete, erase,
sweep, the event log) is written here once, as *steps*: a flow validates its input and
yields :class:`Unit` objects — one unit of work, run in one transaction of a given
:data:`Mode` — whose steps call the backend's :class:`Session` primitives. Primitives are
ops (:mod:`memory_admin.store._sql`): generators that yield SQL statements, or no
statement at all for the in-memory backend. Two drivers run every flow: :meth:`_drive`
(sync) and :meth:`_adrive` (async). How a backend answers a unit is its driver choice —
SQLite runs the sync driver on a worker thread, PostgreSQL runs the same statements on
an async connection — never a second copy of a rule. No backend overrides a public
method of :class:`BaseMemoryStore`.

Events are the exception to "one unit per operation": an operation hands its event to
the store's :class:`~memory_admin.store.event_buffer.EventBuffer`, which commits them
in batches from a background thread, so a read never becomes a write to log itself.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from memory_admin.errors import (
    CapabilityError,
    MemoryConflictError,
    MemoryCorruptionError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryScrubPendingError,
    MemoryValidationError,
)
from memory_admin.events import (
    AnyEvent,
    EventLogStats,
    EventQuery,
    EventSink,
    MemorySearchEvent,
    StoredEvent,
    agent_of,
    deliver,
    preview,
)
from memory_admin.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    parse_model,
    utc_now,
)
from memory_admin.scope import TENANT_KEY, Scope, canonical_scope, format_scope, is_subset_match, scope_json
from memory_admin.steps import arun_steps, run_steps
from memory_admin.store._sql import Op, Statement
from memory_admin.store.arguments import (
    MAX_STORED_INT,
    check_count,
    check_event_id,
    check_id,
    check_list,
    check_time,
    clean_reason,
)
from memory_admin.store.batch import check_import_slots, plan_batch, validate_batch, write_events
from memory_admin.store.event_buffer import DEFAULT_CAPACITY, DEFAULT_INTERVAL, EventBuffer, live_buffers
from memory_admin.store.ids import IdFactory
from memory_admin.store.plan import Cursor, SearchPlan, now_us
from memory_admin.store.protocol import (
    ChainLink,
    CorruptionScan,
    ErasureReport,
    MemoryStoreCapabilities,
    RecordListQuery,
    RecordPage,
    ScopeCounts,
    ScopeFacet,
    SearchQueryLike,
    WriteInputLike,
)
from memory_admin.store.session import (
    BatchReader,
    BatchReads,
    Flow,
    Invalidation,
    Mode,
    PlannedBatch,
    Session,
    Slot,
    Unit,
)
from memory_admin.tokenize import unique_tokens

Clock = Callable[[], datetime]
T = TypeVar("T")

MAX_QUERY_TOKENS = 64
"""Distinct query tokens a search matches on; later ones are ignored (documented)."""

MAX_CHAIN_LENGTH = 1000
DEFAULT_MAX_CONTENT_CHARS = 10_000
DEFAULT_MAX_LIMIT = 1000
DEFAULT_MAX_BATCH = 10_000
MAX_MENTIONS = 25
"""Records an erasure's dry run lists as naming the scope elsewhere in the tenant."""
SCRUB_WAIT_S = 2.0
"""How long delete, erase and sweep wait for readers' old snapshots before they report
the scrub pending (instead of holding the caller for the whole busy timeout)."""


def full_capabilities(backend: str) -> MemoryStoreCapabilities:
    """The capabilities of a backend with every extension and the default limits (every
    bundled backend; a store with an embedder reports its search kind on top)."""
    return MemoryStoreCapabilities(
        backend=backend,
        search="keyword",
        erasure=True,
        admin=True,
        events=True,
        max_content_chars=DEFAULT_MAX_CONTENT_CHARS,
        max_limit=DEFAULT_MAX_LIMIT,
        max_batch=DEFAULT_MAX_BATCH,
    )


def _commit_events(store: BaseMemoryStore, events: Sequence[AnyEvent], lost: int) -> None:
    # looked up on each commit (not bound once), like every other unit the store runs
    store._commit_events(events, lost)


class BaseMemoryStore(ABC):
    """The public API of every backend. A backend declares its :attr:`capabilities_data`
    and implements :meth:`_open` (a session and a statement runner for a unit's mode);
    a backend with native async connections also implements :meth:`_aopen`.

    ``persist_events`` turns the event log off (sinks still hear every event);
    ``event_flush_interval`` is how long an event may wait for its batch (what a crash
    can lose) and ``event_buffer_size`` how many events wait at most before the oldest
    are dropped (see :mod:`memory_admin.store.event_buffer`)."""

    backend_name: ClassVar[str] = "memory_store"
    capabilities_data: ClassVar[MemoryStoreCapabilities]

    def __init__(
        self,
        *,
        clock: Clock = utc_now,
        sinks: Iterable[EventSink] = (),
        persist_events: bool = True,
        event_flush_interval: float = DEFAULT_INTERVAL,
        event_buffer_size: int = DEFAULT_CAPACITY,
    ) -> None:
        self._clock = clock
        self._sinks: list[EventSink] = list(sinks)
        self._persist_events = persist_events
        self._ids = IdFactory()
        self._events = EventBuffer(self, _commit_events, interval=event_flush_interval, capacity=event_buffer_size)

    # --- the backend's part ---------------------------------------------------------

    @abstractmethod
    def _open(self, mode: Mode) -> AbstractContextManager[tuple[Session, Callable[[Statement], list[Any]]]]:
        """A session for one unit of ``mode`` and the function that runs its statements.
        Leaving the context commits (or, if the block raised, rolls back)."""

    def _run_unit(self, unit: Unit[T]) -> T:
        with self._open(unit.mode) as (session, execute):
            return run_steps(unit.steps(session), execute)

    async def _arun_unit(self, unit: Unit[T]) -> T:
        """Run a unit from async code. The default runs the sync driver on a worker
        thread; a backend with native async connections runs the same steps on one."""
        return await asyncio.to_thread(self._run_unit, unit)

    def capabilities(self) -> MemoryStoreCapabilities:
        return self.capabilities_data

    def close(self) -> None:
        """Commit the events still buffered, stop their writer, then release the store's
        connections; the store cannot be used afterwards. Safe to call twice."""
        self._events.close()  # while the connections are still open
        self._release()

    async def aclose(self) -> None:
        """Release connections, async ones on the running loop included (see :meth:`close`)."""
        await asyncio.to_thread(self._events.close)
        await self._arelease()

    def _release(self) -> None:
        """The backend's part of :meth:`close`. The default store holds nothing."""

    async def _arelease(self) -> None:
        """The backend's part of :meth:`aclose`: by default, :meth:`_release`."""
        self._release()

    # --- the drivers ----------------------------------------------------------------

    def _drive(self, flow: Flow[T]) -> T:
        return run_steps(flow, self._run_unit)

    async def _adrive(self, flow: Flow[T]) -> T:
        return await arun_steps(flow, self._arun_unit)

    # --- events -----------------------------------------------------------------------

    def add_sink(self, sink: EventSink) -> None:
        """Deliver every future event to ``sink`` too."""
        self._sinks.append(sink)

    @property
    def _observed(self) -> bool:
        return bool(self._sinks) or self._logging_events

    @property
    def _logging_events(self) -> bool:
        return self._persist_events and self.capabilities().events

    def emit(self, event: AnyEvent) -> None:
        """Queue ``event`` for the store's event log (when it keeps one; committed in a
        batch within :attr:`event_flush_interval`) and hand it to every sink. Never
        blocks on the log and never raises: a failing log or sink is logged, and the
        operation the event reports stands."""
        if self._logging_events:
            self._events.put(event)
        deliver(self._sinks, event)

    def _emit_all(self, events: Iterable[AnyEvent]) -> None:
        if self._observed:
            for event in events:
                self.emit(event)

    def record_event(self, event: AnyEvent) -> StoredEvent:
        """Persist one event now, after the events emitted before it, and return it with
        its id (raises on failure, unlike :meth:`emit`)."""
        self.flush_events()
        return StoredEvent(id=self._append_event(event), event=event)

    def _append_event(self, event: AnyEvent) -> int:
        [event_id] = self._run_unit(Unit("write", lambda s: s.append_events([event])))
        return event_id

    def _commit_events(self, events: Sequence[AnyEvent], lost: int) -> None:
        """One batch of the buffer, and the events it had to drop, in one write unit."""
        self._run_unit(Unit("append", lambda s: s.log_events(events, lost)))

    @property
    def event_flush_interval(self) -> float:
        return self._events.interval

    def _event_log_key(self) -> str:
        """What identifies this store's event log within the process: store objects with
        the same key log to the same place (a backend over a file or a server says which)."""
        return f"{type(self).__name__}:{id(self)}"

    def flush_events(self) -> None:
        """Commit every event this process has emitted to this store's log — through this
        store object or another one over the same data — before returning (their writer
        threads would within :attr:`event_flush_interval`). Event reads and erasure call
        it first, so a process always reads its own events."""
        key = self._event_log_key()
        for buffer in live_buffers():
            owner = buffer.owner
            if owner is self or (isinstance(owner, BaseMemoryStore) and owner._event_log_key() == key):
                buffer.flush()

    def event_log_stats(self) -> EventLogStats:
        """How complete the log is: events dropped (by every process, as far as they
        could report it) and this process's events still waiting for their batch."""
        caps = self.capabilities()
        if not caps.events:
            raise CapabilityError(self.backend_name, ["events"])
        local = self._events.stats()
        logged = self._run_unit(Unit("read", lambda s: s.events_dropped()))
        return EventLogStats(
            logging=self._logging_events,
            dropped=logged + local.unreported,
            pending=local.pending,
            flush_interval_s=self._events.interval,
        )

    def _events_unit(self, mode: Mode, steps: Callable[[Session], Op[T]]) -> Unit[T]:
        if not self.capabilities().events:
            raise CapabilityError(self.backend_name, ["events"])
        return Unit(mode, steps)

    def query_events(self, query: EventQuery | Mapping[str, object]) -> list[StoredEvent]:
        """See :meth:`EventLogStore.query_events`; this process's own events are
        committed first (:meth:`flush_events`), so it always reads what it emitted."""
        parsed = parse_model(EventQuery, query, what="event query")
        self.flush_events()
        return self._run_unit(self._events_unit("read", lambda s: s.query_events(parsed)))

    def get_event(self, event_id: int) -> StoredEvent | None:
        event_id = check_event_id(event_id)
        after = event_id + 1 if event_id < MAX_STORED_INT else None  # the largest id has nothing after it
        found = self.query_events(EventQuery(before_id=after, limit=1, include_previews=True))
        return found[0] if found and found[0].id == event_id else None

    def prune_events(self, before: datetime) -> int:
        before = check_time(before, "before")
        self.flush_events()
        return self._run_unit(self._events_unit("write", lambda s: s.prune_events(before)))

    def import_events(self, events: Sequence[StoredEvent | Mapping[str, object]]) -> int:
        """Insert events verbatim, ids included (moving an event log between stores). An id
        already in the log is skipped, so a copy can be resumed; returns how many went in."""
        parsed = [
            parse_model(StoredEvent, event, what=f"event {i}") for i, event in enumerate(check_list(events, "events"))
        ]
        if not parsed:
            return 0
        self.flush_events()
        return self._run_unit(self._events_unit("write", lambda s: s.import_events(parsed)))

    # --- write --------------------------------------------------------------------

    def write(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]:
        return self._drive(self._write(inputs))

    async def awrite(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]:
        return await self._adrive(self._write(inputs))

    def _write(self, inputs: Sequence[WriteInputLike]) -> Flow[list[MemoryRecord]]:
        items = validate_batch(inputs, self.capabilities())
        if not items:
            return []
        batch: PlannedBatch = yield Unit("write", lambda s: self._write_steps(s, items))
        self._emit_all(write_events(batch))
        return batch.records

    def _write_steps(self, s: Session, items: list[MemoryWriteInput]) -> Op[PlannedBatch]:
        """Read (and lock) what the batch names, plan it, apply it."""
        slots = [(item.scope, item.kind, item.key) for item in items if item.key is not None]
        named = sorted({item.supersedes for item in items if item.supersedes})
        scopes = [item.scope for item in items]
        reads = BatchReads((yield from s.batch_reads(named, slots, scopes)), slots)
        batch = plan_batch(reads, items, clock=self._clock, id_factory=self._ids)
        if batch.invalidations:
            yield from s.invalidate(batch.invalidations)
        yield from s.insert(batch.records)
        return batch

    # --- read ---------------------------------------------------------------------

    def get(self, record_id: str) -> MemoryRecord | None:
        return self._drive(self._get(record_id))

    async def aget(self, record_id: str) -> MemoryRecord | None:
        return await self._adrive(self._get(record_id))

    def _get(self, record_id: str) -> Flow[MemoryRecord | None]:
        check_id(record_id)
        found: dict[str, MemoryRecord] = yield Unit("read", lambda s: s.get_many([record_id]))
        return found.get(record_id)

    def _plan(
        self,
        query: SearchQueryLike,
        *,
        include_expired: bool = False,
        cursor: str | None = None,
    ) -> SearchPlan:
        parsed = parse_model(MemorySearchQuery, query, what="search query")
        caps = self.capabilities()
        if parsed.limit > caps.max_limit:
            raise MemoryValidationError(
                f"limit is {parsed.limit}; {caps.backend} returns at most {caps.max_limit} per call.",
                [{"loc": "limit", "msg": f"at most {caps.max_limit}"}],
            )
        tokens = tuple(unique_tokens(parsed.query)[:MAX_QUERY_TOKENS]) if parsed.query is not None else ()
        decoded = Cursor.decode(cursor) if cursor else None
        if decoded is not None and (decoded.offset is not None) != (parsed.query is not None):
            raise MemoryValidationError(
                "That page cursor belongs to a different listing; start from the first page.",
                [{"loc": "cursor", "msg": "cursor does not match the query"}],
            )
        return SearchPlan(
            query=parsed,
            tokens=tokens,
            now=self._clock(),
            limit=parsed.limit,
            include_expired=include_expired,
            cursor=decoded,
        )

    def search(self, query: SearchQueryLike, *, emit_event: bool = True) -> list[MemoryHit]:
        """See :meth:`MemoryStore.search`."""
        return self._drive(self._search(query, emit_event))

    async def asearch(self, query: SearchQueryLike, *, emit_event: bool = True) -> list[MemoryHit]:
        return await self._adrive(self._search(query, emit_event))

    def _search(self, query: SearchQueryLike, emit_event: bool) -> Flow[list[MemoryHit]]:
        started = time.perf_counter()
        plan = self._plan(query)
        hits: list[MemoryHit] = (yield from self._page(plan))[0]
        if emit_event:
            self._emit_all([self._search_event(plan, hits, started)] if self._observed else [])
        return hits

    def _page(self, plan: SearchPlan) -> Flow[tuple[list[MemoryHit], Cursor | None]]:
        if plan.empty:
            return [], None
        # a ranked search reads several statements that must agree; a listing reads one
        page: tuple[list[MemoryHit], Cursor | None] = yield Unit(
            "snapshot" if plan.ranked else "read", lambda s: s.search(plan)
        )
        return page

    @staticmethod
    def _search_event(plan: SearchPlan, hits: Sequence[MemoryHit], started: float) -> MemorySearchEvent:
        text, clipped = preview(plan.query.query)
        return MemorySearchEvent(
            at=plan.now,
            scope=plan.query.scope,
            agent=plan.query.agent or agent_of(plan.query.scope),
            scope_match=plan.query.scope_match,
            query_preview=text,
            query_clipped=clipped,
            count=len(hits),
            limit=plan.limit,
            record_ids=[hit.record.id for hit in hits],
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    # --- curation -----------------------------------------------------------------

    def invalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        return self._drive(self._invalidate(record_id, reason))

    async def ainvalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        return await self._adrive(self._invalidate(record_id, reason))

    def _invalidate(self, record_id: str, reason: str | None) -> Flow[MemoryRecord]:
        check_id(record_id)
        cleaned = clean_reason(reason)

        def steps(s: Session) -> Op[MemoryRecord]:
            current = (yield from s.get_many([record_id], lock=True)).get(record_id)
            result, change = self._invalidation(record_id, current, cleaned)
            if change is not None:
                yield from s.invalidate([change])
            return result

        record: MemoryRecord = yield Unit("write", steps)
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

    # as for erasure: this process's buffered events are committed first, so forgetting
    # reaches the ones that have not been written yet

    def delete(self, record_id: str) -> bool:
        self.flush_events()
        return self._drive(self._delete(record_id))

    async def adelete(self, record_id: str) -> bool:
        await asyncio.to_thread(self.flush_events)
        return await self._adrive(self._delete(record_id))

    def _delete(self, record_id: str) -> Flow[bool]:
        check_id(record_id)

        def steps(s: Session) -> Op[bool]:
            tenant = yield from s.tenant_of(record_id)
            if tenant is None:
                return False
            yield from s.delete(record_id)
            # the events that found it lose the query text that may quote it, in the same transaction
            yield from s.forget_in_events(tenant, [record_id])
            return True

        existed: bool = yield Unit("write", steps)
        if existed:
            yield from self._scrub(f"Record {record_id}")
        return existed

    def _scrub(self, what: str, report: ErasureReport | None = None) -> Flow[None]:
        """After forgetting: no forgotten byte left in the store's files within
        :data:`SCRUB_WAIT_S`, else :class:`MemoryScrubPendingError` (the forgetting stands)."""
        done: bool = yield Unit("maintain", lambda s: s.scrub(SCRUB_WAIT_S))
        if not done:
            raise MemoryScrubPendingError(what, report=report)

    def scrub(self, wait: float = 30.0) -> bool:
        """Finish what a forgetting left pending: checkpoint the store's files so no
        forgotten byte remains, trying for up to ``wait`` seconds while other connections
        hold older snapshots. ``True`` once nothing remains."""
        done: bool = self._run_unit(Unit("maintain", lambda s: s.scrub(wait)))
        return done

    # --- erasure extension --------------------------------------------------------

    # this process's buffered events about the scope are committed first, so the
    # erasure (and its preview's count) covers them

    def erase(self, scope: Mapping[str, str]) -> ErasureReport:
        self.flush_events()
        return self._drive(self._erase(scope, dry_run=False))

    async def aerase(self, scope: Mapping[str, str]) -> ErasureReport:
        await asyncio.to_thread(self.flush_events)
        return await self._adrive(self._erase(scope, dry_run=False))

    def preview_erase(self, scope: Mapping[str, str]) -> ErasureReport:
        self.flush_events()
        return self._drive(self._erase(scope, dry_run=True))

    def _erase(self, scope: Mapping[str, str], *, dry_run: bool) -> Flow[ErasureReport]:
        canonical = canonical_scope(scope)
        now = self._clock()

        def steps(s: Session) -> Op[ErasureReport]:
            scopes = yield from s.scopes_under(canonical, lock=not dry_run)
            ids = [sid for sid, _ in scopes]
            by_kind = yield from s.kind_counts(ids)
            sample = yield from s.newest_ids(ids, 10)
            events = yield from s.erase_events(canonical, dry_run=dry_run)
            if not dry_run:
                # tenant-wide events that found an erased record keep no text that may quote it
                yield from s.forget_in_events(canonical[TENANT_KEY], (yield from s.ids_in_scopes(ids)))
                yield from s.drop_scopes(ids)
            return ErasureReport(
                scope=canonical,
                dry_run=dry_run,
                records=sum(by_kind.values()),
                by_kind=by_kind,
                events=events,
                scopes=sorted((found for _, found in scopes), key=scope_json),
                sample_ids=sample,
                at=now,
            )

        report: ErasureReport = yield Unit("snapshot" if dry_run else "write", steps)
        if dry_run:
            return report.model_copy(update={"mentions": (yield from self._mentions(canonical))})
        yield from self._scrub(f"Scope {format_scope(canonical)}", report)
        return report

    def _mentions(self, scope: Scope) -> Flow[list[str]]:
        """Records elsewhere in the tenant that name the scope's values (a dry run's
        advice, so a corrupt row on the way skips it rather than failing the preview)."""
        words = sorted({t for k, v in scope.items() if k != TENANT_KEY for t in unique_tokens(v) if len(t) >= 3})
        if not words:
            return []
        tenant = {TENANT_KEY: scope[TENANT_KEY]}
        plan = self._plan({"scope": tenant, "query": " ".join(words), "include_invalidated": True, "limit": 100})
        try:
            hits, _ = yield from self._page(plan)
        except MemoryCorruptionError:
            return []
        return [hit.record.id for hit in hits if not is_subset_match(hit.record.scope, scope)][:MAX_MENTIONS]

    # --- admin extension ----------------------------------------------------------

    def list_records(self, query: RecordListQuery) -> RecordPage:
        query = parse_model(RecordListQuery, query, what="listing")
        plan = self._plan(query.search, include_expired=query.include_expired, cursor=query.cursor)
        hits, cursor = self._drive(self._page(plan))
        return RecordPage(hits=hits, next_cursor=cursor.encode() if cursor else None)

    def iter_records(self, query: RecordListQuery, *, page_size: int = 500) -> Iterator[MemoryRecord]:
        """Every record of a listing, page by page (bounded memory, for exports)."""
        search = query.search.model_copy(update={"limit": page_size})
        cursor = query.cursor
        while True:
            page = self.list_records(query.model_copy(update={"search": search, "cursor": cursor}))
            for hit in page.hits:
                yield hit.record
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def import_records(
        self, records: Sequence[MemoryRecord | Mapping[str, object]], *, skip_existing: bool = False
    ) -> int:
        """Insert records verbatim — ids, timestamps, invalidation chains and tombstoned
        links as they are — in one transaction (moving a store's contents to another
        backend). Within a batch-time tie, records keep the order given (pass them oldest
        first). An id already stored is a conflict unless ``skip_existing`` (resuming a
        copy); so is a live record whose key slot another live record holds. Returns how
        many records went in."""
        caps = self.capabilities()
        if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
            raise MemoryValidationError(
                "import_records() takes a list of records.", [{"loc": "records", "msg": "expected a list"}]
            )
        if len(records) > caps.max_batch:
            raise MemoryLimitError(
                f"A batch holds at most {caps.max_batch} records; split it.", limit=caps.max_batch, size=len(records)
            )
        parsed = [parse_model(MemoryRecord, record, what=f"record {i}") for i, record in enumerate(records)]
        for index, record in enumerate(parsed):
            if len(record.content) > caps.max_content_chars:
                raise MemoryLimitError(
                    f"Record {index} ({record.id}): content has {len(record.content)} characters; "
                    f"{caps.backend} holds at most {caps.max_content_chars}.",
                    index=index,
                    limit=caps.max_content_chars,
                    size=len(record.content),
                )
        repeated = [record_id for record_id, n in Counter(r.id for r in parsed).items() if n > 1]
        if repeated:
            raise MemoryValidationError(
                f"Record id {repeated[0]!r} appears twice in one import.", [{"loc": "records", "msg": "repeated id"}]
            )
        if not parsed:
            return 0

        def steps(s: Session) -> Op[int]:
            slots = [(r.scope, r.kind, r.key) for r in parsed if r.key is not None and r.invalid_at is None]
            scopes = [r.scope for r in parsed]
            reads = BatchReads((yield from s.batch_reads([r.id for r in parsed], slots, scopes)), slots)
            existing = reads.get_many(r.id for r in parsed)
            if existing and not skip_existing:
                first = min(existing)
                raise MemoryConflictError(
                    f"{len(existing)} of these records already exist (e.g. {first!r}); pass "
                    "skip_existing=True to resume a copy. Nothing was imported.",
                    record_id=first,
                )
            fresh = [r for r in parsed if r.id not in existing]
            check_import_slots(reads, fresh)
            if fresh:
                yield from s.insert(fresh)
            return len(fresh)

        return self._run_unit(Unit("write", steps))

    def scope_facets(self, scope: Mapping[str, str] | None = None, *, values_per_key: int = 50) -> list[ScopeFacet]:
        canonical = canonical_scope(scope) if scope is not None else None
        return self._run_unit(Unit("read", lambda s: s.facets(canonical, values_per_key)))

    def count_records(self, scope: Mapping[str, str], *, scope_match: str = "subset") -> ScopeCounts:
        plan = self._plan(
            {"scope": scope, "scope_match": scope_match, "include_invalidated": True, "limit": 0},
            include_expired=True,
        )
        return self._run_unit(Unit("snapshot", lambda s: s.count(plan)))

    def sweep_expired(self, scope: Mapping[str, str]) -> int:
        return self._drive(self._sweep_expired(scope))

    def _sweep_expired(self, scope: Mapping[str, str]) -> Flow[int]:
        canonical = canonical_scope(scope)
        now = self._clock()

        def steps(s: Session) -> Op[int]:
            doomed = yield from s.expired_ids(canonical, now)
            for record_id in doomed:
                yield from s.delete(record_id)
            return len(doomed)

        swept: int = yield Unit("write", steps)
        if swept:
            yield from self._scrub(f"{swept} expired records")
        return swept

    def find_corrupt(
        self, scope: Mapping[str, str] | None = None, *, limit: int = 100, max_rows: int | None = None
    ) -> CorruptionScan:
        limit, max_rows = check_count(limit, "limit"), check_count(max_rows, "max_rows", optional=True)
        canonical = canonical_scope(scope) if scope is not None else None
        return self._run_unit(Unit("read", lambda s: s.find_corrupt(canonical, limit, max_rows)))

    def chain(self, record_id: str) -> list[ChainLink]:
        check_id(record_id)

        def steps(s: Session) -> Op[list[ChainLink]]:
            def fetch(link_id: str) -> Op[MemoryRecord | None]:
                return (yield from s.get_many([link_id])).get(link_id)

            start = yield from fetch(record_id)
            if start is None:
                raise MemoryNotFoundError(record_id)
            seen = {start.id}
            links: dict[str, list[ChainLink]] = {"supersedes": [], "superseded_by": []}
            for direction, found in links.items():
                cursor: MemoryRecord | None = start
                while cursor is not None and len(seen) < MAX_CHAIN_LENGTH:
                    next_id: str | None = getattr(cursor, direction)
                    if next_id is None or next_id in seen:
                        break
                    seen.add(next_id)
                    cursor = yield from fetch(next_id)
                    found.append(ChainLink(id=next_id, record=cursor))
            return [*reversed(links["supersedes"]), ChainLink(id=start.id, record=start), *links["superseded_by"]]

        return self._run_unit(Unit("snapshot", steps))

    def optimize(self) -> None:
        """Compact the store's indexes after a large import; a no-op where there is
        nothing to compact. Safe to call at any time."""
        self._run_unit(Unit("maintain", lambda s: s.optimize()))

    def __enter__(self) -> BaseMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "BaseMemoryStore",
    "BatchReader",
    "BatchReads",
    "Clock",
    "Cursor",
    "Flow",
    "Invalidation",
    "Mode",
    "PlannedBatch",
    "SearchPlan",
    "Session",
    "Slot",
    "Unit",
    "check_id",
    "clean_reason",
    "full_capabilities",
    "now_us",
]
