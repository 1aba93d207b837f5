"""The store contract: what every backend promises, stated once.

:class:`MemoryStore` is the protocol agents and hosts code against. Optional abilities
(erasure, the admin listing the dashboard needs) are separate small protocols, and a
backend declares which it has in :meth:`MemoryStore.capabilities`; a consumer checks
them once, at bind time, with :func:`require_memory`. The conformance kit
(:mod:`memory_admin.conformance`) pins every promise written here.

Why one module: it is the whole contract — the base protocol and each extension with
the models their methods take and return — the one page a backend author reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memory_admin.composition import AgentComposition, Overlay, RenderedPrompt
from memory_admin.errors import CapabilityError
from memory_admin.events import AnyEvent, EventLogStats, EventQuery, EventSink, StoredEvent
from memory_admin.promotion import (
    Decision,
    DecisionOutcome,
    Promotion,
    PromotionPage,
    PromotionState,
    Proposal,
    ProposalInput,
    ProposalPage,
    ProposalStatus,
    RegisteredComposition,
    Transition,
    TransitionPage,
)
from memory_admin.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    Provenance,
    SearchMode,
    UtcDatetime,
)
from memory_admin.scope import Scope, ScopeMatch

SearchKind = Literal["keyword", "semantic", "hybrid"]

WriteInputLike = MemoryWriteInput | Mapping[str, Any]
SearchQueryLike = MemorySearchQuery | Mapping[str, Any]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemoryStoreCapabilities(_Frozen):
    """What a backend can do, and the limits it holds inputs to."""

    backend: str
    search: SearchKind
    modes: tuple[SearchMode, ...] = ("keyword",)
    """The search modes the store answers: ``keyword`` alone without an embedder; with
    one, ``semantic``, ``hybrid`` and ``quality`` too."""
    erasure: bool = False
    admin: bool = False
    events: bool = False
    promotion: bool = False
    max_content_chars: int
    """A record's content, in characters."""
    max_payload_chars: int
    """A record's payload, in characters of its compact JSON (:func:`~memory_admin.records.payload_chars`)."""
    max_limit: int
    """Hits one search returns."""
    max_batch: int
    """Inputs one write (records one import) takes."""


class EmbeddingStatus(_Frozen):
    """A store's vectors: the model that made them (``None`` before the first) and how
    many records have one; ``embedder`` is the model the store embeds with now."""

    model_id: str | None
    dimensions: int | None
    embedded: int
    records: int
    embedder: str | None

    @property
    def missing(self) -> int:
        return self.records - self.embedded

    @property
    def mismatch(self) -> bool:
        """The store embeds with another model than the one its vectors come from."""
        return self.model_id is not None and self.embedder is not None and self.model_id != self.embedder


class MemoryNeeds(_Frozen):
    """What a consumer needs from a store; checked by :func:`require_memory`."""

    search: SearchKind | None = None
    erasure: bool = False
    admin: bool = False
    events: bool = False
    promotion: bool = False


def require_memory(store: MemoryStore, needs: MemoryNeeds) -> MemoryStoreCapabilities:
    """Check ``store`` against ``needs`` once, at bind time.

    Raises one :class:`CapabilityError` naming every missing capability, so a plan that
    needs semantic search and erasure learns both at startup rather than discovering an
    empty result a month later. Returns the store's capabilities.
    """
    caps = store.capabilities()
    missing: list[str] = []
    # a hybrid backend serves keyword and semantic needs alike
    if needs.search is not None and caps.search not in (needs.search, "hybrid"):
        missing.append(f"search={needs.search}")
    for flag in ("erasure", "admin", "events", "promotion"):
        if getattr(needs, flag) and not getattr(caps, flag):
            missing.append(flag)
    if missing:
        hint = None
        if needs.search in ("semantic", "hybrid") and caps.search == "keyword":
            hint = (
                "Search by meaning needs an embedder: open the store with open_store(url, embedder='default') "
                "or set MEMORY_EMBEDDER=default (the semantic extra: pip install 'memory-admin[semantic]')."
            )
        raise CapabilityError(caps.backend, missing, hint=hint)
    return caps


@runtime_checkable
class MemoryStore(Protocol):
    """A scoped, invalidation-first store of memory records.

    Records are corrected by superseding or invalidating, never overwritten; only
    :meth:`delete` (host-only) truly forgets. Every method has an ``a``-prefixed async
    twin with the same semantics.
    """

    def write(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]:
        """Write a batch, all or nothing, and return the records in input order.

        Any invalid input, an unknown ``supersedes`` id, a ``supersedes`` in another
        scope, or superseding an already invalid record rejects the whole batch and
        changes nothing. The batch shares one ``now`` (``created_at``); within it the
        last input counts as newest. ``supersedes`` invalidates the old record in the
        same transaction and links both ways. Writing a live ``(scope, kind, key)``
        again supersedes the record holding that slot (the profile upsert).
        """
        ...

    def search(self, query: SearchQueryLike, *, emit_event: bool = True) -> list[MemoryHit]:
        """Scoped search; the scope filter is required.

        With ``query``: records sharing at least one :func:`~memory_admin.tokenize.tokenize`
        term with it (content, tags or stated day: :func:`~memory_admin.store.ranking.record_text`),
        by relevance (BM25-family) then recency. Without:
        a recency listing, newest first, ties in reverse batch order. Invalidated records
        are excluded unless ``include_invalidated``; expired records never appear.
        ``kinds`` and ``keys`` keep records with one of the values listed (an empty list
        keeps none), ``tags`` those holding every tag listed (an empty list keeps all).
        ``limit=0`` returns ``[]``; a negative limit or one above the backend's maximum
        is a validation error.

        ``emit_event=False`` skips the ``agent.memory.search`` event, for a caller that
        reports the search in an event of its own (recall's ``agent.memory.recall``) or
        must leave no trace (a dashboard preview).
        """
        ...

    def get(self, record_id: str) -> MemoryRecord | None:
        """The record, invalidated and expired ones included; ``None`` if unknown."""
        ...

    def invalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        """Mark a record invalid (kept for audit) and return it.

        Sets ``invalid_at``, ``invalid_reason`` and ``updated_at``. Repeating it is a
        no-op that keeps the first reason. Unknown id → :class:`MemoryNotFoundError`.
        """
        ...

    def delete(self, record_id: str) -> bool:
        """Truly forget one record (host-only; never on the agent toolbox).

        The record, its index entries and its content in any derived table are gone;
        chain links that pointed at it become content-free tombstones. Returns whether
        the record existed.
        """
        ...

    def capabilities(self) -> MemoryStoreCapabilities:
        """What this backend can do and the limits it holds inputs to."""
        ...

    async def awrite(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]: ...
    async def asearch(self, query: SearchQueryLike, *, emit_event: bool = True) -> list[MemoryHit]: ...
    async def aget(self, record_id: str) -> MemoryRecord | None: ...
    async def ainvalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord: ...
    async def adelete(self, record_id: str) -> bool: ...

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


# --- the erasure extension -------------------------------------------------------------


class ErasureReport(_Frozen):
    """What an erasure removed (or, for a preview, would remove). Never holds content."""

    scope: Scope
    dry_run: bool
    records: int
    by_kind: dict[str, int]
    events: int
    scopes: list[Scope]
    sample_ids: list[str] = Field(default_factory=list)
    at: UtcDatetime
    registrations: int = 0
    """Composition registrations of scopes under it (the compositions themselves stay:
    they are authored configuration, not memory)."""
    mentions: list[str] = Field(default_factory=list)
    """A dry run only: ids of records in *other* scopes of the tenant whose text names the
    scope's values (``user=mei`` → "mei") — by their words, never by meaning. Erasure
    leaves them; whoever erases decides."""
    mentioned_words: dict[str, list[str]] = Field(default_factory=dict)
    """For each of :attr:`mentions`, the scope's words its text holds."""


@runtime_checkable
class ErasableMemoryStore(MemoryStore, Protocol):
    """Erasure of everything stored under a scope (``capabilities().erasure``)."""

    def erase(self, scope: Mapping[str, str]) -> ErasureReport:
        """Remove every record whose scope contains the filter's pairs, their index
        entries and the events about them, in one transaction: a concurrent reader sees
        all of it or none of it. It stops exactly at the scope given (``user=u1`` never
        touches ``user=u10``). Erased content does not survive in the store's files."""
        ...

    def preview_erase(self, scope: Mapping[str, str]) -> ErasureReport:
        """What :meth:`erase` would remove, without removing anything."""
        ...

    async def aerase(self, scope: Mapping[str, str]) -> ErasureReport: ...


# --- the admin listing extension ------------------------------------------------------


class RecordListQuery(_Frozen):
    """The dashboard's listing: a search query plus the admin-only switches."""

    search: MemorySearchQuery
    include_expired: bool = False
    cursor: str | None = Field(default=None, max_length=200)


class RecordPage(_Frozen):
    hits: list[MemoryHit]
    next_cursor: str | None = None


class ScopeValueCount(_Frozen):
    value: str
    records: int


class ScopeFacet(_Frozen):
    key: str
    records: int
    values: list[ScopeValueCount]
    more_values: bool = False


class ScopeCounts(_Frozen):
    """Record counts under a scope filter (subset match)."""

    total: int
    live: int
    invalidated: int
    expired: int
    by_kind: dict[str, int]


class ChainLink(_Frozen):
    """One version in an invalidation chain; ``record`` is ``None`` for a tombstone
    (a deleted record: only its id survives, in its neighbours' links)."""

    id: str
    record: MemoryRecord | None


class CorruptRecord(_Frozen):
    """A stored row that no longer validates: its id, what is wrong, and the raw row."""

    id: str
    detail: str
    raw: dict[str, Any]


class CorruptionScan(_Frozen):
    checked: int
    corrupt: list[CorruptRecord]
    complete: bool


@runtime_checkable
class AdminMemoryStore(MemoryStore, Protocol):
    """Listing, facets and chains for curation tools (``capabilities().admin``)."""

    def list_records(self, query: RecordListQuery) -> RecordPage:
        """A page of :meth:`search` results that can also show expired records. Without
        a text query pages are keyset-paginated (``next_cursor``), stable under
        concurrent writes."""
        ...

    def iter_records(self, query: RecordListQuery, *, page_size: int = 500) -> Iterator[MemoryRecord]:
        """Every record of a listing, page by page: bounded memory, for exports."""
        ...

    def import_records(
        self, records: Sequence[MemoryRecord | Mapping[str, object]], *, skip_existing: bool = False
    ) -> int:
        """Insert records verbatim (ids, times, chains, tombstoned links) in one
        transaction, to move a store's contents; returns how many went in."""
        ...

    def scope_facets(self, scope: Mapping[str, str] | None = None, *, values_per_key: int = 50) -> list[ScopeFacet]:
        """Distinct scope keys and values with record counts, among records whose scope
        contains ``scope``'s pairs (all records when ``None``)."""
        ...

    def count_records(self, scope: Mapping[str, str], *, scope_match: ScopeMatch = "subset") -> ScopeCounts:
        """Counts by kind and state of the records under ``scope``."""
        ...

    def embedding_status(self) -> EmbeddingStatus:
        """The model of the store's vectors and how many records have one."""
        ...

    def embed_missing(
        self,
        *,
        batch_size: int = 32,
        rebuild: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Embed every record that has no vector yet (resumable; ``rebuild``: all of them
        again, for a new model). Needs an embedder."""
        ...

    def chain(self, record_id: str) -> list[ChainLink]:
        """The record's invalidation chain, oldest first, tombstones included."""
        ...

    def sweep_expired(self, scope: Mapping[str, str]) -> int:
        """Delete (truly, as :meth:`delete` does) every expired record under ``scope``;
        returns how many went. Expired records never appear in search, so this only
        reclaims what nobody could recall any more."""
        ...

    def find_corrupt(
        self, scope: Mapping[str, str] | None = None, *, limit: int = 100, max_rows: int | None = None
    ) -> CorruptionScan:
        """Rows under ``scope`` (all when ``None``) that no longer validate, up to
        ``limit``, checking at most ``max_rows`` rows."""
        ...


# --- the event log extension ----------------------------------------------------------


@runtime_checkable
class EventLogStore(MemoryStore, Protocol):
    """Memory events persisted beside the records (``capabilities().events``).

    The store appends every event it emits (and every event handed to :meth:`emit`,
    such as recall events) to its log; dashboards read it back with
    :meth:`query_events`. Pruning removes events only, never records.

    Events are telemetry, committed in batches off the operation's path: an emitted
    event reaches the log within the store's flush interval, at once for this process's
    own reads (:meth:`query_events`, :meth:`get_event`, erasure), and on
    :meth:`~MemoryStore.close`. A crash loses at most the last interval's events, never
    a record.
    """

    def emit(self, event: AnyEvent) -> None:
        """Queue ``event`` for the log (when it is on) and deliver it to the sinks. Never
        blocks on the log and never raises."""
        ...

    def flush_events(self) -> None:
        """Commit every event emitted so far by this store object before returning."""
        ...

    def event_log_stats(self) -> EventLogStats:
        """How many events the log is missing (dropped by any process whose writer fell
        behind) and how many of this process's events are still waiting."""
        ...

    def add_sink(self, sink: EventSink) -> None:
        """Deliver every future event to ``sink`` too."""
        ...

    def record_event(self, event: AnyEvent) -> StoredEvent:
        """Persist one event now and return it with its id (raises on failure, unlike :meth:`emit`)."""
        ...

    def import_events(self, events: Sequence[StoredEvent | Mapping[str, object]]) -> int:
        """Insert events verbatim, ids included; an id already in the log is skipped."""
        ...

    def query_events(self, query: EventQuery | Mapping[str, object]) -> list[StoredEvent]:
        """Events matching ``query``, newest first."""
        ...

    def get_event(self, event_id: int) -> StoredEvent | None:
        """One event by id, recall previews included; ``None`` if unknown."""
        ...

    def prune_events(self, before: datetime) -> int:
        """Delete events older than ``before``; returns how many went. Records are untouched."""
        ...


# --- the promotion extension ----------------------------------------------------------


@runtime_checkable
class PromotionMemoryStore(MemoryStore, Protocol):
    """Learnings: the promotion state of targeted records and the compositions hosts
    register (``capabilities().promotion``).

    Every record written with a ``target`` is a *candidate*. The store keeps each one's
    current state (:data:`~memory_admin.promotion.PromotionState`) and every transition
    it made — who, when, why, on what evidence, against which overlay — beside the record,
    gone with it on delete and erasure, so the promotions at any past time are a replay
    (``as_of``). An invalidated or superseded promoted record is demoted in the same
    transaction, an expired one by the first read that finds it (cause ``expired``), and
    each emits ``agent.memory.demote``; a promotion emits ``agent.memory.promote``.
    """

    def register_composition(self, composition: AgentComposition, scope: Mapping[str, str]) -> str:
        """Keep ``composition`` (by its version, a content hash) and note that ``scope``
        runs it from now on, unless it already did; returns the version. The store then
        holds every version a host composed with: replays and the dashboard need no
        access to the host's files."""
        ...

    def composition(self, version: str) -> AgentComposition | None:
        """A registered composition by version; ``None`` for one never registered."""
        ...

    def compositions(
        self, scope: Mapping[str, str], *, exact: bool = False, as_of: datetime | None = None
    ) -> list[RegisteredComposition]:
        """Registrations for exactly ``scope`` or (not ``exact``) every scope containing
        its pairs, newest first; only those made by ``as_of`` when given."""
        ...

    def overlay(self, composition: AgentComposition, records: Sequence[MemoryRecord]) -> Overlay:
        """:func:`~memory_admin.composition.apply_memory_overlay` of ``records`` into
        ``composition``, folded once per distinct composition and set of records while the
        store object keeps it (a forgetting drops what it keeps)."""
        ...

    def prompt(self, overlay: Overlay) -> RenderedPrompt:
        """:func:`~memory_admin.composition.render_prompt` of ``overlay``, rendered once per
        overlay version while the store object keeps it (a forgetting drops it)."""
        ...

    def registered_composition(
        self, scope: Mapping[str, str], *, as_of: datetime | None = None
    ) -> AgentComposition | None:
        """The composition registered last for exactly ``scope`` (by ``as_of`` when given),
        ``None`` when none was."""
        ...

    def corroborate(self, record_id: str, provenance: Provenance | Mapping[str, Any]) -> MemoryRecord:
        """Append ``provenance`` to the record's ``supports`` (a recurrence sighting) and
        return the record. The same provenance twice counts once; an invalidated or
        expired record is a :class:`~memory_admin.errors.MemoryConflictError`."""
        ...

    def decide(
        self, decisions: Sequence[Decision | Mapping[str, Any]], *, all_or_nothing: bool = False
    ) -> list[DecisionOutcome]:
        """Apply each decision (a move of one record into a state) in one transaction,
        and say per decision whether it applied or why not: ``not_found``,
        ``not_candidate`` (no target), ``moved`` (its :class:`~memory_admin.promotion.Pin`
        no longer holds: the record's revision or state, or the overlay of the pinned
        composition), ``not_allowed`` (:data:`~memory_admin.promotion.MOVES`; promoting an
        invalid record, one without a tier or a locked one; rejecting or demoting without
        a reason) or ``needs_person`` (a guarded-tier promotion not decided by a person).
        A refused decision changes nothing; the others apply — or, ``all_or_nothing``, none
        does: the first refusal raises :class:`~memory_admin.errors.MemoryConflictError`."""
        ...

    def promote(self, record_id: str, *, actor: str, **fields: Any) -> Promotion:
        """One promotion (:meth:`decide`); a refusal raises (``MemoryConflictError`` for a
        pin that moved or a person's decision needed, ``MemoryValidationError`` for a move
        not allowed, ``MemoryNotFoundError``)."""
        ...

    def reject(self, record_id: str, *, actor: str, reason: str, **fields: Any) -> Promotion:
        """One rejection, with its reason; refusals raise as :meth:`promote`'s."""
        ...

    def demote(self, record_id: str, *, actor: str, reason: str, **fields: Any) -> Promotion:
        """Roll one promoted record back (cause ``rollback``): it leaves the composition
        and stays, valid, in the recall tier. Nothing is deleted."""
        ...

    def promotion(self, record_id: str) -> Promotion | None:
        """The record's promotion state now, with the record; ``None`` when it carries no
        target or does not exist."""
        ...

    def promotion_history(self, record_id: str) -> list[Transition]:
        """Every transition of the record, its birth as a candidate first."""
        ...

    def promotions(
        self,
        scope: Mapping[str, str],
        *,
        as_of: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> PromotionPage:
        """Promotion states (with their records) of the targeted records under ``scope``,
        newest decision first, keyset-paged (``cursor``, ``limit``). Filters: ``states``,
        ``scope_match`` and ``agent`` (as in search), ``primitives``, ``tiers``,
        ``record_ids``, ``include_invalidated``; ``as_of`` lists the states as they stood
        then."""
        ...

    def count_promotions(
        self, scope: Mapping[str, str], *, as_of: datetime | None = None, **filters: Any
    ) -> dict[PromotionState, int]:
        """How many of a :meth:`promotions` listing are in each state."""
        ...

    def transitions(
        self,
        scope: Mapping[str, str],
        *,
        since: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> TransitionPage:
        """The transitions of the records under ``scope``, newest first, keyset-paged:
        "what did it learn this week" (``since``, ``until``, ``states``)."""
        ...

    def transition_moments(
        self,
        scope: Mapping[str, str],
        *,
        since: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> list[tuple[datetime, PromotionState]]:
        """When each transition of :meth:`transitions` happened and into which state, newest
        first, up to ``limit`` (default 100) — the same filters, no cursor: what a chart of
        learning over time counts, without each transition's reason and evidence."""
        ...

    def promoted_records(
        self,
        scope: Mapping[str, str],
        *,
        agent: str | None = None,
        scope_match: ScopeMatch = "visible",
        as_of: datetime | None = None,
    ) -> list[MemoryRecord]:
        """The records promoted and live (valid, unexpired) for ``scope`` — with visible
        match its own and those shared above it, never a sibling's; the agent convention
        applied — oldest first (a bounded, indexed read). ``as_of``: those promoted and
        live then. Demotes a promoted record it finds expired."""
        ...

    def import_learnings(
        self,
        histories: Sequence[Sequence[Transition | Mapping[str, Any]]],
        registrations: Sequence[tuple[AgentComposition, RegisteredComposition]] = (),
    ) -> int:
        """Restore another store's learnings after its records were imported (a copy):
        each record's whole promotion history, and compositions with their registrations,
        times included; a registration already present is skipped. Returns how many
        histories it restored."""
        ...

    def propose(self, proposals: Sequence[ProposalInput | Mapping[str, Any]]) -> list[Proposal]:
        """Keep the gardening pass's proposals, pending, for a person to accept or reject;
        returns those stored. A record gets one proposal of a kind, ever: one a person
        rejected is not made again, one about an unknown record is dropped. A proposal
        goes with its record (and with the record a merge names)."""
        ...

    def proposals(
        self,
        scope: Mapping[str, str],
        *,
        statuses: Sequence[ProposalStatus] | None = ("pending",),
        scope_match: ScopeMatch = "subset",
        agent: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> ProposalPage:
        """Proposals about the records under ``scope`` (pending ones by default), newest
        first, keyset-paged."""
        ...

    def proposal(self, proposal_id: int) -> Proposal | None:
        """One proposal by its id, whatever its status; ``None`` for an unknown id (or one
        gone with its record). A caller confines it by its ``scope``."""
        ...

    def settle_proposal(self, proposal_id: int, *, accepted: bool, actor: str, reason: str | None = None) -> Proposal:
        """Mark a pending proposal accepted or rejected by ``actor`` (once: a settled one
        is a :class:`~memory_admin.errors.MemoryConflictError`). Settling records the
        decision; acting on it is the caller's (:mod:`memory_admin.learning.garden`)."""
        ...

    async def aregister_composition(self, composition: AgentComposition, scope: Mapping[str, str]) -> str: ...
    async def acorroborate(self, record_id: str, provenance: Provenance | Mapping[str, Any]) -> MemoryRecord: ...
    async def adecide(
        self, decisions: Sequence[Decision | Mapping[str, Any]], *, all_or_nothing: bool = False
    ) -> list[DecisionOutcome]: ...
    async def apromote(self, record_id: str, *, actor: str, **fields: Any) -> Promotion: ...
    async def areject(self, record_id: str, *, actor: str, reason: str, **fields: Any) -> Promotion: ...
    async def ademote(self, record_id: str, *, actor: str, reason: str, **fields: Any) -> Promotion: ...
    async def apromotion(self, record_id: str) -> Promotion | None: ...
    async def apromotions(
        self,
        scope: Mapping[str, str],
        *,
        as_of: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> PromotionPage: ...
    async def atransitions(
        self,
        scope: Mapping[str, str],
        *,
        since: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> TransitionPage: ...
    async def apromoted_records(
        self,
        scope: Mapping[str, str],
        *,
        agent: str | None = None,
        scope_match: ScopeMatch = "visible",
        as_of: datetime | None = None,
    ) -> list[MemoryRecord]: ...


@runtime_checkable
class FullMemoryStore(ErasableMemoryStore, AdminMemoryStore, EventLogStore, PromotionMemoryStore, Protocol):
    """A store with every extension: what the dashboard, copies between stores and the
    conformance kit work with. Every bundled backend is one."""

    def optimize(self) -> None:
        """Compact indexes after a large import; safe at any time."""
        ...

    def scrub(self, wait: float = 30.0) -> bool:
        """Leave no forgotten byte in the store's files (what a
        :class:`~memory_admin.errors.MemoryScrubPendingError` left to do), waiting up to
        ``wait`` seconds for readers' older snapshots; ``True`` once nothing remains."""
        ...

    async def aclose(self) -> None:
        """Release connections, async ones on the running loop included."""
        ...
