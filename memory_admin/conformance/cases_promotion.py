"""Tier 1: the promotion extension — candidates, decisions and their pins, history and
replays, the store's own demotions, forgetting, registered compositions."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from memory_admin.composition import AgentComposition, apply_memory_overlay
from memory_admin.conformance.base import ACME, OTHER, U1, U2, ConformanceBase, rec, stored
from memory_admin.conformance.support import FakeClock
from memory_admin.errors import (
    MemoryConflictError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memory_admin.events import MemoryDemoteEvent, MemoryPromoteEvent
from memory_admin.promotion import MAX_SUPPORTS
from memory_admin.records import MemoryRecord
from memory_admin.store.protocol import FullMemoryStore

HEURISTIC = {"primitive": "judgment", "domain": "triage", "slot": "heuristics"}
CONSTRAINT = {"primitive": "judgment", "domain": "triage", "slot": "constraints"}
CONVENTION = {"primitive": "background", "section": "conventions", "key": "deploys"}

COMPOSITION = AgentComposition(
    name="support",
    persona="You help Acme's customers.",
    judgments=({"domain": "triage", "heuristics": ("Ask for the order number first.",)},),
)


def learning(
    content: str, target: dict[str, str] | None = None, scope: dict[str, str] | None = None, **fields: Any
) -> dict[str, Any]:
    """A targeted write input (a candidate once written)."""
    return rec(content, scope, kind="episode", target=target or HEURISTIC, **fields)


class PromotionCases(ConformanceBase):
    def _promoting(self, store: FullMemoryStore) -> None:
        self._needs(store, promotion=True)

    def _candidate(
        self, store: FullMemoryStore, content: str = "Check the status page first.", **fields: Any
    ) -> MemoryRecord:
        self._promoting(store)
        return store.write([learning(content, **fields)])[0]

    # --- candidates --------------------------------------------------------------------

    def test_a_targeted_record_is_born_a_candidate(self, store: FullMemoryStore) -> None:
        self._promoting(store)
        plain, targeted = store.write([rec("a plain fact"), learning("a proposed heuristic")])
        assert store.promotion(plain.id) is None, "an untargeted record is no candidate"
        found = store.promotion(targeted.id)
        assert found is not None
        assert (found.state, found.revision, found.primitive, found.tier) == ("candidate", 0, "judgment", None)
        assert found.record == targeted and found.at == targeted.created_at
        [birth] = store.promotion_history(targeted.id)
        assert (birth.state, birth.by, birth.previous) == ("candidate", "system", None)

    def test_life_cycle_candidate_held_promoted_rolled_back(
        self, store: FullMemoryStore, raw_store: FullMemoryStore
    ) -> None:
        record = self._candidate(store)
        seen: list[Any] = []
        raw_store.add_sink(seen.append)
        held = store.decide(
            [
                {
                    "record_id": record.id,
                    "state": "held",
                    "by": "gate",
                    "actor": "gate",
                    "reason": "recurrence 1 of 2",
                    "tier": "earned",
                    "evidence": {"recurrence": {"seen": 1, "needed": 2}},
                }
            ]
        )[0]
        assert held.applied and held.promotion is not None and held.promotion.state == "held"
        promoted = store.promote(record.id, actor="gate", by="gate", tier="earned", reason="eval passed")
        assert (promoted.state, promoted.revision, promoted.tier) == ("promoted", 2, "earned")
        assert [r.id for r in store.promoted_records(U1)] == [record.id]
        rolled = store.demote(record.id, actor="lena", reason="caused over-escalation")
        assert (rolled.state, rolled.last.cause, rolled.last.actor) == ("demoted", "rollback", "lena")
        assert store.promoted_records(U1) == []
        assert stored(store, record.id).is_valid, "a rollback deletes nothing and invalidates nothing"
        history = store.promotion_history(record.id)
        assert [(t.state, t.previous) for t in history] == [
            ("candidate", None),
            ("held", "candidate"),
            ("promoted", "held"),
            ("demoted", "promoted"),
        ]
        assert history[1].evidence == {"recurrence": {"seen": 1, "needed": 2}}
        kinds = [(type(e).__name__, e.record_id) for e in seen if isinstance(e, MemoryPromoteEvent | MemoryDemoteEvent)]
        assert kinds == [("MemoryPromoteEvent", record.id), ("MemoryDemoteEvent", record.id)]
        promote_event = next(e for e in seen if isinstance(e, MemoryPromoteEvent))
        assert promote_event.content_preview == record.content and promote_event.provenance == {"source": "conformance"}

    def test_moves_the_rules_refuse_change_nothing(self, store: FullMemoryStore) -> None:
        record = self._candidate(store)
        guarded = store.write([learning("Never promise refunds over 500 EUR.", CONSTRAINT)])[0]
        with pytest.raises(MemoryValidationError, match="tier"):
            store.promote(record.id, actor="gate", by="gate")
        with pytest.raises(MemoryValidationError, match="locked"):
            store.promote(record.id, actor="lena", tier="locked")
        with pytest.raises(MemoryConflictError, match="only a person"):
            store.promote(guarded.id, actor="gate", by="gate", tier="guarded")
        with pytest.raises(MemoryValidationError, match="cannot become demoted"):
            store.demote(record.id, actor="lena", reason="never promoted")
        with pytest.raises(MemoryValidationError):
            store.reject(record.id, actor="lena", reason="  ")
        assert store.promotion(record.id).revision == 0  # type: ignore[union-attr]
        assert store.promotion(guarded.id).state == "candidate"  # type: ignore[union-attr]
        approved = store.promote(guarded.id, actor="lena", tier="guarded", reason="matches the refund policy")
        assert approved.state == "promoted" and approved.last.by == "person"

    def test_an_invalid_record_cannot_be_promoted(self, store: FullMemoryStore) -> None:
        record = self._candidate(store)
        store.invalidate(record.id, "wrong")
        with pytest.raises(MemoryValidationError, match="invalidated"):
            store.promote(record.id, actor="lena", tier="earned")

    def test_unknown_untargeted_and_foreign_records_are_refused(self, store: FullMemoryStore) -> None:
        record = self._candidate(store)
        plain = store.write([rec("a plain fact")])[0]
        with pytest.raises(MemoryNotFoundError):
            store.promote("mem_00000000000000000000000000", actor="lena", tier="earned")
        with pytest.raises(MemoryValidationError, match="no candidate"):
            store.promote(plain.id, actor="lena", tier="earned")
        [outcome] = store.decide(
            [
                {
                    "record_id": record.id,
                    "state": "promoted",
                    "actor": "lena",
                    "tier": "earned",
                    "within": {"tenant": "globex"},
                }
            ]
        )
        assert (outcome.applied, outcome.refused) == (False, "not_found")
        store.delete(record.id)
        with pytest.raises(MemoryNotFoundError):
            store.promote(record.id, actor="lena", tier="earned")
        with pytest.raises(MemoryValidationError):
            store.decide([{"record_id": record.id, "state": "promoted"}])  # who decided?
        with pytest.raises(MemoryValidationError):
            store.decide("promote everything")  # type: ignore[arg-type]

    # --- pins and concurrency ------------------------------------------------------------

    def test_a_decision_pinned_to_what_moved_is_refused(self, store: FullMemoryStore) -> None:
        record = self._candidate(store)
        other = store.write([learning("Ask which plan the customer is on.")])[0]
        store.decide([{"record_id": record.id, "state": "held", "by": "gate", "actor": "gate", "tier": "earned"}])
        with pytest.raises(MemoryConflictError, match="moved"):
            store.promote(record.id, actor="lena", pin={"revision": 0})
        with pytest.raises(MemoryConflictError):
            store.promote(record.id, actor="lena", pin={"state": "candidate"})
        assert store.promotion(record.id).state == "held"  # type: ignore[union-attr]
        outcomes = store.decide(
            [
                {"record_id": record.id, "state": "promoted", "actor": "lena", "pin": {"revision": 0}},
                {
                    "record_id": other.id,
                    "state": "rejected",
                    "actor": "lena",
                    "reason": "vague",
                    "pin": {"revision": 0},
                },
            ]
        )
        assert [(o.applied, o.refused) for o in outcomes] == [(False, "moved"), (True, None)]
        assert store.promotion(other.id).state == "rejected"  # type: ignore[union-attr]

    def test_a_decision_pinned_to_an_overlay_is_refused_once_it_changed(self, store: FullMemoryStore) -> None:
        first = self._candidate(store)
        second = store.write([learning("Ask which plan the customer is on.")])[0]
        version = store.register_composition(COMPOSITION, U1)
        shown = apply_memory_overlay(COMPOSITION, store.promoted_records(U1)).version
        pin = {"composition_version": version, "scope": U1, "overlay_version": shown, "revision": 0}
        store.promote(first.id, actor="gate", by="gate", tier="earned")  # the composition moved on
        with pytest.raises(MemoryConflictError, match="changed since"):
            store.promote(second.id, actor="lena", tier="earned", pin=pin)
        assert store.promotion(second.id).state == "candidate"  # type: ignore[union-attr]
        fresh = apply_memory_overlay(COMPOSITION, store.promoted_records(U1)).version
        done = store.promote(second.id, actor="lena", tier="earned", pin={**pin, "overlay_version": fresh})
        assert done.state == "promoted"

    def test_concurrent_promoters_one_wins(self, raw_store: FullMemoryStore) -> None:
        record = self._candidate(raw_store)
        other = self.open_again(raw_store) or raw_store
        results: list[str] = []
        start = threading.Barrier(2)

        def promoter(store: FullMemoryStore, name: str) -> None:
            start.wait()
            try:
                store.promote(record.id, actor=name, tier="earned", pin={"revision": 0})
                results.append("applied")
            except MemoryConflictError:
                results.append("moved")

        threads = [threading.Thread(target=promoter, args=(s, f"p{n}")) for n, s in enumerate((raw_store, other))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if other is not raw_store:
            other.close()
        assert sorted(results) == ["applied", "moved"]
        history = raw_store.promotion_history(record.id)
        assert [t.state for t in history] == ["candidate", "promoted"], "one promotion, never two"

    # --- the store's own demotions ---------------------------------------------------------

    def test_invalidation_and_supersede_demote(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        first = self._candidate(store)
        second = store.write([learning("Ask which plan the customer is on.")])[0]
        for record in (first, second):
            store.promote(record.id, actor="gate", by="gate", tier="earned")
        seen: list[Any] = []
        raw_store.add_sink(seen.append)
        store.invalidate(first.id, "caused over-escalation")
        [successor] = store.write([learning("Ask for the plan, then the order.", supersedes=second.id)])
        assert store.promotion(first.id).last.cause == "invalidated"  # type: ignore[union-attr]
        assert store.promotion(second.id).last.cause == "superseded"  # type: ignore[union-attr]
        assert store.promotion(successor.id).state == "candidate", "the successor earns its own place"  # type: ignore[union-attr]
        assert store.promoted_records(U1) == []
        demotes = [e for e in seen if isinstance(e, MemoryDemoteEvent)]
        assert sorted((e.record_id, e.cause) for e in demotes) == sorted(
            [(first.id, "invalidated"), (second.id, "superseded")]
        )
        assert next(e for e in demotes if e.record_id == first.id).reason == "caused over-escalation"

    def test_expiry_demotes_at_the_first_read_after_it(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock
    ) -> None:
        record = self._candidate(store, expires_at=clock.peek() + timedelta(days=1))
        store.promote(record.id, actor="gate", by="gate", tier="earned")
        assert [r.id for r in store.promoted_records(U1)] == [record.id]
        seen: list[Any] = []
        raw_store.add_sink(seen.append)
        clock.advance(days=2)
        assert store.promoted_records(U1) == []
        found = store.promotion(record.id)
        assert found is not None and (found.state, found.last.cause) == ("demoted", "expired")
        assert [(e.record_id, e.cause) for e in seen if isinstance(e, MemoryDemoteEvent)] == [(record.id, "expired")]

    # --- forgetting ------------------------------------------------------------------------

    def test_delete_removes_the_state_and_the_content_of_its_events(
        self, store: FullMemoryStore, raw_store: FullMemoryStore
    ) -> None:
        self._needs(store, events=True)
        record = self._candidate(store, "Dana's account uses the blue plan.")
        store.promote(record.id, actor="gate", by="gate", tier="earned")
        assert store.delete(record.id)
        assert store.promotion(record.id) is None
        assert store.promotion_history(record.id) == []
        assert store.promotions(ACME).promotions == []
        logged = raw_store.query_events({"types": ["agent.memory.promote", "agent.memory.demote"]})
        by_type = {stored.event.type: stored.event for stored in logged}
        promote, demote = by_type["agent.memory.promote"], by_type["agent.memory.demote"]
        assert isinstance(promote, MemoryPromoteEvent) and isinstance(demote, MemoryDemoteEvent)
        assert promote.redacted and promote.content_preview is None and promote.provenance is None
        assert (demote.record_id, demote.cause, demote.content_preview) == (record.id, "deleted", None)

    def test_erase_removes_states_history_and_registrations(self, store: FullMemoryStore) -> None:
        self._needs(store, erasure=True)
        mine = self._candidate(store)
        theirs = store.write([learning("Ask for the invoice id.", scope=U2)])[0]
        store.promote(mine.id, actor="gate", by="gate", tier="earned")
        store.register_composition(COMPOSITION, U1)
        store.register_composition(COMPOSITION, U2)
        assert store.preview_erase(U1).registrations == 1
        report = store.erase(U1)
        assert report.registrations == 1
        assert store.promotion(mine.id) is None and store.promotion_history(mine.id) == []
        assert [p.record_id for p in store.promotions(ACME).promotions] == [theirs.id]
        assert [r.scope for r in store.compositions(ACME)] == [U2]
        assert store.composition(COMPOSITION.version) == COMPOSITION, "the authored composition itself stays"

    # --- listings and replays --------------------------------------------------------------

    def test_promotions_list_filter_page_and_count(self, store: FullMemoryStore) -> None:
        self._promoting(store)
        agent_scope = {**U1, "agent": "planner"}
        written = store.write(
            [
                learning("h1"),
                learning("h2", scope=U2),
                learning("c1", CONSTRAINT),
                learning("b1", CONVENTION, scope=ACME),
                learning("p1", scope=agent_scope),
                learning("g1", scope=OTHER),
            ]
        )
        h1, h2, c1, b1, p1, _ = written
        store.decide(
            [{"record_id": c1.id, "state": "pending_review", "by": "gate", "actor": "gate", "tier": "guarded"}]
        )
        store.promote(b1.id, actor="gate", by="gate", tier="auto")

        def ids(**filters: Any) -> set[str]:
            return {p.record_id for p in store.promotions(filters.pop("scope", ACME), **filters).promotions}

        assert ids() == {h1.id, h2.id, c1.id, b1.id, p1.id}, "subset match: the whole tenant, never another"
        assert ids(scope=U1, scope_match="visible") == {h1.id, c1.id, b1.id}, "shared and mine, no agent's"
        assert ids(scope=agent_scope, scope_match="visible", agent="planner") == {h1.id, c1.id, b1.id, p1.id}
        assert ids(states=["pending_review"]) == {c1.id}
        assert ids(primitives=["background"]) == {b1.id}
        assert ids(tiers=["guarded", "auto"]) == {c1.id, b1.id}
        counts = store.count_promotions(ACME)
        assert (counts["candidate"], counts["pending_review"], counts["promoted"], counts["held"]) == (3, 1, 1, 0)
        seen: list[str] = []
        cursor = None
        while True:
            page = store.promotions(ACME, limit=2, cursor=cursor)
            seen += [p.record_id for p in page.promotions]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert sorted(seen) == sorted(ids()) and len(seen) == 5, "keyset pages cover every one once"
        assert seen[0] == b1.id, "newest decision first"
        counted = sum(store.count_promotions(ACME).values())
        store.invalidate(h2.id, "wrong")
        assert h2.id not in ids() and h2.id in ids(include_invalidated=True)
        assert sum(store.count_promotions(ACME).values()) == counted - 1, "counts leave it out too"
        assert sum(store.count_promotions(ACME, include_invalidated=True).values()) == counted
        with pytest.raises(MemoryValidationError):
            store.promotions(ACME, cursor="garbage")

    def test_states_as_of_a_past_moment_are_a_replay(self, store: FullMemoryStore, clock: FakeClock) -> None:
        record = self._candidate(store)
        clock.advance(hours=1)
        store.promote(record.id, actor="gate", by="gate", tier="earned")
        promoted_at = clock.advance(hours=1)
        clock.advance(hours=1)
        store.demote(record.id, actor="lena", reason="too eager")
        clock.advance(hours=1)
        later = store.write([learning("Ask for the plan.")])[0]
        assert store.promoted_records(U1) == []
        assert [r.id for r in store.promoted_records(U1, as_of=promoted_at)] == [record.id]
        then = store.promotions(ACME, as_of=promoted_at).promotions
        assert [(p.record_id, p.state) for p in then] == [(record.id, "promoted")], "the later record did not exist yet"
        now = {p.record_id: p.state for p in store.promotions(ACME).promotions}
        assert now == {record.id: "demoted", later.id: "candidate"}
        assert store.count_promotions(ACME, as_of=promoted_at)["promoted"] == 1

    def test_transitions_since_a_moment(self, store: FullMemoryStore, clock: FakeClock) -> None:
        early = self._candidate(store)
        store.promote(early.id, actor="gate", by="gate", tier="earned")
        since = clock.advance(days=7)
        late = store.write([learning("Ask for the plan.")])[0]
        store.promote(late.id, actor="gate", by="gate", tier="earned")
        store.demote(early.id, actor="lena", reason="stale")
        page = store.transitions(ACME, since=since)
        assert [(t.record_id, t.state) for t in page.transitions] == [
            (early.id, "demoted"),
            (late.id, "promoted"),
            (late.id, "candidate"),
        ]
        learnt = store.transitions(ACME, since=since, states=["promoted", "demoted"], limit=1)
        assert len(learnt.transitions) == 1 and learnt.next_cursor is not None
        rest = store.transitions(ACME, since=since, states=["promoted", "demoted"], cursor=learnt.next_cursor)
        assert [t.state for t in rest.transitions] == ["promoted"] and rest.next_cursor is None
        moments = store.transition_moments(ACME, since=since, states=["promoted", "demoted"])
        assert moments == [
            (t.at, t.state) for t in store.transitions(ACME, since=since, states=["promoted", "demoted"]).transitions
        ]
        assert (
            len(store.transition_moments(ACME, limit=2)) == 2 and store.transition_moments({"tenant": "globex"}) == []
        )

    # --- corroboration -----------------------------------------------------------------------

    def test_corroborate_appends_once_and_refuses_what_cannot_be_corroborated(self, store: FullMemoryStore) -> None:
        record = self._candidate(store, provenance={"conversation_id": "c1"})
        again = store.corroborate(record.id, {"conversation_id": "c2", "source": "agent-toolbox"})
        assert [p.conversation_id for p in again.supports] == ["c2"]
        store.corroborate(record.id, {"conversation_id": "c2", "source": "agent-toolbox"})
        store.corroborate(record.id, {"conversation_id": "c1"})  # the record's own provenance
        assert [p.conversation_id for p in stored(store, record.id).supports] == ["c2"]
        with pytest.raises(MemoryValidationError):
            store.corroborate(record.id, {})
        with pytest.raises(MemoryNotFoundError):
            store.corroborate("mem_00000000000000000000000000", {"conversation_id": "c3"})
        store.invalidate(record.id, "wrong")
        with pytest.raises(MemoryConflictError):
            store.corroborate(record.id, {"conversation_id": "c3"})

    def test_corroborations_are_bounded(self, store: FullMemoryStore) -> None:
        record = self._candidate(store)
        for n in range(MAX_SUPPORTS):
            store.corroborate(record.id, {"run_id": f"r{n}"})
        with pytest.raises(MemoryLimitError):
            store.corroborate(record.id, {"run_id": "one more"})

    # --- registered compositions ------------------------------------------------------------

    def test_registered_compositions_and_their_history(self, store: FullMemoryStore, clock: FakeClock) -> None:
        self._promoting(store)
        first = store.register_composition(COMPOSITION, U1)
        assert first == COMPOSITION.version
        at_first = clock.advance(minutes=5)
        clock.advance(minutes=5)
        assert store.register_composition(COMPOSITION, U1) == first
        assert len(store.compositions(U1, exact=True)) == 1, "registering the running version again adds nothing"
        revised = AgentComposition.model_validate({**COMPOSITION.model_dump(), "tone": "Plain and warm."})
        second = store.register_composition(revised, U1)
        assert second != first
        assert [r.version for r in store.compositions(U1, exact=True)] == [second, first]
        assert [r.version for r in store.compositions(U1, exact=True, as_of=at_first)] == [first]
        assert store.registered_composition(U1) == revised
        assert store.registered_composition(U1, as_of=at_first) == COMPOSITION
        assert store.composition(first) == COMPOSITION and store.composition("0" * 64) is None
        assert store.compositions(ACME, exact=True) == [] and [r.scope for r in store.compositions(ACME)] == [U1, U1]
        with pytest.raises(MemoryValidationError):
            store.register_composition({"name": "support"}, U1)  # type: ignore[arg-type]
        with pytest.raises(MemoryValidationError):
            store.register_composition(COMPOSITION, {"user": "u1"})

    # --- recall leaves promoted records to the composition -----------------------------------

    def test_search_can_leave_promoted_records_out(self, store: FullMemoryStore) -> None:
        record = self._candidate(store, "Check the status page before escalating.")
        other = store.write([learning("Check the order history before escalating.")])[0]
        store.promote(record.id, actor="gate", by="gate", tier="earned")
        for query in (None, "escalating"):
            base = {"scope": U1, "query": query}
            assert {h.record.id for h in store.search({**base, "promoted": False})} == {other.id}
            assert {h.record.id for h in store.search({**base, "promoted": True})} == {record.id}
            assert len(store.search(base)) == 2

    # --- the gardening pass's proposals ------------------------------------------------------

    def test_proposals_are_kept_listed_and_settled_once(self, store: FullMemoryStore) -> None:
        self._promoting(store)
        first, second = store.write([learning("Ask for the plan."), learning("Ask for the plan first.")])
        made = store.propose(
            [
                {
                    "kind": "merge",
                    "record_id": second.id,
                    "other_id": first.id,
                    "reason": "repeats it",
                    "evidence": {"overlap": 1.0},
                },
                {"kind": "invalidate", "record_id": first.id, "reason": "stale"},
                {"kind": "invalidate", "record_id": "mem_00000000000000000000000000", "reason": "unknown"},
                {"kind": "merge", "record_id": second.id, "other_id": first.id, "reason": "again"},
            ]
        )
        assert [(p.kind, p.record_id, p.other_id, p.status) for p in made] == [
            ("merge", second.id, first.id, "pending"),
            ("invalidate", first.id, None, "pending"),
        ]
        assert made[0].evidence == {"overlap": 1.0} and made[0].scope == U1 and made[0].by == "garden"
        page = store.proposals(ACME, limit=1)
        assert [p.id for p in page.proposals] == [made[1].id] and page.next_cursor is not None
        assert [p.id for p in store.proposals(ACME, limit=1, cursor=page.next_cursor).proposals] == [made[0].id]
        assert store.proposals({"tenant": "globex"}).proposals == []
        settled = store.settle_proposal(made[1].id, accepted=False, actor="lena", reason="still true")
        assert (settled.status, settled.actor, settled.decision_reason) == ("rejected", "lena", "still true")
        with pytest.raises(MemoryConflictError):
            store.settle_proposal(made[1].id, accepted=True, actor="mei")
        with pytest.raises(MemoryNotFoundError):
            store.settle_proposal(10_000, accepted=True, actor="mei")
        assert store.proposal(made[1].id) == settled and store.proposal(made[0].id) == made[0]
        assert store.proposal(10_000) is None
        for bad in (0, -1, "1"):  # said as what it is: a proposal's id
            with pytest.raises(MemoryValidationError, match="A proposal id is a positive integer"):
                store.proposal(bad)  # type: ignore[arg-type]
        with pytest.raises(MemoryValidationError):
            store.settle_proposal(made[0].id, accepted=False, actor="lena", reason="\x1b")
        assert store.proposal(made[0].id) == made[0], "a refused settlement changes nothing"
        assert [p.id for p in store.proposals(ACME).proposals] == [made[0].id], "pending ones by default"
        assert [p.status for p in store.proposals(ACME, statuses=None).proposals] == ["rejected", "pending"]
        assert store.propose([{"kind": "invalidate", "record_id": first.id, "reason": "stale again"}]) == [], (
            "a rejected proposal is not made again"
        )
        store.delete(first.id)
        assert store.proposals(ACME, statuses=None).proposals == [], "gone with either record they name"
        assert store.proposal(made[0].id) is None
        with pytest.raises(MemoryValidationError):
            store.propose([{"kind": "rewrite", "record_id": second.id, "reason": "no such kind"}])

    def test_promoted_records_follow_every_change_made_anywhere(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock
    ) -> None:
        first = self._candidate(store, expires_at=clock.peek() + timedelta(days=3))
        second = store.write([learning("Ask which plan the customer is on.")])[0]
        store.promote(first.id, actor="gate", by="gate", tier="earned")
        assert [r.id for r in store.promoted_records(U1)] == [first.id]
        assert [r.id for r in store.promoted_records(U1)] == [first.id], "read again, unchanged"
        store.corroborate(first.id, {"conversation_id": "c9"})
        [again] = store.promoted_records(U1)
        assert [p.conversation_id for p in again.supports] == ["c9"], "a corroboration shows"
        other = self.open_again(raw_store)
        if other is not None and other is not raw_store:
            other.promote(second.id, actor="mei", tier="earned")  # another process
            other.close()
        else:
            store.promote(second.id, actor="mei", tier="earned")
        assert [r.id for r in store.promoted_records(U1)] == [first.id, second.id]
        store.demote(second.id, actor="lena", reason="too narrow")
        assert [r.id for r in store.promoted_records(U1)] == [first.id]
        clock.advance(days=4)
        assert store.promoted_records(U1) == [], "an expiry needs no change in the store to show"
