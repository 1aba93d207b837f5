"""The demo corpus shows a learning in every state, under its registered composition."""

from __future__ import annotations

from datetime import timedelta

from memory_admin.dashboard.demo import ACME_SUPPORT, DEMO_COMPOSITION
from memory_admin.learning import compose
from tests.support.stores import demo_memory


def test_the_demo_shows_every_state_of_a_learning() -> None:
    with demo_memory() as store:
        assert store.registered_composition(ACME_SUPPORT) == DEMO_COMPOSITION
        found = store.promotions(ACME_SUPPORT, scope_match="visible", agent="support").promotions
        states = {(p.state, p.tier) for p in found}
        for expected in [
            ("pending_review", "guarded"),
            ("conflict", "guarded"),
            ("held", "earned"),
            ("rejected", "locked"),
            ("promoted", "earned"),
            ("demoted", "earned"),
            ("rejected", "guarded"),
        ]:
            assert expected in states, expected
        heuristic = next(p for p in found if p.state == "promoted" and p.tier == "earned")
        assert heuristic.record is not None and len(heuristic.record.supports) == 1, "its two conversations"
        composed = compose(store, ACME_SUPPORT, agent="support", as_of=None, register=False)
        assert heuristic.record_id in composed.overlay.applied_ids


def test_the_demo_has_a_conflict_to_pick_a_proposal_and_another_tenant() -> None:
    with demo_memory() as store:
        found = store.promotions(ACME_SUPPORT, scope_match="visible", agent="support").promotions
        [auto_conflict] = [p for p in found if p.state == "conflict" and p.tier == "auto"]
        history = store.promotion_history(auto_conflict.record_id)
        holder = history[-1].evidence["reconciliation"]["against"]  # type: ignore[index,call-overload]
        assert store.promotion(holder).state == "promoted"  # type: ignore[arg-type,union-attr]
        [proposal] = store.proposals(ACME_SUPPORT).proposals
        assert proposal.kind == "invalidate"
        times = {t.at for p in found for t in store.promotion_history(p.record_id) if t.by != "system"}
        assert max(times) - min(times) > timedelta(hours=12), "the review happened over time, not at once"
        globex = store.promotions({"tenant": "globex"}).promotions
        assert "pending_review" in [p.state for p in globex]
