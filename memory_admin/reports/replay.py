"""A past recall run again against today's store, and what changed.

:func:`replay_event` assembles the event's recall (its scope, agent, logged message and
budget) with today's memory — read-only: the store's searches emit nothing and the
recall's own event goes to a sink of its own, marked a preview, so the event log does
not grow — and diffs the new block against the records the event injected: records in
now that were not, records no longer in (and why), and records in both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from memory_admin.errors import MemoryCorruptionError
from memory_admin.events import AnyEvent, MemoryRecallEvent
from memory_admin.recall import RecallResult, assemble_recall
from memory_admin.records import MemoryRecord, utc_now
from memory_admin.reports.listing import record_state
from memory_admin.scope import Scope
from memory_admin.store.protocol import MemoryStore

WHY = {
    # no longer in the block
    "deleted": "deleted or erased since",
    "invalidated": "invalidated since",
    "superseded": "superseded by a newer version since",
    "expired": "expired since",
    "deferred:budget": "deferred now: the block's budget was spent before it",
    "deferred:profile_slice": "deferred now: the profile slice was full before it",
    "outranked": "outranked now: other records took its place in its tier",
    "corrupt": "its row is corrupt now",
    # new in the block
    "new": "written after the recall",
    "was_deferred": "deferred then, placed now",
    "ranks_in": "placed now: it outranks what was there then",
}


@dataclass(frozen=True)
class Change:
    """One record of the diff; ``record`` is ``None`` when it is gone or outside the
    reader's grants (then only its id is shown)."""

    id: str
    record: MemoryRecord | None
    why: str | None = None

    @property
    def explanation(self) -> str:
        return WHY.get(self.why or "", "")


@dataclass(frozen=True)
class Replay:
    event: MemoryRecallEvent
    result: RecallResult
    added: list[Change]
    removed: list[Change]
    unchanged: list[Change]
    at: datetime

    @property
    def same(self) -> bool:
        return not (self.added or self.removed)

    @property
    def message_known(self) -> bool:
        """False when the event's message was removed (the replay ran without one)."""
        return not self.event.redacted


def replay_event(
    store: MemoryStore, allows: Callable[[Scope], bool], event: MemoryRecallEvent, *, now: datetime | None = None
) -> Replay:
    """``event``'s recall assembled again now, and its diff against what it injected.

    The replay uses the event's logged message, which the log clips (and removes once a
    memory it held is forgotten), and the default profile ratio (events do not log it).
    """
    at = now or utc_now()
    caught: list[AnyEvent] = []  # the replay's event: never the log's, never the store's sinks
    result = assemble_recall(
        store,
        event.scope,
        event.query_preview,
        agent=event.agent,
        budget_chars=event.budget_chars,
        now=at,
        sink=caught.append,
        preview_run=True,
    )
    before, after = event.record_ids, result.report.record_ids
    was = set(before)
    then_deferred = set(event.deferred_ids)
    shown = {record.id: record if allows(record.scope) else None for record in result.records}
    added = [
        Change(rid, shown[rid], _why_added(shown[rid], rid in then_deferred, event.at))
        for rid in after
        if rid not in was
    ]
    unchanged = [Change(rid, shown[rid]) for rid in after if rid in was]
    now_in = set(after)
    removed = [
        _removed(store, allows, rid, result.report.deferred_reasons.get(rid), at) for rid in before if rid not in now_in
    ]
    return Replay(event, result, added, removed, unchanged, at)


def _why_added(record: MemoryRecord | None, was_deferred: bool, then: datetime) -> str:
    if was_deferred:
        return "was_deferred"
    if record is not None and record.created_at > then:
        return "new"
    return "ranks_in"


def _removed(
    store: MemoryStore, allows: Callable[[Scope], bool], record_id: str, deferred: str | None, at: datetime
) -> Change:
    try:
        record = store.get(record_id)
    except MemoryCorruptionError:
        return Change(record_id, None, "corrupt")
    if record is None:
        return Change(record_id, None, "deleted")
    shown = record if allows(record.scope) else None
    state = record_state(record, at)
    if state != "live":
        return Change(record_id, shown, state)
    if deferred is not None:
        return Change(record_id, shown, f"deferred:{deferred}")
    return Change(record_id, shown, "outranked")
