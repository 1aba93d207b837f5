"""The gardening pass on every backend: it proposes (near-duplicate merges, stale
current-state facts, earned learnings whose eval fails) and changes nothing until a
person accepts; never-recalled counts come from the event log."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from memory_admin.composition import AgentComposition
from memory_admin.conformance import FakeClock
from memory_admin.errors import MemoryConflictError
from memory_admin.learning import compose, garden, promote_candidates
from memory_admin.learning.garden import accept, reject
from memory_admin.recall import assemble_recall
from memory_admin.store import BaseMemoryStore
from tests.learning.helpers import DANA, candidate
from tests.support.compositions import background, judgment


def test_garden_proposes_and_changes_nothing_until_a_person_accepts(
    learning_store: BaseMemoryStore, composition: AgentComposition, clock: FakeClock
) -> None:
    store = learning_store
    status = store.write([candidate("The billing migration is half done.", background("current_state", "migration"))])[
        0
    ]
    clock.advance(days=45)
    older, newer = store.write(
        [
            candidate("Ask for the workspace id before anything else.", judgment("triage"), conversation="c1"),
            candidate("Ask for the workspace id before anything else!", judgment("triage"), conversation="c2"),
        ]
    )
    before = {r.id: store.get(r.id) for r in (status, older, newer)}
    report = garden(store, DANA, composition, now=clock.peek())
    kinds = sorted((p.kind, p.record_id, p.other_id) for p in report.proposed)
    assert kinds == [("invalidate", status.id, None), ("merge", newer.id, older.id)]
    assert {r.id: store.get(r.id) for r in (status, older, newer)} == before, "a pass only proposes"
    assert garden(store, DANA, composition, now=clock.peek()).proposed == [], "it does not propose twice"
    merge = next(p for p in report.proposed if p.kind == "merge")
    stale = next(p for p in report.proposed if p.kind == "invalidate")
    accept(store, merge.id, actor="lena")
    merged = store.get(newer.id)
    assert merged is not None and merged.invalid_at is not None and older.id in (merged.invalid_reason or "")
    assert [p.conversation_id for p in store.get(older.id).supports] == ["c2"]  # type: ignore[union-attr]
    reject(store, stale.id, actor="lena", reason="still true")
    assert store.get(status.id).is_valid  # type: ignore[union-attr]
    with pytest.raises(MemoryConflictError):
        accept(store, stale.id, actor="mei")
    assert garden(store, DANA, composition, now=clock.peek()).pending == []


class Suite:
    def __init__(self, bad: str) -> None:
        self.bad = bad

    def __call__(self, composition: AgentComposition) -> Mapping[str, float]:
        return {"resolved": -sum(h == self.bad for j in composition.judgments for h in j.heuristics)}


def test_an_earned_learning_whose_eval_now_fails_is_proposed_for_demotion(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    harmful = "Close tickets after one reply."
    [record] = store.write([candidate(harmful, judgment("triage"))])
    store.corroborate(record.id, {"conversation_id": "c2"})
    promote_candidates(store, DANA, composition)
    report = garden(store, DANA, composition, eval_gate=Suite(bad=harmful))
    [proposal] = report.proposed
    assert (proposal.kind, proposal.record_id) == ("demote", record.id)
    assert store.promotion(record.id).state == "promoted"  # type: ignore[union-attr]
    accept(store, proposal.id, actor="lena", reason="it closes tickets too early")
    demoted = store.promotion(record.id)
    assert demoted is not None and (demoted.state, demoted.last.actor) == ("demoted", "lena")
    assert compose(store, DANA, composition).overlay.applied_ids == ()


def test_never_recalled_counts_come_from_the_event_log(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    asked, ignored = store.write(
        [
            candidate("Deploys need a second reviewer.", background("conventions", "reviews")),
            candidate("The office plants are watered on Mondays.", background("team_context", "plants")),
        ]
    )
    for record in (asked, ignored):
        store.promote(record.id, actor="lena", tier="auto")
    store.search({"scope": DANA, "query": "deploys reviewer"})
    assemble_recall(store, DANA, "who reviews deploys?", include_promoted=True)
    report = garden(store, DANA, composition)
    assert report.lint.never_recalled is not None
    assert [n.record_id for n in report.lint.never_recalled] == [ignored.id]
    assert "Never recalled (1)" in report.text()
