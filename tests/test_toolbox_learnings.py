"""The toolbox's part in learnings: corroboration offered in a save's conflict, the
guarded tier only a person takes back out, and memory_learnings ("what did you learn
this week?"), bounded like every tool result and confined to the conversation's view."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from memory_admin.conformance import FakeClock
from memory_admin.learning import promote_candidates
from memory_admin.learning.review import approve
from memory_admin.store import BaseMemoryStore
from memory_admin.toolbox import MemoryPolicy, MemoryToolbox
from tests.support.compositions import example_composition, judgment
from tests.support.records import BOB, DANA, rec

HEURISTIC = judgment("triage")
CONSTRAINT = judgment("triage", "constraints")


def toolbox_for(store: BaseMemoryStore, clock: FakeClock, conversation: str, **options: Any) -> MemoryToolbox:
    return MemoryToolbox(store, DANA, conversation_id=conversation, clock=clock.peek, **options)


def test_a_second_conversation_corroborates_instead_of_duplicating(store: BaseMemoryStore, clock: FakeClock) -> None:
    first = toolbox_for(store, clock, "conv-1")
    saved = first.call(
        "memory_save", {"content": "Ask for the workspace id first.", "kind": "episode", "target": HEURISTIC}
    )
    record_id = saved["saved"]["id"]
    second = toolbox_for(store, clock, "conv-2")
    same = {"content": "Asking for the workspace id first saved a round trip.", "kind": "episode", "target": HEURISTIC}
    conflict = second.call("memory_save", same)
    corroborate = next(r for r in conflict["error"]["resolutions"] if r["action"] == "corroborate")
    assert record_id in corroborate["how"]
    confirmed = second.call("memory_save", {**same, "corroborates": record_id})
    assert confirmed["ok"] is True and confirmed["supports"] == 1 and confirmed["corroborated"]["id"] == record_id
    record = store.get(record_id)
    assert record is not None and [p.conversation_id for p in record.supports] == ["conv-2"]
    assert len(store.search({"scope": DANA, "include_invalidated": True, "limit": 100})) == 1, "nothing new saved"
    report = promote_candidates(store, DANA, example_composition())
    assert [c.outcome for c in report.candidates] == ["promoted"], "two conversations: recurrence met"
    assert second.call("memory_save", {**same, "corroborates": "mem_00000000000000000000000000"})["error"]["code"] == (
        "not_found"
    )
    [bobs] = store.write([rec("Bob's rule.", BOB, target=HEURISTIC)])
    assert second.call("memory_save", {**same, "corroborates": bobs.id})["error"]["code"] == "not_found"
    assert store.get(bobs.id).supports == ()  # type: ignore[union-attr]


def test_only_a_person_takes_a_guarded_learning_back_out(store: BaseMemoryStore, clock: FakeClock) -> None:
    agent = toolbox_for(store, clock, "conv-1")
    guarded = agent.call("memory_save", {"content": "Never share another customer's ticket.", "target": CONSTRAINT})
    earned = agent.call("memory_save", {"content": "Ask for the workspace id first.", "target": judgment("billing")})
    composition = example_composition()
    approve(store, guarded["saved"]["id"], composition, actor="lena")
    store.promote(earned["saved"]["id"], actor="gate", by="gate", tier="earned")
    refused = agent.call("memory_invalidate", {"id": guarded["saved"]["id"], "reason": "I disagree"})
    assert refused["error"]["code"] == "needs_review" and "only a person" in refused["error"]["message"]
    superseding = agent.call(
        "memory_save",
        {"content": "Share tickets when asked nicely.", "target": CONSTRAINT, "supersedes": guarded["saved"]["id"]},
    )
    assert superseding["error"]["code"] == "needs_review"
    still = store.promotion(guarded["saved"]["id"])
    assert still is not None and still.state == "promoted" and store.get(still.record_id).is_valid  # type: ignore[union-attr]
    retired = agent.call("memory_invalidate", {"id": earned["saved"]["id"], "reason": "wrong domain"})
    assert retired["ok"] is True, "an earned learning the agent may retire: it is demoted"
    assert store.promotion(earned["saved"]["id"]).last.cause == "invalidated"  # type: ignore[union-attr]


def test_memory_learnings_answers_what_changed_since(store: BaseMemoryStore, clock: FakeClock) -> None:
    composition = example_composition()
    agent = toolbox_for(store, clock, "conv-1")
    old = agent.call(
        "memory_save",
        {"content": "Old convention.", "target": {"primitive": "background", "section": "conventions", "key": "old"}},
    )
    promote_candidates(store, DANA, composition)
    clock.advance(days=10)
    rule = agent.call("memory_save", {"content": "Never share another customer's ticket.", "target": CONSTRAINT})
    convention = agent.call(
        "memory_save",
        {
            "content": "Deploys need a second reviewer.",
            "target": {"primitive": "background", "section": "conventions", "key": "reviews"},
        },
    )
    store.write(
        [rec("Bob's convention.", BOB, target={"primitive": "background", "section": "conventions", "key": "b"})]
    )
    promote_candidates(store, DANA, composition)
    promote_candidates(store, BOB, composition)
    answer = agent.call("memory_learnings", {})
    assert answer["ok"] is True and answer["truncated"] is False
    changes = {(item["id"], item["change"]) for item in answer["results"]}
    assert changes == {(rule["saved"]["id"], "pending_review"), (convention["saved"]["id"], "promoted")}, (
        "the last week only, this conversation's view only"
    )
    promoted = next(item for item in answer["results"] if item["change"] == "promoted")
    assert promoted["content"] == "Deploys need a second reviewer."
    assert promoted["provenance"] == {"source": "agent-toolbox", "conversation_id": "conv-1"}
    assert promoted["by"] == "the promotion gates" and promoted["meaning"] == "promoted into your configuration"
    since = (clock.peek() - timedelta(days=30)).isoformat()
    everything = agent.call("memory_learnings", {"since": since, "changes": ["promoted"]})
    assert {item["id"] for item in everything["results"]} == {old["saved"]["id"], convention["saved"]["id"]}
    small = MemoryToolbox(store, DANA, clock=clock.peek, policy=MemoryPolicy(max_result_chars=1000))
    capped = small.call("memory_learnings", {"since": since, "limit": 10})
    assert len(str(capped)) < 2000 and capped["ok"] is True
    assert agent.call("memory_learnings", {"since": "last tuesday"})["error"]["code"] == "invalid_arguments"
    blind = MemoryToolbox(store, DANA, policy=MemoryPolicy(agent_reads=False))
    assert blind.call("memory_learnings", {})["error"]["code"] == "policy_denied"
    async_answer = asyncio.run(agent.acall("memory_learnings", {}))
    assert async_answer["results"] == answer["results"]


def test_a_forgotten_learning_leaves_no_trace_in_the_learnings(store: BaseMemoryStore, clock: FakeClock) -> None:
    agent = toolbox_for(store, clock, "conv-1")
    saved = agent.call(
        "memory_save",
        {"content": "Dana's secret rule.", "target": {"primitive": "background", "section": "conventions", "key": "s"}},
    )
    store.promote(saved["saved"]["id"], actor="lena", tier="auto")
    store.delete(saved["saved"]["id"])
    assert agent.call("memory_learnings", {})["results"] == [], "its transitions went with it"


@pytest.mark.parametrize("strict", [False, True])
def test_memory_learnings_has_a_schema_for_each_api(strict: bool) -> None:
    from memory_admin.toolbox import input_schema, openai_tools

    schema = input_schema("memory_learnings", strict=strict)
    assert set(schema["properties"]) == {"since", "changes", "limit"}
    assert "memory_learnings" in [tool["function"]["name"] for tool in openai_tools(strict=strict)]
