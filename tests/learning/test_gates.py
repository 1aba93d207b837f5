"""The gate chain on every backend: each tier's gates, reconciliation, the eval gate,
dry runs, idempotent re-runs and two promoters racing."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import pytest

from memory_admin.composition import AgentComposition
from memory_admin.conformance import FakeClock
from memory_admin.errors import MemoryValidationError
from memory_admin.learning import PromotionPolicy, promote_candidates
from memory_admin.store import BaseMemoryStore
from tests.learning.helpers import ACME, DANA, candidate
from tests.support.compositions import AWARENESS, RECOVERY, background, example, judgment


def states(store: BaseMemoryStore, *ids: str) -> list[str]:
    found = [store.promotion(record_id) for record_id in ids]
    return [p.state if p is not None else "none" for p in found]


def test_each_tier_takes_its_own_gates(learning_store: BaseMemoryStore, composition: AgentComposition) -> None:
    store = learning_store
    written = store.write(
        [
            candidate("Deploys to production need a second reviewer.", background("conventions", "reviews")),
            candidate(
                "The invoice archive has every invoice since 2019.",
                AWARENESS,
                payload={"name": "invoice archive", "description": "Every invoice", "access_method": "finance portal"},
            ),
            candidate("Ask for the workspace id before anything else.", judgment("triage")),
            candidate("Never share another customer's ticket.", judgment("triage", "constraints")),
            candidate("When the API returns 429, wait a minute and retry once.", RECOVERY),
            candidate("Check the shipping tracker first.", judgment("shipping")),
            candidate("File refunds under the new form.", {"primitive": "manual", "capability": "refunds"}),
            candidate("A customer asked about a missing invoice.", example("billing")),
        ]
    )
    report = promote_candidates(store, DANA, composition)
    by_id = {c.record_id: c for c in report.candidates}
    expected = [
        ("auto", "promoted"),
        ("auto", "promoted"),
        ("earned", "held"),
        ("guarded", "pending_review"),
        ("guarded", "pending_review"),
        ("locked", "rejected"),
        ("locked", "rejected"),
        ("earned", "held"),
    ]
    assert [(by_id[r.id].tier.value, by_id[r.id].outcome) for r in written] == expected
    assert states(store, *(r.id for r in written)) == [state for _, state in expected]
    shipping, manual, no_payload = by_id[written[5].id], by_id[written[6].id], by_id[written[7].id]
    assert "no judgment domain 'shipping'" in shipping.reason and "never create domains" in shipping.reason
    assert "authored only" in manual.reason
    assert "payload" in no_payload.reason and no_payload.gates[-1].gate == "payload"
    held = by_id[written[2].id]
    assert [(g.gate, g.passed) for g in held.gates] == [("tier", True), ("recurrence", False)]
    assert held.gates[-1].evidence == {"seen": 1, "needed": 2}
    history = store.promotion_history(written[2].id)
    assert history[-1].evidence["recurrence"] == {
        "passed": False,
        "detail": held.gates[-1].detail,
        "seen": 1,
        "needed": 2,
    }
    assert (
        history[-1].overlay_version == report.overlay_before and history[-1].composition_version == composition.version
    )
    assert report.overlay_after != report.overlay_before
    assert store.compositions(DANA, exact=True)[0].version == composition.version, "the run registered its composition"


def test_recurrence_promotes_once_a_second_conversation_corroborates(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    [record] = store.write([candidate("Ask for the workspace id before anything else.", judgment("triage"))])
    assert promote_candidates(store, DANA, composition).candidates[0].outcome == "held"
    assert promote_candidates(store, DANA, composition).candidates[0].outcome == "unchanged"
    assert len(store.promotion_history(record.id)) == 2, "a run that concludes the same writes nothing"
    store.corroborate(record.id, {"source": "agent-toolbox", "conversation_id": "c1"})  # the same conversation
    assert promote_candidates(store, DANA, composition).candidates[0].outcome == "unchanged"
    store.corroborate(record.id, {"source": "agent-toolbox", "conversation_id": "c2"})
    outcome = promote_candidates(store, DANA, composition).candidates[0]
    assert outcome.outcome == "promoted" and "recurrence" in outcome.reason
    assert [r.id for r in store.promoted_records(DANA)] == [record.id]
    assert promote_candidates(store, DANA, composition).candidates == [], "a promoted record is no candidate"
    threshold = PromotionPolicy(recurrence=3)
    [other] = store.write([candidate("Confirm the plan tier.", judgment("billing"), conversation="c7")])
    store.corroborate(other.id, {"conversation_id": "c8"})
    assert promote_candidates(store, DANA, composition, threshold).candidates[0].outcome == "held"


class Suite:
    """A host's eval suite: scores a composition by the heuristics it holds (a stand-in
    for running the agent on its eval cases), counting the calls."""

    def __init__(self, good: set[str], bad: set[str]) -> None:
        self.good, self.bad, self.calls = good, bad, 0

    def __call__(self, composition: AgentComposition) -> Mapping[str, float]:
        self.calls += 1
        texts = {h for j in composition.judgments for h in j.heuristics}
        return {"resolved": len(texts & self.good) - len(texts & self.bad), "safety": 1.0}


def test_the_eval_gate_promotes_without_recurrence_and_keeps_its_scores(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    helpful, harmful = "Ask for the workspace id before anything else.", "Close tickets after one reply."
    written = store.write([candidate(helpful, judgment("triage")), candidate(harmful, judgment("triage"))])
    suite = Suite(good={helpful}, bad={harmful})
    report = promote_candidates(store, DANA, composition, PromotionPolicy(eval_gate=suite))
    good, bad = report.candidates
    assert (good.outcome, bad.outcome) == ("promoted", "held")
    verdict = next(g for g in good.gates if g.gate == "eval")
    assert verdict.passed and verdict.evidence["before"] == {"resolved": 0.0, "safety": 1.0}
    assert verdict.evidence["after"] == {"resolved": 1.0, "safety": 1.0}
    regressed = next(g for g in bad.gates if g.gate == "eval")
    assert regressed.passed is False and regressed.detail == "regressed: resolved"
    kept = store.promotion_history(written[0].id)[-1].evidence["eval"]
    assert isinstance(kept, dict) and kept["after"] == {"resolved": 1.0, "safety": 1.0}
    assert suite.calls == 3, "the overlay before is scored once, each candidate's after once"


def test_an_eval_gate_required_as_well_holds_a_recurring_regression(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    harmful = "Close tickets after one reply."
    [record] = store.write([candidate(harmful, judgment("triage"))])
    store.corroborate(record.id, {"conversation_id": "c2"})
    policy = PromotionPolicy(eval_gate=Suite(good=set(), bad={harmful}), require_eval=True)
    assert promote_candidates(store, DANA, composition, policy).candidates[0].outcome == "held"
    assert promote_candidates(store, DANA, composition).candidates[0].outcome == "promoted"


def test_reconciliation_turns_a_likely_contradiction_into_a_conflict(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    # the composition says: "Never promise a fix date; promise the next update's time."
    contradicting = candidate("Promise a fix date and the next update's time.", judgment("triage", "constraints"))
    restating = candidate(
        "Check status.acme.dev before opening an incident: most P1 reports are a known outage!", judgment("triage")
    )
    unrelated = candidate("Greet the customer by name.", judgment("triage"))
    written = store.write([contradicting, restating, unrelated])
    for record in written[1:]:
        store.corroborate(record.id, {"conversation_id": "c2"})
    report = promote_candidates(store, DANA, composition)
    outcomes = [c.outcome for c in report.candidates]
    assert outcomes == ["conflict", "conflict", "promoted"]
    first = next(g for g in report.candidates[0].gates if g.gate == "reconciliation")
    assert first.evidence["kind"] == "contradicts" and first.evidence["against"] == "authored"
    assert first.evidence["section"] == "judgment.triage.constraints" and first.evidence["index"] == 0
    assert next(g for g in report.candidates[1].gates if g.gate == "reconciliation").evidence["kind"] == "restates"
    # a learning contradicting a promoted one: the agent supersedes, and the chain runs clean
    [late] = store.write([candidate("Never greet the customer by name.", judgment("triage"), conversation="c3")])
    store.corroborate(late.id, {"conversation_id": "c4"})
    clash = promote_candidates(store, DANA, composition).candidates
    late_outcome = next(c for c in clash if c.record_id == late.id)
    assert late_outcome.outcome == "conflict" and written[2].id in late_outcome.reason
    [fixed] = store.write(
        [candidate("Use the customer's name once they have signed a message.", judgment("triage"), supersedes=late.id)]
    )
    store.corroborate(fixed.id, {"conversation_id": "c5"})
    rerun = {c.record_id: c.outcome for c in promote_candidates(store, DANA, composition).candidates}
    assert rerun == {written[0].id: "unchanged", written[1].id: "unchanged", fixed.id: "promoted"}, "runs clean"


def test_an_auto_learning_for_a_held_slot_is_a_conflict(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    store.write([candidate("Deploys need a second reviewer.", background("conventions", "reviews"))])
    first = promote_candidates(store, DANA, composition)
    [later] = store.write([candidate("Deploys need two reviewers.", background("conventions", "reviews"))])
    second = promote_candidates(store, DANA, composition)
    assert first.candidates[0].outcome == "promoted"
    assert [(c.record_id, c.outcome) for c in second.candidates] == [(later.id, "conflict")]


def test_a_dry_run_decides_and_changes_nothing(learning_store: BaseMemoryStore, composition: AgentComposition) -> None:
    store = learning_store
    written = store.write(
        [
            candidate("Deploys need a second reviewer.", background("conventions", "reviews")),
            candidate("Never share another customer's ticket.", judgment("triage", "constraints")),
        ]
    )
    report = promote_candidates(store, DANA, composition, dry_run=True)
    assert report.dry_run and [c.outcome for c in report.candidates] == ["promoted", "pending_review"]
    assert states(store, *(r.id for r in written)) == ["candidate", "candidate"]
    assert store.compositions(DANA) == [], "a dry run registers nothing either"
    assert "dry run" in report.text()


def test_a_guarded_learning_is_never_promoted_by_the_chain(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    [record] = store.write([candidate("Never share another customer's ticket.", judgment("triage", "constraints"))])
    for n in range(2, 6):
        store.corroborate(record.id, {"conversation_id": f"c{n}"})
    suite = Suite(good={"Never share another customer's ticket."}, bad=set())
    for _ in range(2):
        report = promote_candidates(store, DANA, composition, PromotionPolicy(eval_gate=suite))
        assert [c.state for c in report.candidates] in (["pending_review"], [])
    assert states(store, record.id) == ["pending_review"]


def test_only_the_scope_s_candidates_run(learning_store: BaseMemoryStore, composition: AgentComposition) -> None:
    store = learning_store
    mei = {"tenant": "acme", "user": "mei"}
    shared, mine, theirs = store.write(
        [
            candidate("Staging resets nightly.", background("project_context", "staging"), scope=ACME),
            candidate("Dana's team deploys on Tuesdays.", background("team_context", "deploy_day")),
            candidate("Mei's team deploys on Fridays.", background("team_context", "deploy_day"), scope=mei),
        ]
    )
    report = promote_candidates(store, DANA, composition)
    assert {c.record_id for c in report.candidates} == {shared.id, mine.id}, "shared and mine, never a sibling's"
    assert states(store, theirs.id) == ["candidate"]


def test_two_promoters_racing_promote_once(
    learning_store: BaseMemoryStore, composition: AgentComposition, clock: FakeClock
) -> None:
    store = learning_store
    store.write([candidate(f"Convention {n} holds.", background("conventions", f"c{n}")) for n in range(20)])
    reports = []
    start = threading.Barrier(2)

    def run() -> None:
        start.wait()
        reports.append(promote_candidates(store, DANA, composition))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    promoted = [c.record_id for report in reports for c in report.candidates if c.outcome == "promoted"]
    assert len(promoted) == len(set(promoted)) == 20, "each candidate promoted by exactly one run"
    for record in store.promoted_records(DANA):
        assert [t.state for t in store.promotion_history(record.id)] == ["candidate", "promoted"]


def test_a_bad_policy_is_a_typed_error() -> None:
    with pytest.raises(MemoryValidationError):
        PromotionPolicy(recurrence=0)
    with pytest.raises(MemoryValidationError):
        PromotionPolicy(tolerance=-1)
