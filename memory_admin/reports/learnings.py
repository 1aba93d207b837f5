"""What agents learned, for the people who review it: the review inbox, one learning with
its evidence, gates, effect and conflict, a composition as the agent receives it (now,
then, or two of them compared), what was promoted and demoted over time, and the
gardening proposals waiting for a person.

Everything here reads; decisions are :mod:`memory_admin.learning.review`'s and the
gardening pass's. Each function takes ``visible`` (a reader's grants as a predicate on a
scope): a learned line of a composed prompt whose record lies outside them is shown as a
placeholder, never with its words, and a record outside them is never returned.

Why one module: the inbox, one learning's page, the compositions and the timeline are
built from the same pieces (evidence, gates, contexts, lines a reader may see) and
their ``visible`` rule is applied the same way in each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from memory_admin.composition import (
    AgentComposition,
    LintReport,
    Overlay,
    PrimitiveSize,
    PromptLine,
    RenderedPrompt,
    apply_memory_overlay,
    diff,
    lint_composition,
    render_prompt,
    section_of,
    tier_of,
)
from memory_admin.learning.compose import Composed, compose
from memory_admin.learning.garden import recall_counts
from memory_admin.learning.gates import conversations
from memory_admin.promotion import (
    MOVES,
    PROMOTION_STATES,
    Pin,
    Promotion,
    PromotionState,
    Proposal,
    RegisteredComposition,
    TierName,
    Transition,
)
from memory_admin.records import MemoryRecord, Provenance, utc_now
from memory_admin.reports.recall_stats import BUCKET_LABELS, bucket_range, label
from memory_admin.scope import Scope, canonical_scope, scope_json
from memory_admin.store.protocol import EventLogStore, PromotionMemoryStore

Visible = Callable[[Mapping[str, str]], bool]
"""True when a record with this scope lies inside the reader's grants."""

STATE_WORDS: dict[str, str] = {
    "candidate": "new",
    "held": "held",
    "pending_review": "pending review",
    "conflict": "conflict",
    "promoted": "promoted",
    "demoted": "demoted",
    "rejected": "rejected",
}
INBOX_ORDER: tuple[PromotionState, ...] = (
    "pending_review",
    "conflict",
    "held",
    "candidate",
    "promoted",
    "demoted",
    "rejected",
)
"""The states in the order the inbox counts them: what waits for a person first."""
TIERS: tuple[TierName, ...] = ("auto", "earned", "guarded", "locked")
PRIMITIVES = ("background", "judgment", "example", "awareness", "recovery", "manual")
MAX_TIMELINE = 20_000
"""Promotions and demotions the timeline's chart counts at most (newest first; their moments
only); the page says when it stopped."""
TRANSITION_PAGE = 1_000
MAX_BUDGET = 1_000_000
"""The largest budget a composition may set: lifted to it, nothing spills (where a learning
would land, measured apart from the budget it is then compared with)."""
RECALL_WINDOW = timedelta(days=30)
"""How far back the composition's lint counts recalls (its never-recalled section)."""


def _visible_to(visible: Visible) -> Callable[[MemoryRecord | None], bool]:
    return lambda record: record is not None and visible(record.scope)


# --- evidence and gates ------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """Why a learning is believed: who proposed it, when, and every sighting since."""

    proposed_by: Provenance
    first_seen: datetime
    """When it was first stated (the record's ``observed_at``)."""
    supports: tuple[Provenance, ...]
    conversations: tuple[str, ...]
    """The distinct conversations (or runs) that saw it, the proposing one included."""
    counted_at: datetime | None = None
    """When the gate chain first counted every sighting it has now (a corroboration
    carries no time of its own, so this is when the last one was known by); ``None``
    when no gate run has counted them all yet, or the history was not read."""


def evidence_of(record: MemoryRecord, history: Sequence[Transition] = ()) -> Evidence:
    seen = conversations(record)
    counted = next(
        (
            t.at
            for t in history
            if isinstance(t.evidence.get("recurrence"), dict) and t.evidence["recurrence"].get("seen") == len(seen)  # type: ignore[union-attr]
        ),
        None,
    )
    return Evidence(
        proposed_by=record.provenance,
        first_seen=record.observed_at,
        supports=record.supports,
        conversations=tuple(sorted(seen)),
        counted_at=counted,
    )


@dataclass(frozen=True)
class Gate:
    """One gate's verdict as a transition kept it."""

    gate: str
    passed: bool | None
    detail: str
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @property
    def scores(self) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        """An eval gate's scores before and after, metric by metric."""
        before, after = self.evidence.get("before"), self.evidence.get("after")
        return (before, after) if isinstance(before, dict) and isinstance(after, dict) else None


def gates_of(transition: Transition | None) -> list[Gate]:
    """The gate results a transition's evidence holds, in the chain's order (a person's
    approval is one too; other evidence, such as a conflict's pick, is not a gate)."""
    if transition is None:
        return []
    gates = []
    for name, value in transition.evidence.items():
        if not isinstance(value, dict) or "passed" not in value:
            continue
        passed = value["passed"]
        detail = str(value.get("detail") or (f"approved by {value['by']}" if name == "approval" else ""))
        rest = {k: v for k, v in value.items() if k not in ("passed", "detail")}
        gates.append(Gate(name, passed if isinstance(passed, bool) else None, detail, rest))
    return gates


def last_gate_run(history: Sequence[Transition]) -> Transition | None:
    """The newest transition the gate chain made."""
    return next((t for t in reversed(history) if t.by == "gate"), None)


# --- which composition a learning belongs to ----------------------------------------------


@dataclass(frozen=True)
class Context:
    """A composition a learning can enter: the registration (its scope and version) and
    the composition itself."""

    registration: RegisteredComposition
    composition: AgentComposition

    @property
    def scope(self) -> Scope:
        return self.registration.scope

    def pin(self, overlay: Overlay) -> Pin:
        """The pin of a decision made against ``overlay`` of this composition."""
        return Pin(overlay_version=overlay.version, composition_version=overlay.composition_version, scope=self.scope)


class Contexts:
    """The compositions a page's learnings belong to, and their overlays now, each read
    once per page."""

    def __init__(self, store: PromotionMemoryStore) -> None:
        self.store = store
        self._registrations: dict[str, list[RegisteredComposition]] = {}
        self._compositions: dict[str, AgentComposition | None] = {}
        self._composed: dict[tuple[str, str], Composed] = {}

    def current(self, scope: Mapping[str, str]) -> list[RegisteredComposition]:
        """The composition each scope that sees ``scope``'s records runs now (the newest
        registration per scope), newest first."""
        key = scope_json(canonical_scope(scope))
        if key not in self._registrations:
            newest: dict[str, RegisteredComposition] = {}
            for registration in self.store.compositions(scope):
                newest.setdefault(scope_json(registration.scope), registration)
            self._registrations[key] = list(newest.values())
        return self._registrations[key]

    def composition(self, version: str) -> AgentComposition | None:
        if version not in self._compositions:
            self._compositions[version] = self.store.composition(version)
        return self._compositions[version]

    def of(self, record: MemoryRecord, history: Sequence[Transition] = ()) -> Context | None:
        """The composition ``record`` is reviewed against: among those the scopes that see
        it run now, the one its gate run was computed against, else the one registered
        for exactly its scope, else the newest; ``None`` when no scope that sees it
        registered one."""
        found = self.current(record.scope)
        if not found:
            return None
        gated = [t.composition_version for t in reversed(history) if t.composition_version]
        exact = [r for r in found if r.scope == record.scope]
        chosen = next((r for r in found if gated and r.version == gated[0]), None) or (exact or found)[0]
        composition = self.composition(chosen.version)
        return Context(chosen, composition) if composition is not None else None

    def composed(self, context: Context) -> Composed:
        """``context``'s composition as it stands now (read once per page; nothing emitted)."""
        key = (scope_json(context.scope), context.registration.version)
        if key not in self._composed:
            self._composed[key] = compose(self.store, context.scope, context.composition, register=False, emit=False)
        return self._composed[key]


# --- prompt lines as a reader may see them ----------------------------------------------------


@dataclass(frozen=True)
class Line:
    """A line of a composed prompt for a reader: a learned line whose record lies outside
    the reader's grants is ``hidden`` (its text is not shown)."""

    line: PromptLine
    hidden: bool = False

    @property
    def text(self) -> str:
        return "[a learning from outside your scopes]" if self.hidden else self.line.text

    @property
    def learned(self) -> bool:
        return self.line.source == "memory" and self.line.kind == "entry"


def shown(lines: Sequence[PromptLine], overlay: Overlay, visible: Visible) -> list[Line]:
    return marked(lines, allowed_ids(overlay, visible))


def allowed_ids(overlay: Overlay, visible: Visible) -> set[str]:
    """The records of ``overlay`` whose learned lines the reader may see."""
    scopes: dict[str, bool] = {}  # most records of a composition share a few scopes
    allowed = set()
    for record in overlay.records:
        key = scope_json(record.scope)
        if key not in scopes:
            scopes[key] = visible(record.scope)
        if scopes[key]:
            allowed.add(record.id)
    return allowed


def marked(lines: Sequence[PromptLine], allowed: set[str]) -> list[Line]:
    return [
        Line(line, hidden=line.kind == "entry" and any(i not in allowed for i in line.record_ids)) for line in lines
    ]


@dataclass(frozen=True)
class SectionChange:
    """One section whose lines differ between two composed prompts."""

    section: str
    before: list[Line]
    after: list[Line]
    added: list[Line]
    removed: list[Line]


def changes_between(before: Overlay, after: Overlay, visible: Visible) -> list[SectionChange]:
    """The sections that differ from ``before`` to ``after``, lines as the reader may see them."""
    compared = diff(before, after)
    if not compared.changes:
        return []
    old, new = render_prompt(before), render_prompt(after)
    seen_before, seen_after = allowed_ids(before, visible), allowed_ids(after, visible)
    return [
        SectionChange(
            section=change.section,
            before=marked(_body(old, change.section), seen_before),
            after=marked(_body(new, change.section), seen_after),
            added=marked(change.added, seen_after),
            removed=marked(change.removed, seen_before),
        )
        for change in compared.changes
    ]


def _body(prompt: RenderedPrompt, section: str) -> list[PromptLine]:
    return [line for line in prompt.lines if line.section == section and line.kind != "heading"]


# --- the inbox -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """Where a learning would land in its composition now, and what it would take of the
    primitive's budget (the detail page computes the exact effect)."""

    section: str | None
    chars: int
    """The characters of its entry (0 when it cannot enter)."""
    size: PrimitiveSize | None
    """The primitive's size in the composition now."""
    refused: str | None = None
    """Why it cannot enter as it is (a locked target, an authored entry it collides with …)."""

    @property
    def fits(self) -> bool:
        return self.refused is None and (
            self.size is None or self.size.budget is None or self.size.chars + self.chars <= self.size.budget
        )


class _Learning:
    """What a person may do with a learning shown against its composition."""

    promotion: Promotion
    record: MemoryRecord
    context: Context | None

    @property
    def state(self) -> PromotionState:
        return self.promotion.state

    @property
    def tier(self) -> TierName | None:
        """Its tier in the composition it is shown against (else the one last decided)."""
        if self.context is not None and self.record.target is not None:
            return tier_of(self.record.target, self.context.composition).value
        return self.promotion.tier

    @property
    def section(self) -> str | None:
        """Where in a composition it aims (``judgment.refunds.constraints``)."""
        return section_of(self.record)

    @property
    def can_approve(self) -> bool:
        """A person may approve it: its state allows, its tier is not locked, and a
        composition is there to take it."""
        return "promoted" in MOVES[self.state] and self.tier not in (None, "locked") and self.context is not None

    @property
    def can_reject(self) -> bool:
        return "rejected" in MOVES[self.state]


@dataclass(frozen=True)
class InboxItem(_Learning):
    promotion: Promotion
    record: MemoryRecord
    evidence: Evidence
    gates: list[Gate]
    """The last transition's gate results (the chain's, or a person's approval)."""
    context: Context | None
    fit: Fit | None
    pin: Pin
    """What a decision on this item from this page is pinned to."""


@dataclass(frozen=True)
class Inbox:
    counts: dict[PromotionState, int]
    items: list[InboxItem]
    next_cursor: str | None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def ordered_counts(self) -> list[tuple[PromotionState, str, int]]:
        return [(state, STATE_WORDS[state], self.counts.get(state, 0)) for state in INBOX_ORDER]


def review_inbox(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    *,
    visible: Visible,
    states: Sequence[PromotionState] = (),
    agent: str | None = None,
    primitives: Sequence[str] = (),
    tiers: Sequence[TierName] = (),
    cursor: str | None = None,
    limit: int = 25,
) -> Inbox:
    """The learnings under ``scope`` (every state, or ``states``), newest decision first, a
    keyset page of ``limit``; the counts per state of the whole filtered listing."""
    filters: dict[str, Any] = {"agent": agent}
    if primitives:
        filters["primitives"] = tuple(primitives)
    if tiers:
        filters["tiers"] = tuple(tiers)
    counts = store.count_promotions(scope, **filters)
    page = store.promotions(scope, states=list(states) or None, cursor=cursor, limit=limit, **filters)
    contexts = Contexts(store)
    shown = [
        (promotion, promotion.record, contexts.of(promotion.record, [promotion.last]))
        for promotion in page.promotions
        if promotion.record is not None and visible(promotion.record.scope)
    ]
    fits = _fits([(record, context) for _, record, context in shown], contexts)
    items = []
    for promotion, record, context in shown:
        fit = fits.get(record.id)
        pin = Pin(revision=promotion.revision, state=promotion.state)
        if context is not None:
            pin = pin.model_copy(update=context.pin(contexts.composed(context).overlay).model_dump(exclude_none=True))
        items.append(
            InboxItem(
                promotion=promotion,
                record=record,
                evidence=evidence_of(record),
                gates=gates_of(promotion.last),
                context=context,
                fit=fit,
                pin=pin,
            )
        )
    return Inbox(counts=counts, items=items, next_cursor=page.next_cursor)


def _fits(shown: Sequence[tuple[MemoryRecord, Context | None]], contexts: Contexts) -> dict[str, Fit]:
    """Where each learning of a page would land and what its entry takes, from one overlay
    of the page's learnings per composition — its budgets lifted, so none spills for
    another (the size shown against the budget is the composition's own, now); a learning
    that competes for its slot with another of the page is measured alone."""
    fits: dict[str, Fit] = {}
    by_context: dict[int, tuple[Context, list[MemoryRecord]]] = {}
    for record, context in shown:
        if context is not None:
            by_context.setdefault(id(context), (context, []))[1].append(record)
    for context, records in by_context.values():
        roomy = _roomy(context.composition)
        together = apply_memory_overlay(roomy, records)
        now = contexts.composed(context).overlay
        for record in records:
            overlay = together
            if any(d.record_id == record.id and d.reason == "learned_conflict" for d in together.dropped):
                overlay = apply_memory_overlay(roomy, [record])  # another of the page holds its slot
            fits[record.id] = _fit(record, overlay, now)
    return fits


def _roomy(composition: AgentComposition) -> AgentComposition:
    lifted = dict.fromkeys(
        ("background", "judgment", "example", "awareness", "recovery", "manual", "ceiling"), MAX_BUDGET
    )
    return AgentComposition.model_validate({**composition.model_dump(), "budgets": lifted})


def _fit(record: MemoryRecord, overlay: Overlay, now: Overlay) -> Fit:
    section = section_of(record)
    primitive = record.target.primitive if record.target is not None else None
    size = now.sizes.get(primitive) if primitive is not None else None
    entry = next((e for e in overlay.entries if e.record_id == record.id), None)
    if entry is not None:
        return Fit(section, len(entry.text), size)
    dropped = next((d for d in overlay.dropped if d.record_id == record.id), None)
    return Fit(section, 0, size, refused=dropped.detail if dropped is not None else None)


# --- one learning ------------------------------------------------------------------------------

Outcome = Literal["applied", "dropped", "spilled", "unchanged"]


@dataclass(frozen=True)
class Effect:
    """What a learning does to its composition's prompt: the overlay without it and with it
    (for a promoted learning: as it is, and without it), and the sections that change."""

    context: Context
    before: Overlay
    after: Overlay
    changes: list[SectionChange]
    outcome: Outcome
    """Whether the learning enters the prompt (``applied``), is left out for an older or
    authored entry (``dropped``) or for the budget (``spilled``)."""
    detail: str
    size_before: PrimitiveSize | None
    size_after: PrimitiveSize | None
    current: Overlay
    """The overlay composed now: the one a decision from this page is pinned to."""


@dataclass(frozen=True)
class Conflict:
    """A learning against what it contradicts, restates or competes with, side by side."""

    kind: str
    detail: str
    section: str | None
    mine: str
    theirs: str | None
    """The other item's text (``None`` when it lies outside the reader's grants)."""
    other_id: str | None = None
    """The other learning (``None``: an authored item)."""
    other: Promotion | None = None
    """The other learning's promotion, when the reader may see it."""

    @property
    def authored(self) -> bool:
        return self.other_id is None

    @property
    def pickable(self) -> bool:
        """A person can settle it by picking the survivor: two learnings, both visible."""
        return self.other is not None and self.other.record is not None


@dataclass(frozen=True)
class CandidateReview(_Learning):
    promotion: Promotion
    record: MemoryRecord
    history: list[Transition]
    evidence: Evidence
    gates: list[Gate]
    """The last gate run's results."""
    decided: Transition | None
    """The last transition a person made, if any."""
    context: Context | None
    effect: Effect | None
    conflict: Conflict | None
    pin: Pin
    seen_at: datetime
    """When the page was computed: a refused decision replays the composition then."""

    @property
    def live(self) -> bool:
        return self.record.is_live(self.seen_at)

    @property
    def can_approve(self) -> bool:
        return self.live and super().can_approve

    @property
    def can_edit(self) -> bool:
        return self.can_approve

    @property
    def can_roll_back(self) -> bool:
        return self.state == "promoted"


def review_candidate(
    store: PromotionMemoryStore, record_id: str, *, visible: Visible, now: datetime | None = None
) -> CandidateReview | None:
    """One learning for a person to decide on; ``None`` when there is no such learning
    (no record, no target) or it lies outside ``visible``."""
    moment = now or utc_now()
    promotion = store.promotion(record_id)
    if promotion is None or promotion.record is None or not visible(promotion.record.scope):
        return None
    record = promotion.record
    history = store.promotion_history(record_id)
    contexts = Contexts(store)
    context = contexts.of(record, history)
    gated = last_gate_run(history)
    effect = _effect(record, promotion, context, contexts, visible) if context is not None else None
    pin = Pin(revision=promotion.revision, state=promotion.state)
    if effect is not None:
        pin = pin.model_copy(update=effect.context.pin(effect.current).model_dump(exclude_none=True))
    return CandidateReview(
        promotion=promotion,
        record=record,
        history=history,
        evidence=evidence_of(record, history),
        gates=gates_of(gated),
        decided=next((t for t in reversed(history) if t.by == "person"), None),
        context=context,
        effect=effect,
        conflict=_conflict(store, record, gated, effect, context, visible),
        pin=pin,
        seen_at=moment,
    )


def _effect(
    record: MemoryRecord, promotion: Promotion, context: Context, contexts: Contexts, visible: Visible
) -> Effect:
    current = contexts.composed(context).overlay
    others = [r for r in current.records if r.id != record.id]
    if record.id in current.applied_ids or promotion.state == "promoted":
        before, after = apply_memory_overlay(context.composition, others), current
    else:
        before, after = current, apply_memory_overlay(context.composition, [*others, record])
    primitive = record.target.primitive if record.target is not None else None
    dropped = next((d for d in after.dropped if d.record_id == record.id), None)
    spilled = next((s for s in after.spilled if s.record_id == record.id), None)
    outcome: Outcome
    if dropped is not None:
        outcome, detail = "dropped", dropped.detail
    elif spilled is not None:
        outcome = "spilled"
        detail = (
            f"over the {spilled.primitive} budget: it would stay in recall"
            if spilled.reason == "budget"
            else "over the composition's ceiling: it would stay in recall"
        )
    elif record.id in after.applied_ids:
        outcome, detail = "applied", f"enters {section_of(record)}"
    else:
        outcome, detail = "unchanged", "the prompt does not change"
    return Effect(
        context=context,
        before=before,
        after=after,
        changes=changes_between(before, after, visible),
        outcome=outcome,
        detail=detail,
        size_before=before.sizes.get(primitive) if primitive else None,
        size_after=after.sizes.get(primitive) if primitive else None,
        current=current,
    )


def _conflict(
    store: PromotionMemoryStore,
    record: MemoryRecord,
    gated: Transition | None,
    effect: Effect | None,
    context: Context | None,
    visible: Visible,
) -> Conflict | None:
    """What ``record`` conflicts with: the gate chain's reconciliation (a likely
    contradiction or restatement, or an auto-tier slot another learning holds), else the
    overlay's own verdict (an authored entry or an older learning that keeps the slot)."""
    mine = record.content
    found = gated.evidence.get("reconciliation") if gated is not None else None
    if isinstance(found, dict) and found.get("passed") is False:
        against = found.get("against")
        section = found.get("section")
        detail = str(found.get("detail") or "")
        kind = str(found.get("kind") or "holds the slot")
        if against == "authored":
            theirs = _authored_item(context, section, found.get("index"))
            return Conflict(kind, detail, str(section) if section else None, mine, theirs)
        if isinstance(against, str):
            return _against(store, against, kind, detail, section_of(record), mine, visible)
    if effect is not None:
        dropped = next((d for d in effect.after.dropped if d.record_id == record.id), None)
        if dropped is not None and dropped.reason != "unfit":
            if dropped.winner_id is None:
                return Conflict("authored entry", dropped.detail, dropped.section, mine, dropped.winner_text)
            return _against(store, dropped.winner_id, "older learning", dropped.detail, dropped.section, mine, visible)
    return None


def _against(
    store: PromotionMemoryStore,
    other_id: str,
    kind: str,
    detail: str,
    section: str | None,
    mine: str,
    visible: Visible,
) -> Conflict:
    other = store.promotion(other_id)
    if other is not None and (other.record is None or not visible(other.record.scope)):
        other = None
    theirs = other.record.content if other is not None and other.record is not None else None
    return Conflict(kind, detail, section, mine, theirs, other_id=other_id, other=other)


def _authored_item(context: Context | None, section: object, index: object) -> str | None:
    """The authored judgment item at ``section`` (``judgment.<domain>.<slot>``) and ``index``."""
    if context is None or not isinstance(section, str) or not isinstance(index, int):
        return None
    parts = section.split(".")
    if len(parts) < 3 or parts[0] != "judgment":
        return None
    judgment = context.composition.judgment(".".join(parts[1:-1]))
    slot = parts[-1]
    if judgment is None or slot not in ("heuristics", "constraints", "escalation_triggers"):
        return None
    items = judgment.slot(slot)  # type: ignore[arg-type]
    return items[index] if 0 <= index < len(items) else None


# --- refused decisions: what moved -------------------------------------------------------------


@dataclass(frozen=True)
class Moved:
    """What changed between the page a person decided on and the store now."""

    seen: Pin
    promotion: Promotion | None
    """The learning now (``None``: it is gone, or outside the reader's grants)."""
    since: list[Transition]
    """Its transitions after the revision the page showed."""
    changes: list[SectionChange]
    """How the composition's prompt changed since the page was rendered (empty when it
    did not, or when the page showed no composition)."""


def what_moved(
    store: PromotionMemoryStore,
    record_id: str,
    seen: Pin,
    seen_at: datetime | None,
    *,
    visible: Visible,
) -> Moved:
    """The difference a refused decision shows: the learning's moves since ``seen`` (its
    revision) and the prompt then (a replay at ``seen_at``) against the prompt now."""
    promotion = store.promotion(record_id)
    if promotion is not None and (promotion.record is None or not visible(promotion.record.scope)):
        promotion = None
    since: list[Transition] = []
    if promotion is not None and seen.revision is not None:
        since = [t for t in store.promotion_history(record_id) if t.revision > seen.revision]
    changes: list[SectionChange] = []
    if seen.composition_version and seen.scope is not None and seen_at is not None and seen.overlay_version:
        version = seen.composition_version
        then = compose(store, seen.scope, version, as_of=seen_at, register=False, emit=False)
        now = compose(store, seen.scope, version, register=False, emit=False)
        if then.version != now.version:
            changes = changes_between(then.overlay, now.overlay, visible)
    return Moved(seen=seen, promotion=promotion, since=since, changes=changes)


# --- compositions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScopeCompositions:
    """The compositions one scope has registered, newest first (the first runs now)."""

    scope: Scope
    registrations: list[RegisteredComposition]

    @property
    def current(self) -> RegisteredComposition:
        return self.registrations[0]


def registered(store: PromotionMemoryStore, scope: Mapping[str, str], *, visible: Visible) -> list[ScopeCompositions]:
    """Every scope under ``scope`` that registered a composition, with its versions."""
    grouped: dict[str, ScopeCompositions] = {}
    for registration in store.compositions(scope):
        if not visible(registration.scope):
            continue
        key = scope_json(registration.scope)
        if key not in grouped:
            grouped[key] = ScopeCompositions(registration.scope, [])
        grouped[key].registrations.append(registration)
    return sorted(grouped.values(), key=lambda group: scope_json(group.scope))


@dataclass(frozen=True)
class CompositionView:
    """A composition for one scope as the agent receives it (now, or replayed at ``as_of``):
    every line attributed, the overlay's report and the lint report."""

    scope: Scope
    composed: Composed
    registration: RegisteredComposition | None
    """The registration whose composition this is (``None`` for a version asked for that
    the scope did not run at the time)."""
    history: list[RegisteredComposition]
    """Every version registered for exactly this scope, newest first."""
    lines: list[Line]
    records: dict[str, MemoryRecord]
    """The applied, spilled and dropped records the reader may see, by id."""
    lint: LintReport
    recall_window: timedelta | None
    """How far back the lint counted recalls (``None``: the store keeps no event log)."""

    @property
    def overlay(self) -> Overlay:
        return self.composed.overlay

    @property
    def hidden(self) -> int:
        return sum(1 for line in self.lines if line.hidden)


def composition_view(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    *,
    visible: Visible,
    version: str | None = None,
    as_of: datetime | None = None,
    now: datetime | None = None,
) -> CompositionView:
    """The composition ``scope`` runs (or ran at ``as_of``; or ``version``, registered),
    composed without registering anything or emitting an event."""
    moment = now or utc_now()
    canonical = canonical_scope(scope)
    history = store.compositions(canonical, exact=True)
    composed = compose(store, canonical, version, as_of=as_of, register=False, emit=False)
    overlay = composed.overlay
    then = [r for r in history if as_of is None or r.registered_at <= as_of]
    registration = next((r for r in then if r.version == overlay.composition_version), None)
    allowed_set = allowed_ids(overlay, visible)
    allowed = {r.id: r for r in overlay.records if r.id in allowed_set}
    counts, window = None, None
    if isinstance(store, EventLogStore) and store.capabilities().events:
        window = RECALL_WINDOW
        counts = recall_counts(store, canonical, list(overlay.applied_ids), since=(as_of or moment) - window)
    authored = store.composition(overlay.composition_version)
    assert authored is not None  # compose() has just read it
    lint = lint_composition(authored, overlay, recall_counts=counts, now=as_of or moment)
    return CompositionView(
        scope=canonical,
        composed=composed,
        registration=registration,
        history=history,
        lines=marked(composed.prompt.lines, allowed_set),
        records=allowed,
        lint=lint,
        recall_window=window,
    )


@dataclass(frozen=True)
class Moment:
    """One side of a comparison: a time (``None``: now) and a registered composition
    version (``None``: the one the scope ran at that time)."""

    as_of: datetime | None = None
    version: str | None = None


@dataclass(frozen=True)
class CompositionDiff:
    before: Composed
    after: Composed
    changes: list[SectionChange]


def composition_diff(
    store: PromotionMemoryStore, scope: Mapping[str, str], before: Moment, after: Moment, *, visible: Visible
) -> CompositionDiff:
    """The prompt of ``scope``'s composition at ``before`` against ``after``."""
    canonical = canonical_scope(scope)
    old = compose(store, canonical, before.version, as_of=before.as_of, register=False, emit=False)
    new = compose(store, canonical, after.version, as_of=after.as_of, register=False, emit=False)
    return CompositionDiff(old, new, changes_between(old.overlay, new.overlay, visible))


# --- what it learned over time -------------------------------------------------------------------

LEARNED_STATES: tuple[PromotionState, ...] = ("promoted", "demoted")


@dataclass(frozen=True)
class Learned:
    """One promotion or demotion, with its record when the reader may see it."""

    transition: Transition
    record: MemoryRecord | None

    @property
    def section(self) -> str | None:
        return section_of(self.record) if self.record is not None else None


@dataclass
class LearnedBucket:
    start: datetime | None = None
    label: str = ""
    promoted: int = 0
    demoted: int = 0


@dataclass(frozen=True)
class LearningTimeline:
    bucket: str
    buckets: list[LearnedBucket]
    totals: LearnedBucket
    rows: list[Learned]
    """The newest page of the table."""
    next_cursor: str | None
    complete: bool
    """False when the chart stopped at :data:`MAX_TIMELINE` transitions."""
    read: int
    note: str | None = None

    @property
    def bucket_label(self) -> str:
        return BUCKET_LABELS[self.bucket]

    @property
    def active_buckets(self) -> list[LearnedBucket]:
        return [b for b in reversed(self.buckets) if b.promoted or b.demoted]

    def chart_data(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket_label,
            "labels": [b.label for b in self.buckets],
            "promoted": [b.promoted for b in self.buckets],
            "demoted": [b.demoted for b in self.buckets],
        }


def transitions_of(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    *,
    agent: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Iterator[tuple[list[Transition], str | None]]:
    """Pages of promotions and demotions under ``scope``, newest first, with the cursor of
    the page after each."""
    read = 0
    while limit is None or read < limit:
        size = TRANSITION_PAGE if limit is None else min(TRANSITION_PAGE, limit - read)
        page = store.transitions(
            scope, since=since, until=until, states=list(LEARNED_STATES), agent=agent, cursor=cursor, limit=size
        )
        read += len(page.transitions)
        yield page.transitions, page.next_cursor
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def with_records(
    store: PromotionMemoryStore, scope: Mapping[str, str], transitions: Sequence[Transition], visible: Visible
) -> list[Learned]:
    """``transitions`` with their records (one read), a record outside ``visible`` left out."""
    ids = sorted({t.record_id for t in transitions})
    records: dict[str, MemoryRecord] = {}
    for start in range(0, len(ids), 1000):
        chunk = ids[start : start + 1000]
        page = store.promotions(scope, record_ids=tuple(chunk), include_invalidated=True, limit=len(chunk))
        records.update({p.record_id: p.record for p in page.promotions if p.record is not None})
    keep = _visible_to(visible)
    return [Learned(t, records[t.record_id] if keep(records.get(t.record_id)) else None) for t in transitions]


def learning_timeline(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    *,
    visible: Visible,
    agent: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    bucket: str | None = None,
    cursor: str | None = None,
    table_size: int = 25,
) -> LearningTimeline:
    """Promotions and demotions under ``scope`` in time buckets (at most
    :data:`MAX_TIMELINE` read, newest first: their moments only) and a page of the table
    from ``cursor``."""
    moments = store.transition_moments(
        scope, since=since, until=until, states=list(LEARNED_STATES), agent=agent, limit=MAX_TIMELINE
    )
    complete = len(moments) < MAX_TIMELINE
    kept = [(at, state) for at, state in moments if state in LEARNED_STATES]
    totals = LearnedBucket(label="all")
    chosen, note, buckets = bucket or "day", None, []
    if kept or (since is not None and until is not None):
        span = bucket_range(since or min(at for at, _ in kept), until or max(at for at, _ in kept), bucket)
        chosen, note = span.name, span.note
        buckets = [LearnedBucket(start, label(start, span.name)) for start in span.starts()]
        for at, state in kept:
            index = span.index(at)
            if index is not None:
                for target in (buckets[index], totals):
                    if state == "promoted":
                        target.promoted += 1
                    else:
                        target.demoted += 1
    table, next_cursor = next(
        iter(transitions_of(store, scope, agent=agent, since=since, until=until, cursor=cursor, limit=table_size))
    )
    return LearningTimeline(
        bucket=chosen,
        buckets=buckets,
        totals=totals,
        rows=with_records(store, scope, table, visible),
        next_cursor=next_cursor,
        complete=complete,
        read=len(moments),
        note=note,
    )


def learned_rows(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    *,
    visible: Visible,
    agent: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Iterator[Learned]:
    """Every promotion and demotion under ``scope``, newest first, page by page (an export)."""
    for page, _after in transitions_of(store, scope, agent=agent, since=since, until=until):
        yield from with_records(store, scope, page, visible)


# --- gardening proposals --------------------------------------------------------------------------


@dataclass(frozen=True)
class ProposalView:
    proposal: Proposal
    record: MemoryRecord | None
    other: MemoryRecord | None
    """The record a merge would fold into (``None`` for other kinds, or outside the grants)."""


def pending_proposals(
    store: PromotionMemoryStore, scope: Mapping[str, str], *, visible: Visible, limit: int = 50
) -> list[ProposalView]:
    """The gardening proposals under ``scope`` waiting for a person, newest first."""
    page = store.proposals(scope, limit=limit)
    keep = _visible_to(visible)
    views = []
    for proposal in page.proposals:
        record = store.get(proposal.record_id)
        if not keep(record):
            continue
        other = store.get(proposal.other_id) if proposal.other_id else None
        views.append(ProposalView(proposal, record, other if keep(other) else None))
    return views


__all__ = [
    "INBOX_ORDER",
    "PRIMITIVES",
    "PROMOTION_STATES",
    "STATE_WORDS",
    "TIERS",
    "CandidateReview",
    "CompositionDiff",
    "CompositionView",
    "Conflict",
    "Context",
    "Contexts",
    "Effect",
    "Evidence",
    "Fit",
    "Gate",
    "Inbox",
    "InboxItem",
    "Learned",
    "LearningTimeline",
    "Line",
    "Moment",
    "Moved",
    "ProposalView",
    "ScopeCompositions",
    "SectionChange",
    "changes_between",
    "composition_diff",
    "composition_view",
    "evidence_of",
    "gates_of",
    "learned_rows",
    "learning_timeline",
    "pending_proposals",
    "registered",
    "review_candidate",
    "review_inbox",
    "what_moved",
]
