"""A person's decisions on what an agent learnt: approve, reject, edit then approve, pick the
survivor of a conflict, roll back. What the dashboard and ``memory-admin review`` call;
never reachable from an agent's tools.

Each decision is the person's (``by="person"``, their name as the actor) and may be
pinned to what they were shown (:class:`~memory_admin.promotion.Pin`: the candidate's
revision and state, the overlay of the composition for the scope): when any of it moved
since, the store refuses the decision with a
:class:`~memory_admin.errors.MemoryConflictError` and nothing changes. ``within`` confines
a decision to the scopes the person may act in: a record outside it is not found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_admin.composition import AgentComposition, tier_of
from memory_admin.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from memory_admin.learning.compose import compose
from memory_admin.promotion import Decision, Pin, Promotion
from memory_admin.records import MemoryRecord, MemoryWriteInput, Provenance, parse_model
from memory_admin.scope import Scope, canonical_scope, is_subset_match
from memory_admin.store.protocol import MemoryNeeds, PromotionMemoryStore, require_memory

REVIEW_SOURCE = "review"
"""The provenance source of a record a reviewer wrote (an edit before approval)."""

PinLike = Pin | Mapping[str, Any] | None


def _record(store: PromotionMemoryStore, record_id: str, within: Scope | None) -> MemoryRecord:
    record = store.get(record_id)
    if record is None or (within is not None and not is_subset_match(record.scope, within)):
        raise MemoryNotFoundError(record_id)
    return record


def _within(within: Mapping[str, str] | None) -> Scope | None:
    return canonical_scope(within) if within is not None else None


def _apply(store: PromotionMemoryStore, decision: Decision) -> Promotion:
    [outcome] = store.decide([decision])
    return outcome.result()


def approve(
    store: PromotionMemoryStore,
    record_id: str,
    composition: AgentComposition,
    *,
    actor: str,
    reason: str | None = None,
    pin: PinLike = None,
    within: Mapping[str, str] | None = None,
) -> Promotion:
    """Promote a candidate on a person's approval (the only way a guarded-tier learning is
    promoted). Its tier comes from ``composition``: a locked one is refused."""
    require_memory(store, MemoryNeeds(promotion=True))
    confined = _within(within)
    return _apply(store, _approval(_record(store, record_id, confined), composition, actor, reason, pin, confined))


def _approval(
    record: MemoryRecord,
    composition: AgentComposition,
    actor: str,
    reason: str | None,
    pin: PinLike,
    within: Scope | None,
) -> Decision:
    if record.target is None:
        raise MemoryValidationError(
            f"Record {record.id} carries no target: there is nothing to approve.",
            [{"loc": "record_id", "msg": "no target"}],
        )
    return _decision(
        record_id=record.id,
        state="promoted",
        by="person",
        actor=actor,
        reason=reason or "approved",
        tier=tier_of(record.target, composition).value,
        composition_version=composition.version,
        overlay_version=_pinned_overlay(pin),
        pin=_pin(pin),
        within=within,
        evidence={"approval": {"passed": True, "by": actor}},
    )


def approve_all(
    store: PromotionMemoryStore,
    pinned: Mapping[str, PinLike],
    compositions: Mapping[str, AgentComposition],
    *,
    actor: str,
    reason: str | None = None,
    within: Mapping[str, str] | None = None,
) -> list[Promotion]:
    """Approve several candidates at once — each with its pin (``record id → pin``) and its
    composition (``record id → composition``) — all or nothing: when any one is refused
    (its pin moved, it is not found or may not be promoted), none is approved and a
    :class:`~memory_admin.errors.MemoryConflictError` names it. The pins are checked
    against the store as it was before the first approval, so approvals pinned to one
    overlay do not refuse each other."""
    require_memory(store, MemoryNeeds(promotion=True))
    confined = _within(within)
    decisions = [
        _approval(_record(store, record_id, confined), compositions[record_id], actor, reason, pin, confined)
        for record_id, pin in pinned.items()
    ]
    return _apply_all(store, decisions)


def reject_all(
    store: PromotionMemoryStore,
    pinned: Mapping[str, PinLike],
    *,
    actor: str,
    reason: str,
    within: Mapping[str, str] | None = None,
) -> list[Promotion]:
    """Reject several candidates at once with one reason, all or nothing (see :func:`approve_all`)."""
    require_memory(store, MemoryNeeds(promotion=True))
    confined = _within(within)
    return _apply_all(store, [_rejection(record_id, actor, reason, pin, confined) for record_id, pin in pinned.items()])


def _apply_all(store: PromotionMemoryStore, decisions: list[Decision]) -> list[Promotion]:
    outcomes = store.decide(decisions, all_or_nothing=True)
    promotions = [outcome.promotion for outcome in outcomes]
    assert all(promotion is not None for promotion in promotions)  # all or nothing: a refusal raised
    return [promotion for promotion in promotions if promotion is not None]


def reject(
    store: PromotionMemoryStore,
    record_id: str,
    *,
    actor: str,
    reason: str,
    pin: PinLike = None,
    within: Mapping[str, str] | None = None,
) -> Promotion:
    """Reject a candidate (a reason is required). The record stays, in the recall tier."""
    require_memory(store, MemoryNeeds(promotion=True))
    return _apply(store, _rejection(record_id, actor, reason, pin, _within(within)))


def _rejection(record_id: str, actor: str, reason: str, pin: PinLike, within: Scope | None) -> Decision:
    return _decision(
        record_id=record_id,
        state="rejected",
        by="person",
        actor=actor,
        reason=reason,
        overlay_version=_pinned_overlay(pin),
        pin=_pin(pin),
        within=within,
    )


def rollback(
    store: PromotionMemoryStore,
    record_id: str,
    *,
    actor: str,
    reason: str,
    pin: PinLike = None,
    within: Mapping[str, str] | None = None,
) -> Promotion:
    """Roll a promoted learning back: a demotion with the reason (cause ``rollback``),
    logged; the record stays, valid, in the recall tier. Nothing is deleted."""
    require_memory(store, MemoryNeeds(promotion=True))
    return _apply(
        store,
        _decision(
            record_id=record_id,
            state="demoted",
            by="person",
            actor=actor,
            reason=reason,
            cause="rollback",
            overlay_version=_pinned_overlay(pin),
            pin=_pin(pin),
            within=_within(within),
        ),
    )


def edit_and_approve(
    store: PromotionMemoryStore,
    record_id: str,
    content: str,
    composition: AgentComposition,
    *,
    actor: str,
    reason: str | None = None,
    payload: Mapping[str, Any] | None = None,
    pin: PinLike = None,
    within: Mapping[str, str] | None = None,
) -> Promotion:
    """Correct a candidate's text and approve the correction: the edit is written as a
    superseding record through the normal write path (provenance: the reviewer; the
    original is invalidated and linked both ways), and that record is promoted. The chain
    then reads "proposed by the agent, edited and approved by ``actor``"."""
    require_memory(store, MemoryNeeds(promotion=True))
    confined = _within(within)
    original = _record(store, record_id, confined)
    current = store.promotion(record_id)
    pinned = _pin(pin)
    if current is None or original.target is None:
        raise MemoryValidationError(
            f"Record {record_id} carries no target: there is nothing to approve.",
            [{"loc": "record_id", "msg": "no target"}],
        )
    if tier_of(original.target, composition).value == "locked":
        raise MemoryValidationError(
            f"Record {record_id} targets a locked part of composition {composition.name!r}: it cannot be promoted, "
            "edited or not.",
            [{"loc": "record_id", "msg": "locked tier"}],
        )
    if pinned is not None and pinned.revision is not None and pinned.revision != current.revision:
        raise MemoryConflictError(
            f"Record {record_id} moved since the decision was made (it is {current.state} now). "
            "Look again, then decide.",
            record_id=record_id,
            refused="moved",
        )
    if pinned is not None and pinned.state is not None and pinned.state != current.state:
        raise MemoryConflictError(
            f"Record {record_id} is {current.state} now, not {pinned.state}. Look again, then decide.",
            record_id=record_id,
            refused="moved",
        )
    if current.state == "promoted":
        raise MemoryValidationError(
            f"Record {record_id} is promoted already: correct it, or roll it back and approve an edited version.",
            [{"loc": "record_id", "msg": "promoted"}],
        )
    # the edit is a write the approval cannot take back: check the pinned overlay before it
    _check_overlay(store, pinned)
    edited = MemoryWriteInput(
        scope=original.scope,
        kind=original.kind,
        content=content,
        provenance=Provenance(source=REVIEW_SOURCE, author=actor),
        key=original.key,
        tags=original.tags,
        target=original.target,
        payload=dict(payload) if payload is not None else original.payload,
        supersedes=original.id,
    )
    [successor] = store.write([edited])
    for support in (original.provenance, *original.supports):
        store.corroborate(successor.id, support)  # the sightings of the original count for the edit
    return approve(
        store,
        successor.id,
        composition,
        actor=actor,
        reason=reason or f"edited from {original.id} and approved",
        pin=pinned.model_copy(update={"revision": None, "state": None}) if pinned is not None else None,
        within=confined,
    )


def pick_survivor(
    store: PromotionMemoryStore,
    winner_id: str,
    loser_id: str,
    composition: AgentComposition,
    *,
    actor: str,
    reason: str,
    within: Mapping[str, str] | None = None,
    pins: Mapping[str, PinLike] | None = None,
) -> tuple[Promotion, Promotion]:
    """Settle a conflict between two learnings by a person's pick: the winner is promoted
    (unless it is already) and the loser leaves — demoted if it was promoted, rejected
    otherwise — each with the reason, in one transaction. ``pins`` (record id → pin) holds
    each to what the person saw; without one, to the revision read here."""
    require_memory(store, MemoryNeeds(promotion=True))
    if winner_id == loser_id:
        raise MemoryValidationError("Pick two different records.", [{"loc": "loser_id", "msg": "same as the winner"}])
    confined = _within(within)
    winner = _record(store, winner_id, confined)
    _record(store, loser_id, confined)
    states = {rid: store.promotion(rid) for rid in (winner_id, loser_id)}
    if winner.target is None or states[winner_id] is None or states[loser_id] is None:
        raise MemoryValidationError(
            "Both records must be candidates (carry a target).", [{"loc": "record_id", "msg": "no target"}]
        )
    loser_state = states[loser_id]
    assert loser_state is not None
    decisions = [
        _decision(
            record_id=loser_id,
            state="demoted" if loser_state.state == "promoted" else "rejected",
            by="person",
            actor=actor,
            reason=f"lost a conflict to {winner_id}: {reason}",
            cause="rollback" if loser_state.state == "promoted" else None,
            pin=_pin((pins or {}).get(loser_id)) or Pin(revision=loser_state.revision),
            overlay_version=_pinned_overlay((pins or {}).get(loser_id)),
            within=confined,
            evidence={"conflict": {"survivor": winner_id}},
        )
    ]
    winner_state = states[winner_id]
    assert winner_state is not None
    if winner_state.state != "promoted":
        decisions.append(
            _decision(
                record_id=winner_id,
                state="promoted",
                by="person",
                actor=actor,
                reason=f"survived a conflict with {loser_id}: {reason}",
                tier=tier_of(winner.target, composition).value,
                composition_version=composition.version,
                pin=_pin((pins or {}).get(winner_id)) or Pin(revision=winner_state.revision),
                overlay_version=_pinned_overlay((pins or {}).get(winner_id)),
                within=confined,
                evidence={"conflict": {"loser": loser_id}},
            )
        )
    outcomes = store.decide(decisions, all_or_nothing=True)
    after = {o.record_id: o.promotion for o in outcomes}
    survivor = after.get(winner_id) or store.promotion(winner_id)
    loser = after[loser_id]
    assert survivor is not None and loser is not None
    return survivor, loser


def _check_overlay(store: PromotionMemoryStore, pin: Pin | None) -> None:
    """Refuse, as the store would, when the overlay ``pin`` names is not the one composed now."""
    if pin is None or pin.overlay_version is None or pin.composition_version is None or pin.scope is None:
        return
    now = compose(store, pin.scope, pin.composition_version, agent=pin.agent, register=False, emit=False)
    if now.version != pin.overlay_version:
        raise MemoryConflictError(
            "The composition this decision was made against has changed since (other learnings were promoted "
            "or demoted). Look at it again, then decide.",
            refused="moved",
        )


def _decision(**fields: Any) -> Decision:
    """A person's decision, its fields checked: a reason that is not printable text is a
    :class:`~memory_admin.errors.MemoryValidationError`, not a crash."""
    return parse_model(Decision, fields, what="decision")


def _pin(pin: PinLike) -> Pin | None:
    if pin is None or isinstance(pin, Pin):
        return pin
    return Pin.model_validate(dict(pin))


def _pinned_overlay(pin: PinLike) -> str | None:
    parsed = _pin(pin)
    return parsed.overlay_version if parsed is not None else None


__all__ = [
    "REVIEW_SOURCE",
    "approve",
    "approve_all",
    "edit_and_approve",
    "pick_survivor",
    "reject",
    "reject_all",
    "rollback",
]
