"""The demo corpus shows a learning in every state, under its registered composition."""

from __future__ import annotations

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
