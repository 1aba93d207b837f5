"""The gate chain: which candidates become part of their agent, and what holds the rest.

:func:`promote_candidates` runs every candidate under a scope (and those held or in
conflict before) through the gates of its tier, exactly as seed 001's table says
(:mod:`memory_admin.composition.tiers` holds the table):

- **locked** (the identity, a judgment domain the composition lacks, the manual) — refused
  with the reason (``rejected`` by the gate; write the learning again once the
  composition has room for it);
- a structured target (``example``, ``awareness``) without its payload — ``held``, with why;
- **auto** (``background``, ``awareness``) — reconciled against the learned entries already
  promoted for the same slot, then ``promoted``;
- **earned** (``judgment.heuristics``, ``example``) — **recurrence** (supports from at least
  ``recurrence`` distinct conversations, the record's own provenance counted) or a
  passing **eval gate** (the host's suite run on the composition before and after, no
  metric lower after: non-regression; both scores kept), then reconciliation, then
  ``promoted``; otherwise ``held`` with each gate's result;
- **guarded** (``judgment.constraints``, ``escalation_triggers``, ``recovery``) —
  reconciliation, then ``pending_review``: only a person approves it
  (:mod:`memory_admin.learning.review`), never a gate and never an agent's tool.

**Reconciliation** before a judgment promotion compares the candidate with the domain's
authored items and the learnings promoted into it. It is search-grade, not semantic
proof: two items sharing most of their words (stemmed, stop words aside) conflict when
one is negated and the other not (a likely contradiction) or when they say the same
(a restatement). A conflict holds the candidate in ``conflict`` with its two
resolutions: the agent supersedes one record with a corrected one (the chain keeps both)
and the chain runs again, or a person picks the survivor.

Every decision of a run is applied in one transaction, each pinned to the revision the
run read: a candidate another run or a person moved meanwhile is reported ``moved`` and
left alone, so two promoters racing promote once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from memory_admin.composition import (
    JUDGMENT_SLOTS,
    AgentComposition,
    Overlay,
    Tier,
    apply_memory_overlay,
    payload_missing,
    refusal,
    tier_of,
)
from memory_admin.errors import MemoryValidationError
from memory_admin.promotion import (
    GATE_STATES,
    PROMOTION_STATES,
    Decision,
    DecisionOutcome,
    Pin,
    Promotion,
    PromotionState,
)
from memory_admin.records import (
    AwarenessTarget,
    BackgroundTarget,
    JudgmentTarget,
    MemoryRecord,
    utc_now,
)
from memory_admin.scope import Scope, ScopeMatch, canonical_scope, read_view
from memory_admin.store.protocol import MemoryNeeds, PromotionMemoryStore, require_memory
from memory_admin.tokenize import unique_tokens

GATE_ACTOR = "gate"
DEFAULT_RECURRENCE = 2
MAX_CANDIDATES = 10_000
"""Candidates one run reads at most (oldest first); a larger backlog takes more runs."""

EvalScores = Mapping[str, float]
EvalGate = Callable[[AgentComposition], float | EvalScores]
"""A host's evaluation suite: run on a composition, it returns a score, or scores by
metric (higher is better)."""

Outcome = Literal["promoted", "held", "pending_review", "conflict", "rejected", "unchanged", "moved", "refused"]
GateName = Literal["tier", "payload", "recurrence", "eval", "reconciliation", "approval"]


@dataclass(frozen=True)
class PromotionPolicy:
    """How :func:`promote_candidates` runs the chain (the earned tier's bar, the eval
    gate) and which candidates it reads."""

    recurrence: int = DEFAULT_RECURRENCE
    """Distinct conversations an earned candidate must have been seen in."""
    eval_gate: EvalGate | None = None
    """The host's suite; ``None``: recurrence alone decides the earned tier."""
    require_eval: bool = False
    """The eval gate must pass as well as recurrence (not instead of it)."""
    tolerance: float = 0.0
    """How much lower a metric may score after the promotion and still count as no regression."""
    agent: str | None = None
    """The agent whose candidates run (the agent convention), and whose composition it is."""
    scope_match: ScopeMatch = "visible"
    """``visible``: the scope's own candidates and those shared above it (what it
    composes from); ``subset``: every candidate under the scope."""
    actor: str = GATE_ACTOR

    def __post_init__(self) -> None:
        if isinstance(self.recurrence, bool) or not isinstance(self.recurrence, int) or self.recurrence < 1:
            raise MemoryValidationError(
                "recurrence is a count of conversations, at least 1.", [{"loc": "recurrence", "msg": "at least 1"}]
            )
        if self.tolerance < 0:
            raise MemoryValidationError("tolerance is not negative.", [{"loc": "tolerance", "msg": "negative"}])


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GateResult(_Frozen):
    """One gate's verdict on one candidate."""

    gate: GateName
    passed: bool | None
    """``None``: the gate did not decide (it waits for a person, or did not run)."""
    detail: str
    evidence: dict[str, JsonValue] = Field(default_factory=dict)


class CandidateOutcome(_Frozen):
    record_id: str
    target: dict[str, JsonValue]
    tier: Tier
    gates: list[GateResult]
    state: PromotionState
    """Where the chain sent it (or where it stayed)."""
    outcome: Outcome
    """``unchanged``: the chain said what it said before; ``moved``: another run or a
    person decided on it meanwhile, so this run left it alone; ``refused``: the store
    would not apply the move (the reason says why)."""
    reason: str


class PromotionReport(_Frozen):
    """What one run of the chain did, candidate by candidate."""

    scope: Scope
    agent: str | None
    composition_version: str
    overlay_before: str
    overlay_after: str
    dry_run: bool
    candidates: list[CandidateOutcome]

    @property
    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for candidate in self.candidates:
            found[candidate.outcome] = found.get(candidate.outcome, 0) + 1
        return found

    def text(self) -> str:
        """The report for a terminal: one line per candidate, then the counts."""
        mode = " (dry run: nothing applied)" if self.dry_run else ""
        lines = [f"Gate chain over {len(self.candidates)} candidates{mode}:"]
        for c in self.candidates:
            gates = ", ".join(f"{g.gate} {'ok' if g.passed else 'no' if g.passed is False else '…'}" for g in c.gates)
            lines.append(f"  {c.record_id} [{c.tier}] {c.outcome}: {c.reason} ({gates})")
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.counts.items())) or "nothing to do"
        lines.append(f"Overlay {self.overlay_before[:12]} → {self.overlay_after[:12]}; {counts}.")
        return "\n".join(lines)


# --- the gates -------------------------------------------------------------------------------


def conversations(record: MemoryRecord) -> set[str]:
    """The distinct conversations (or runs) that saw ``record``: its provenance and supports."""
    found = set()
    for sighting in (record.provenance, *record.supports):
        if sighting.conversation_id:
            found.add(f"conversation:{sighting.conversation_id}")
        elif sighting.run_id:
            found.add(f"run:{sighting.run_id}")
    return found


def recurrence_gate(record: MemoryRecord, needed: int) -> GateResult:
    seen = len(conversations(record))
    passed = seen >= needed
    return GateResult(
        gate="recurrence",
        passed=passed,
        detail=f"seen in {seen} of the {needed} distinct conversations needed",
        evidence={"seen": seen, "needed": needed},
    )


def _scores(value: float | EvalScores) -> dict[str, float]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"score": float(value)}
    if isinstance(value, Mapping) and value and all(isinstance(v, int | float) for v in value.values()):
        return {str(k): float(v) for k, v in value.items()}
    raise MemoryValidationError(
        "An eval gate returns a number or a mapping of metric to number.", [{"loc": "eval_gate", "msg": "bad result"}]
    )


@dataclass
class Evaluator:
    """A host's eval gate, scoring each overlay once."""

    gate: EvalGate
    tolerance: float
    cache: dict[str, dict[str, float]] = field(default_factory=dict)

    def score(self, overlay: Overlay) -> dict[str, float]:
        if overlay.version not in self.cache:
            self.cache[overlay.version] = _scores(self.gate(overlay.composition))
        return self.cache[overlay.version]

    def verdict(self, before: Overlay, after: Overlay) -> GateResult:
        old, new = self.score(before), self.score(after)
        worse = sorted(m for m in old if new.get(m, float("-inf")) < old[m] - self.tolerance)
        detail = "no metric regressed" if not worse else f"regressed: {', '.join(worse)}"
        evidence: dict[str, JsonValue] = {
            "before": dict(old),
            "after": dict(new),
            "overlay_before": before.version,
            "overlay_after": after.version,
        }
        return GateResult(gate="eval", passed=not worse, detail=detail, evidence=evidence)


# --- reconciliation (search-grade) ----------------------------------------------------------

NEGATIONS = frozenset({"not", "never", "no", "dont", "don", "avoid", "without", "stop", "nor", "cannot", "cant"})
STOP_WORDS = frozenset(
    {"a", "an", "the", "and", "or", "to", "of", "in", "on", "for", "with", "is", "are", "be", "it", "that", "this"}
)
OVERLAP = 0.6
"""Shared words (of the shorter item's) above which two items are about the same thing."""
RESTATES = 0.9


def content_words(text: str) -> tuple[frozenset[str], bool]:
    """A text's stemmed words without negations and stop words, and whether it is negated."""
    tokens = set(unique_tokens(text.replace("'", "")))
    negated = bool(tokens & NEGATIONS)
    return frozenset(tokens - NEGATIONS - STOP_WORDS), negated


@dataclass(frozen=True)
class ReconcileFinding:
    kind: Literal["contradicts", "restates"]
    against: str
    """``authored`` or the id of a promoted record."""
    section: str
    overlap: float
    index: int | None = None
    """An authored item's position in its slot."""


Words = Callable[[str], tuple[frozenset[str], bool]]


def run_words() -> Words:
    """:func:`content_words` remembered for one run (a domain's items meet every candidate
    of it); nothing outlives the run."""
    seen: dict[str, tuple[frozenset[str], bool]] = {}

    def words(text: str) -> tuple[frozenset[str], bool]:
        found = seen.get(text)
        if found is None:
            found = seen[text] = content_words(text)
        return found

    return words


def reconcile(
    record: MemoryRecord,
    composition: AgentComposition,
    promoted: Sequence[MemoryRecord],
    words: Words = content_words,
) -> ReconcileFinding | None:
    """A likely contradiction or restatement between a judgment candidate and its
    domain's authored items or promoted learnings; ``None`` when none is found."""
    target = record.target
    if not isinstance(target, JudgmentTarget):
        return None
    judgment = composition.judgment(target.domain)
    mine, negated = words(record.content)
    if not mine or judgment is None:
        return None
    items: list[tuple[str, str, str, int | None]] = []
    for slot in JUDGMENT_SLOTS:
        for position, text in enumerate(judgment.slot(slot)):
            items.append(("authored", f"judgment.{target.domain}.{slot}", text, position))
    for other in promoted:
        if isinstance(other.target, JudgmentTarget) and other.target.domain == target.domain and other.id != record.id:
            items.append((other.id, f"judgment.{target.domain}.{other.target.slot}", other.content, None))
    best: ReconcileFinding | None = None
    for against, section, text, index in items:
        theirs, their_negation = words(text)
        if not theirs:
            continue
        overlap = len(mine & theirs) / min(len(mine), len(theirs))
        if overlap < OVERLAP:
            continue
        if negated != their_negation:
            kind: Literal["contradicts", "restates"] = "contradicts"
        elif overlap >= RESTATES:
            kind = "restates"
        else:
            continue
        finding = ReconcileFinding(kind, against, section, round(overlap, 3), index)
        if best is None or (kind, overlap) > (best.kind, best.overlap):
            best = finding
    return best


class Slots:
    """The auto-tier slots promoted learnings hold: background ``(section, key)`` and
    awareness names, each with its holder."""

    def __init__(self, promoted: Sequence[MemoryRecord] = ()) -> None:
        self._held: dict[tuple[str, ...], MemoryRecord] = {}
        for record in promoted:
            self.add(record)

    @staticmethod
    def _slot(record: MemoryRecord) -> tuple[str, ...] | None:
        target = record.target
        if isinstance(target, BackgroundTarget):
            return ("background", target.section, target.key)
        if isinstance(target, AwarenessTarget):
            name = (record.payload or {}).get("name")
            return ("awareness", str(name)) if name is not None else None
        return None

    def add(self, record: MemoryRecord) -> None:
        slot = self._slot(record)
        if slot is not None:
            self._held.setdefault(slot, record)

    def holder(self, record: MemoryRecord) -> MemoryRecord | None:
        """The promoted learning holding the slot ``record`` aims at (not ``record`` itself)."""
        slot = self._slot(record)
        found = self._held.get(slot) if slot is not None else None
        return found if found is not None and found.id != record.id else None


# --- the chain ---------------------------------------------------------------------------------


@dataclass
class _Verdict:
    state: PromotionState
    reason: str
    gates: list[GateResult]
    evidence: dict[str, JsonValue] = field(default_factory=dict)
    overlay_version: str | None = None


def _conflict(finding: ReconcileFinding, gates: list[GateResult]) -> _Verdict:
    against = "an authored item" if finding.against == "authored" else f"learning {finding.against}"
    detail = f"likely {'contradicts' if finding.kind == 'contradicts' else 'restates'} {against} in {finding.section}"
    evidence: dict[str, JsonValue] = {
        "kind": finding.kind,
        "against": finding.against,
        "section": finding.section,
        "overlap": finding.overlap,
    }
    if finding.index is not None:
        evidence["index"] = finding.index
    gates.append(GateResult(gate="reconciliation", passed=False, detail=detail, evidence=evidence))
    resolution = (
        "supersede this record with a corrected one, or have a person pick the survivor"
        if finding.against != "authored"
        else "supersede this record with one that does not restate or contradict the authored item"
    )
    return _Verdict("conflict", f"{detail}: {resolution}", gates)


def judge(
    record: MemoryRecord,
    composition: AgentComposition,
    promoted: Sequence[MemoryRecord],
    policy: PromotionPolicy,
    evaluator: Evaluator | None,
    before: Overlay,
    slots: Slots | None = None,
    words: Words = content_words,
) -> tuple[Tier, _Verdict]:
    """One candidate through its tier's gates, against the learnings promoted so far."""
    assert record.target is not None
    tier = tier_of(record.target, composition)
    gates = [GateResult(gate="tier", passed=tier is not Tier.LOCKED, detail=f"{tier.value} tier")]
    refused = refusal(record.target, composition) if tier is Tier.LOCKED else None
    if tier is Tier.LOCKED:
        why = refused or f"{record.target.primitive} is authored only"
        return tier, _Verdict("rejected", f"locked: {why}", gates)
    missing = payload_missing(record)
    if missing is not None:
        gates.append(GateResult(gate="payload", passed=False, detail=missing))
        return tier, _Verdict("held", missing, gates)
    if tier is Tier.AUTO:
        holder = (slots or Slots(promoted)).holder(record)
        if holder is not None:
            detail = f"learning {holder.id} holds the same slot"
            gates.append(
                GateResult(gate="reconciliation", passed=False, detail=detail, evidence={"against": holder.id})
            )
            return tier, _Verdict(
                "conflict", f"{detail}: supersede one with the other, or have a person pick the survivor", gates
            )
        gates.append(GateResult(gate="reconciliation", passed=True, detail="no learned entry holds the slot"))
        return tier, _Verdict("promoted", "auto tier: written and reconciled", gates)
    finding = reconcile(record, composition, promoted, words)
    if tier is Tier.GUARDED:
        if finding is not None:
            return tier, _conflict(finding, gates)
        gates.append(GateResult(gate="reconciliation", passed=True, detail="no likely conflict in the domain"))
        gates.append(GateResult(gate="approval", passed=None, detail="waits for a person's approval"))
        return tier, _Verdict("pending_review", "guarded tier: a person approves it", gates)
    # the earned tier
    recurrence = recurrence_gate(record, policy.recurrence)
    gates.append(recurrence)
    evaluated: GateResult | None = None
    after: Overlay | None = None
    if evaluator is not None and (policy.require_eval or not recurrence.passed):
        after = apply_memory_overlay(composition, [*promoted, record])
        evaluated = evaluator.verdict(before, after)
        gates.append(evaluated)
    earned = (recurrence.passed or bool(evaluated and evaluated.passed)) and (
        not policy.require_eval or bool(evaluated and evaluated.passed)
    )
    if not earned:
        waiting = [g.detail for g in gates if g.passed is False]
        return tier, _Verdict("held", "earned tier not met yet: " + "; ".join(waiting), gates)
    if finding is not None:
        return tier, _conflict(finding, gates)
    gates.append(GateResult(gate="reconciliation", passed=True, detail="no likely conflict in the domain"))
    how = "recurrence" if recurrence.passed else "the eval gate"
    return tier, _Verdict("promoted", f"earned tier: passed {how}", gates)


def _evidence(gates: Sequence[GateResult]) -> dict[str, JsonValue]:
    return {g.gate: {"passed": g.passed, "detail": g.detail, **g.evidence} for g in gates}


def _candidates(store: PromotionMemoryStore, view: Scope, policy: PromotionPolicy) -> list[Promotion]:
    """Every candidate the chain evaluates, oldest first: never decided, held, in conflict."""
    found: list[Promotion] = []
    cursor: str | None = None
    page_size = min(1000, store.capabilities().max_limit)
    while len(found) < MAX_CANDIDATES:
        page = store.promotions(
            view,
            states=[state for state in PROMOTION_STATES if state in GATE_STATES],
            scope_match=policy.scope_match,
            agent=policy.agent,
            limit=page_size,
            cursor=cursor,
        )
        found.extend(page.promotions)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    found.sort(key=lambda p: (p.record.created_at, p.record_id) if p.record else (p.at, p.record_id))
    return found[:MAX_CANDIDATES]


def promote_candidates(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    composition: AgentComposition,
    policy: PromotionPolicy | None = None,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PromotionReport:
    """Run the gate chain over the candidates of ``scope`` against ``composition`` (see
    the module docstring); returns, for every candidate, its tier, each gate's result and
    the outcome. ``dry_run`` decides and reports without applying anything.

    The run reads the promotions once, decides every candidate (each against the
    learnings promoted before it, this run's included) and applies the decisions in one
    transaction; each transition records the overlay the run started from, and an eval
    gate's evidence the exact overlays it compared."""
    require_memory(store, MemoryNeeds(promotion=True))
    policy = policy or PromotionPolicy()
    moment = now or utc_now()
    canonical = canonical_scope(scope)
    view = read_view(canonical, policy.agent, policy.scope_match)
    if not dry_run:
        store.register_composition(composition, canonical)
    promoted = list(store.promoted_records(view, agent=policy.agent))
    start = current = store.overlay(composition, promoted)
    slots = Slots(promoted)
    words = run_words()
    stale = False
    evaluator = Evaluator(policy.eval_gate, policy.tolerance) if policy.eval_gate is not None else None
    outcomes: list[CandidateOutcome] = []
    decisions: list[Decision] = []
    for candidate in _candidates(store, view, policy):
        record = candidate.record
        if record is None or record.target is None or not record.is_live(moment):
            continue
        if evaluator is not None and stale:
            current, stale = apply_memory_overlay(composition, promoted), False
        tier, verdict = judge(record, composition, promoted, policy, evaluator, current, slots, words)
        evidence = _evidence(verdict.gates)
        unchanged = (
            verdict.state == candidate.state
            and candidate.last.evidence == evidence
            and candidate.last.reason == verdict.reason
        )
        outcomes.append(
            CandidateOutcome(
                record_id=record.id,
                target=record.target.model_dump(mode="json"),
                tier=tier,
                gates=verdict.gates,
                state=verdict.state,
                outcome="unchanged" if unchanged else verdict.state,
                reason=verdict.reason,
            )
        )
        if unchanged:
            continue
        decisions.append(
            Decision(
                record_id=record.id,
                state=verdict.state,
                by="gate",
                actor=policy.actor,
                reason=verdict.reason,
                tier=tier.value,
                evidence=evidence,
                overlay_version=start.version,
                composition_version=composition.version,
                pin=Pin(revision=candidate.revision),
                within=canonical if policy.scope_match == "subset" else None,
            )
        )
        if verdict.state == "promoted":
            promoted.append(record)
            slots.add(record)
            stale = True
    if decisions and not dry_run:
        applied = {o.record_id: o for o in store.decide(decisions)}
        outcomes = [_settled(o, applied.get(o.record_id)) for o in outcomes]
        # what the run promoted is read back, not assumed: a candidate may have moved meanwhile
        after = store.overlay(composition, store.promoted_records(view, agent=policy.agent))
    else:
        after = apply_memory_overlay(composition, promoted) if stale else current
    return PromotionReport(
        scope=canonical,
        agent=policy.agent,
        composition_version=composition.version,
        overlay_before=start.version,
        overlay_after=after.version,
        dry_run=dry_run,
        candidates=outcomes,
    )


def _settled(outcome: CandidateOutcome, applied: DecisionOutcome | None) -> CandidateOutcome:
    if applied is None or applied.applied:
        return outcome
    kind: Outcome = "moved" if applied.refused == "moved" else "refused"
    return outcome.model_copy(update={"outcome": kind, "reason": applied.message or outcome.reason})


__all__ = [
    "DEFAULT_RECURRENCE",
    "CandidateOutcome",
    "EvalGate",
    "GateResult",
    "PromotionPolicy",
    "PromotionReport",
    "conversations",
    "judge",
    "promote_candidates",
    "reconcile",
    "recurrence_gate",
]
