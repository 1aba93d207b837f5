"""A person's decisions on several learnings at once — all or nothing, each pinned to what
the person saw — and an edit that checks its pins before it writes anything."""

from __future__ import annotations

import pytest

from memory_admin.composition import AgentComposition
from memory_admin.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from memory_admin.learning import compose, promote_candidates
from memory_admin.learning.review import approve, approve_all, edit_and_approve, pick_survivor, reject_all
from memory_admin.store import BaseMemoryStore
from tests.learning.helpers import DANA, MEI, candidate
from tests.support.compositions import background, judgment

GUARDED = judgment("triage", "constraints")
RULES = (
    "Never share another customer's ticket.",
    "Never paste a password into a ticket.",
    "Never promise a refund before billing agrees.",
)


def _pending(store: BaseMemoryStore, composition: AgentComposition) -> tuple[list[str], dict[str, object]]:
    records = store.write([candidate(text, GUARDED) for text in RULES])
    promote_candidates(store, DANA, composition)
    overlay = compose(store, DANA, composition, emit=False).version
    pins: dict[str, object] = {}
    for record in records:
        shown = store.promotion(record.id)
        assert shown is not None and shown.state == "pending_review"
        pins[record.id] = {
            "revision": shown.revision,
            "state": shown.state,
            "overlay_version": overlay,
            "composition_version": composition.version,
            "scope": DANA,
        }
    return [record.id for record in records], pins


def test_approvals_pinned_to_one_overlay_go_through_together(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    ids, pins = _pending(store, composition)
    done = approve_all(store, pins, dict.fromkeys(ids, composition), actor="lena", reason="policy", within=DANA)
    assert [(p.record_id, p.state, p.last.actor) for p in done] == [(i, "promoted", "lena") for i in ids]
    assert set(compose(store, DANA, composition, emit=False).overlay.applied_ids) == set(ids)


def test_one_moved_learning_refuses_the_whole_batch(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    ids, pins = _pending(store, composition)
    store.reject(ids[1], actor="mei", reason="already in the handbook")
    with pytest.raises(MemoryConflictError, match="Nothing was applied") as refused:
        approve_all(store, pins, dict.fromkeys(ids, composition), actor="lena")
    assert refused.value.extras["record_id"] == ids[1]
    assert [store.promotion(i).state for i in ids] == ["pending_review", "rejected", "pending_review"]  # type: ignore[union-attr]
    with pytest.raises(MemoryConflictError, match="Nothing was applied"):
        reject_all(store, pins, actor="lena", reason="too broad")
    assert [store.promotion(i).state for i in ids] == ["pending_review", "rejected", "pending_review"]  # type: ignore[union-attr]
    del pins[ids[1]]
    done = reject_all(store, pins, actor="lena", reason="too broad")
    assert [(p.state, p.last.reason) for p in done] == [("rejected", "too broad")] * 2


def test_a_batch_outside_the_deciders_scope_is_not_found(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    ids, pins = _pending(store, composition)
    with pytest.raises(MemoryNotFoundError):
        approve_all(store, pins, dict.fromkeys(ids, composition), actor="lena", within=MEI)
    with pytest.raises(MemoryConflictError):
        reject_all(store, pins, actor="lena", reason="not mine", within=MEI)
    assert {store.promotion(i).state for i in ids} == {"pending_review"}  # type: ignore[union-attr]


def test_an_edit_checks_its_pins_before_it_writes(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    ids, pins = _pending(store, composition)
    approve(store, ids[0], composition, actor="mei")  # the overlay the page showed moves on
    edit = "Never share one customer's password with anyone."
    with pytest.raises(MemoryConflictError, match="changed since"):
        edit_and_approve(store, ids[1], edit, composition, actor="lena", pin=pins[ids[1]])  # type: ignore[arg-type]
    with pytest.raises(MemoryConflictError, match="now, not"):
        edit_and_approve(store, ids[0], edit, composition, actor="lena", pin={"state": "pending_review"})
    with pytest.raises(MemoryValidationError, match="promoted already"):
        edit_and_approve(store, ids[0], edit, composition, actor="lena")
    assert store.get(ids[1]).is_valid and store.get(ids[0]).is_valid, "nothing was written"  # type: ignore[union-attr]
    assert [r.record.content for r in store.search({"scope": DANA, "limit": 10}) if r.record.content == edit] == []


def test_a_pick_is_held_to_the_revisions_the_person_saw(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    [older] = store.write([candidate("Deploys need a second reviewer.", background("conventions", "reviews"))])
    promote_candidates(store, DANA, composition)
    [newer] = store.write([candidate("Deploys need two reviewers.", background("conventions", "reviews"))])
    promote_candidates(store, DANA, composition)
    seen = {r.id: store.promotion(r.id).revision for r in (older, newer)}  # type: ignore[union-attr]
    store.demote(older.id, actor="mei", reason="reviews are optional now")
    pins = {record_id: {"revision": revision} for record_id, revision in seen.items()}
    with pytest.raises(MemoryConflictError, match="Nothing was applied"):
        pick_survivor(store, newer.id, older.id, composition, actor="lena", reason="two it is", pins=pins)
    assert store.promotion(newer.id).state == "conflict"  # type: ignore[union-attr]


def test_a_reason_that_is_not_text_is_a_validation_error(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    ids, pins = _pending(store, composition)
    with pytest.raises(MemoryValidationError, match="printable"):
        reject_all(store, pins, actor="lena", reason="\x1b")
    with pytest.raises(MemoryValidationError, match="printable"):
        approve(store, ids[0], composition, actor="lena", reason="ok\x00")
    assert {store.promotion(i).state for i in ids} == {"pending_review"}  # type: ignore[union-attr]
