"""Recall after turn 1: at a later turn, the memories the new message brings up that the
conversation's earlier blocks did not already inject.

A host that recalled at turn 1 (:func:`~memory_admin.recall.assemble_recall`) calls
:func:`assemble_turn_recall` with each later user message and the ids already injected
(``result.report.record_ids`` of every earlier block), or lets a
:class:`RecallConversation` keep count::

    conversation = RecallConversation(store, scope, conversation_id="c-42", agent="planner")
    first = conversation.recall("I'm flying to Lisbon on Friday")   # turn 1: the full block
    later = conversation.recall("Book me a seat, please")           # only what is new

A later turn's block holds only records related to the new message (its words, and its
meaning when the store embeds) that no earlier block of the conversation injected —
de-duplicated by record id, so a memory is never injected twice — under a heading that
says so, within a budget of its own (``budget_chars``, 1,500 by default: a later turn
adds to a prompt that already holds turn 1's block), first fit, with the truncation
marker when something is deferred. There is no profile tier and no recency fallback:
turn 1 brought those. When nothing new matches, the block is ``""`` and nothing needs to
be added to the prompt.

Each assembly emits one ``agent.memory.recall_turn`` event
(:class:`~memory_admin.events.MemoryRecallTurnEvent`): the conversation id, the turn's
number, the message (clipped), what it injected, what it found again and left out
(``repeated_ids``), its size against its budget and what it deferred. Turn 1's
``agent.memory.recall`` event carries the same conversation id when the host gives one,
so the dashboard's recall pages show a conversation's turns together.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from memory_admin.errors import MemoryValidationError
from memory_admin.events import EventSink, MemoryRecallTurnEvent, agent_of, preview
from memory_admin.recall import (
    BLOCK_CLOSE,
    BLOCK_OPEN,
    MIN_BUDGET_CHARS,
    RecallArgs,
    RecallResult,
    aassemble_recall,
    asend_event,
    assemble_recall,
    clip_query,
    render_entry,
    send_event,
    truncation_marker,
)
from memory_admin.records import MemoryHit, MemoryRecord, MemorySearchQuery, parse_model, utc_now
from memory_admin.scope import Scope, ScopeMatch, canonical_scope, read_view
from memory_admin.steps import Steps, arun_steps, run_steps
from memory_admin.store.protocol import MemoryStore
from memory_admin.tokenize import unique_tokens

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_TURN_BUDGET_CHARS = 1500
DEFAULT_TURN_MAX_HITS = 5

TURN_HEADER = (
    "More memories from earlier conversations, related to the user's latest message and not recalled before "
    "in this conversation{ids}. They may be out of date: what the user says now wins.\n"
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TurnRecallOptions(_Frozen):
    """How a later turn's block is assembled: every argument of
    :func:`assemble_turn_recall` but the store, the scope, the message, what was injected,
    the turn, ``now`` and ``sink``."""

    agent: str | None = None
    budget_chars: int = Field(DEFAULT_TURN_BUDGET_CHARS, ge=MIN_BUDGET_CHARS)
    """Bounds ``len(result.block)``, delimiters, header and marker included: a budget of
    the turn's own, beside the one turn 1's block spent."""
    max_hits: int = Field(DEFAULT_TURN_MAX_HITS, ge=0)
    """New records a block holds at most."""
    scope_match: ScopeMatch = "visible"
    show_ids: bool = True
    conversation_id: str | None = Field(None, min_length=1, max_length=200)
    include_promoted: bool = False
    """Also records promoted into the agent's composition (by default they stay out, as
    in turn 1's block: the composition carries them)."""


class TurnRecallArgs(TypedDict, total=False):
    """:class:`TurnRecallOptions` as keyword arguments."""

    agent: str | None
    budget_chars: int
    max_hits: int
    scope_match: ScopeMatch
    show_ids: bool
    conversation_id: str | None
    include_promoted: bool


class TurnRecallReport(_Frozen):
    """What a later turn's block injected, what it left out as already injected, and why
    anything else stayed out."""

    scope: Scope
    agent: str | None
    conversation_id: str | None
    turn: int
    count: int
    chars: int
    budget_chars: int
    record_ids: list[str]
    """The ids in the block, in block order."""
    repeated_ids: list[str]
    """Matches an earlier block of the conversation already injected."""
    earlier: int
    """How many records the earlier blocks injected."""
    truncated: bool
    deferred: int
    deferred_ids: list[str]
    query_clipped: bool


class TurnRecallResult(_Frozen):
    """The finished block (``""`` when nothing new matched), its report, its records and its event."""

    block: str
    report: TurnRecallReport
    records: tuple[MemoryRecord, ...]
    event: MemoryRecallTurnEvent
    hits: tuple[MemoryHit, ...] = ()
    """The search's answers, in rank order (the repeated ones included)."""


class _TurnPlan:
    def __init__(
        self,
        store: MemoryStore,
        scope: Mapping[str, str],
        message: str,
        injected: Iterable[str],
        turn: int,
        options: TurnRecallArgs | TurnRecallOptions,
    ) -> None:
        self.options = opts = parse_model(TurnRecallOptions, options, what="turn recall options")
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 2:
            raise MemoryValidationError(
                f"turn is {turn!r}; a later turn is numbered from 2 (turn 1 is assemble_recall's).",
                [{"loc": "turn", "msg": "an integer of at least 2"}],
            )
        self.turn = turn
        self.scope = canonical_scope(scope)
        self.view = read_view(self.scope, opts.agent, opts.scope_match)
        self.injected = frozenset(injected)
        self.message = message
        clipped, self.query_clipped = clip_query(message)
        self.query = clipped if unique_tokens(clipped) else None
        capabilities = store.capabilities()
        self.max_limit = capabilities.max_limit
        self.promoted = False if capabilities.promotion and not opts.include_promoted else None
        self.header = TURN_HEADER.format(
            ids=", each with the date it was saved, its kind and its id" if opts.show_ids else ""
        )

    def search(self) -> MemorySearchQuery:
        # the records injected before may all match first: ask for enough more
        limit = min(self.options.max_hits + len(self.injected), self.max_limit)
        return MemorySearchQuery.model_validate(
            {
                "scope": self.view,
                "scope_match": self.options.scope_match,
                "agent": self.options.agent,
                "query": self.query,
                "limit": limit,
                "promoted": self.promoted,
            }
        )


def _gather(plan: _TurnPlan) -> Steps[MemorySearchQuery, list[MemoryHit]]:
    if plan.query is None or plan.options.max_hits == 0:
        return []
    hits: list[MemoryHit] = yield plan.search()
    return hits


def _finish(plan: _TurnPlan, hits: list[MemoryHit], *, now: datetime, started: float) -> TurnRecallResult:
    opts = plan.options
    repeated = [hit.record.id for hit in hits if hit.record.id in plan.injected]
    fresh = [hit.record for hit in hits if hit.record.id not in plan.injected][: opts.max_hits]
    lines = {record.id: render_entry(record, show_ids=opts.show_ids) for record in fresh}
    room = opts.budget_chars - len(BLOCK_OPEN) - len(plan.header) - len(BLOCK_CLOSE)

    def place(space: int) -> tuple[list[MemoryRecord], list[str]]:
        placed, deferred, used = [], [], 0
        for record in fresh:  # first fit: a shorter entry after one that did not fit may go in
            if used + len(lines[record.id]) > space:
                deferred.append(record.id)
            else:
                placed.append(record)
                used += len(lines[record.id])
        return placed, deferred

    placed, deferred = place(room)
    if deferred:  # the marker needs room too
        placed, deferred = place(room - len(truncation_marker(len(fresh))))
    block = ""
    if placed or deferred:
        marker = truncation_marker(len(deferred)) if deferred else ""
        body = "".join(lines[record.id] for record in placed)
        block = BLOCK_OPEN + plan.header + body + marker + BLOCK_CLOSE
    report = TurnRecallReport(
        scope=plan.scope,
        agent=opts.agent,
        conversation_id=opts.conversation_id,
        turn=plan.turn,
        count=len(placed),
        chars=len(block),
        budget_chars=opts.budget_chars,
        record_ids=[record.id for record in placed],
        repeated_ids=repeated,
        earlier=len(plan.injected),
        truncated=bool(deferred),
        deferred=len(deferred),
        deferred_ids=deferred,
        query_clipped=plan.query_clipped,
    )
    query_preview, clipped = preview(plan.message)
    event = MemoryRecallTurnEvent(
        at=now,
        scope=plan.scope,
        agent=opts.agent or agent_of(plan.scope),
        conversation_id=opts.conversation_id,
        turn=plan.turn,
        scope_match=opts.scope_match,
        query_preview=query_preview,
        query_clipped=clipped,
        count=report.count,
        chars=report.chars,
        budget_chars=report.budget_chars,
        record_ids=report.record_ids,
        repeated_ids=repeated,
        earlier=report.earlier,
        truncated=report.truncated,
        deferred=report.deferred,
        deferred_ids=deferred,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return TurnRecallResult(block=block, report=report, records=tuple(placed), event=event, hits=tuple(hits))


def assemble_turn_recall(
    store: MemoryStore,
    scope: Mapping[str, str],
    message: str,
    *,
    injected: Iterable[str],
    turn: int,
    now: datetime | None = None,
    sink: EventSink | None = None,
    **options: Unpack[TurnRecallArgs],
) -> TurnRecallResult:
    """The block for a later turn of a conversation: records related to ``message`` that
    none of ``injected`` (the ids every earlier block of the conversation held) already
    brought, within ``budget_chars``.

    ``turn`` is the turn's number (2 or more); ``options`` are :class:`TurnRecallOptions`'
    fields (``agent``, ``budget_chars``, ``max_hits``, ``scope_match``, ``show_ids``,
    ``conversation_id``); a value it refuses is a
    :class:`~memory_admin.errors.MemoryValidationError`. Emits one
    ``agent.memory.recall_turn`` event, to ``sink`` when given, else to the store's event
    log and sinks; a failing sink or log never fails the recall.
    """
    started, stamped = time.perf_counter(), now or utc_now()
    plan = _TurnPlan(store, scope, message, injected, turn, options)
    hits = run_steps(_gather(plan), lambda q: store.search(q, emit_event=False))
    result = _finish(plan, hits, now=stamped, started=started)
    send_event(store, sink, result.event)
    return result


async def aassemble_turn_recall(
    store: MemoryStore,
    scope: Mapping[str, str],
    message: str,
    *,
    injected: Iterable[str],
    turn: int,
    now: datetime | None = None,
    sink: EventSink | None = None,
    **options: Unpack[TurnRecallArgs],
) -> TurnRecallResult:
    """The async twin of :func:`assemble_turn_recall`: the same block, through ``asearch``."""
    started, stamped = time.perf_counter(), now or utc_now()
    plan = _TurnPlan(store, scope, message, injected, turn, options)
    hits = await arun_steps(_gather(plan), lambda q: store.asearch(q, emit_event=False))
    result = _finish(plan, hits, now=stamped, started=started)
    await asend_event(store, sink, result.event)
    return result


class RecallConversation:
    """One conversation's recalls, counted for the host: the first :meth:`recall` is turn
    1's full block (:func:`~memory_admin.recall.assemble_recall`), each later one only what
    is new (:func:`assemble_turn_recall`); :attr:`injected` grows with every block.

    ``options`` are turn 1's (:class:`~memory_admin.recall.RecallOptions`' fields: give it
    a ``conversation_id`` and every block's event carries it); ``turn_budget_chars`` and
    ``turn_max_hits`` bound the later blocks. One object per
    conversation, used by one task at a time.
    """

    def __init__(
        self,
        store: MemoryStore,
        scope: Mapping[str, str],
        *,
        turn_budget_chars: int = DEFAULT_TURN_BUDGET_CHARS,
        turn_max_hits: int = DEFAULT_TURN_MAX_HITS,
        **options: Unpack[RecallArgs],
    ) -> None:
        self.store = store
        self.scope = dict(scope)
        self.options = options
        self._turn: TurnRecallArgs = {
            "agent": options.get("agent"),
            "budget_chars": turn_budget_chars,
            "max_hits": turn_max_hits,
            "scope_match": options.get("scope_match", "visible"),
            "show_ids": options.get("show_ids", True),
            "conversation_id": options.get("conversation_id"),
            "include_promoted": options.get("include_promoted", False),
        }
        self.turn = 0
        self._injected: dict[str, None] = {}

    @property
    def injected(self) -> list[str]:
        """Every record id a block of this conversation has injected, first injected first."""
        return list(self._injected)

    def recall(self, message: str | None, *, now: datetime | None = None) -> RecallResult | TurnRecallResult:
        """The next turn's block for ``message``."""
        if self.turn == 0:
            first = assemble_recall(self.store, self.scope, message, now=now, **self.options)
            return self._took(first, first.report.record_ids)
        later = assemble_turn_recall(
            self.store,
            self.scope,
            message or "",
            injected=self._injected,
            turn=self.turn + 1,
            now=now,
            **self._turn,
        )
        return self._took(later, later.report.record_ids)

    async def arecall(self, message: str | None, *, now: datetime | None = None) -> RecallResult | TurnRecallResult:
        """The async twin of :meth:`recall`."""
        if self.turn == 0:
            first = await aassemble_recall(self.store, self.scope, message, now=now, **self.options)
            return self._took(first, first.report.record_ids)
        later = await aassemble_turn_recall(
            self.store,
            self.scope,
            message or "",
            injected=self._injected,
            turn=self.turn + 1,
            now=now,
            **self._turn,
        )
        return self._took(later, later.report.record_ids)

    def _took(self, result: RecallResult | TurnRecallResult, ids: list[str]) -> RecallResult | TurnRecallResult:
        self.turn += 1
        self._injected.update(dict.fromkeys(ids))
        return result


__all__ = [
    "DEFAULT_TURN_BUDGET_CHARS",
    "DEFAULT_TURN_MAX_HITS",
    "RecallConversation",
    "TurnRecallArgs",
    "TurnRecallOptions",
    "TurnRecallReport",
    "TurnRecallResult",
    "aassemble_turn_recall",
    "assemble_turn_recall",
]
