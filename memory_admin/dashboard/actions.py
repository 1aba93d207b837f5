"""Curation, privacy and review actions: each one checks the role and the grants, writes
its audit entry, and calls the store — the one place the dashboard changes memory.

Views parse and confirm; these functions decide. Corrections are new records that
supersede the old one (never an in-place edit); deletion and erasure are the store's
true forgetting. Every function raises :class:`~django.core.exceptions.PermissionDenied`
for a role that may not act and :class:`NotVisible` for anything outside the grants,
before touching the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied

from memory_admin.composition import AgentComposition
from memory_admin.dashboard.audit_log import audited
from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.permissions import Ability, Access, NotVisible
from memory_admin.dashboard.redaction import Forgotten, scrub_erased_scope, scrub_forgotten_content
from memory_admin.errors import MemoryCorruptionError, MemoryScrubPendingError, MemoryValidationError
from memory_admin.learning import review
from memory_admin.learning.garden import accept as accept_proposal
from memory_admin.learning.garden import reject as reject_proposal
from memory_admin.promotion import Pin, Promotion, Proposal
from memory_admin.records import MemoryRecord, utc_now
from memory_admin.scope import TENANT_KEY, Scope, canonical_scope, format_scope, is_subset_match
from memory_admin.store import (
    AdminMemoryStore,
    ErasableMemoryStore,
    ErasureReport,
    FullMemoryStore,
    MemoryNeeds,
    MemoryStore,
    RecordListQuery,
    require_memory,
)

CORRECTION_SOURCE = "dashboard"
CORRUPT_TEXT = ("content", "key", "tags", "payload")
"""The columns of a corrupt row whose text a deletion forgets (as a readable record's)."""
RECEIPT_SCOPES = 50  # scopes named on an erasure receipt; the count is always exact


def _confine(access: Access, ability: Ability, scope: Mapping[str, str], what: str) -> Scope:
    access.require(ability)
    canonical = canonical_scope(scope)
    if not access.allows(canonical):
        raise NotVisible(what)
    return canonical


def invalidate_record(store: MemoryStore, access: Access, record: MemoryRecord, reason: str) -> AuditEntry:
    """Mark ``record`` invalid with ``reason`` (kept in the record and the audit log)."""
    _confine(access, Ability.CURATE, record.scope, f"Memory record {record.id}")
    if record.invalid_at is not None:
        raise MemoryValidationError(
            f"Record {record.id} is already invalid; there is nothing to invalidate.",
            [{"loc": "record", "msg": "already invalid"}],
        )
    with audited(
        access, AuditEntry.Action.INVALIDATE, record.scope, reason=reason, record_ids=[record.id], backend=_name(store)
    ) as entry:
        store.invalidate(record.id, reason)
    return entry


def correct_record(
    store: MemoryStore,
    access: Access,
    record: MemoryRecord,
    content: str,
    reason: str,
    *,
    now: datetime | None = None,
) -> tuple[MemoryRecord, AuditEntry]:
    """Write the corrected version of ``record``, superseding it in one atomic write.

    The replacement keeps the scope, kind, key, tags, target, payload and expiry; its
    provenance names the person and the audit entry (``run_id=audit-<n>``) so the
    chain timeline answers "who changed this, and why".
    """
    _confine(access, Ability.CURATE, record.scope, f"Memory record {record.id}")
    if record.invalid_at is not None:
        raise MemoryValidationError(
            f"Record {record.id} is no longer current; correct its newest version instead.",
            [{"loc": "record", "msg": "already invalid"}],
        )
    if record.is_expired(now or utc_now()):
        raise MemoryValidationError(
            f"Record {record.id} has expired; nothing recalls it any more. Sweep it, or write a new record.",
            [{"loc": "record", "msg": "expired"}],
        )
    with audited(
        access, AuditEntry.Action.CORRECT, record.scope, reason=reason, record_ids=[record.id], backend=_name(store)
    ) as entry:
        [replacement] = store.write(
            [
                {
                    "scope": record.scope,
                    "kind": record.kind,
                    "content": content,
                    "key": record.key,
                    "tags": record.tags,
                    "target": record.target.model_dump(mode="json") if record.target else None,
                    "payload": record.payload,
                    "expires_at": record.expires_at,
                    "provenance": {
                        "source": CORRECTION_SOURCE,
                        "author": access.username,
                        "run_id": f"audit-{entry.pk}",
                    },
                    "supersedes": record.id,
                }
            ]
        )
        entry.record_ids = [record.id, replacement.id]
    return replacement, entry


def delete_record(
    store: MemoryStore, access: Access, record_id: str, scope: Mapping[str, str], reason: str
) -> AuditEntry:
    """Truly forget one record (its chain neighbours keep a content-free tombstone); the
    tenant's audit entries, this one included, keep none of its words."""
    canonical = _confine(access, Ability.FORGET, scope, f"Memory record {record_id}")
    forgotten = _forgotten_with(store, record_id)
    with audited(
        access, AuditEntry.Action.DELETE, scope, reason=reason, record_ids=[record_id], backend=_name(store)
    ) as entry:
        try:
            entry.counts = {"records": int(store.delete(record_id))}
        except MemoryScrubPendingError as pending:
            entry.counts = {"records": 1, "scrub_pending": pending.command}
    scrub_forgotten_content(canonical[TENANT_KEY], forgotten)
    entry.refresh_from_db()
    return entry


def _forgotten_with(store: MemoryStore, record_id: str) -> Forgotten:
    """What deleting ``record_id`` forgets: its text, or a corrupt row's raw columns."""
    try:
        record = store.get(record_id)
    except MemoryCorruptionError as corrupt:
        return Forgotten(str(corrupt.raw[name]) for name in CORRUPT_TEXT if corrupt.raw.get(name) is not None)
    return Forgotten.of([record] if record is not None else [])


def preview_erasure(store: ErasableMemoryStore, access: Access, scope: Mapping[str, str]) -> ErasureReport:
    """What erasing ``scope`` would remove. The scope must lie inside a grant as given:
    erasure is never narrowed or widened to fit."""
    canonical = _confine(access, Ability.FORGET, scope, f"Scope {format_scope(scope)}")
    require_memory(store, MemoryNeeds(erasure=True))
    return store.preview_erase(canonical)


def erase_scope(
    store: FullMemoryStore, access: Access, scope: Mapping[str, str], reason: str
) -> tuple[AuditEntry, str]:
    """Erase every record, index entry and event under ``scope``. Returns the entry (the
    receipt: the scope by keyed hashes, the tenant's reasons without the erased records'
    words) and the reason as the officer may read it right after acting — as typed, but
    for the erased records' words (the scope's own values, typed to confirm, stay)."""
    canonical = _confine(access, Ability.FORGET, scope, f"Scope {format_scope(scope)}")
    require_memory(store, MemoryNeeds(erasure=True))
    everything = RecordListQuery(search={"scope": canonical, "include_invalidated": True}, include_expired=True)
    forgotten = Forgotten.of(store.iter_records(everything))
    with audited(access, AuditEntry.Action.ERASE, canonical, reason=reason, backend=_name(store)) as entry:
        scrub_pending = None
        try:
            report = store.erase(canonical)
        except MemoryScrubPendingError as pending:
            report, scrub_pending = pending.report, pending.command
        entry.counts = {
            "records": report.records,
            "by_kind": dict(report.by_kind),
            "events": report.events,
            "scopes": len(report.scopes),
            "scope_list": [format_scope(s) for s in report.scopes[:RECEIPT_SCOPES]],
        }
        if scrub_pending:
            entry.counts["scrub_pending"] = scrub_pending
    # the receipt, and every earlier entry about the scope, keep keyed hashes of its values
    scrub_erased_scope(entry, canonical, forgotten)
    entry.refresh_from_db()
    # the values the officer typed to confirm stay as typed: only the log hashes them
    return entry, forgotten.redact(reason, spare=canonical.values())


def sweep_expired(store: AdminMemoryStore, access: Access, scope: Mapping[str, str]) -> AuditEntry:
    """Delete the expired records under ``scope`` (nothing could recall them any more);
    the tenant's audit entries keep none of their words, as after a deletion."""
    canonical = _confine(access, Ability.FORGET, scope, f"Scope {format_scope(scope)}")
    everything = RecordListQuery(search={"scope": canonical, "include_invalidated": True}, include_expired=True)
    now = utc_now()
    forgotten = Forgotten.of(record for record in store.iter_records(everything) if record.is_expired(now))
    with audited(
        access,
        AuditEntry.Action.SWEEP,
        canonical,
        reason="Expired records swept from the health page.",
        backend=_name(store),
    ) as entry:
        entry.counts = {"records": store.sweep_expired(canonical)}
    scrub_forgotten_content(canonical[TENANT_KEY], forgotten)
    entry.refresh_from_db()
    return entry


def _name(store: MemoryStore) -> str:
    return store.capabilities().backend


# --- a person's decisions on what agents learned (curators and up) -------------------------

REVIEW_NEEDS = "deciding on what agents learned needs the curator role or higher"


def may_review(access: Access) -> None:
    """Raise :class:`PermissionDenied` (403) unless the user may decide on learnings."""
    if not access.can(Ability.CURATE):
        raise PermissionDenied(f"Your role does not allow this: {REVIEW_NEEDS}.")


def _deciding(access: Access, record: MemoryRecord) -> Scope | None:
    """The grant a decision on ``record`` is confined to (``None``: every tenant); the
    role first, so a refusal says nothing about the record."""
    may_review(access)
    if access.all_tenants:
        return None
    grant = next((g for g in access.grants if is_subset_match(record.scope, g)), None)
    if grant is None:
        raise NotVisible(f"Memory record {record.id}")
    return grant


def approve_learning(
    store: FullMemoryStore,
    access: Access,
    record: MemoryRecord,
    composition: AgentComposition,
    *,
    reason: str,
    pin: Pin,
) -> tuple[Promotion, AuditEntry]:
    """Promote ``record`` on the person's approval, pinned to what the page showed."""
    within = _deciding(access, record)
    with _decision_entry(store, access, AuditEntry.Action.APPROVE, record, reason) as entry:
        done = review.approve(
            store, record.id, composition, actor=access.username, reason=reason or None, pin=pin, within=within
        )
        entry.counts = _moved_to(done)
    return done, entry


def reject_learning(
    store: FullMemoryStore, access: Access, record: MemoryRecord, *, reason: str, pin: Pin
) -> tuple[Promotion, AuditEntry]:
    """Reject ``record`` with the reason; it stays a record, in the recall tier."""
    within = _deciding(access, record)
    with _decision_entry(store, access, AuditEntry.Action.REJECT, record, reason) as entry:
        done = review.reject(store, record.id, actor=access.username, reason=reason, pin=pin, within=within)
        entry.counts = _moved_to(done)
    return done, entry


def roll_back_learning(
    store: FullMemoryStore, access: Access, record: MemoryRecord, *, reason: str, pin: Pin
) -> tuple[Promotion, AuditEntry]:
    """Demote a promoted ``record`` out of its composition with the reason; nothing is deleted."""
    within = _deciding(access, record)
    with _decision_entry(store, access, AuditEntry.Action.ROLLBACK, record, reason) as entry:
        done = review.rollback(store, record.id, actor=access.username, reason=reason, pin=pin, within=within)
        entry.counts = _moved_to(done)
    return done, entry


def edit_and_approve_learning(
    store: FullMemoryStore,
    access: Access,
    record: MemoryRecord,
    content: str,
    composition: AgentComposition,
    *,
    reason: str,
    pin: Pin,
    payload: Mapping[str, Any] | None = None,
) -> tuple[Promotion, AuditEntry]:
    """Write the person's edit of ``record`` (its content, and an example's or awareness
    domain's payload) as a superseding version and approve it."""
    within = _deciding(access, record)
    with _decision_entry(store, access, AuditEntry.Action.EDIT_APPROVE, record, reason) as entry:
        done = review.edit_and_approve(
            store,
            record.id,
            content,
            composition,
            actor=access.username,
            reason=reason or None,
            payload=payload,
            pin=pin,
            within=within,
        )
        entry.record_ids = [record.id, done.record_id]
        entry.counts = _moved_to(done)
    return done, entry


def pick_survivor(
    store: FullMemoryStore,
    access: Access,
    winner: MemoryRecord,
    loser: MemoryRecord,
    composition: AgentComposition,
    *,
    reason: str,
    pins: Mapping[str, Pin],
) -> tuple[Promotion, Promotion, AuditEntry]:
    """Settle a conflict between two learnings: ``winner`` is promoted, ``loser`` leaves."""
    within = _deciding(access, winner)
    if _deciding(access, loser) != within:
        raise NotVisible(f"Memory record {loser.id}")  # a pick never spans two grants
    with _decision_entry(store, access, AuditEntry.Action.PICK, winner, reason, [winner.id, loser.id]) as entry:
        survivor, left = review.pick_survivor(
            store, winner.id, loser.id, composition, actor=access.username, reason=reason, within=within, pins=pins
        )
        entry.counts = {"survivor": winner.id, "state": survivor.state, "loser_state": left.state}
    return survivor, left, entry


def decide_learnings(
    store: FullMemoryStore,
    access: Access,
    records: Sequence[MemoryRecord],
    *,
    approve: bool,
    reason: str,
    pins: Mapping[str, Pin],
    compositions: Mapping[str, AgentComposition],
) -> list[AuditEntry]:
    """Approve or reject ``records`` together, all or nothing, each pinned to what the page
    showed; one audit entry per record (all marked failed when the batch is refused)."""
    grants = {record.id: _deciding(access, record) for record in records}
    within = next(iter(grants.values()), None)
    if any(grant != within for grant in grants.values()):
        raise MemoryValidationError(
            "Those learnings lie in different grants of yours; decide on one grant's page at a time.",
            [{"loc": "record", "msg": "several grants"}],
        )
    action = AuditEntry.Action.APPROVE if approve else AuditEntry.Action.REJECT
    with ExitStack() as stack:
        entries = {r.id: stack.enter_context(_decision_entry(store, access, action, r, reason)) for r in records}
        pinned = {record.id: pins[record.id] for record in records}
        if approve:
            done = review.approve_all(
                store, pinned, compositions, actor=access.username, reason=reason or None, within=within
            )
        else:
            done = review.reject_all(store, pinned, actor=access.username, reason=reason, within=within)
        for promotion in done:
            entries[promotion.record_id].counts = {**_moved_to(promotion), "batch": len(records)}
    return list(entries.values())


def settle_proposal(
    store: FullMemoryStore, access: Access, proposal: Proposal, *, accept: bool, reason: str
) -> tuple[Proposal, AuditEntry]:
    """Accept a gardening proposal (carried out through the store's ordinary operations)
    or reject it (nothing changes, and it is not proposed again)."""
    may_review(access)
    if not access.allows(proposal.scope):
        raise NotVisible(f"Proposal {proposal.id}")
    action = AuditEntry.Action.PROPOSAL_ACCEPT if accept else AuditEntry.Action.PROPOSAL_REJECT
    ids = [proposal.record_id, *([proposal.other_id] if proposal.other_id else [])]
    with audited(access, action, proposal.scope, reason=reason, record_ids=ids, backend=_name(store)) as entry:
        if accept:
            settled = accept_proposal(store, proposal.id, actor=access.username, reason=reason or None)
        else:
            settled = reject_proposal(store, proposal.id, actor=access.username, reason=reason)
        entry.counts = {"proposal": proposal.id, "kind": proposal.kind, "status": settled.status}
    return settled, entry


def _decision_entry(
    store: MemoryStore,
    access: Access,
    action: AuditEntry.Action,
    record: MemoryRecord,
    reason: str,
    record_ids: Sequence[str] | None = None,
) -> AbstractContextManager[AuditEntry]:
    return audited(
        access, action, record.scope, reason=reason, record_ids=record_ids or [record.id], backend=_name(store)
    )


def _moved_to(promotion: Promotion) -> dict[str, Any]:
    return {"state": promotion.state, "from": promotion.last.previous, "revision": promotion.revision}
