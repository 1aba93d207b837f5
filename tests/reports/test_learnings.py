"""What the learnings pages compute, without Django, on the embedded backends: the inbox
(counts, filters, keyset pages, evidence, gates, fit, pins), one learning's effect and
conflict, the difference a refused decision shows, a composition now and then (and
compared), what was learnt over time, and the proposals — each confined to a reader's
grants, a learned line from outside them a placeholder."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from memory_admin.composition import AgentComposition, Budgets
from memory_admin.conformance import FakeClock
from memory_admin.learning import compose, garden, promote_candidates
from memory_admin.learning.review import approve, reject, rollback
from memory_admin.promotion import Pin
from memory_admin.reports.learnings import (
    Moment,
    Visible,
    composition_diff,
    composition_view,
    learned_rows,
    learning_timeline,
    pending_proposals,
    registered,
    review_candidate,
    review_inbox,
    what_moved,
)
from memory_admin.scope import is_subset_match
from memory_admin.store import BaseMemoryStore
from tests.learning.helpers import ACME, DANA, MEI, candidate
from tests.support.compositions import background, example_composition, judgment

GUARDED = judgment("triage", "constraints")
HEURISTIC = judgment("triage", "heuristics")


def everything(scope: Mapping[str, str]) -> bool:
    return True


def only(grant: Mapping[str, str]) -> Visible:
    return lambda scope: is_subset_match(scope, grant)


@pytest.fixture
def composition() -> AgentComposition:
    return example_composition()


@pytest.fixture
def learnt(store: BaseMemoryStore, composition: AgentComposition, clock: FakeClock) -> dict[str, str]:
    """Dana's agent after one gate run: a guarded rule pending review, a heuristic seen in
    two conversations (promoted), one seen once (held), a convention promoted (auto), a
    rule that contradicts an authored one (conflict); and Mei's pending rule."""
    store.register_composition(composition, DANA)
    store.register_composition(composition, MEI)
    rule, seen_twice, seen_once, convention, contradicts = store.write(
        [
            candidate("Never share another customer's ticket.", GUARDED),
            candidate("Ask which browser before reproducing a page bug.", HEURISTIC, conversation="c1"),
            candidate("Ask for the invoice number before anything else.", HEURISTIC, conversation="c7"),
            candidate("Deploys need a second reviewer.", background("conventions", "reviews")),
            candidate("Always promise a fix date.", GUARDED),
        ]
    )
    store.corroborate(seen_twice.id, {"source": "agent-toolbox", "conversation_id": "c2"})
    [theirs] = store.write([candidate("Never paste a password into a ticket.", GUARDED, scope=MEI)])
    clock.advance(minutes=5)
    promote_candidates(store, DANA, composition)
    promote_candidates(store, MEI, composition)
    return {
        "rule": rule.id,
        "seen_twice": seen_twice.id,
        "seen_once": seen_once.id,
        "convention": convention.id,
        "contradicts": contradicts.id,
        "mei": theirs.id,
    }


def test_the_inbox_counts_every_state_and_pages_newest_first(store: BaseMemoryStore, learnt: dict[str, str]) -> None:
    inbox = review_inbox(store, ACME, visible=everything)
    assert inbox.counts["pending_review"] == 2 and inbox.counts["promoted"] == 2
    assert (inbox.counts["held"], inbox.counts["conflict"], inbox.total) == (1, 1, 6)
    assert [state for state, _words, _n in inbox.ordered_counts][:2] == ["pending_review", "conflict"]
    assert len(inbox.items) == 6
    waiting = review_inbox(store, ACME, visible=everything, states=["pending_review"])
    assert {item.record.id for item in waiting.items} == {learnt["rule"], learnt["mei"]}
    assert waiting.counts == inbox.counts, "the counts are the whole listing's, whatever state is shown"
    first = review_inbox(store, ACME, visible=everything, limit=4)
    rest = review_inbox(store, ACME, visible=everything, limit=4, cursor=first.next_cursor)
    assert len(first.items) == 4 and len(rest.items) == 2 and rest.next_cursor is None
    assert {i.record.id for i in first.items}.isdisjoint({i.record.id for i in rest.items})
    background_only = review_inbox(store, ACME, visible=everything, primitives=["background"])
    assert [i.record.id for i in background_only.items] == [learnt["convention"]]
    assert background_only.total == 1
    guarded = review_inbox(store, ACME, visible=everything, tiers=["guarded"])
    assert {i.record.id for i in guarded.items} == {learnt["rule"], learnt["contradicts"], learnt["mei"]}


def test_an_inbox_item_carries_its_evidence_gates_fit_and_pin(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition
) -> None:
    items = {i.record.id: i for i in review_inbox(store, DANA, visible=everything).items}
    twice = items[learnt["seen_twice"]]
    assert twice.evidence.conversations == ("conversation:c1", "conversation:c2")
    assert twice.evidence.proposed_by.conversation_id == "c1" and len(twice.evidence.supports) == 1
    recurrence = next(g for g in twice.gates if g.gate == "recurrence")
    assert recurrence.passed is True and recurrence.evidence == {"seen": 2, "needed": 2}
    held = items[learnt["seen_once"]]
    assert held.state == "held" and next(g for g in held.gates if g.gate == "recurrence").passed is False
    rule = items[learnt["rule"]]
    assert rule.tier == "guarded" and rule.can_approve and rule.can_reject
    assert rule.fit is not None and rule.fit.section == "judgment.triage.constraints" and rule.fit.fits
    assert rule.fit.chars == len("- Never share another customer's ticket.")
    assert rule.fit.size is not None and rule.fit.size.budget == 3000
    now = compose(store, DANA, composition, emit=False)
    assert rule.pin.model_dump(exclude_none=True) == {
        "revision": rule.promotion.revision,
        "state": "pending_review",
        "overlay_version": now.version,
        "composition_version": composition.version,
        "scope": DANA,
    }
    assert not items[learnt["convention"]].can_approve, "promoted already"


def test_the_inbox_shows_only_the_readers_grants(store: BaseMemoryStore, learnt: dict[str, str]) -> None:
    mine = review_inbox(store, ACME, visible=only(MEI))
    assert [i.record.id for i in mine.items] == [learnt["mei"]]


def test_a_pending_learnings_effect_is_the_section_it_adds_to(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition
) -> None:
    review = review_candidate(store, learnt["rule"], visible=everything)
    assert review is not None and review.effect is not None and review.conflict is None
    effect = review.effect
    assert effect.outcome == "applied" and effect.context.scope == DANA
    [change] = effect.changes
    assert change.section == "judgment.triage.constraints"
    assert [line.text for line in change.added] == ["- Never share another customer's ticket."]
    assert [line.line.record_ids for line in change.added] == [(learnt["rule"],)]
    assert [line.text for line in change.before] == ["- Never promise a fix date; promise the next update's time."]
    assert effect.size_before is not None and effect.size_after is not None
    assert effect.size_after.chars - effect.size_before.chars == len(change.added[0].text)
    assert effect.current.version == compose(store, DANA, composition, emit=False).version == review.pin.overlay_version
    assert [g.gate for g in review.gates] == ["tier", "reconciliation", "approval"]
    assert review.can_approve and review.can_edit and not review.can_roll_back


def test_a_promoted_learnings_effect_is_what_it_added(store: BaseMemoryStore, learnt: dict[str, str]) -> None:
    review = review_candidate(store, learnt["convention"], visible=everything)
    assert review is not None and review.effect is not None and review.state == "promoted"
    assert review.effect.after is review.effect.current
    [change] = review.effect.changes
    assert [line.text for line in change.added] == ["- Deploys need a second reviewer."]
    assert review.can_roll_back and not review.can_approve


def test_a_learning_over_its_budget_would_spill(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition
) -> None:
    tight = AgentComposition.model_validate({**composition.model_dump(), "budgets": Budgets(judgment=200)})
    store.register_composition(tight, DANA)
    review = review_candidate(store, learnt["rule"], visible=everything)
    assert review is not None and review.effect is not None
    assert review.effect.outcome == "spilled" and "judgment budget" in review.effect.detail
    [change] = review.effect.changes
    assert [line.line.kind for line in change.added] == ["marker"]


def test_a_conflict_with_an_authored_rule_shows_both(store: BaseMemoryStore, learnt: dict[str, str]) -> None:
    review = review_candidate(store, learnt["contradicts"], visible=everything)
    assert review is not None and review.state == "conflict" and review.conflict is not None
    conflict = review.conflict
    assert conflict.authored and not conflict.pickable and conflict.kind == "contradicts"
    assert conflict.mine == "Always promise a fix date."
    assert conflict.theirs == "Never promise a fix date; promise the next update's time."


def test_a_conflict_between_two_learnings_can_be_picked(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition
) -> None:
    [newer] = store.write([candidate("Deploys need two reviewers.", background("conventions", "reviews"))])
    promote_candidates(store, DANA, composition)
    review = review_candidate(store, newer.id, visible=everything)
    assert review is not None and review.state == "conflict" and review.conflict is not None
    assert review.conflict.other_id == learnt["convention"] and review.conflict.pickable
    assert review.conflict.theirs == "Deploys need a second reviewer."
    hidden = review_candidate(store, newer.id, visible=lambda scope: scope.get("user") == "dana")
    assert hidden is not None and hidden.conflict is not None and hidden.conflict.pickable


def test_a_learning_outside_the_grants_is_not_there(store: BaseMemoryStore, learnt: dict[str, str]) -> None:
    assert review_candidate(store, learnt["mei"], visible=only(DANA)) is None
    assert review_candidate(store, "mem_unknown", visible=everything) is None


def test_a_learned_line_from_outside_the_grants_is_a_placeholder(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition
) -> None:
    [shared] = store.write(
        [candidate("The office is closed on Fridays.", background("team_context", "office"), scope=ACME)]
    )
    promote_candidates(store, ACME, composition)
    assert store.promotion(shared.id).state == "promoted"  # type: ignore[union-attr]
    view = composition_view(store, DANA, visible=only(DANA))
    [line] = [line for line in view.lines if line.line.record_ids == (shared.id,)]
    assert line.hidden and "Fridays" not in line.text and view.hidden == 1
    assert shared.id not in view.records
    full = composition_view(store, DANA, visible=everything)
    assert [line.text for line in full.lines if line.line.record_ids == (shared.id,)] == [
        "- The office is closed on Fridays."
    ]


def test_a_refused_decision_shows_what_moved(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition, clock: FakeClock
) -> None:
    page = review_candidate(store, learnt["rule"], visible=everything, now=clock.peek())
    assert page is not None
    clock.advance(minutes=1)
    approve(store, learnt["rule"], composition, actor="mei")
    moved = what_moved(store, learnt["rule"], page.pin, page.seen_at, visible=everything)
    assert moved.promotion is not None and moved.promotion.state == "promoted"
    assert [(t.state, t.actor) for t in moved.since] == [("promoted", "mei")]
    [change] = moved.changes
    assert [line.text for line in change.added] == ["- Never share another customer's ticket."]
    unpinned = what_moved(store, learnt["rule"], Pin(revision=page.pin.revision), None, visible=everything)
    assert unpinned.changes == [] and len(unpinned.since) == 1


def test_a_composition_now_then_and_compared(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition, clock: FakeClock
) -> None:
    before = clock.advance(minutes=1)
    clock.advance(minutes=1)
    approve(store, learnt["rule"], composition, actor="lena")
    now = composition_view(store, DANA, visible=everything)
    assert now.registration is not None and now.registration.version == composition.version
    learned = [line for line in now.lines if line.learned]
    assert {line.line.record_ids[0] for line in learned} == {learnt["rule"], learnt["seen_twice"], learnt["convention"]}
    assert now.lint.sizes and now.recall_window is not None
    then = composition_view(store, DANA, visible=everything, as_of=before)
    assert learnt["rule"] not in then.overlay.applied_ids and learnt["convention"] in then.overlay.applied_ids
    compared = composition_diff(store, DANA, Moment(as_of=before), Moment(), visible=everything)
    [change] = compared.changes
    assert change.section == "judgment.triage.constraints"
    assert [line.line.record_ids for line in change.added] == [(learnt["rule"],)]
    assert composition_diff(store, DANA, Moment(), Moment(), visible=everything).changes == []
    [group] = [g for g in registered(store, ACME, visible=everything) if g.scope == DANA]
    assert group.current.version == composition.version
    assert [g.scope for g in registered(store, ACME, visible=only(MEI))] == [MEI]


def test_what_it_learnt_over_time(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition, clock: FakeClock
) -> None:
    clock.advance(days=2)
    approve(store, learnt["rule"], composition, actor="lena")
    rollback(store, learnt["convention"], actor="lena", reason="reviews are optional on staging")
    reject(store, learnt["seen_once"], actor="lena", reason="not a rule")
    timeline = learning_timeline(store, ACME, visible=everything)
    assert (timeline.totals.promoted, timeline.totals.demoted) == (3, 1), "rejections are not learnt"
    assert timeline.bucket == "hour" and timeline.complete
    assert sum(b.promoted for b in timeline.buckets) == 3
    newest = timeline.rows[0]
    assert (newest.transition.state, newest.transition.cause, newest.transition.actor) == (
        "demoted",
        "rollback",
        "lena",
    )
    assert newest.record is not None and newest.section == "background.conventions"
    paged = learning_timeline(store, ACME, visible=everything, table_size=2)
    assert len(paged.rows) == 2 and paged.next_cursor is not None
    more = learning_timeline(store, ACME, visible=everything, table_size=2, cursor=paged.next_cursor)
    assert [r.transition.record_id for r in more.rows] == [r.transition.record_id for r in timeline.rows[2:4]]
    assert [r.record for r in learning_timeline(store, ACME, visible=only(MEI)).rows] == [None] * 4
    assert len(list(learned_rows(store, ACME, visible=everything))) == 4
    chart = timeline.chart_data()
    assert sum(chart["promoted"]) == 3 and len(chart["labels"]) == len(timeline.buckets)


def test_pending_proposals_within_the_grants(
    store: BaseMemoryStore, learnt: dict[str, str], composition: AgentComposition, clock: FakeClock
) -> None:
    store.write([candidate("Ask which browser before reproducing the page bug.", HEURISTIC, conversation="c9")])
    clock.advance(minutes=1)
    garden(store, DANA, composition)
    [merge] = pending_proposals(store, ACME, visible=everything)
    assert merge.proposal.kind == "merge" and merge.other is not None
    assert merge.other.id == learnt["seen_twice"]
    assert pending_proposals(store, ACME, visible=only(MEI)) == []


def test_two_learnings_of_a_page_for_one_slot_each_fit_on_their_own(
    store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store.register_composition(composition, DANA)
    first, second = store.write(
        [
            candidate("Deploys need a second reviewer.", background("conventions", "reviews")),
            candidate("Deploys need two reviewers.", background("conventions", "reviews")),
        ]
    )
    items = {i.record.id: i for i in review_inbox(store, DANA, visible=everything).items}
    for record in (first, second):
        fit = items[record.id].fit
        assert fit is not None and fit.refused is None and fit.chars == len("- " + record.content)
        assert fit.section == "background.conventions" and fit.fits
