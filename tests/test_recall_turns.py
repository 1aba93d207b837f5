"""Recall after turn 1: a later turn injects only what is new, within its own budget, and
says so in an event of its own."""

from __future__ import annotations

import asyncio

import pytest

from memory_admin.errors import MemoryValidationError
from memory_admin.events import AnyEvent, MemoryRecallEvent, MemoryRecallTurnEvent
from memory_admin.recall import BLOCK_CLOSE, BLOCK_OPEN, MIN_BUDGET_CHARS, assemble_recall, truncation_marker
from memory_admin.recall_turns import (
    DEFAULT_TURN_BUDGET_CHARS,
    RecallConversation,
    TurnRecallResult,
    aassemble_turn_recall,
    assemble_turn_recall,
)
from memory_admin.store import BaseMemoryStore
from tests.support.records import BOB, DANA, rec


def _facts(store: BaseMemoryStore) -> dict[str, str]:
    written = store.write(
        [
            rec("Dana is flying to Lisbon on Friday."),
            rec("Dana prefers an aisle seat on flights."),
            rec("Dana is allergic to peanuts."),
            rec("Dana's flight seat must have extra legroom for her knee."),
            rec("Bob prefers a window seat.", BOB),
        ]
    )
    return {record.content: record.id for record in written}


def test_a_later_turn_injects_only_what_the_conversation_has_not_seen(store: BaseMemoryStore) -> None:
    ids = _facts(store)
    first = assemble_recall(store, DANA, "I'm flying to Lisbon on Friday", conversation_id="c-1")
    assert ids["Dana is flying to Lisbon on Friday."] in first.report.record_ids
    later = assemble_turn_recall(
        store, DANA, "Book me a seat on the flight", injected=first.report.record_ids, turn=2, conversation_id="c-1"
    )
    assert later.block.startswith(BLOCK_OPEN) and later.block.endswith(BLOCK_CLOSE)
    assert set(later.report.record_ids).isdisjoint(first.report.record_ids), "nothing is injected twice"
    assert later.report.repeated_ids, "the seat records turn 1 injected matched again and stayed out"
    assert set(later.report.repeated_ids) <= set(first.report.record_ids)
    assert ids["Bob prefers a window seat."] not in later.report.record_ids, "visible match: never a sibling's"
    assert later.report.earlier == len(first.report.record_ids) and later.report.turn == 2
    assert "not recalled before in this conversation" in later.block


def test_every_new_match_comes_in_when_turn_one_injected_little(store: BaseMemoryStore) -> None:
    ids = _facts(store)
    lisbon = ids["Dana is flying to Lisbon on Friday."]
    later = assemble_turn_recall(store, DANA, "Book me a seat on the flight", injected=[lisbon], turn=2)
    seats = {
        ids["Dana prefers an aisle seat on flights."],
        ids["Dana's flight seat must have extra legroom for her knee."],
    }
    assert seats <= set(later.report.record_ids)
    assert lisbon not in later.report.record_ids and lisbon in later.report.repeated_ids


def test_nothing_new_is_an_empty_block_and_still_an_event(store: BaseMemoryStore) -> None:
    ids = _facts(store)
    seen: list[AnyEvent] = []
    later = assemble_turn_recall(
        store, DANA, "peanuts", injected=[ids["Dana is allergic to peanuts."]], turn=3, sink=seen.append
    )
    assert later.block == "" and later.report.count == 0
    [event] = seen
    assert isinstance(event, MemoryRecallTurnEvent)
    assert event.turn == 3 and event.record_ids == [] and event.repeated_ids == [ids["Dana is allergic to peanuts."]]


def test_a_later_turn_keeps_its_own_budget_and_says_what_it_deferred(store: BaseMemoryStore) -> None:
    store.write([rec(f"Dana's seat note number {n}: " + "x" * 120) for n in range(10)])
    later = assemble_turn_recall(store, DANA, "seat note", injected=[], turn=2, budget_chars=MIN_BUDGET_CHARS + 200)
    assert len(later.block) <= MIN_BUDGET_CHARS + 200
    assert later.report.truncated and later.report.deferred == len(later.report.deferred_ids) > 0
    assert truncation_marker(later.report.deferred) in later.block
    roomy = assemble_turn_recall(store, DANA, "seat note", injected=[], turn=2, max_hits=10)
    assert len(roomy.block) <= DEFAULT_TURN_BUDGET_CHARS, "a budget of its own, 1,500 by default"
    assert roomy.report.count + roomy.report.deferred == 10 and roomy.report.count > later.report.count


def test_the_turn_event_lands_in_the_log_with_the_conversation(store: BaseMemoryStore) -> None:
    _facts(store)
    first = assemble_recall(store, DANA, "Lisbon trip", conversation_id="c-7")
    assemble_turn_recall(store, DANA, "my seat", injected=first.report.record_ids, turn=2, conversation_id="c-7")
    store.flush_events()
    [turn] = store.query_events({"types": ["agent.memory.recall_turn"]})
    [opening] = store.query_events({"types": ["agent.memory.recall"]})
    assert isinstance(turn.event, MemoryRecallTurnEvent) and isinstance(opening.event, MemoryRecallEvent)
    assert turn.event.conversation_id == opening.event.conversation_id == "c-7"
    assert turn.event.query_preview == "my seat" and turn.event.scope == DANA


def test_a_conversation_counts_its_turns_and_what_it_injected(store: BaseMemoryStore) -> None:
    _facts(store)
    conversation = RecallConversation(store, DANA, conversation_id="c-9")
    first = conversation.recall("I'm flying to Lisbon on Friday")
    second = conversation.recall("Book me a seat on the flight")
    third = conversation.recall("and a seat for the way back")
    assert isinstance(second, TurnRecallResult) and isinstance(third, TurnRecallResult)
    assert (second.report.turn, third.report.turn, conversation.turn) == (2, 3, 3)
    blocks = [first.report.record_ids, second.report.record_ids, third.report.record_ids]
    assert conversation.injected == [record_id for ids in blocks for record_id in ids]
    assert len(set(conversation.injected)) == len(conversation.injected), "no record injected twice"
    assert third.report.earlier == len(first.report.record_ids) + len(second.report.record_ids)


def test_the_async_twin_gives_the_same_block(store: BaseMemoryStore) -> None:
    _facts(store)
    now = store.write([rec("Dana's hotel is by the river.")])[0].created_at
    sync = assemble_turn_recall(store, DANA, "hotel and seat", injected=[], turn=2, now=now, sink=lambda e: None)
    other = asyncio.run(
        aassemble_turn_recall(store, DANA, "hotel and seat", injected=[], turn=2, now=now, sink=lambda e: None)
    )
    assert other.block == sync.block and other.report == sync.report


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"turn": 1}, "turn"),
        ({"turn": True}, "turn"),
        ({"budget_chars": 10}, "budget_chars"),
        ({"max_hits": -1}, "max_hits"),
    ],
)
def test_bad_options_are_typed_errors(store: BaseMemoryStore, arguments: dict[str, object], where: str) -> None:
    options: dict[str, object] = {"turn": 2, **arguments}
    with pytest.raises(MemoryValidationError) as caught:
        assemble_turn_recall(store, DANA, "seat", injected=[], **options)  # type: ignore[arg-type]
    assert caught.value.problems[0]["loc"] == where


def test_forgetting_a_record_a_turn_named_removes_its_message(store: BaseMemoryStore) -> None:
    ids = _facts(store)
    peanuts = ids["Dana is allergic to peanuts."]
    assemble_turn_recall(store, DANA, "peanuts and my seat", injected=[], turn=2)
    assemble_turn_recall(store, DANA, "any peanuts?", injected=[peanuts], turn=3)  # found again, left out
    store.flush_events()
    assert store.delete(peanuts)
    for stored in store.query_events({"types": ["agent.memory.recall_turn"]}):
        assert isinstance(stored.event, MemoryRecallTurnEvent)
        assert stored.event.query_preview is None and stored.event.redacted, "it named what was forgotten"
