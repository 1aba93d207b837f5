"""Composing an agent from the store: the promoted, live records its scope sees, folded in,
every line traced; the recall block leaving them out; replays; the overlay event."""

from __future__ import annotations

from typing import Any

import pytest

from memory_admin.composition import AgentComposition
from memory_admin.conformance import FakeClock
from memory_admin.errors import MemoryNotFoundError
from memory_admin.events import MemoryOverlayEvent
from memory_admin.learning import compose, promote_candidates
from memory_admin.learning.compose import acompose
from memory_admin.recall import assemble_recall
from memory_admin.recall_turns import assemble_turn_recall
from memory_admin.store import BaseMemoryStore
from tests.learning.helpers import ACME, DANA, MEI, candidate
from tests.support.compositions import background, judgment


def test_a_promoted_learning_is_a_line_of_the_prompt_traced_to_its_record(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    [rule] = store.write(
        [candidate("Deploys to production need a second reviewer.", background("conventions", "reviews"))]
    )
    before = compose(store, DANA, composition)
    assert "second reviewer" not in before.prompt.text
    promote_candidates(store, DANA, composition)
    after = compose(store, DANA, composition)
    [line] = [line for line in after.prompt.lines if line.source == "memory"]
    assert line.record_ids == (rule.id,) and line.section == "background.conventions"
    assert "Deploys to production need a second reviewer." in line.text
    record = store.get(line.record_ids[0])
    assert record is not None and record.provenance.conversation_id == "c1", "line → record → provenance"
    assert after.version != before.version and after.overlay.composition_version == composition.version
    authored = [line for line in after.prompt.lines if line.source == "authored" and line.kind == "entry"]
    assert any("status.acme.dev" in line.text for line in authored)


def test_compose_reads_what_the_scope_sees_and_nothing_invalid(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    shared, mine, theirs, agents = store.write(
        [
            candidate("Staging resets nightly.", background("project_context", "staging"), scope=ACME),
            candidate("Dana's team deploys on Tuesdays.", background("team_context", "deploy_day")),
            candidate("Mei's team deploys on Fridays.", background("team_context", "deploy_day"), scope=MEI),
            candidate(
                "The planner drafts release notes.",
                background("team_context", "notes"),
                scope={**DANA, "agent": "planner"},
            ),
        ]
    )
    for record in (shared, mine, theirs, agents):
        store.promote(record.id, actor="lena", tier="auto")
    applied = set(compose(store, DANA, composition).overlay.applied_ids)
    assert applied == {shared.id, mine.id}, "shared and mine; never a sibling's, never an agent's"
    assert set(compose(store, DANA, composition, agent="planner").overlay.applied_ids) == {
        shared.id,
        mine.id,
        agents.id,
    }
    store.invalidate(mine.id, "moved to Wednesdays")
    assert set(compose(store, DANA, composition).overlay.applied_ids) == {shared.id}


def test_the_recall_block_leaves_promoted_records_to_the_composition(
    learning_store: BaseMemoryStore, composition: AgentComposition
) -> None:
    store = learning_store
    promoted, candidate_only = store.write(
        [
            candidate("Deploys need a second reviewer.", background("conventions", "reviews")),
            candidate("Ask about deploys before reviewing them.", judgment("triage")),
        ]
    )
    store.promote(promoted.id, actor="lena", tier="auto")
    block = assemble_recall(store, DANA, "how do deploys get reviewed?")
    assert candidate_only.id in block.report.record_ids, "a candidate stays in the recall tier"
    assert promoted.id not in block.report.record_ids, "a promoted record is part of the agent now"
    assert promoted.id in assemble_recall(store, DANA, "deploys", include_promoted=True).report.record_ids
    later = assemble_turn_recall(store, DANA, "and who reviews the deploys?", injected=[], turn=2)
    assert candidate_only.id in later.report.record_ids
    assert promoted.id not in later.report.record_ids + later.report.repeated_ids, "nor at a later turn"
    again = assemble_turn_recall(store, DANA, "deploys reviewed", injected=[], turn=2, include_promoted=True)
    assert promoted.id in again.report.record_ids
    store.demote(promoted.id, actor="lena", reason="rolled back")
    assert promoted.id in assemble_recall(store, DANA, "how do deploys get reviewed?").report.record_ids


def test_as_of_replays_the_composition_registered_then(
    learning_store: BaseMemoryStore, composition: AgentComposition, clock: FakeClock
) -> None:
    store = learning_store
    [rule] = store.write([candidate("Deploys need a second reviewer.", background("conventions", "reviews"))])
    first = compose(store, DANA, composition)
    clock.advance(hours=1)
    store.promote(rule.id, actor="lena", tier="auto")
    promoted_at = clock.advance(hours=1)
    clock.advance(hours=1)
    revised = AgentComposition.model_validate({**composition.model_dump(), "tone": "Terse."})
    latest = compose(store, DANA, revised)
    store.demote(rule.id, actor="lena", reason="too strict")
    then = compose(store, DANA, as_of=promoted_at)
    assert then.overlay.composition_version == composition.version, "the composition registered then"
    assert then.overlay.applied_ids == (rule.id,), "the learnings promoted then"
    assert compose(store, DANA, as_of=promoted_at).prompt == then.prompt, "a replay is deterministic"
    assert first.overlay.applied_ids == ()
    now = compose(store, DANA)
    assert now.overlay.composition_version == revised.version and now.overlay.applied_ids == ()
    assert latest.overlay.applied_ids == (rule.id,)


def test_compose_emits_the_overlay_heartbeat(learning_store: BaseMemoryStore, composition: AgentComposition) -> None:
    store = learning_store
    seen: list[Any] = []
    store.add_sink(seen.append)
    records = store.write(
        [
            candidate("Deploys need a second reviewer.", background("conventions", "reviews")),
            candidate("A second note on the deploy freeze.", background("conventions", "deploy_freeze")),
        ]
    )
    for record in records:
        store.promote(record.id, actor="lena", tier="auto")
    composed = compose(store, DANA, composition)
    [event] = [e for e in seen if isinstance(e, MemoryOverlayEvent)]
    assert event.version == composed.version and event.record_ids == [records[0].id]
    assert event.dropped == {records[1].id: "authored_collision"}, "the authored deploy_freeze key wins"
    assert event.chars["background"] == composed.overlay.sizes["background"].chars
    assert event.budgets["background"] == 2000 and event.scope == DANA
    compose(store, DANA, as_of=event.at)
    assert len([e for e in seen if isinstance(e, MemoryOverlayEvent)]) == 1, "a replay emits nothing"
    assert compose(store, DANA, emit=False).version == composed.version
    assert len([e for e in seen if isinstance(e, MemoryOverlayEvent)]) == 1, "a person looking emits nothing"
    logged = store.query_events({"types": ["agent.memory.overlay"]})
    assert [stored.event for stored in logged] == [event]


def test_compose_without_a_registered_composition_says_what_to_do(learning_store: BaseMemoryStore) -> None:
    with pytest.raises(MemoryNotFoundError, match="pass the composition"):
        compose(learning_store, DANA)
    with pytest.raises(MemoryNotFoundError, match="registered"):
        compose(learning_store, DANA, "0" * 64)


def test_the_async_twin_composes_the_same(learning_store: BaseMemoryStore, composition: AgentComposition) -> None:
    import asyncio

    store = learning_store
    [rule] = store.write([candidate("Deploys need a second reviewer.", background("conventions", "reviews"))])
    store.promote(rule.id, actor="lena", tier="auto")
    composed = asyncio.run(acompose(store, DANA, composition))
    assert composed.prompt == compose(store, DANA, composition).prompt
