"""The public store API, written once over a few backend primitives.

:class:`BaseMemoryStore` validates input, stamps ids and times, plans a write batch
(supersedes, key upserts, the batch tie), runs it in one backend transaction and emits
events after commit. A backend implements a transaction object and a listing
primitive; every rule in :mod:`memory_admin.store.protocol` lives here, not in the
backends, so they cannot drift apart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from memory_admin.errors import (
    CapabilityError,
    MemoryConflictError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryScopeError,
    MemoryValidationError,
)
from memory_admin.events import (
    AnyEvent,
    EventQuery,
    EventSink,
    MemorySearchEvent,
    MemoryWriteEvent,
    StoredEvent,
    agent_of,
    deliver,
    preview,
)
from memory_admin.records import (
    MAX_ID_CHARS,
    MAX_REASON_CHARS,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    parse_model,
    trusted_record,
    utc_now,
)
from memory_admin.scope import Scope, canonical_scope, scope_json
from memory_admin.store.ids import IdFactory
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
from memory_admin.tokenize import unique_tokens

Clock = Callable[[], datetime]
log = logging.getLogger(__name__)

MAX_QUERY_TOKENS = 64
"""Distinct query tokens a search matches on; later ones are ignored (documented)."""

MAX_CHAIN_LENGTH = 1000
DEFAULT_MAX_CONTENT_CHARS = 10_000
DEFAULT_MAX_LIMIT = 1000
DEFAULT_MAX_BATCH = 10_000


@dataclass(frozen=True)
class Cursor:
    """Where the next page starts: after ``(created_us, seq)`` for a recency listing,
    at ``offset`` for a ranked one."""

    created_us: int | None = None
    seq: int | None = None
    offset: int | None = None

    def encode(self) -> str:
        if self.offset is not None:
            return f"o{self.offset}"
        return f"r{self.created_us}.{self.seq}"

    @classmethod
    def decode(cls, text: str) -> Cursor:
        try:
            if text.startswith("o"):
                offset = int(text[1:])
                if offset < 0:
                    raise ValueError
                return cls(offset=offset)
            if text.startswith("r"):
                created, _, seq = text[1:].partition(".")
                return cls(created_us=int(created), seq=int(seq))
        except ValueError:
            pass
        raise MemoryValidationError(
            "That page cursor is not one this store issued; start from the first page.",
            [{"loc": "cursor", "msg": "malformed cursor"}],
        )


@dataclass(frozen=True)
class SearchPlan:
    """A validated search, ready for a backend."""

    query: MemorySearchQuery
    tokens: tuple[str, ...]
    now: datetime
    limit: int
    include_expired: bool = False
    cursor: Cursor | None = None

    @property
    def ranked(self) -> bool:
        return self.query.query is not None

    @property
    def empty(self) -> bool:
        """True when the plan can match nothing: ``limit=0``, or a query without tokens
        (no letters or digits, so it shares no token with any record)."""
        return self.limit == 0 or (self.ranked and not self.tokens)


@dataclass
class Invalidation:
    record_id: str
    at: datetime
    reason: str | None
    superseded_by: str | None = None


class BatchReader(Protocol):
    """What planning a write batch reads: its named predecessors and its key-slot holders."""

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]: ...
    def find_valid_keyed(self, scope: Scope, kind: str, key: str) -> MemoryRecord | None: ...


class WriteTransaction(BatchReader, Protocol):
    """The primitives a backend offers inside one atomic write transaction."""

    def insert(self, records: Sequence[MemoryRecord]) -> None: ...
    def invalidate(self, change: Invalidation) -> None: ...
    def delete(self, record_id: str) -> bool: ...
    def erase(self, scope: Scope, now: datetime, *, dry_run: bool) -> ErasureReport: ...
    def expired_ids(self, scope: Scope, now: datetime) -> list[str]: ...


@dataclass
class PlannedBatch:
    """A write batch resolved against the store: the records to insert (input order) and
    the predecessors to invalidate."""

    records: list[MemoryRecord] = field(default_factory=list)
    invalidations: list[Invalidation] = field(default_factory=list)


def now_us(moment: datetime) -> int:
    """Microseconds since the epoch: the integer time every SQL backend compares on."""
    return (int(moment.timestamp()) * 1_000_000) + moment.microsecond


def clean_reason(reason: str | None) -> str | None:
    if reason is None:
        return None
    cleaned = " ".join(reason.split())
    if len(cleaned) > MAX_REASON_CHARS:
        raise MemoryValidationError(
            f"An invalidation reason holds at most {MAX_REASON_CHARS} characters.",
            [{"loc": "reason", "msg": "too long"}],
        )
    return cleaned or None


def _check_id(record_id: object) -> str:
    if not isinstance(record_id, str) or not record_id or len(record_id) > MAX_ID_CHARS:
        raise MemoryValidationError(
            "A record id is a non-empty string of at most 64 characters.",
            [{"loc": "record_id", "msg": "invalid record id"}],
        )
    return record_id


class BaseMemoryStore(ABC):
    """The public API of every backend. Subclasses implement the primitives below."""

    backend_name = "memory_store"

    def __init__(self, *, clock: Clock = utc_now, sinks: Iterable[EventSink] = (), persist_events: bool = True) -> None:
        self._clock = clock
        self._sinks: list[EventSink] = list(sinks)
        self._persist_events = persist_events
        self._ids = IdFactory()

    # --- primitives ---------------------------------------------------------------

    @abstractmethod
    def capabilities(self) -> MemoryStoreCapabilities: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[WriteTransaction]:
        """An atomic, serialised write transaction; rolled back if the block raises."""

    @abstractmethod
    def _get_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The records with these ids that exist (corrupt rows raise)."""

    @abstractmethod
    def _list(self, plan: SearchPlan) -> tuple[list[MemoryHit], Cursor | None]:
        """One page of a search plan, and the cursor of the next page (if any)."""

    @abstractmethod
    def _scope_facets(self, scope: Scope | None, values_per_key: int) -> list[ScopeFacet]: ...

    @abstractmethod
    def _count_records(self, plan: SearchPlan) -> ScopeCounts: ...

    def _append_event(self, event: AnyEvent) -> StoredEvent:
        raise CapabilityError(self.backend_name, ["events"])

    def _query_events(self, query: EventQuery) -> list[StoredEvent]:
        raise CapabilityError(self.backend_name, ["events"])

    def _prune_events(self, before: datetime) -> int:
        raise CapabilityError(self.backend_name, ["events"])

    def _import_events(self, events: Sequence[StoredEvent]) -> int:
        """Insert events with their ids, skipping ids already present; returns how many went in."""
        raise CapabilityError(self.backend_name, ["events"])

    def _after_forget(self) -> None:
        """Called after a delete or erase commits; backends scrub their files here."""

    def optimize(self) -> None:
        """Compact the store's indexes after a large import; a no-op where there is
        nothing to compact. Safe to call at any time."""

    def close(self) -> None:
        """Release resources. The default store holds none."""

    # --- events -------------------------------------------------------------------

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
        """Append ``event`` to the store's event log (when it keeps one) and hand it to
        every sink. Never raises: a failing log or sink is logged, and the operation the
        event reports stands."""
        if self._logging_events:
            try:
                self._append_event(event)
            except Exception:
                log.exception("could not persist %s event", event.type)
        deliver(self._sinks, event)

    def record_event(self, event: AnyEvent) -> StoredEvent:
        """Persist one event and return it with its id (raises on failure, unlike :meth:`emit`)."""
        return self._append_event(event)

    def query_events(self, query: EventQuery | Mapping[str, object]) -> list[StoredEvent]:
        return self._query_events(parse_model(EventQuery, query, what="event query"))

    def get_event(self, event_id: int) -> StoredEvent | None:
        found = self._query_events(EventQuery(before_id=event_id + 1, limit=1, include_previews=True))
        return found[0] if found and found[0].id == event_id else None

    def prune_events(self, before: datetime) -> int:
        return self._prune_events(before)

    def import_events(self, events: Sequence[StoredEvent | Mapping[str, object]]) -> int:
        """Insert events verbatim, ids included (moving an event log between stores). An id
        already in the log is skipped, so a copy can be resumed; returns how many went in."""
        parsed = [parse_model(StoredEvent, event, what=f"event {i}") for i, event in enumerate(events)]
        return self._import_events(parsed) if parsed else 0

    # --- write --------------------------------------------------------------------

    def write(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]:
        items = self._validate_batch(inputs)
        if not items:
            return []
        batch = self._commit_batch(items)
        self._emit_writes(batch)
        return batch.records

    def _commit_batch(self, items: list[MemoryWriteInput]) -> PlannedBatch:
        """Plan validated inputs against the store and apply them in one transaction.

        A backend overrides this when it must take its locks before planning reads
        anything (PostgreSQL locks every scope of the batch first, in one order).
        """
        with self._transaction() as tx:
            batch = self._plan_batch(tx, items)
            for change in batch.invalidations:
                tx.invalidate(change)
            tx.insert(batch.records)
        return batch

    def _validate_batch(self, inputs: Sequence[WriteInputLike]) -> list[MemoryWriteInput]:
        if isinstance(inputs, (str, bytes, Mapping)) or not isinstance(inputs, Sequence):
            raise MemoryValidationError(
                "write() takes a list of inputs, even for a single record.",
                [{"loc": "inputs", "msg": "expected a list"}],
            )
        caps = self.capabilities()
        if len(inputs) > caps.max_batch:
            raise MemoryLimitError(
                f"A batch holds at most {caps.max_batch} inputs; split it.",
                limit=caps.max_batch,
                size=len(inputs),
            )
        items = [parse_model(MemoryWriteInput, item, what=f"input {i}") for i, item in enumerate(inputs)]
        for index, item in enumerate(items):
            if len(item.content) > caps.max_content_chars:
                raise MemoryLimitError(
                    f"Input {index}: content has {len(item.content)} characters; "
                    f"{caps.backend} holds at most {caps.max_content_chars}. "
                    "Store one fact per record.",
                    index=index,
                    limit=caps.max_content_chars,
                    size=len(item.content),
                )
        return items

    def _plan_batch(self, tx: BatchReader, items: list[MemoryWriteInput]) -> PlannedBatch:
        """Resolve every input's predecessor, then stamp the batch with one ``now``.

        A predecessor is the record an input supersedes: named explicitly, or the valid
        holder of its ``(scope, kind, key)`` slot, or an earlier input of this batch.
        """
        explicit = tx.get_many({item.supersedes for item in items if item.supersedes})
        stored: list[MemoryRecord | None] = []  # predecessor already in the store
        in_batch: list[int | None] = []  # or: index of an earlier input
        retired: set[str] = set()
        slots: dict[tuple[str, str, str], int] = {}
        for index, item in enumerate(items):
            predecessor = self._explicit_predecessor(index, item, explicit)
            earlier: int | None = None
            if item.key is not None:
                slot = (scope_json(item.scope), item.kind, item.key)
                earlier = slots.get(slot)
                holder = None if earlier is not None else tx.find_valid_keyed(item.scope, item.kind, item.key)
                if holder is not None and holder.id in retired:
                    holder = None  # an earlier input of this batch already superseded it
                if predecessor is not None and (earlier is not None or (holder and holder.id != predecessor.id)):
                    held_by = holder.id if holder else f"input {earlier} of this batch"
                    raise MemoryConflictError(
                        f"Input {index} supersedes {predecessor.id!r}, but the key {item.key!r} is held "
                        f"by {held_by}. Supersede that record or choose another key. Nothing was written.",
                        index=index,
                        record_id=predecessor.id,
                        key_holder=held_by,
                    )
                predecessor = predecessor or holder
                slots[slot] = index
            if predecessor is not None:
                if predecessor.id in retired:
                    raise MemoryConflictError(
                        f"Input {index} supersedes {predecessor.id!r}, which an earlier input of this "
                        "batch already supersedes; a record has one successor. Nothing was written.",
                        index=index,
                        record_id=predecessor.id,
                    )
                retired.add(predecessor.id)
            stored.append(predecessor)
            in_batch.append(earlier)

        # one now for the batch, never earlier than a version it supersedes (clock skew)
        now = max([self._clock(), *(p.updated_at for p in stored if p is not None)])
        for index, item in enumerate(items):
            if item.expires_at is not None and item.expires_at <= now:
                raise MemoryValidationError(
                    f"Input {index}: expires_at must be in the future.",
                    [{"loc": f"{index}.expires_at", "msg": "must be in the future"}],
                )
        ids = self._ids.batch(now, len(items))
        successor: dict[int, str] = {}
        batch = PlannedBatch()
        for index, (predecessor, earlier) in enumerate(zip(stored, in_batch, strict=True)):
            if predecessor is not None:
                batch.invalidations.append(Invalidation(predecessor.id, now, "superseded", superseded_by=ids[index]))
            if earlier is not None:
                successor[earlier] = ids[index]
        for index, item in enumerate(items):
            before, earlier = stored[index], in_batch[index]
            predecessor_id = ids[earlier] if earlier is not None else (before.id if before else None)
            retired_now = index in successor
            batch.records.append(
                # every field was validated as a MemoryWriteInput; skip validating it twice
                trusted_record(
                    id=ids[index],
                    scope=item.scope,
                    kind=item.kind,
                    content=item.content,
                    key=item.key,
                    tags=item.tags,
                    provenance=item.provenance,
                    created_at=now,
                    updated_at=now,
                    supersedes=predecessor_id,
                    expires_at=item.expires_at,
                    target=item.target,
                    payload=item.payload,
                    invalid_at=now if retired_now else None,
                    invalid_reason="superseded" if retired_now else None,
                    superseded_by=successor.get(index),
                    supports=(),
                )
            )
        return batch

    @staticmethod
    def _explicit_predecessor(
        index: int, item: MemoryWriteInput, explicit: dict[str, MemoryRecord]
    ) -> MemoryRecord | None:
        if item.supersedes is None:
            return None
        predecessor = explicit.get(item.supersedes)
        if predecessor is None:
            raise MemoryNotFoundError(
                item.supersedes,
                f"Input {index} supersedes {item.supersedes!r}, which does not exist. Nothing was written.",
            )
        if predecessor.scope != item.scope:
            raise MemoryScopeError(
                f"Input {index} supersedes {item.supersedes!r}, which lives in another scope; a "
                "correction is written in the scope of the record it corrects. Nothing was written.",
                index=index,
                record_id=item.supersedes,
            )
        if predecessor.invalid_at is not None:
            raise MemoryConflictError(
                f"Input {index} supersedes {item.supersedes!r}, which is already invalid"
                + (f" (superseded by {predecessor.superseded_by})" if predecessor.superseded_by else "")
                + ". Supersede the current version instead. Nothing was written.",
                index=index,
                record_id=item.supersedes,
                superseded_by=predecessor.superseded_by,
            )
        return predecessor

    def _emit_writes(self, batch: PlannedBatch) -> None:
        if self._observed:
            for event in self._write_events(batch):
                self.emit(event)

    @staticmethod
    def _write_events(batch: PlannedBatch) -> list[MemoryWriteEvent]:
        """One write event per distinct scope of a committed batch."""
        now = batch.records[0].created_at
        by_scope: dict[str, list[MemoryRecord]] = {}
        for record in batch.records:
            by_scope.setdefault(scope_json(record.scope), []).append(record)
        return [
            MemoryWriteEvent(
                at=now,
                scope=records[0].scope,
                agent=agent_of(records[0].scope),
                count=len(records),
                record_ids=[r.id for r in records],
                kinds=dict(Counter(r.kind for r in records)),
                superseded_ids=[r.supersedes for r in records if r.supersedes],
            )
            for records in by_scope.values()
        ]

    # --- read ---------------------------------------------------------------------

    def get(self, record_id: str) -> MemoryRecord | None:
        return self._get_many([_check_id(record_id)]).get(record_id)

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
        """See :meth:`MemoryStore.search`. ``emit_event=False`` skips the
        ``agent.memory.search`` event: for callers that report the search in an event of
        their own (recall reports its searches in ``agent.memory.recall``), so one
        assembly is not counted twice and a dashboard preview leaves no trace."""
        started = time.perf_counter()
        plan = self._plan(query)
        hits = self._run(plan)[0]
        if emit_event and self._observed:
            self.emit(self._search_event(plan, hits, started))
        return hits

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

    def _run(self, plan: SearchPlan) -> tuple[list[MemoryHit], Cursor | None]:
        if plan.empty:
            return [], None
        return self._list(plan)

    # --- curation -----------------------------------------------------------------

    def invalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        _check_id(record_id)
        cleaned = clean_reason(reason)
        with self._transaction() as tx:
            result, change = self._invalidation(record_id, tx.get_many([record_id]).get(record_id), cleaned)
            if change is not None:
                tx.invalidate(change)
        return result

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
        _check_id(record_id)
        with self._transaction() as tx:
            existed = tx.delete(record_id)
        if existed:
            self._after_forget()
        return existed

    # --- erasure extension --------------------------------------------------------

    def erase(self, scope: Mapping[str, str]) -> ErasureReport:
        canonical = canonical_scope(scope)
        with self._transaction() as tx:
            report = tx.erase(canonical, self._clock(), dry_run=False)
        self._after_forget()
        return report

    def preview_erase(self, scope: Mapping[str, str]) -> ErasureReport:
        canonical = canonical_scope(scope)
        with self._transaction() as tx:
            return tx.erase(canonical, self._clock(), dry_run=True)

    # --- admin extension ----------------------------------------------------------

    def list_records(self, query: RecordListQuery) -> RecordPage:
        plan = self._plan(query.search, include_expired=query.include_expired, cursor=query.cursor)
        hits, cursor = self._run(plan)
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
        with self._transaction() as tx:
            existing = tx.get_many([r.id for r in parsed])
            if existing and not skip_existing:
                first = min(existing)
                raise MemoryConflictError(
                    f"{len(existing)} of these records already exist (e.g. {first!r}); pass "
                    "skip_existing=True to resume a copy. Nothing was imported.",
                    record_id=first,
                )
            fresh = [r for r in parsed if r.id not in existing]
            self._check_import_slots(tx, fresh)
            if fresh:
                tx.insert(fresh)
        return len(fresh)

    @staticmethod
    def _check_import_slots(tx: BatchReader, records: Sequence[MemoryRecord]) -> None:
        """A key slot has one live holder, whichever way records arrive."""
        holders: dict[tuple[str, str, str], str] = {}
        for record in records:
            if record.key is None or record.invalid_at is not None:
                continue
            slot = (scope_json(record.scope), record.kind, record.key)
            stored = tx.find_valid_keyed(record.scope, record.kind, record.key)
            holder = holders.get(slot) or (stored.id if stored is not None else None)
            if holder is not None and holder != record.id:
                raise MemoryConflictError(
                    f"Record {record.id!r} is live on key {record.key!r}, which {holder!r} already holds; "
                    "a key slot has one live record. Nothing was imported.",
                    record_id=record.id,
                    key_holder=holder,
                )
            holders[slot] = record.id

    def scope_facets(self, scope: Mapping[str, str] | None = None, *, values_per_key: int = 50) -> list[ScopeFacet]:
        return self._scope_facets(canonical_scope(scope) if scope is not None else None, values_per_key)

    def count_records(self, scope: Mapping[str, str], *, scope_match: str = "subset") -> ScopeCounts:
        plan = self._plan(
            {"scope": scope, "scope_match": scope_match, "include_invalidated": True, "limit": 0},
            include_expired=True,
        )
        return self._count_records(plan)

    def sweep_expired(self, scope: Mapping[str, str]) -> int:
        canonical = canonical_scope(scope)
        with self._transaction() as tx:
            doomed = tx.expired_ids(canonical, self._clock())
            for record_id in doomed:
                tx.delete(record_id)
        if doomed:
            self._after_forget()
        return len(doomed)

    def find_corrupt(
        self, scope: Mapping[str, str] | None = None, *, limit: int = 100, max_rows: int | None = None
    ) -> CorruptionScan:
        if limit < 1 or (max_rows is not None and max_rows < 1):
            raise MemoryValidationError(
                "limit and max_rows are positive.", [{"loc": "limit", "msg": "must be at least 1"}]
            )
        return self._find_corrupt(canonical_scope(scope) if scope is not None else None, limit, max_rows)

    def _find_corrupt(self, scope: Scope | None, limit: int, max_rows: int | None) -> CorruptionScan:
        raise CapabilityError(self.backend_name, ["admin.find_corrupt"])

    def chain(self, record_id: str) -> list[ChainLink]:
        start = self.get(record_id)
        if start is None:
            raise MemoryNotFoundError(record_id)
        older: list[ChainLink] = []
        cursor: MemoryRecord | None = start
        seen = {start.id}
        while cursor is not None and cursor.supersedes and len(seen) < MAX_CHAIN_LENGTH:
            prev_id = cursor.supersedes
            if prev_id in seen:
                break
            seen.add(prev_id)
            cursor = self.get(prev_id)
            older.append(ChainLink(id=prev_id, record=cursor))
        newer: list[ChainLink] = []
        cursor = start
        while cursor is not None and cursor.superseded_by and len(seen) < MAX_CHAIN_LENGTH:
            next_id = cursor.superseded_by
            if next_id in seen:
                break
            seen.add(next_id)
            cursor = self.get(next_id)
            newer.append(ChainLink(id=next_id, record=cursor))
        return [*reversed(older), ChainLink(id=start.id, record=start), *newer]

    # --- async twins --------------------------------------------------------------
    # Backends without a native async driver run the sync call in a worker thread.

    async def awrite(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]:
        return await asyncio.to_thread(self.write, inputs)

    async def asearch(self, query: SearchQueryLike, *, emit_event: bool = True) -> list[MemoryHit]:
        return await asyncio.to_thread(self.search, query, emit_event=emit_event)

    async def aget(self, record_id: str) -> MemoryRecord | None:
        return await asyncio.to_thread(self.get, record_id)

    async def ainvalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        return await asyncio.to_thread(self.invalidate, record_id, reason)

    async def adelete(self, record_id: str) -> bool:
        return await asyncio.to_thread(self.delete, record_id)

    async def aerase(self, scope: Mapping[str, str]) -> ErasureReport:
        return await asyncio.to_thread(self.erase, scope)

    async def aclose(self) -> None:
        """Release connections, async ones on the running loop included (see :meth:`close`)."""
        self.close()

    def __enter__(self) -> BaseMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "BaseMemoryStore",
    "BatchReader",
    "Clock",
    "Cursor",
    "Invalidation",
    "PlannedBatch",
    "SearchPlan",
    "WriteTransaction",
    "now_us",
]
