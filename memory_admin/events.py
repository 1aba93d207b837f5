"""Memory events: what every write, search and recall reports.

Events are typed models delivered to any callable sink. A sink that raises never fails
the operation it reports: the error is logged and the operation's result stands.
Previews of user text are capped at :data:`PREVIEW_BYTES` bytes and marked when clipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, field_validator

from memory_admin.promotion import DecidedBy, DemotionCause
from memory_admin.records import CanonicalScope, MemoryRecord, UtcDatetime, holds_lone_surrogate
from memory_admin.scope import AGENT_KEY, MAX_SCOPE_VALUE_CHARS, Scope, ScopeMatch, is_subset_match

log = logging.getLogger(__name__)

PREVIEW_BYTES = 512
CLIP_MARK = "…"


def preview(text: str | None, limit: int = PREVIEW_BYTES) -> tuple[str | None, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes (marker included) and whether it was cut.

    The cut never splits a character.
    """
    if text is None:
        return None, False
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, False
    budget = limit - len(CLIP_MARK.encode("utf-8"))
    clipped = raw[:budget].decode("utf-8", errors="ignore")
    return clipped + CLIP_MARK, True


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: UtcDatetime
    scope: Scope
    agent: str | None = Field(default=None, max_length=MAX_SCOPE_VALUE_CHARS)


class MemoryWriteEvent(_Event):
    """One committed write batch, one event per distinct scope in it."""

    type: Literal["agent.memory.write"] = "agent.memory.write"
    count: int
    record_ids: list[str]
    kinds: dict[str, int]
    superseded_ids: list[str] = Field(default_factory=list)


class MemorySearchEvent(_Event):
    """One search (or listing) through the store."""

    type: Literal["agent.memory.search"] = "agent.memory.search"
    scope_match: ScopeMatch = "subset"
    query_preview: str | None = Field(default=None, max_length=PREVIEW_BYTES)  # bytes bound characters too
    query_clipped: bool = False
    count: int
    limit: int
    record_ids: list[str]
    duration_ms: float
    redacted: bool = False
    """The query preview was removed: a memory this search found has been forgotten."""
    mode: Literal["keyword", "semantic", "hybrid", "quality"] | None = None
    """How a query matched (``None``: a listing, or an event from before modes)."""


class MemoryRecallEvent(_Event):
    """One assembled turn-1 recall block."""

    type: Literal["agent.memory.recall"] = "agent.memory.recall"
    query_preview: str | None = Field(default=None, max_length=PREVIEW_BYTES)  # bytes bound characters too
    query_clipped: bool = False
    count: int
    chars: int
    budget_chars: int
    profile_budget_chars: int | None = None
    """The profile tier's slice of the budget (``None``: an event from before it was logged)."""
    scope_match: ScopeMatch = "visible"
    truncated: bool
    deferred: int
    record_ids: list[str]
    deferred_ids: list[str] = Field(default_factory=list)
    # why each deferred record stayed out: "profile_slice" or "budget"
    deferred_reasons: dict[str, str] = Field(default_factory=dict)
    deferred_tiers: dict[str, str] = Field(default_factory=dict)
    """The tier each deferred record was a candidate of."""
    tiers: dict[str, int] = Field(default_factory=dict)
    fallback: bool = False
    preview_run: bool = False
    duration_ms: float | None = None
    redacted: bool = False
    """The query preview was removed: a memory this recall held has been forgotten."""
    conversation_id: str | None = None
    """The conversation the block opened, when the host named it: its later turns'
    ``agent.memory.recall_turn`` events carry the same id."""


class MemoryRecallTurnEvent(_Event):
    """One later turn's recall block: what was new since the blocks already injected
    in the conversation (:func:`~memory_admin.recall_turns.assemble_turn_recall`)."""

    type: Literal["agent.memory.recall_turn"] = "agent.memory.recall_turn"
    conversation_id: str | None = None
    turn: int
    """The turn's number in the conversation (2 for the first message after turn 1's)."""
    scope_match: ScopeMatch = "visible"
    query_preview: str | None = None
    query_clipped: bool = False
    count: int
    chars: int
    budget_chars: int
    record_ids: list[str]
    """What this turn's block injected, in block order."""
    repeated_ids: list[str] = Field(default_factory=list)
    """Records the message matched that an earlier block of the conversation already
    injected: left out, not injected twice."""
    earlier: int = 0
    """How many records the conversation's earlier blocks had injected."""
    truncated: bool = False
    deferred: int = 0
    deferred_ids: list[str] = Field(default_factory=list)
    duration_ms: float | None = None
    redacted: bool = False
    """The query preview was removed: a memory this turn found has been forgotten."""


class _LearningEvent(_Event):
    """A record entered or left its agent's composition. Carries the record's content and
    provenance, clipped like every preview, so "what did you learn this week?" is a
    query over the log; forgetting the record removes both (``redacted``)."""

    record_id: str
    target: dict[str, JsonValue] | None = None
    tier: str | None = None
    by: DecidedBy
    actor: str
    reason: str | None = None
    content_preview: str | None = None
    content_clipped: bool = False
    provenance: dict[str, str] | None = None
    redacted: bool = False
    """The content and provenance were removed: the record has been forgotten."""


class MemoryPromoteEvent(_LearningEvent):
    """A record entered the promoted tier: it is part of its agent's composition now."""

    type: Literal["agent.memory.promote"] = "agent.memory.promote"
    supports: int = 0
    """Corroborations the record held when it was promoted."""
    overlay_version: str | None = None
    """The overlay the promotion was computed against."""
    composition_version: str | None = None


class MemoryDemoteEvent(_LearningEvent):
    """A record left the promoted tier, and why (``cause``)."""

    type: Literal["agent.memory.demote"] = "agent.memory.demote"
    cause: DemotionCause


class MemoryOverlayEvent(_Event):
    """One composition of an agent: the heartbeat of the compositional layer. Ids and
    sizes only, no content."""

    type: Literal["agent.memory.overlay"] = "agent.memory.overlay"
    composition_version: str
    version: str
    """The overlay's content hash."""
    record_ids: list[str]
    """The promoted records the overlay admitted."""
    chars: dict[str, int]
    """Characters per primitive, authored and learned together."""
    budgets: dict[str, int] = Field(default_factory=dict)
    dropped: dict[str, str] = Field(default_factory=dict)
    """Record id → why the overlay dropped it (an authored collision, a learned conflict)."""
    spilled: list[str] = Field(default_factory=list)
    """Records over their primitive's budget: back in the recall tier."""
    duration_ms: float | None = None


AnyEvent = (
    MemoryWriteEvent
    | MemorySearchEvent
    | MemoryRecallEvent
    | MemoryRecallTurnEvent
    | MemoryPromoteEvent
    | MemoryDemoteEvent
    | MemoryOverlayEvent
)
MemoryEvent = Annotated[AnyEvent, Field(discriminator="type")]
EventSink = Callable[[AnyEvent], object]
EventType = Literal[
    "agent.memory.write",
    "agent.memory.search",
    "agent.memory.recall",
    "agent.memory.recall_turn",
    "agent.memory.promote",
    "agent.memory.demote",
    "agent.memory.overlay",
]
EVENT_TYPES: tuple[EventType, ...] = (
    "agent.memory.write",
    "agent.memory.search",
    "agent.memory.recall",
    "agent.memory.recall_turn",
    "agent.memory.promote",
    "agent.memory.demote",
    "agent.memory.overlay",
)
LEARNING_EVENT_TYPES: tuple[EventType, ...] = ("agent.memory.promote", "agent.memory.demote")
MAX_EVENT_PAGE = 10_000

_EVENT_ADAPTER: TypeAdapter[AnyEvent] = TypeAdapter(MemoryEvent)


def parse_event(data: str | bytes) -> AnyEvent:
    """An event from its stored JSON."""
    return _EVENT_ADAPTER.validate_json(data)


def forget_records(event: AnyEvent, forgotten: set[str]) -> AnyEvent | None:
    """``event`` without the text that may quote a forgotten record: a search or recall
    event that names one of ``forgotten`` (found it, injected it, deferred it) loses its
    query preview; a promote or demote event of one loses its content, provenance and
    reason. ``None`` when there is nothing to change. Record ids stay: they are not
    content, and the chain of what happened stays auditable."""
    if isinstance(event, MemoryWriteEvent | MemoryOverlayEvent):
        return None
    if isinstance(event, _LearningEvent):
        if event.record_id not in forgotten or event.redacted:
            return None
        return event.model_copy(
            update={
                "content_preview": None,
                "content_clipped": False,
                "provenance": None,
                "reason": None,
                "redacted": True,
            }
        )
    if event.query_preview is None:
        return None
    named = set(event.record_ids)
    if isinstance(event, MemoryRecallEvent | MemoryRecallTurnEvent):
        named.update(event.deferred_ids)
    if isinstance(event, MemoryRecallTurnEvent):
        named.update(event.repeated_ids)
    if not named & forgotten:
        return None
    return event.model_copy(update={"query_preview": None, "query_clipped": False, "redacted": True})


class EventQuery(BaseModel):
    """A slice of the persisted event log, newest first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    types: tuple[EventType, ...] | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    scope: CanonicalScope | None = None
    agent: str | None = Field(default=None, max_length=MAX_SCOPE_VALUE_CHARS)
    before_id: int | None = Field(default=None, ge=1, le=2**63 - 1)
    limit: int = Field(default=1000, ge=1, le=MAX_EVENT_PAGE)
    include_previews: bool = False  # recall previews are kept out of the production graphs

    @field_validator("agent")
    @classmethod
    def _valid_unicode(cls, value: str | None) -> str | None:
        if value is not None and holds_lone_surrogate(value):
            raise ValueError("text holds a lone surrogate (not valid Unicode); send UTF-8 text")
        return value


class StoredEvent(BaseModel):
    """An event as the log holds it: its sequence number and the event itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int = Field(ge=1, le=2**63 - 1)
    event: MemoryEvent


class EventLogStats(BaseModel):
    """How complete a store's event log is (:meth:`EventLogStore.event_log_stats`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    logging: bool
    """Whether this store object persists its events (``persist_events``)."""
    dropped: int
    """Events the log is missing: dropped by a writer that fell behind, or lost with a
    failed batch, as counted by every process that logs to this store (a process counts
    its own drops into the log with its next batch)."""
    withheld: int = 0
    """Events the log kept out because their tenant forgot something (a delete, an
    erasure) after them: they may have read what was forgotten (docs/privacy.md)."""
    pending: int
    """This process's events still waiting for their batch."""
    flush_interval_s: float
    """How long an event may wait for its batch in this process."""


def event_matches(event: AnyEvent, query: EventQuery) -> bool:
    """The event-log filter, for backends that filter in Python."""
    if query.types is not None and event.type not in query.types:
        return False
    if query.since is not None and event.at < query.since:
        return False
    if query.until is not None and event.at >= query.until:
        return False
    if query.scope is not None and not is_subset_match(event.scope, query.scope):
        return False
    if query.agent is not None and event.agent != query.agent:
        return False
    return query.include_previews or not getattr(event, "preview_run", False)


def agent_of(scope: Scope) -> str | None:
    return scope.get(AGENT_KEY)


def learning_fields(record: MemoryRecord) -> dict[str, object]:
    """What a promote or demote event says of its record: the target, the content
    (clipped as every preview is) and the provenance."""
    content, clipped = preview(record.content)
    return {
        "record_id": record.id,
        "target": record.target.model_dump(mode="json") if record.target is not None else None,
        "content_preview": content,
        "content_clipped": clipped,
        "provenance": record.provenance.model_dump(mode="json", exclude_none=True),
    }


def deliver(sinks: Iterable[EventSink], event: AnyEvent) -> None:
    """Hand ``event`` to every sink; a failing sink is logged, never raised."""
    for sink in sinks:
        try:
            sink(event)
        except Exception:  # a broken sink must not fail the operation it reports
            log.exception("memory event sink %r failed on %s", sink, event.type)
