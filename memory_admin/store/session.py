"""The backend contract: what a store asks of a backend for one unit of work.

A store operation is written once, as steps (:mod:`memory_admin.steps`) that yield
:class:`Unit` objects — steps run against a backend's :class:`Session` in one transaction of
a :data:`Mode` — and :class:`Compute` objects (work outside any transaction). A session's
primitives are steps too: a SQL backend's yield :class:`Statement` objects, which its driver
executes and answers with their rows; the in-memory backend's yield nothing. So one
piece of logic runs sync or async, on SQLite, psycopg or plain Python alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

from memory_admin.events import AnyEvent, EventQuery, StoredEvent
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
)
from memory_admin.records import MemoryHit, MemoryRecord, Provenance
from memory_admin.scope import Scope
from memory_admin.steps import Steps
from memory_admin.store.plan import Candidate, Cursor, SearchPlan
from memory_admin.store.protocol import CorruptionScan, ScopeCounts, ScopeFacet
from memory_admin.store.vectors import VectorSpace

T = TypeVar("T")


@dataclass(frozen=True)
class Statement:
    """One SQL statement and its bound parameters. The driver answers it with its rows,
    each indexable by column name — or, with ``raw``, as a plain tuple."""

    sql: str
    params: Sequence[Any] = ()
    raw: bool = False
    """Rows as plain tuples (a hot loop's statements), not by column name."""
    many: bool = False
    """``params`` is a list of parameter rows: the statement runs once per row."""


def no_statements(value: T) -> Steps[Statement, T]:
    """Steps that need no SQL (a primitive a backend answers from memory)."""
    return value
    yield  # pragma: no cover - makes this a generator


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
    the predecessors to invalidate; once applied, the promoted predecessors it demoted."""

    records: list[MemoryRecord] = field(default_factory=list)
    invalidations: list[Invalidation] = field(default_factory=list)
    demoted: list[tuple[MemoryRecord, Transition]] = field(default_factory=list)


class Session(Protocol):
    """A backend's primitives, valid inside one unit of work. Each returns an op; the
    unit's mode decides the transaction they share."""

    def get_many(self, ids: Sequence[str], *, lock: bool = False) -> Steps[Statement, dict[str, MemoryRecord]]:
        """The records with these ids that exist (corrupt rows raise); ``lock`` holds them
        until the write unit ends."""
        ...

    def batch_reads(
        self, ids: Sequence[str], slots: Sequence[Slot], scopes: Sequence[Scope]
    ) -> Steps[Statement, list[MemoryRecord]]:
        """The records with these ids and the live holders of these key slots, after
        taking whatever locks writing into ``scopes`` needs."""
        ...

    def insert(self, records: Sequence[MemoryRecord]) -> Steps[Statement, None]: ...
    def invalidate(self, changes: Sequence[Invalidation]) -> Steps[Statement, None]: ...
    def delete(self, record_id: str) -> Steps[Statement, bool]: ...
    def expired_ids(self, scope: Scope, now: datetime) -> Steps[Statement, list[str]]: ...

    def tenant_of(self, record_id: str) -> Steps[Statement, str | None]:
        """The tenant of a stored record (a corrupt row's too), ``None`` if there is none."""
        ...

    def ids_in_scopes(self, scope_ids: Sequence[int]) -> Steps[Statement, list[str]]:
        """The ids of every record in these scopes."""
        ...

    def forget_in_events(self, tenant: str, record_ids: Sequence[str]) -> Steps[Statement, int]:
        """In the same transaction as forgetting ``record_ids``: every event of ``tenant``
        that names one of them loses its query preview (:func:`~memory_admin.events.forget_records`).
        Returns how many events changed."""
        ...

    def scopes_under(self, scope: Scope, *, lock: bool) -> Steps[Statement, list[tuple[int, Scope]]]:
        """Every stored scope containing ``scope``'s pairs, with its handle."""
        ...

    def kind_counts(self, scope_ids: Sequence[int]) -> Steps[Statement, dict[str, int]]: ...
    def newest_ids(self, scope_ids: Sequence[int], limit: int) -> Steps[Statement, list[str]]: ...
    def erase_events(self, scope: Scope, *, dry_run: bool) -> Steps[Statement, int]: ...

    def drop_scopes(self, scope_ids: Sequence[int]) -> Steps[Statement, None]:
        """Delete these scopes and every record in them."""
        ...

    def search(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]: ...

    def keyword_candidates(self, plan: SearchPlan, limit: int) -> Steps[Statement, list[Candidate]]:
        """Up to ``limit`` best keyword matches of a ranked plan, best first, as a fusion's
        candidates: the same ranking as :meth:`search`, without reading their records. A
        large scope scores no more candidates than the plan's own page would
        (:func:`~memory_admin.store.ranking.fusion_budget`)."""
        ...

    def count(self, plan: SearchPlan) -> Steps[Statement, ScopeCounts]: ...
    def facets(self, scope: Scope | None, values_per_key: int) -> Steps[Statement, list[ScopeFacet]]: ...
    def find_corrupt(
        self, scope: Scope | None, limit: int, max_rows: int | None
    ) -> Steps[Statement, CorruptionScan]: ...
    def append_events(self, events: Sequence[AnyEvent]) -> Steps[Statement, list[int]]: ...

    def log_events(self, events: Sequence[AnyEvent], lost: int, withheld: int) -> Steps[Statement, None]:
        """Append a batch of events (their ids are not needed) and add ``lost`` to the
        log's count of dropped events, ``withheld`` to its count of withheld ones."""
        ...

    def events_missing(self) -> Steps[Statement, tuple[int, int]]:
        """The log's counts of dropped and of withheld events."""
        ...

    def begin_forgetting(self) -> Steps[Statement, None]:
        """First in a unit that forgets (a delete, an erasure, a sweep): orders it against the event
        log's batches, so a batch commits either wholly before it (and is forgotten with
        the rest) or after it (and sees :meth:`mark_forgetting`'s mark)."""
        ...

    def mark_forgetting(self, tenant: str, clock: Callable[[], datetime]) -> Steps[Statement, None]:
        """Last in a unit that forgets: mark that ``tenant`` forgot something, at
        ``clock()`` read as close before the commit as the backend can (after any index
        merge of its own). The store keeps the latest mark of each tenant: a time and a
        tenant, nothing forgotten."""
        ...

    def forgetting_since(self, since: datetime) -> Steps[Statement, dict[str, datetime]]:
        """The latest forgetting of each tenant that forgot something at ``since`` or
        later; read first in an event batch's unit (after taking whatever lock orders it
        against :meth:`begin_forgetting`)."""
        ...

    def query_events(self, query: EventQuery) -> Steps[Statement, list[StoredEvent]]: ...
    def prune_events(self, before: datetime) -> Steps[Statement, int]: ...
    def import_events(self, events: Sequence[StoredEvent]) -> Steps[Statement, int]: ...

    def scrub(self, wait: float) -> Steps[Statement, bool]:
        """After forgetting (``maintain`` mode): leave no forgotten byte in the store's
        files (checkpoint the write-ahead log), trying for up to ``wait`` seconds while
        readers hold older snapshots. ``True`` once nothing remains (at once where there
        is nothing to do)."""
        ...

    def optimize(self) -> Steps[Statement, None]: ...

    # --- learnings: promotion state, compositions ---------------------------------------

    def promotion_states(self, ids: Sequence[str], *, lock: bool = False) -> Steps[Statement, dict[str, Promotion]]:
        """The current promotion states of these records (those that have one: targeted
        records), without their records; ``lock`` holds them until the write unit ends."""
        ...

    def add_candidates(self, records: Sequence[MemoryRecord]) -> Steps[Statement, None]:
        """In the unit that inserted them: every targeted record among ``records`` becomes
        a candidate (revision 0, at its creation)."""
        ...

    def add_transitions(self, transitions: Sequence[Transition]) -> Steps[Statement, None]:
        """Each transition becomes its record's current state (its state, tier, revision
        and time) and joins the record's history."""
        ...

    def list_promotions(
        self, query: PromotionQuery, plan: SearchPlan, cursor: Cursor | None, limit: int
    ) -> Steps[Statement, list[tuple[Promotion, int]]]:
        """Up to ``limit`` promotion states (with their records) under the plan's scope
        (its match and agent convention), the query's filters applied, newest decision
        first, after ``cursor`` (``(at, key)`` of the last one seen), each with its
        record's key; as they stood at ``query.as_of`` when it is set."""
        ...

    def count_promotions(self, query: PromotionQuery, plan: SearchPlan) -> Steps[Statement, dict[str, int]]:
        """How many of the query's promotions are in each state (its ``states`` filter aside)."""
        ...

    def list_transitions(
        self, query: TransitionQuery, plan: SearchPlan, cursor: tuple[int, int, int] | None
    ) -> Steps[Statement, list[tuple[Transition, int]]]:
        """Up to ``query.limit + 1`` transitions of records under the plan's scope, newest
        first, each with its record's key (for the next cursor: ``(at, key, revision)``)."""
        ...

    def transition_moments(
        self, query: TransitionQuery, plan: SearchPlan
    ) -> Steps[Statement, list[tuple[datetime, PromotionState]]]:
        """The time and state of up to ``query.limit`` transitions :meth:`list_transitions`
        would list (no cursor), newest first."""
        ...

    def record_transitions(self, record_id: str) -> Steps[Statement, list[Transition]]:
        """Every transition of one record, oldest first."""
        ...

    def promoted_records(self, plan: SearchPlan, as_of: datetime | None) -> Steps[Statement, list[MemoryRecord]]:
        """The records in the plan's reach (scope match, agent convention) whose state is
        ``promoted`` (at ``as_of``, or now), oldest first, at most ``plan.limit``; the
        caller keeps the valid ones."""
        ...

    def promoted_fingerprint(self, plan: SearchPlan) -> Steps[Statement, tuple[Any, ...]]:
        """A cheap summary of the records promoted now in the plan's reach (which, their
        moves, their corroborations): equal summaries, equal :meth:`promoted_records`
        but for expiry, which the caller checks."""
        ...

    def set_supports(self, record_id: str, supports: Sequence[Provenance]) -> Steps[Statement, None]: ...

    def restore_history(self, transitions: Sequence[Transition]) -> Steps[Statement, None]:
        """One record's whole history, as another store kept it (a copy): it replaces the
        record's own (its birth as a candidate at the import), the last transition its
        current state."""
        ...

    def put_composition(self, version: str, name: str, body: str, at: datetime) -> Steps[Statement, None]:
        """Keep a composition's body under its version (once: a version is its content)."""
        ...

    def composition_body(self, version: str) -> Steps[Statement, tuple[str, str] | None]:
        """A kept composition's name and body, ``None`` for an unknown version."""
        ...

    def add_composition_use(self, scope: Scope, version: str, at: datetime) -> Steps[Statement, None]: ...

    def composition_uses(
        self, scope: Scope, exact: bool, as_of: datetime | None
    ) -> Steps[Statement, list[RegisteredComposition]]:
        """Registrations of compositions: for exactly ``scope`` (``exact``), or for every
        scope containing its pairs; newest first; those made by ``as_of`` when it is set."""
        ...

    def erase_compositions(self, scope: Scope, *, dry_run: bool) -> Steps[Statement, int]:
        """Count (dry run) or delete the composition registrations under ``scope``."""
        ...

    def add_proposals(self, proposals: Sequence[ProposalInput], at: datetime) -> Steps[Statement, list[Proposal]]:
        """Store the proposals whose records exist and that are new: one of a kind per
        record ever (a proposal a person rejected is not made again). Returns those stored."""
        ...

    def list_proposals(
        self, plan: SearchPlan, statuses: Sequence[ProposalStatus] | None, before: int | None, limit: int
    ) -> Steps[Statement, list[Proposal]]:
        """Up to ``limit`` proposals about records in the plan's reach, newest first (by
        id), with an id below ``before`` when given."""
        ...

    def get_proposal(self, proposal_id: int, *, lock: bool = False) -> Steps[Statement, Proposal | None]: ...

    def settle_proposal(self, settled: Proposal) -> Steps[Statement, None]:
        """Store a proposal's settlement (its status, when, who, why)."""
        ...

    def lock_learnings(self, tenant: str) -> Steps[Statement, None]:
        """First in a unit that changes promotion states of ``tenant``: such units run one
        at a time per tenant, so a decision pinned to an overlay sees the promotions that
        make it (where one write lock does not already serialise every unit)."""
        ...

    # --- vectors (recall by meaning) -------------------------------------------------

    def vector_space(self) -> Steps[Statement, VectorSpace | None]:
        """The model whose vectors the store holds, ``None`` before the first vector."""
        ...

    def set_vector_space(self, space: VectorSpace | None) -> Steps[Statement, None]:
        """Record the store's model; ``None`` forgets every vector (a re-embed starts over)."""
        ...

    def insert_vectors(self, vectors: Sequence[tuple[str, bytes]]) -> Steps[Statement, None]:
        """Store ``(record id, blob)`` pairs beside their records (in the records' unit);
        a record's vector goes when the record does."""
        ...

    def similar(self, plan: SearchPlan, limit: int, space: VectorSpace) -> Steps[Statement, list[Candidate]]:
        """Up to ``limit`` records closest to ``plan.vector`` among those every filter of
        the plan (scope, kinds, tags, keys, agent, ``as_of``, expiry, invalidation)
        admits — the plan's page of them at least, when that many pass — closest first,
        scored by cosine similarity; ``space`` is the store's vector space, which the
        caller has read in this unit (:func:`~memory_admin.store.vectors.closest`)."""
        ...

    def unembedded(self, limit: int) -> Steps[Statement, list[MemoryRecord]]:
        """Up to ``limit`` records without a vector, oldest first (a backfill that
        stores their vectors and asks again resumes wherever it stopped)."""
        ...

    def vector_counts(self) -> Steps[Statement, tuple[int, int]]:
        """``(records with a vector, records)`` in the whole store."""
        ...


@dataclass(frozen=True)
class Compute(Generic[T]):
    """Work an operation needs outside any transaction (embedding texts): the sync driver
    calls ``run``, the async one awaits ``arun``, so a model or an HTTP endpoint never
    holds a connection or blocks the event loop."""

    run: Callable[[], T]
    arun: Callable[[], Awaitable[T]]


@dataclass(frozen=True)
class Unit(Generic[T]):
    """One unit of work: ``steps`` run against a :class:`Session` in one transaction of
    ``mode``."""

    mode: Mode
    steps: Callable[[Session], Steps[Statement, T]]


Work = Unit[Any] | Compute[Any]
"""What a store operation's steps yield: ``Steps[Work, T]``."""


__all__ = [
    "Compute",
    "Invalidation",
    "Mode",
    "PlannedBatch",
    "Session",
    "Slot",
    "Statement",
    "Unit",
    "Work",
    "no_statements",
]
