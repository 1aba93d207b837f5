"""What a backend offers a unit of work: the :class:`Session` primitives, the unit and
flow types the drivers of :mod:`memory_admin.store.base` run, and the shapes a write
batch is planned in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

from memory_admin.events import AnyEvent, EventQuery, StoredEvent
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.scope import Scope, scope_json
from memory_admin.store._sql import Op
from memory_admin.store.plan import Candidate, Cursor, SearchPlan
from memory_admin.store.protocol import CorruptionScan, ScopeCounts, ScopeFacet
from memory_admin.store.vectors import VectorSpace

T = TypeVar("T")

Mode = Literal["read", "snapshot", "write", "append", "maintain"]
"""How a unit runs: ``read`` (each statement sees committed data), ``snapshot`` (all of
them one consistent state), ``write`` (one serialised, atomic write transaction),
``append`` (a write transaction whose commit need not reach the disk before the next
durable one does: the event log's batches, which are telemetry) or ``maintain``
(outside any transaction: checkpoints, VACUUM)."""

Slot = tuple[Scope, str, str]
"""A key slot: ``(scope, kind, key)``; one live record holds it at a time."""


@dataclass
class Invalidation:
    record_id: str
    at: datetime
    reason: str | None
    superseded_by: str | None = None


@dataclass
class PlannedBatch:
    """A write batch resolved against the store: the records to insert (input order) and
    the predecessors to invalidate."""

    records: list[MemoryRecord] = field(default_factory=list)
    invalidations: list[Invalidation] = field(default_factory=list)


class BatchReader(Protocol):
    """What planning a write batch reads: its named predecessors and its key-slot holders."""

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]: ...
    def find_valid_keyed(self, scope: Scope, kind: str, key: str) -> MemoryRecord | None: ...


class BatchReads:
    """The records a batch names and the live holders of its key slots, read (and, on
    a server database, locked) before planning starts."""

    def __init__(self, records: Iterable[MemoryRecord], slots: Iterable[Slot]) -> None:
        self._by_id = {record.id: record for record in records}
        wanted = {(scope_json(scope), kind, key) for scope, kind, key in slots}
        self._holders: dict[tuple[str, str, str], MemoryRecord] = {
            (scope_json(r.scope), r.kind, r.key): r
            for r in self._by_id.values()
            if r.key is not None and r.invalid_at is None and (scope_json(r.scope), r.kind, r.key) in wanted
        }

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        return {i: self._by_id[i] for i in ids if i in self._by_id}

    def find_valid_keyed(self, scope: Scope, kind: str, key: str) -> MemoryRecord | None:
        return self._holders.get((scope_json(scope), kind, key))


class Session(Protocol):
    """A backend's primitives, valid inside one unit of work. Each returns an op; the
    unit's mode decides the transaction they share."""

    def get_many(self, ids: Sequence[str], *, lock: bool = False) -> Op[dict[str, MemoryRecord]]:
        """The records with these ids that exist (corrupt rows raise); ``lock`` holds them
        until the write unit ends."""
        ...

    def batch_reads(self, ids: Sequence[str], slots: Sequence[Slot], scopes: Sequence[Scope]) -> Op[list[MemoryRecord]]:
        """The records with these ids and the live holders of these key slots, after
        taking whatever locks writing into ``scopes`` needs."""
        ...

    def insert(self, records: Sequence[MemoryRecord]) -> Op[None]: ...
    def invalidate(self, changes: Sequence[Invalidation]) -> Op[None]: ...
    def delete(self, record_id: str) -> Op[bool]: ...
    def expired_ids(self, scope: Scope, now: datetime) -> Op[list[str]]: ...

    def tenant_of(self, record_id: str) -> Op[str | None]:
        """The tenant of a stored record (a corrupt row's too), ``None`` if there is none."""
        ...

    def ids_in_scopes(self, scope_ids: Sequence[int]) -> Op[list[str]]:
        """The ids of every record in these scopes."""
        ...

    def forget_in_events(self, tenant: str, record_ids: Sequence[str]) -> Op[int]:
        """In the same transaction as forgetting ``record_ids``: every event of ``tenant``
        that names one of them loses its query preview (:func:`~memory_admin.events.forget_records`).
        Returns how many events changed."""
        ...

    def scopes_under(self, scope: Scope, *, lock: bool) -> Op[list[tuple[int, Scope]]]:
        """Every stored scope containing ``scope``'s pairs, with its handle."""
        ...

    def kind_counts(self, scope_ids: Sequence[int]) -> Op[dict[str, int]]: ...
    def newest_ids(self, scope_ids: Sequence[int], limit: int) -> Op[list[str]]: ...
    def erase_events(self, scope: Scope, *, dry_run: bool) -> Op[int]: ...

    def drop_scopes(self, scope_ids: Sequence[int]) -> Op[None]:
        """Delete these scopes and every record in them."""
        ...

    def search(self, plan: SearchPlan) -> Op[tuple[list[MemoryHit], Cursor | None]]: ...

    def keyword_candidates(self, plan: SearchPlan, limit: int) -> Op[list[Candidate]]:
        """Up to ``limit`` best keyword matches of a ranked plan, best first, as a fusion's
        candidates: the same ranking as :meth:`search`, without reading their records. A
        large scope scores no more candidates than the plan's own page would
        (:func:`~memory_admin.store.ranking.fusion_budget`)."""
        ...

    def count(self, plan: SearchPlan) -> Op[ScopeCounts]: ...
    def facets(self, scope: Scope | None, values_per_key: int) -> Op[list[ScopeFacet]]: ...
    def find_corrupt(self, scope: Scope | None, limit: int, max_rows: int | None) -> Op[CorruptionScan]: ...
    def append_events(self, events: Sequence[AnyEvent]) -> Op[list[int]]: ...

    def log_events(self, events: Sequence[AnyEvent], lost: int, withheld: int) -> Op[None]:
        """Append a batch of events (their ids are not needed) and add ``lost`` to the
        log's count of dropped events, ``withheld`` to its count of withheld ones."""
        ...

    def events_missing(self) -> Op[tuple[int, int]]:
        """The log's counts of dropped and of withheld events."""
        ...

    def begin_forgetting(self) -> Op[None]:
        """First in a unit that forgets (a delete, an erasure, a sweep): orders it against the event
        log's batches, so a batch commits either wholly before it (and is forgotten with
        the rest) or after it (and sees :meth:`mark_forgetting`'s mark)."""
        ...

    def mark_forgetting(self, tenant: str, clock: Callable[[], datetime]) -> Op[None]:
        """Last in a unit that forgets: mark that ``tenant`` forgot something, at
        ``clock()`` read as close before the commit as the backend can (after any index
        merge of its own). The store keeps the latest mark of each tenant: a time and a
        tenant, nothing forgotten."""
        ...

    def forgetting_since(self, since: datetime) -> Op[dict[str, datetime]]:
        """The latest forgetting of each tenant that forgot something at ``since`` or
        later; read first in an event batch's unit (after taking whatever lock orders it
        against :meth:`begin_forgetting`)."""
        ...

    def query_events(self, query: EventQuery) -> Op[list[StoredEvent]]: ...
    def prune_events(self, before: datetime) -> Op[int]: ...
    def import_events(self, events: Sequence[StoredEvent]) -> Op[int]: ...

    def scrub(self, wait: float) -> Op[bool]:
        """After forgetting (``maintain`` mode): leave no forgotten byte in the store's
        files (checkpoint the write-ahead log), trying for up to ``wait`` seconds while
        readers hold older snapshots. ``True`` once nothing remains (at once where there
        is nothing to do)."""
        ...

    def optimize(self) -> Op[None]: ...

    # --- vectors (recall by meaning) -------------------------------------------------

    def vector_space(self) -> Op[VectorSpace | None]:
        """The model whose vectors the store holds, ``None`` before the first vector."""
        ...

    def set_vector_space(self, space: VectorSpace | None) -> Op[None]:
        """Record the store's model; ``None`` forgets every vector (a re-embed starts over)."""
        ...

    def insert_vectors(self, vectors: Sequence[tuple[str, bytes]]) -> Op[None]:
        """Store ``(record id, blob)`` pairs beside their records (in the records' unit);
        a record's vector goes when the record does."""
        ...

    def similar(self, plan: SearchPlan, limit: int, space: VectorSpace) -> Op[list[Candidate]]:
        """Up to ``limit`` records closest to ``plan.vector`` among those every filter of
        the plan (scope, kinds, tags, keys, agent, ``as_of``, expiry, invalidation)
        admits — the plan's page of them at least, when that many pass — closest first,
        scored by cosine similarity; ``space`` is the store's vector space, which the
        caller has read in this unit (:func:`~memory_admin.store.vectors.closest`)."""
        ...

    def unembedded(self, limit: int) -> Op[list[MemoryRecord]]:
        """Up to ``limit`` records without a vector, oldest first (a backfill that
        stores their vectors and asks again resumes wherever it stopped)."""
        ...

    def vector_counts(self) -> Op[tuple[int, int]]:
        """``(records with a vector, records)`` in the whole store."""
        ...


@dataclass(frozen=True)
class Compute(Generic[T]):
    """Work a flow needs outside any transaction (embedding texts): the sync driver
    calls ``run``, the async one awaits ``arun``, so a model or an HTTP endpoint never
    holds a connection or blocks the event loop."""

    run: Callable[[], T]
    arun: Callable[[], Awaitable[T]]


@dataclass(frozen=True)
class Unit(Generic[T]):
    """One unit of work: ``steps`` run against a :class:`Session` in one transaction of
    ``mode``."""

    mode: Mode
    steps: Callable[[Session], Op[T]]


Flow = Generator[Unit[Any] | Compute[Any], Any, T]
"""A whole operation: validation, the units it runs, what happens after they commit."""


__all__ = [
    "BatchReader",
    "BatchReads",
    "Compute",
    "Flow",
    "Invalidation",
    "Mode",
    "PlannedBatch",
    "Session",
    "Slot",
    "Unit",
]
