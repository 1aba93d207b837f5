"""A person's decisions on every backend: approve (the only way in for a guarded learning),
reject, roll back, edit then approve, pick a conflict's survivor — each refused when what
it was pinned to moved, or when the record lies outside the person's scope."""

from __future__ import annotations

import pytest

from memory_admin.composition import AgentComposition
from memory_admin.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from memory_admin.learning import compose, promote_candidates
from memory_admin.learning.review import approve, edit_and_approve, pick_survivor, reject, rollback
from memory_admin.store import BaseMemoryStore
from tests.learning.helpers import DANA, candidate
from tests.support.compositions import background, judgment

GUARDED = judgment("triage", "constraints")


def test_a_guarded_learning_waits_for_a_person_then_enters_the_prompt(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    [rule] = store.write([candidate("Never share another customer's ticket.", GUARDED)])
    promote_candidates(store, DANA, composition)
    shown = store.promotion(rule.id)
    assert shown is not None and shown.state == "pending_review" and shown.tier == "guarded"
    composed = compose(store, DANA, composition)
    pin = {
        "revision": shown.revision,
        "overlay_version": composed.version,
        "composition_version": composition.version,
        "scope": DANA,
    }
    done = approve(store, rule.id, composition, actor="lena", reason="matches policy", pin=pin)
    assert (done.state, done.last.by, done.last.actor, done.tier) == ("promoted", "person", "lena", "guarded")
    lines = [line for line in compose(store, DANA, composition).prompt.lines if line.record_ids == (rule.id,)]
    assert [line.section for line in lines] == ["judgment.triage.constraints"]


def test_a_stale_decision_is_refused_and_changes_nothing(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    first, second = store.write(
        [
            candidate("Never share another customer's ticket.", GUARDED),
            candidate("Never paste a password into a ticket.", GUARDED),
        ]
    )
    promote_candidates(store, DANA, composition)
    page_version = compose(store, DANA, composition).version
    shown = {r.id: store.promotion(r.id) for r in (first, second)}
    pin = {"overlay_version": page_version, "composition_version": composition.version, "scope": DANA}
    approve(store, first.id, composition, actor="mei", pin={**pin, "revision": shown[first.id].revision})  # type: ignore[union-attr]
    with pytest.raises(MemoryConflictError, match="changed since"):
        approve(store, second.id, composition, actor="lena", pin={**pin, "revision": shown[second.id].revision})  # type: ignore[union-attr]
    with pytest.raises(MemoryConflictError, match="moved"):
        reject(store, first.id, actor="lena", reason="too broad", pin={"revision": shown[first.id].revision})  # type: ignore[union-attr]
    assert store.promotion(second.id).state == "pending_review"  # type: ignore[union-attr]
    assert store.promotion(first.id).state == "promoted"  # type: ignore[union-attr]


def test_reject_and_rollback_need_a_reason_and_delete_nothing(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    proposed, kept = store.write(
        [
            candidate("Never share another customer's ticket.", GUARDED),
            candidate("Deploys need a second reviewer.", background("conventions", "reviews")),
        ]
    )
    promote_candidates(store, DANA, composition)
    with pytest.raises(MemoryValidationError):
        reject(store, proposed.id, actor="lena", reason="")
    assert reject(store, proposed.id, actor="lena", reason="already in the handbook").state == "rejected"
    rolled = rollback(store, kept.id, actor="lena", reason="reviews are optional on staging")
    assert (rolled.state, rolled.last.cause, rolled.last.reason) == (
        "demoted",
        "rollback",
        "reviews are optional on staging",
    )
    assert store.get(kept.id) is not None and store.get(kept.id).is_valid  # type: ignore[union-attr]
    assert compose(store, DANA, composition).overlay.applied_ids == ()


def test_edit_then_approve_writes_a_superseding_version(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    [proposed] = store.write([candidate("Never share tickets.", GUARDED)])
    store.corroborate(proposed.id, {"conversation_id": "c2"})
    promote_candidates(store, DANA, composition)
    done = edit_and_approve(
        store, proposed.id, "Never share one customer's ticket with another customer.", composition, actor="lena"
    )
    edited = done.record
    assert edited is not None and edited.supersedes == proposed.id and edited.provenance.author == "lena"
    assert [p.conversation_id for p in edited.supports] == ["c1", "c2"], "the original's sightings carry over"
    old = store.get(proposed.id)
    assert old is not None and old.superseded_by == edited.id and old.invalid_at is not None
    assert done.state == "promoted" and done.last.actor == "lena"
    chain = [link.record.provenance.author or link.record.provenance.source for link in store.chain(edited.id)]  # type: ignore[union-attr]
    assert chain == ["agent-toolbox", "lena"], "proposed by the agent, edited and approved by a person"


def test_a_person_picks_the_survivor_of_a_conflict(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    [older] = store.write([candidate("Deploys need a second reviewer.", background("conventions", "reviews"))])
    promote_candidates(store, DANA, composition)
    [newer] = store.write([candidate("Deploys need two reviewers.", background("conventions", "reviews"))])
    assert promote_candidates(store, DANA, composition).candidates[0].outcome == "conflict"
    survivor, loser = pick_survivor(store, newer.id, older.id, composition, actor="lena", reason="two is the rule now")
    assert (survivor.state, loser.state, loser.last.cause) == ("promoted", "demoted", "rollback")
    assert compose(store, DANA, composition).overlay.applied_ids == (newer.id,)
    store.invalidate(older.id, "superseded by the handbook")
    with pytest.raises(MemoryConflictError, match="Nothing was applied"):  # an invalid record cannot survive
        pick_survivor(store, older.id, newer.id, composition, actor="lena", reason="changed my mind")
    assert compose(store, DANA, composition).overlay.applied_ids == (newer.id,), "a refused pick changes nothing"


def test_decisions_stay_inside_the_person_s_scope(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    [rule] = store.write([candidate("Never share another customer's ticket.", GUARDED)])
    globex = {"tenant": "globex"}
    with pytest.raises(MemoryNotFoundError):
        approve(store, rule.id, composition, actor="lena", within=globex)
    with pytest.raises(MemoryNotFoundError):
        reject(store, rule.id, actor="lena", reason="no", within=globex)
    with pytest.raises(MemoryNotFoundError):
        approve(store, "mem_00000000000000000000000000", composition, actor="lena")
    assert store.promotion(rule.id).state == "candidate"  # type: ignore[union-attr]
    [locked] = store.write([candidate("Shipping is slow.", judgment("shipping"))])
    with pytest.raises(MemoryValidationError, match="locked"):
        approve(store, locked.id, composition, actor="lena")
    with pytest.raises(MemoryValidationError, match="locked"):
        edit_and_approve(store, locked.id, "Shipping takes a week.", composition, actor="lena")
    assert store.get(locked.id).is_valid  # type: ignore[union-attr]


def test_a_pin_to_an_agent_s_composition_holds_while_nothing_moved(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    planner = {**DANA, "agent": "planner"}
    [own] = store.write(
        [candidate("The planner drafts the notes.", background("team_context", "notes"), scope=planner)]
    )
    store.promote(own.id, actor="lena", tier="auto")
    [rule] = store.write([candidate("Never share another customer's ticket.", GUARDED)])
    shown = compose(store, DANA, composition, agent="planner")
    assert own.id in shown.overlay.applied_ids, "the agent's own learning is part of its composition"
    pin = {
        "overlay_version": shown.version,
        "composition_version": composition.version,
        "scope": DANA,
        "agent": "planner",
    }
    assert approve(store, rule.id, composition, actor="lena", pin=pin).state == "promoted"
