"""One conversation's recalls, turn by turn: turn 1's block (``agent.memory.recall``) and
every later turn's (``agent.memory.recall_turn``) that carry its conversation id — what
the dashboard's recall pages show beside one of them — and a later turn's entries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from memory_admin.events import EventQuery, MemoryRecallEvent, MemoryRecallTurnEvent
from memory_admin.reports.recall_entries import Entry, block_entries, deferred_entries
from memory_admin.scope import Scope
from memory_admin.store.protocol import AdminMemoryStore, EventLogStore
from memory_admin.tokenize import unique_tokens

MAX_TURNS = 200
"""Recalls of one conversation a page lists at most (the newest, shown turn 1 first)."""
SCAN = 2_000
"""Recall events read (newest first, under the conversation's scope) to find them."""


@dataclass(frozen=True)
class ConversationTurn:
    """One recall of a conversation, as its list shows it."""

    event_id: int
    turn: int
    at: datetime
    message: str | None
    count: int
    chars: int
    budget_chars: int
    repeated: int
    """Records the message matched again that an earlier turn had injected (0 at turn 1)."""
    deferred: int
    current: bool


def conversation_turns(
    store: EventLogStore, event: MemoryRecallEvent | MemoryRecallTurnEvent, event_id: int
) -> list[ConversationTurn]:
    """The recalls of ``event``'s conversation (the same conversation id, scope and agent),
    turn 1 first; empty when the event names no conversation."""
    if event.conversation_id is None:
        return []
    found = store.query_events(
        EventQuery(types=("agent.memory.recall", "agent.memory.recall_turn"), scope=event.scope, limit=SCAN)
    )
    turns = []
    for stored in found:
        other = stored.event
        if not isinstance(other, MemoryRecallEvent | MemoryRecallTurnEvent):
            continue
        if (other.conversation_id, other.scope, other.agent) != (event.conversation_id, event.scope, event.agent):
            continue
        turns.append(
            ConversationTurn(
                event_id=stored.id,
                turn=other.turn if isinstance(other, MemoryRecallTurnEvent) else 1,
                at=other.at,
                message=other.query_preview,
                count=other.count,
                chars=other.chars,
                budget_chars=other.budget_chars,
                repeated=len(other.repeated_ids) if isinstance(other, MemoryRecallTurnEvent) else 0,
                deferred=other.deferred,
                current=stored.id == event_id,
            )
        )
    return sorted(turns, key=lambda turn: (turn.turn, turn.event_id))[:MAX_TURNS]


@dataclass(frozen=True)
class TurnAccount:
    """A later turn's block entry by entry: what went in, what did not fit, and what the
    message matched again that the conversation already held."""

    entries: list[Entry]
    deferred: list[Entry]
    repeated: list[Entry]
    words: tuple[str, ...]
    fill_percent: int


def account_turn(store: AdminMemoryStore, allows: Callable[[Scope], bool], event: MemoryRecallTurnEvent) -> TurnAccount:
    """The accounting of a later turn's recall from its event; records ``allows`` refuses,
    or that are gone, are shown by id only."""
    words = tuple(unique_tokens(event.query_preview or ""))
    return TurnAccount(
        entries=block_entries(store, allows, event.record_ids, ["hits"] * len(event.record_ids), words=words),
        deferred=deferred_entries(
            store,
            allows,
            event.deferred_ids,
            dict.fromkeys(event.deferred_ids, "budget"),
            tiers=dict.fromkeys(event.deferred_ids, "hits"),
            words=words,
        ),
        repeated=block_entries(store, allows, event.repeated_ids, [], words=words),
        words=words,
        fill_percent=round(100 * event.chars / event.budget_chars) if event.budget_chars else 0,
    )


__all__ = ["MAX_TURNS", "ConversationTurn", "TurnAccount", "account_turn", "conversation_turns"]
