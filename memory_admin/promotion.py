"""The promotion data contract: a targeted record's standing in its agent's composition.

A record that carries a ``target`` is a **candidate** from the moment it is written. The
gate chain (:mod:`memory_admin.learning.gates`) and people move it through the states of
:data:`PromotionState`; the store keeps each record's current state and every transition
(who, when, why, on what evidence, against which overlay), beside the record and gone
with it. Every model here is frozen, with ``extra="forbid"``, like the records.

The states::

    candidate ──► held ─────────┐        (a gate not met yet: recurrence, a payload)
        │  ▲        │           │
        │  └────────┤           ▼
        ├──► conflict ──► promoted ──► demoted   (invalidated, superseded, deleted,
        ├──► pending_review ──┘   ▲               expired, or rolled back by a person)
        └──► rejected ─────────────┘ (a person may still approve what was rejected)

Evidence carries ids, counts and scores, never a record's content: content lives in the
record, so forgetting the record forgets it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from memory_admin.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from memory_admin.records import MAX_ID_CHARS, MAX_REASON_CHARS, CanonicalScope, MemoryRecord, UtcDatetime
from memory_admin.scope import ScopeMatch, has_control_chars

PromotionState = Literal["candidate", "held", "pending_review", "conflict", "promoted", "demoted", "rejected"]
PROMOTION_STATES: tuple[PromotionState, ...] = (
    "candidate",
    "held",
    "pending_review",
    "conflict",
    "promoted",
    "demoted",
    "rejected",
)

TierName = Literal["auto", "earned", "guarded", "locked"]
"""A tier's name (:class:`memory_admin.composition.Tier` holds the rule that assigns it)."""

DecidedBy = Literal["person", "gate", "system"]
"""Who made a transition: a person (through the dashboard or the CLI), the gate chain,
or the store itself (a demotion because the record was invalidated, superseded or
expired)."""

DemotionCause = Literal["invalidated", "superseded", "deleted", "expired", "rollback"]

GATE_STATES: frozenset[str] = frozenset({"candidate", "held", "conflict"})
"""The states the gate chain evaluates again on every run: the others wait for a person
(``pending_review``) or are settled (``promoted``, ``demoted``, ``rejected``)."""

MOVES: dict[str, frozenset[str]] = {
    "candidate": frozenset({"held", "conflict", "pending_review", "promoted", "rejected"}),
    "held": frozenset({"held", "conflict", "pending_review", "promoted", "rejected"}),
    "conflict": frozenset({"held", "conflict", "pending_review", "promoted", "rejected"}),
    "pending_review": frozenset({"promoted", "rejected", "conflict"}),
    "promoted": frozenset({"demoted"}),
    "demoted": frozenset({"promoted", "rejected"}),
    "rejected": frozenset({"promoted", "pending_review"}),
}
"""Which state may follow which. A settled record (demoted, rejected) moves again only by
a person's decision; the store refuses the rest with a
:class:`~memory_admin.errors.MemoryConflictError`."""

MAX_ACTOR_CHARS = 200
MAX_EVIDENCE_CHARS = 20_000
MAX_SUPPORTS = 200
"""Corroborations a record holds at most; more is a
:class:`~memory_admin.errors.MemoryLimitError` (recurrence needs a handful)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _printable(value: str | None, what: str, most: int) -> str | None:
    if value is None:
        return None
    cleaned = " ".join(value.split())
    if len(cleaned) > most:
        raise ValueError(f"{what} holds at most {most} characters")
    if has_control_chars(cleaned):
        raise ValueError(f"{what} must be printable text")
    return cleaned or None


class Transition(_Frozen):
    """One move of a record between promotion states, as the store keeps it."""

    record_id: str
    revision: int = Field(ge=0)
    """The record's transition count: 0 for its birth as a candidate."""
    at: UtcDatetime
    state: PromotionState
    previous: PromotionState | None = None
    by: DecidedBy
    actor: str
    """Who: a person's user name, ``gate`` (the chain), ``store``."""
    reason: str | None = None
    cause: DemotionCause | None = None
    """Why a demotion happened (``None`` for any other move)."""
    tier: TierName | None = None
    evidence: dict[str, JsonValue] = Field(default_factory=dict)
    """What the decision rested on: each gate's result (recurrence n of N, eval scores,
    conflicting ids). Ids, counts and scores only."""
    overlay_version: str | None = None
    """The overlay the decision was computed against."""
    composition_version: str | None = None


class Promotion(_Frozen):
    """A targeted record's promotion state (now, or as of a time), with the record."""

    record_id: str
    scope: CanonicalScope
    state: PromotionState
    tier: TierName | None = None
    primitive: str
    """The record's target primitive (``background``, ``judgment`` …)."""
    revision: int
    at: UtcDatetime
    """When it entered this state."""
    last: Transition
    record: MemoryRecord | None = None
    """The record itself (``None`` only where a caller asked for states alone)."""


class Pin(_Frozen):
    """What a decision was computed against; the store refuses the decision with a
    :class:`~memory_admin.errors.MemoryConflictError` when it moved since."""

    revision: int | None = Field(default=None, ge=0)
    """The record's transition count the decision saw."""
    state: PromotionState | None = None
    overlay_version: str | None = None
    """The overlay of ``composition_version`` for ``scope`` (and ``agent``) that the
    decision saw: refused when the composed overlay is another one now."""
    composition_version: str | None = None
    scope: CanonicalScope | None = None
    agent: str | None = None


class Decision(_Frozen):
    """A move of one record into ``state``: who decided, why and on what evidence."""

    record_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    state: PromotionState
    by: DecidedBy = "person"
    actor: str = Field(min_length=1, max_length=MAX_ACTOR_CHARS)
    reason: str | None = None
    cause: DemotionCause | None = None
    tier: TierName | None = None
    evidence: dict[str, JsonValue] = Field(default_factory=dict)
    overlay_version: str | None = Field(default=None, max_length=128)
    composition_version: str | None = Field(default=None, max_length=128)
    pin: Pin | None = None
    within: CanonicalScope | None = None
    """The scope the decider may act in (a person's grants, a gate run's scope): a record
    outside it is refused as not found, whether or not it exists."""

    @field_validator("actor")
    @classmethod
    def _actor(cls, value: str) -> str:
        cleaned = _printable(value, "actor", MAX_ACTOR_CHARS)
        if cleaned is None:
            raise ValueError("an actor names who decided")
        return cleaned

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str | None) -> str | None:
        return _printable(value, "a reason", MAX_REASON_CHARS)

    @field_validator("evidence")
    @classmethod
    def _bounded(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        import json

        if len(json.dumps(value, ensure_ascii=False)) > MAX_EVIDENCE_CHARS:
            raise ValueError(f"evidence holds at most {MAX_EVIDENCE_CHARS} characters of JSON")
        return value


class DecisionOutcome(_Frozen):
    """What :meth:`~memory_admin.store.protocol.PromotionMemoryStore.decide` did with one
    decision: the promotion as it stands after it, or why it was refused (the pin moved,
    the move is not allowed, the record is gone)."""

    record_id: str
    applied: bool
    promotion: Promotion | None = None
    refused: str | None = None
    """``moved``, ``not_allowed``, ``not_found``, ``not_candidate``, ``needs_person``."""
    message: str | None = None

    def result(self) -> Promotion:
        """The promotion as the decision left it, or the refusal as its typed error:
        :class:`~memory_admin.errors.MemoryNotFoundError`, a
        :class:`~memory_admin.errors.MemoryValidationError` for a move the rules do not
        allow, a :class:`~memory_admin.errors.MemoryConflictError` for a pin that moved or
        a decision only a person may make."""
        if self.applied and self.promotion is not None:
            return self.promotion
        if self.refused == "not_found":
            raise MemoryNotFoundError(self.record_id)
        if self.refused in ("not_allowed", "not_candidate"):
            raise MemoryValidationError(self.message or "", [{"loc": "state", "msg": self.refused or ""}])
        raise MemoryConflictError(self.message or "", record_id=self.record_id, refused=self.refused)


class PromotionQuery(_Frozen):
    """A listing of promotion states under a scope, newest decision first."""

    scope: CanonicalScope
    scope_match: ScopeMatch = "subset"
    agent: str | None = Field(default=None, min_length=1, max_length=200)
    states: tuple[PromotionState, ...] | None = None
    primitives: tuple[str, ...] | None = None
    tiers: tuple[TierName, ...] | None = None
    record_ids: tuple[str, ...] | None = Field(default=None, max_length=1000)
    as_of: UtcDatetime | None = None
    """The states as they stood then (a replay of the transitions)."""
    include_invalidated: bool = False
    """Also records invalidated since (hidden by default, as in search)."""
    limit: int = Field(default=50, ge=0)
    cursor: str | None = Field(default=None, max_length=200)


class PromotionPage(_Frozen):
    promotions: list[Promotion]
    next_cursor: str | None = None


class TransitionQuery(_Frozen):
    """Transitions of the records under a scope, newest first: what an agent learnt (and
    unlearnt) since a time."""

    scope: CanonicalScope
    scope_match: ScopeMatch = "subset"
    agent: str | None = Field(default=None, min_length=1, max_length=200)
    states: tuple[PromotionState, ...] | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    limit: int = Field(default=100, ge=1)
    cursor: str | None = Field(default=None, max_length=200)


class TransitionPage(_Frozen):
    transitions: list[Transition]
    next_cursor: str | None = None


def candidate_birth(record: MemoryRecord) -> Transition:
    """The first transition of a targeted record: a candidate from its creation."""
    return Transition(
        record_id=record.id, revision=0, at=record.created_at, state="candidate", by="system", actor="store"
    )


def state_after(
    record: MemoryRecord, transition: Transition, *, primitive: str, with_record: bool = False
) -> Promotion:
    """A record's promotion state once ``transition`` is its latest (``with_record``: the
    record attached). Built from validated parts without validating them again: listings
    and gate runs build thousands."""
    return Promotion.model_construct(
        record_id=record.id,
        scope=record.scope,
        state=transition.state,
        tier=transition.tier,
        primitive=primitive,
        revision=transition.revision,
        at=transition.at,
        last=transition,
        record=record if with_record else None,
    )


ProposalKind = Literal["merge", "invalidate", "demote"]
ProposalStatus = Literal["pending", "accepted", "rejected"]


class ProposalInput(_Frozen):
    """A curation the gardening pass proposes for a person to accept or reject."""

    kind: ProposalKind
    """``merge``: the record repeats ``other_id`` (accepting invalidates it, its
    sightings joining the other's supports); ``invalidate``: a stale fact; ``demote``: a
    promoted learning whose eval no longer passes."""
    record_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    other_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)
    evidence: dict[str, JsonValue] = Field(default_factory=dict)
    """Ids, counts and scores only."""
    by: str = Field(default="garden", min_length=1, max_length=MAX_ACTOR_CHARS)


class Proposal(_Frozen):
    """A stored proposal and, once a person settled it, who did and why."""

    id: int
    kind: ProposalKind
    record_id: str
    other_id: str | None = None
    scope: CanonicalScope
    status: ProposalStatus
    reason: str
    evidence: dict[str, JsonValue] = Field(default_factory=dict)
    by: str
    at: UtcDatetime
    decided_at: UtcDatetime | None = None
    actor: str | None = None
    decision_reason: str | None = None


class ProposalPage(_Frozen):
    proposals: list[Proposal]
    next_cursor: str | None = None


class RegisteredComposition(_Frozen):
    """A composition a host registered for a scope, and when."""

    version: str
    name: str
    scope: CanonicalScope
    registered_at: UtcDatetime
    """When the scope started running this version (a later registration of another
    version ends it)."""


__all__ = [
    "GATE_STATES",
    "MAX_SUPPORTS",
    "MOVES",
    "PROMOTION_STATES",
    "DecidedBy",
    "Decision",
    "DecisionOutcome",
    "DemotionCause",
    "Pin",
    "Promotion",
    "PromotionPage",
    "PromotionQuery",
    "PromotionState",
    "Proposal",
    "ProposalInput",
    "ProposalKind",
    "ProposalPage",
    "ProposalStatus",
    "RegisteredComposition",
    "TierName",
    "Transition",
    "TransitionPage",
    "TransitionQuery",
    "candidate_birth",
    "state_after",
]
