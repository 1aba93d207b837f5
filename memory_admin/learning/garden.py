"""The gardening pass: it proposes, a person disposes. No automatic rewriting.

:func:`garden` looks over the learnings a scope sees — candidates and promoted records —
and stores **proposals** (:meth:`~memory_admin.store.protocol.PromotionMemoryStore.propose`)
for a person to accept or reject:

- **merge** near-duplicates: two live learnings aimed at the same target whose words are
  nearly the same (search-grade, as reconciliation is); the newer would merge into the
  older (its sightings joining the older's supports);
- **invalidate** stale facts: ``background.current_state`` learnings stated longer ago
  than ``stale_after``;
- **demote** earned learnings whose eval no longer passes: with the host's eval gate, a
  promoted heuristic or example whose composition scores lower with it than without it.

It also reports the composition's health (:func:`~memory_admin.composition.lint_composition`)
with the never-recalled section counted from the event log: how often each learning
surfaced in a recall block or a search result within ``window``.

:func:`accept` and :func:`reject` settle a proposal for a person; accepting acts on it
through the store's ordinary operations (invalidate, corroborate, demote), each logged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from memory_admin.composition import AgentComposition, LintReport, apply_memory_overlay, lint_composition
from memory_admin.events import EventQuery, MemoryRecallEvent, MemorySearchEvent
from memory_admin.learning.gates import EvalGate, Evaluator, content_words
from memory_admin.promotion import Proposal, ProposalInput
from memory_admin.records import BackgroundTarget, ExampleTarget, JudgmentTarget, MemoryRecord, utc_now
from memory_admin.scope import TENANT_KEY, Scope, canonical_scope, read_view
from memory_admin.store.protocol import EventLogStore, MemoryNeeds, PromotionMemoryStore, require_memory

DUPLICATE = 0.9
"""Shared words (of the shorter learning's) above which two learnings repeat each other."""
STALE_AFTER = timedelta(days=30)
RECALL_WINDOW = timedelta(days=30)
MAX_EVENTS = 50_000
"""Events the never-recalled count reads at most (newest first)."""


class GardenReport(BaseModel):
    """What one gardening pass proposed, and the composition's health."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: Scope
    proposed: list[Proposal]
    """The proposals this pass stored (those made before are not repeated)."""
    pending: list[Proposal]
    """Every proposal still waiting for a person under the scope."""
    lint: LintReport

    def text(self) -> str:
        lines = [f"Gardening proposed {len(self.proposed)}; {len(self.pending)} wait for a person:"]
        for p in self.pending:
            other = f" into {p.other_id}" if p.other_id else ""
            lines.append(f"  #{p.id} {p.kind} {p.record_id}{other}: {p.reason}")
        lines.append(self.lint.text())
        return "\n".join(lines)


def recall_counts(
    store: EventLogStore, scope: Mapping[str, str], record_ids: Sequence[str], *, since: datetime
) -> dict[str, int]:
    """How often each of ``record_ids`` surfaced — in a recall block or a search's results —
    in the events of ``scope``'s tenant since ``since`` (at most :data:`MAX_EVENTS` read)."""
    wanted = set(record_ids)
    counts: Counter[str] = Counter({record_id: 0 for record_id in wanted})
    tenant = {TENANT_KEY: canonical_scope(scope)[TENANT_KEY]}
    before: int | None = None
    read = 0
    while read < MAX_EVENTS:
        page = store.query_events(
            EventQuery(
                types=("agent.memory.recall", "agent.memory.search"),
                since=since,
                scope=tenant,
                before_id=before,
                limit=10_000,
            )
        )
        for stored in page:
            event = stored.event
            if isinstance(event, MemoryRecallEvent | MemorySearchEvent):
                counts.update(i for i in event.record_ids if i in wanted)
        read += len(page)
        if len(page) < 10_000:
            break
        before = page[-1].id
    return dict(counts)


def _learnings(store: PromotionMemoryStore, view: Scope, agent: str | None) -> list[MemoryRecord]:
    """The live learnings the scope sees: candidates and promoted records, oldest first."""
    found: list[MemoryRecord] = []
    cursor: str | None = None
    while True:
        page = store.promotions(
            view,
            states=["candidate", "held", "conflict", "pending_review", "promoted"],
            scope_match="visible",
            agent=agent,
            limit=min(1000, store.capabilities().max_limit),
            cursor=cursor,
        )
        found.extend(p.record for p in page.promotions if p.record is not None)
        if page.next_cursor is None or len(found) >= 10_000:
            break
        cursor = page.next_cursor
    return sorted(found, key=lambda r: (r.created_at, r.id))


def duplicates(learnings: Sequence[MemoryRecord]) -> list[ProposalInput]:
    """Merge proposals for learnings that repeat an older one aimed at the same target."""
    proposals = []
    kept: list[tuple[MemoryRecord, frozenset[str], bool]] = []
    for record in learnings:
        words, negated = content_words(record.content)
        twin = next(
            (
                older
                for older, theirs, their_negation in kept
                if older.target == record.target
                and negated == their_negation
                and words
                and theirs
                and len(words & theirs) / min(len(words), len(theirs)) >= DUPLICATE
            ),
            None,
        )
        if twin is None:
            kept.append((record, words, negated))
            continue
        proposals.append(
            ProposalInput(
                kind="merge",
                record_id=record.id,
                other_id=twin.id,
                reason=f"repeats {twin.id} (the same target, nearly the same words); merge it into the older one",
                evidence={"into": twin.id},
            )
        )
    return proposals


def stale(learnings: Sequence[MemoryRecord], now: datetime, after: timedelta) -> list[ProposalInput]:
    """Invalidation proposals for ``current_state`` facts stated longer ago than ``after``."""
    return [
        ProposalInput(
            kind="invalidate",
            record_id=record.id,
            reason=f"a current-state fact stated {(now - record.observed_at).days} days ago; refresh it or retire it",
            evidence={"stated": record.observed_at.isoformat(), "days": (now - record.observed_at).days},
        )
        for record in learnings
        if isinstance(record.target, BackgroundTarget)
        and record.target.section == "current_state"
        and now - record.observed_at > after
    ]


def failing_evals(
    promoted: Sequence[MemoryRecord], composition: AgentComposition, gate: EvalGate, tolerance: float = 0.0
) -> list[ProposalInput]:
    """Demotion proposals for earned learnings the eval no longer backs: the composition
    with the learning scores lower than without it."""
    evaluator = Evaluator(gate, tolerance)
    proposals = []
    for record in promoted:
        if not isinstance(record.target, JudgmentTarget | ExampleTarget):
            continue
        if isinstance(record.target, JudgmentTarget) and record.target.slot != "heuristics":
            continue
        without = apply_memory_overlay(composition, [r for r in promoted if r.id != record.id])
        with_it = apply_memory_overlay(composition, promoted)
        verdict = evaluator.verdict(without, with_it)
        if not verdict.passed:
            proposals.append(
                ProposalInput(
                    kind="demote",
                    record_id=record.id,
                    reason=f"its eval no longer passes ({verdict.detail}); demote it",
                    evidence={"eval": verdict.evidence},
                )
            )
    return proposals


def garden(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    composition: AgentComposition,
    *,
    agent: str | None = None,
    eval_gate: EvalGate | None = None,
    stale_after: timedelta = STALE_AFTER,
    window: timedelta = RECALL_WINDOW,
    now: datetime | None = None,
) -> GardenReport:
    """One gardening pass over what ``scope`` (and ``agent``) sees: proposals stored for a
    person, and the lint report (see the module docstring). Nothing is rewritten."""
    require_memory(store, MemoryNeeds(promotion=True))
    moment = now or utc_now()
    canonical = canonical_scope(scope)
    view = read_view(canonical, agent)
    learnings = _learnings(store, view, agent)
    promoted = store.promoted_records(view, agent=agent)
    wanted = [*duplicates(learnings), *stale(learnings, moment, stale_after)]
    if eval_gate is not None:
        wanted += failing_evals(promoted, composition, eval_gate)
    proposed = store.propose(wanted) if wanted else []
    overlay = apply_memory_overlay(composition, promoted)
    counts = None
    if isinstance(store, EventLogStore) and store.capabilities().events:
        counts = recall_counts(store, canonical, [r.id for r in learnings], since=moment - window)
    lint = lint_composition(composition, overlay, recall_counts=counts, now=moment, stale_after=stale_after)
    pending = store.proposals(view, scope_match="visible", agent=agent).proposals
    return GardenReport(scope=canonical, proposed=proposed, pending=pending, lint=lint)


def accept(store: PromotionMemoryStore, proposal_id: int, *, actor: str, reason: str | None = None) -> Proposal:
    """A person accepts a proposal, and it is carried out: a merge corroborates the older
    learning with the newer one's sightings and invalidates the newer; an invalidation
    invalidates (a promoted record is demoted with it); a demotion demotes. Settled
    first, so two people accepting at once act once."""
    settled = store.settle_proposal(proposal_id, accepted=True, actor=actor, reason=reason)
    why = reason or settled.reason
    if settled.kind == "merge" and settled.other_id is not None:
        record = store.get(settled.record_id)
        if record is not None:
            for sighting in (record.provenance, *record.supports):
                store.corroborate(settled.other_id, sighting)
        store.invalidate(settled.record_id, f"merged into {settled.other_id} by {actor}: {why}")
    elif settled.kind in ("invalidate", "merge"):
        store.invalidate(settled.record_id, f"{why} (accepted by {actor})")
    else:
        found = store.promotion(settled.record_id)
        if found is not None and found.state == "promoted":
            store.demote(settled.record_id, actor=actor, reason=why)
    return settled


def reject(store: PromotionMemoryStore, proposal_id: int, *, actor: str, reason: str) -> Proposal:
    """A person rejects a proposal: nothing changes, and it is not proposed again."""
    return store.settle_proposal(proposal_id, accepted=False, actor=actor, reason=reason)


__all__ = [
    "GardenReport",
    "accept",
    "duplicates",
    "failing_evals",
    "garden",
    "recall_counts",
    "reject",
    "stale",
]
