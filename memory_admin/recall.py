"""Turn-1 recall: the budgeted block of memories a host puts in front of an agent.

Call :func:`assemble_recall` once the first user message exists (it is the search
query) and before the first prompt is rendered; put ``result.block`` in the prompt.
The block is built in four tiers, in this order:

1. **profile** — ``kind="profile"`` records, newest first, inside their own slice of
   the budget (``profile_budget_ratio``, 40 % by default), so a bloated profile cannot
   starve the tier that answers the user's actual question;
2. **pinned** — up to ``pin_candidates`` records that carry a ``target`` (proposed
   learnings), newest first; off by default;
3. **hits** — records matching the message (its words, and its meaning when the store
   embeds: the store's default search, without its relevance floor — the closest few
   come in whatever their similarity), most relevant first (up to ``max_hits``). A
   profile record the slice deferred may come back here, in one of those places, if it
   matches;
4. **recent** — when the message matched nothing new (or there is no message), the
   newest non-profile records, and the block says that is what they are.

The budget is in characters and covers the whole block: its delimiters, header,
section headings and truncation marker. Entries are whole records, placed first-fit
within each tier: an entry that does not fit is *deferred* (listed in the report with
its reason) and a shorter one after it may still go in. Whenever anything is deferred
the block says so in a marker line; truncation is never silent. Invalidated and
expired records never appear (the store's search excludes them), nor do records promoted
into the agent's composition (``include_promoted`` brings them back); the agent convention
is applied inside the store query, so a tier is never short because another agent's
records took its places; no record appears twice.

Reads use *visible* match by default: the bound scope's own records plus records
shared above it (``{tenant}``), never a sibling's, and — when ``agent`` is given —
that agent's private records too. That is the toolbox's read view as well, so what an
agent saves through :class:`~memory_admin.toolbox.MemoryToolbox` is what it recalls.

Every assembly emits one ``agent.memory.recall`` event: to the store's event log and
sinks (``store.emit``), or only to ``sink`` when one is given. The store searches made
along the way do not emit search events of their own; the recall event lists every
record that went in and every one deferred.

Why one module: the options, the gathering steps, the budgeted layout and the report
are one algorithm read top to bottom; its sync and async entry points share all of it.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from memory_admin.errors import MemoryValidationError
from memory_admin.events import AnyEvent, EventSink, MemoryRecallEvent, agent_of, deliver, preview
from memory_admin.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    holds_lone_surrogate,
    parse_model,
    utc_now,
)
from memory_admin.scope import Scope, ScopeMatch, canonical_scope, read_view
from memory_admin.steps import Steps, arun_steps, run_steps
from memory_admin.store.protocol import EventLogStore, MemoryStore
from memory_admin.store.ranking import record_tokens
from memory_admin.tokenize import unique_tokens

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_BUDGET_CHARS = 4000
DEFAULT_PROFILE_BUDGET_RATIO = 0.4
DEFAULT_MAX_HITS = 10
MIN_BUDGET_CHARS = 300
"""Room for the delimiters, the header and a truncation marker, so a block can always
say that something was left out."""

RECALL_QUERY_CHARS = 1000
"""User text longer than this is clipped before it is searched (head and tail kept)."""

Tier = Literal["profile", "pinned", "hits", "recent"]
DeferralReason = Literal["profile_slice", "budget"]
TIERS: tuple[Tier, ...] = ("profile", "pinned", "hits", "recent")

BLOCK_OPEN = "<memory>\n"
BLOCK_CLOSE = "</memory>"
HEADER = (
    "Memories from earlier conversations, each with the date it was saved, its kind and its id. "
    "They may be out of date: what the user says now wins.\n"
)
HEADER_WITHOUT_IDS = (
    "Memories from earlier conversations, each with the date it was saved and its kind. "
    "They may be out of date: what the user says now wins.\n"
)
HEADINGS: dict[str, str] = {
    "profile": "Profile:\n",
    "pinned": "Proposed learnings (pinned for review):\n",
    "hits": "Related to the user's message:\n",
    "recent:no_query": "Most recent (there was no message to match):\n",
    "recent:no_match": "Most recent (nothing matched the message's keywords):\n",
    "recent:no_new_match": "Most recent (nothing else matched the message's keywords):\n",
}


def _header(show_ids: bool) -> str:
    return HEADER if show_ids else HEADER_WITHOUT_IDS


def frame_chars(*, show_ids: bool = True) -> int:
    """Characters every non-empty block spends on its delimiters and header."""
    return len(BLOCK_OPEN) + len(_header(show_ids)) + len(BLOCK_CLOSE)


# a record's content must not be able to close the block and speak outside it
_DELIMITER = re.compile(r"<(/?)(memory)", re.IGNORECASE)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RecallOptions(_Frozen):
    """How a recall block is assembled: every argument of :func:`assemble_recall` but the
    store, the scope, the message, ``now`` and ``sink`` (which say where and when, not how)."""

    agent: str | None = None
    """Applies the agent convention: the agent's own records join the shared ones."""
    budget_chars: int = Field(DEFAULT_BUDGET_CHARS, ge=MIN_BUDGET_CHARS)
    """Bounds ``len(result.block)``, delimiters, header and marker included."""
    profile_budget_ratio: float = Field(DEFAULT_PROFILE_BUDGET_RATIO, ge=0.0, le=1.0)
    """The share of the budget that bounds the profile tier."""
    pin_candidates: int = Field(0, ge=0)
    """Targeted records pinned (0: off)."""
    max_hits: int = Field(DEFAULT_MAX_HITS, ge=0)
    """Bounds the hits and the recent tiers."""
    scope_match: ScopeMatch = "visible"
    show_ids: bool = True
    """Record ids in the entries, so an agent can supersede what it recalls."""
    preview_run: bool = False
    """Marks the event as a preview, kept out of the dashboard's production graphs."""
    conversation_id: str | None = Field(None, min_length=1, max_length=200)
    """The conversation this block opens: its event carries it, and so do its later
    turns' (:mod:`memory_admin.recall_turns`), so the dashboard shows them together."""
    include_promoted: bool = False
    """Also records promoted into the agent's composition (by default they stay out: the
    composition carries them, :func:`~memory_admin.learning.compose`)."""


class RecallArgs(TypedDict, total=False):
    """:class:`RecallOptions` as keyword arguments (what a type checker checks them against)."""

    agent: str | None
    budget_chars: int
    profile_budget_ratio: float
    pin_candidates: int
    max_hits: int
    scope_match: ScopeMatch
    show_ids: bool
    preview_run: bool
    conversation_id: str | None
    include_promoted: bool


class RecallReport(_Frozen):
    """What went into a recall block and what did not, and why."""

    scope: Scope
    agent: str | None
    scope_match: ScopeMatch
    count: int
    """Entries in the block."""
    chars: int
    """``len(block)``; never more than ``budget_chars``."""
    budget_chars: int
    profile_budget_chars: int
    truncated: bool
    """True when any candidate was deferred; the block then carries a marker line."""
    deferred: int
    deferred_ids: list[str]
    deferred_reasons: dict[str, DeferralReason]
    record_ids: list[str]
    """The ids in the block, in block order."""
    tiers: dict[Tier, int]
    """Entries per tier."""
    fallback: bool
    """True when the recent tier stood in for keyword hits."""
    query_clipped: bool
    """True when the user text was longer than :data:`RECALL_QUERY_CHARS` and clipped."""
    deferred_tiers: dict[str, Tier] = {}
    """The tier each deferred record was a candidate of."""
    conversation_id: str | None = None

    def event(self, *, at: datetime, query: str | None, preview_run: bool, duration_ms: float) -> MemoryRecallEvent:
        """The ``agent.memory.recall`` event of this report: its own fields, and the when,
        the message (clipped for the log) and the duration of the recall it reports."""
        query_preview, preview_clipped = preview(query)
        return MemoryRecallEvent(
            at=at,
            agent=self.agent or agent_of(self.scope),
            query_preview=query_preview,
            query_clipped=preview_clipped,
            preview_run=preview_run,
            duration_ms=duration_ms,
            **self.model_dump(include=_EVENT_FIELDS),
        )


_EVENT_FIELDS = (set(MemoryRecallEvent.model_fields) & set(RecallReport.model_fields)) - {"agent", "query_clipped"}
"""What a recall's event takes from its report as it is (the report's ``query_clipped`` is
about the search's clip, the event's about its preview's)."""


class RecallResult(_Frozen):
    """The finished block, its report, the records in block order, and the event."""

    block: str
    report: RecallReport
    records: tuple[MemoryRecord, ...]
    event: MemoryRecallEvent
    hits: tuple[MemoryHit, ...] = ()
    """The keyword search's answers, in rank order, with whatever scores the store gave
    (an inspector explains the hits tier's order from them)."""


def clip_query(text: str, limit: int = RECALL_QUERY_CHARS) -> tuple[str, bool]:
    """``text`` with whitespace collapsed, clipped to about ``limit`` characters.

    A long first message is usually a paste with the question at one end, so the head
    and the tail are kept, each cut at a word boundary.
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat, False
    half = limit // 2
    head = flat[:half].rsplit(" ", 1)[0]
    tail = flat[-half:].split(" ", 1)[-1]
    return f"{head} … {tail}", True


def _inline(content: str) -> str:
    flat = " ".join(content.split())
    return _DELIMITER.sub(r"‹\1\2", flat) if "<" in flat else flat


def render_entry(record: MemoryRecord, *, show_ids: bool = True) -> str:
    """One record as a block line: ``- [2026-01-05 preference mem_…] content``, dated when
    the fact was stated (its write time, unless it was imported from an earlier talk)."""
    ref = f" {record.id}" if show_ids else ""
    return f"- [{record.observed_at.date().isoformat()} {record.kind}{ref}] {_inline(record.content)}\n"


def entry_chars(record: MemoryRecord, *, show_ids: bool = True) -> int:
    """Characters ``record`` takes in a block (its section heading aside)."""
    return len(render_entry(record, show_ids=show_ids))


def truncation_marker(deferred: int) -> str:
    noun = "memory" if deferred == 1 else "memories"
    return f"[… {deferred} more {noun} did not fit the recall budget]\n"


def profile_slice_chars(
    budget_chars: int = DEFAULT_BUDGET_CHARS, profile_budget_ratio: float = DEFAULT_PROFILE_BUDGET_RATIO
) -> int:
    """The characters of a block's budget reserved for its profile tier."""
    return int(budget_chars * profile_budget_ratio)


class ProfilePlacement(_Frozen):
    """Where :func:`place_profile` put each profile record."""

    admitted: tuple[MemoryRecord, ...]
    """In block order (newest first)."""
    deferred: dict[str, DeferralReason]
    """Record id → why it stayed out, newest first."""
    used_chars: int
    """What the admitted entries take, their section heading included."""
    total_chars: int
    """What the whole tier would take, heading included (0 for no records)."""


def place_profile(
    profiles: Iterable[MemoryRecord],
    slice_chars: int,
    *,
    room: int | None = None,
    size: Callable[[MemoryRecord], int] = entry_chars,
) -> ProfilePlacement:
    """Place profile records as a recall block does: newest first, first fit, into
    ``slice_chars`` (the section heading is charged with the first entry admitted).
    A record that would overflow the slice is deferred for ``profile_slice``; one that
    fits the slice but not ``room`` (what is left of the whole block) for ``budget``.

    This is the one placement: :func:`assemble_recall` lays its profile tier out with
    it, and reports replay it to tell whether a scope's profile fits without assembling
    a block. ``size`` is a record's entry length (pass a cached one when replaying many
    scopes that share records).
    """
    heading = len(HEADINGS["profile"])
    ordered = sorted(profiles, key=lambda r: r.created_at, reverse=True)
    admitted: list[MemoryRecord] = []
    deferred: dict[str, DeferralReason] = {}
    used, total = 0, heading if ordered else 0
    for record in ordered:
        chars = size(record)
        total += chars
        cost = chars + (0 if admitted else heading)
        if used + cost > slice_chars:
            deferred.setdefault(record.id, "profile_slice")
        elif room is not None and used + cost > room:
            deferred.setdefault(record.id, "budget")
        else:
            admitted.append(record)
            used += cost
    return ProfilePlacement(admitted=tuple(admitted), deferred=deferred, used_chars=used, total_chars=total)


# --- assembly ----------------------------------------------------------------------


class _Plan:
    """Validated arguments, and the store queries each tier needs."""

    def __init__(
        self, store: MemoryStore, scope: Mapping[str, str], query: str | None, options: RecallArgs | RecallOptions
    ) -> None:
        self.options = opts = parse_model(RecallOptions, options, what="recall options")
        self.scope = canonical_scope(scope)
        self.agent = opts.agent
        self.scope_match = opts.scope_match
        self.view = read_view(self.scope, opts.agent, opts.scope_match)
        self.budget_chars = opts.budget_chars
        self.profile_chars = profile_slice_chars(opts.budget_chars, opts.profile_budget_ratio)
        self.pin_candidates = opts.pin_candidates
        self.max_hits = opts.max_hits
        self.raw_query = query = _message(query)
        clipped, self.query_clipped = clip_query(query) if query is not None else ("", False)
        self.query_terms = frozenset(unique_tokens(clipped))
        self.query = clipped if self.query_terms else None
        capabilities = store.capabilities()
        self.max_limit = capabilities.max_limit
        # promoted records are part of the agent's composition: not quoted at it again
        self.promoted: bool | None = False if capabilities.promotion and not opts.include_promoted else None
        self.by_meaning = capabilities.search != "keyword"
        """Hits come by meaning too (a store with an embedder): any record may be one."""
        self.show_ids = show_ids = opts.show_ids
        self.room = opts.budget_chars - frame_chars(show_ids=show_ids)
        """What the entries, headings and any marker may take."""
        self._lines: dict[str, str] = {}

    def line(self, record: MemoryRecord) -> str:
        """``record``'s entry, rendered once per recall however often it is placed."""
        text = self._lines.get(record.id)
        if text is None:
            text = self._lines[record.id] = render_entry(record, show_ids=self.show_ids)
        return text

    def size(self, record: MemoryRecord) -> int:
        return len(self.line(record))

    def profile_holders(self, profile: list[MemoryRecord]) -> list[MemoryRecord]:
        """The profile records the block will hold before its hits. When the slice fits
        the block's room even with the largest marker reserved, that is the slice's own
        placement, whatever else is deferred; otherwise it is known only at layout, and
        every profile record holds a place."""
        marker_room = len(truncation_marker(4 * self.max_limit))  # four searches' candidates at most
        if self.profile_chars <= self.room - marker_room:
            return list(place_profile(profile, self.profile_chars, size=self.size).admitted)
        return profile

    def search(self, limit: int, **filters: object) -> MemorySearchQuery:
        return parse_model(
            MemorySearchQuery,
            {
                "scope": self.view,
                "scope_match": self.scope_match,
                "agent": self.agent,
                "limit": max(0, min(limit, self.max_limit)),
                "promoted": self.promoted,
                **filters,
            },
            what="recall search",
        )


def _message(query: object) -> str | None:
    """The first user message as recall takes it: text that is valid Unicode, or ``None``."""
    if query is None:
        return None
    if isinstance(query, str) and not holds_lone_surrogate(query):
        return query
    raise MemoryValidationError(
        "The message to recall for is text (valid Unicode: no lone surrogates) or None.",
        [{"loc": "query", "msg": "expected valid Unicode text"}],
    )


class _Layout:
    """One first-fit placement of the tiers' candidates into ``room`` characters."""

    def __init__(self, plan: _Plan, room: int, size: Callable[[MemoryRecord], int]) -> None:
        self.plan = plan
        self.room = room
        self.size = size
        self.used = 0
        self.sections: dict[str, list[MemoryRecord]] = {}
        self.placed: dict[str, Tier] = {}
        self.deferred: dict[str, DeferralReason] = {}
        self.deferred_tiers: dict[str, Tier] = {}

    def place(self, record: MemoryRecord, tier: Tier, heading: str) -> None:
        if record.id in self.placed:
            return
        cost = self.size(record) + (0 if heading in self.sections else len(HEADINGS[heading]))
        if self.used + cost > self.room:
            self.deferred.setdefault(record.id, "budget")
            self.deferred_tiers.setdefault(record.id, tier)
            return
        self.used += cost
        self.sections.setdefault(heading, []).append(record)
        self.placed[record.id] = tier
        self.deferred.pop(record.id, None)  # a deferred profile record earned its place as a hit
        self.deferred_tiers.pop(record.id, None)


class _Candidates:
    def __init__(self) -> None:
        self.profile: list[MemoryRecord] = []
        self.pinned: list[MemoryRecord] = []
        self.hits: list[MemoryRecord] = []
        self.recent: list[MemoryRecord] = []
        self.recent_heading = "recent:no_query"
        self.fallback = False
        self.scored: tuple[MemoryHit, ...] = ()

    def count(self) -> int:
        return len({r.id for tier in (self.profile, self.pinned, self.hits, self.recent) for r in tier})


def shares_term(record: MemoryRecord, terms: frozenset[str]) -> bool:
    """Whether ``record`` holds one of these match terms (its content, tags and stated
    day, as keyword search matches it)."""
    return not terms.isdisjoint(record_tokens(record.content, record.tags, record.observed_at))


def _gather(plan: _Plan) -> Steps[MemorySearchQuery, _Candidates]:
    """The store queries, as a generator: the sync and async drivers run the same steps."""
    found = _Candidates()
    if plan.profile_chars > 0:
        # more than the slice can hold, so "did everything fit?" has an honest answer
        smallest = len("- [2026-01-05 profile] x\n") + (len(" mem_") + 26 if plan.show_ids else 0)
        hits = yield plan.search(plan.profile_chars // smallest + 1, kinds=["profile"])
        found.profile = [hit.record for hit in hits]
    taken = {record.id for record in found.profile}
    if plan.pin_candidates > 0:
        hits = yield plan.search(plan.pin_candidates + len(taken), targeted=True)
        found.pinned = [hit.record for hit in hits if hit.record.id not in taken][: plan.pin_candidates]
        taken |= {record.id for record in found.pinned}
    new_hits: list[MemoryRecord] = []
    if plan.query is not None and plan.max_hits > 0:
        # the records placed before the hits hold places among them, so enough more are
        # asked for: the pinned ones and the profile records the slice admits (one it
        # defers is a hit like any other). A keyword search returns only records sharing
        # a term with the message, so there only the holders sharing one can take a place
        holders = [*plan.profile_holders(found.profile), *found.pinned]
        held = {record.id for record in holders}
        rivals = held if plan.by_meaning else {r.id for r in holders if shares_term(r, plan.query_terms)}
        # the hits tier takes the best few by the store's ranking, with no relevance floor:
        # what a search returns as matching is the store's rule, what recall injects is its own
        hits = yield plan.search(plan.max_hits + len(rivals), query=plan.query, relevance="rank")
        found.scored = tuple(hits)
        pinned = {record.id for record in found.pinned}
        for hit in hits:
            if hit.record.id in pinned:
                continue
            if hit.record.id not in held:
                if len(new_hits) == plan.max_hits:
                    break
                new_hits.append(hit.record)
            found.hits.append(hit.record)
        if not new_hits:
            found.recent_heading = "recent:no_new_match" if hits else "recent:no_match"
    if plan.query is None and plan.raw_query is not None and plan.raw_query.strip():
        found.recent_heading = "recent:no_match"  # text without a single keyword
    if not new_hits and plan.max_hits > 0:
        found.fallback = True
        hits = yield plan.search(plan.max_hits + len(found.pinned), kinds=["fact", "preference", "episode"])
        seen = taken | {record.id for record in found.hits}
        found.recent = [hit.record for hit in hits if hit.record.id not in seen][: plan.max_hits]
    return found


def _layout(plan: _Plan, found: _Candidates, room: int) -> _Layout:
    layout = _Layout(plan, room, plan.size)
    # the profile tier comes first, so it is placed against the slice and the whole room
    profile = place_profile(found.profile, plan.profile_chars, room=room, size=plan.size)
    layout.deferred.update(profile.deferred)
    layout.deferred_tiers.update(dict.fromkeys(profile.deferred, "profile"))
    for record in profile.admitted:
        layout.place(record, "profile", "profile")
    for record in found.pinned:
        layout.place(record, "pinned", "pinned")
    for record in found.hits:
        layout.place(record, "hits", "hits")
    for record in found.recent:
        layout.place(record, "recent", found.recent_heading)
    return layout


def _finish(plan: _Plan, found: _Candidates, *, now: datetime, started: float) -> RecallResult:
    layout = _layout(plan, found, plan.room)
    if layout.deferred:
        # something stays out, so the marker needs room; reserve it for the largest
        # count possible and lay out again
        layout = _layout(plan, found, plan.room - len(truncation_marker(found.count())))
    order = ["profile", "pinned", "hits", found.recent_heading]
    records = tuple(record for heading in order for record in layout.sections.get(heading, []))
    if records or layout.deferred:
        body = "".join(
            HEADINGS[heading] + "".join(map(plan.line, layout.sections[heading]))
            for heading in order
            if heading in layout.sections
        )
        marker = truncation_marker(len(layout.deferred)) if layout.deferred else ""
        block = BLOCK_OPEN + _header(plan.show_ids) + body + marker + BLOCK_CLOSE
    else:
        block = ""  # nothing remembered: nothing to put in the prompt
    tiers: dict[Tier, int] = {tier: 0 for tier in TIERS}
    for tier in layout.placed.values():
        tiers[tier] += 1
    report = RecallReport(
        scope=plan.scope,
        agent=plan.agent,
        scope_match=plan.scope_match,
        count=len(records),
        chars=len(block),
        budget_chars=plan.budget_chars,
        profile_budget_chars=plan.profile_chars,
        truncated=bool(layout.deferred),
        deferred=len(layout.deferred),
        deferred_ids=list(layout.deferred),
        deferred_reasons=dict(layout.deferred),
        record_ids=[record.id for record in records],
        tiers=tiers,
        fallback=found.fallback,
        query_clipped=plan.query_clipped,
        deferred_tiers={record_id: layout.deferred_tiers[record_id] for record_id in layout.deferred},
        conversation_id=plan.options.conversation_id,
    )
    event = report.event(
        at=now,
        query=plan.raw_query,
        preview_run=plan.options.preview_run,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return RecallResult(block=block, report=report, records=records, event=event, hits=found.scored)


def send_event(store: MemoryStore, sink: EventSink | None, event: AnyEvent) -> None:
    """A recall's event: to ``sink`` when given, else to the store's event log and sinks
    (a failing sink or log never fails the recall)."""
    if sink is not None:
        deliver([sink], event)
    elif isinstance(store, EventLogStore):
        store.emit(event)


async def asend_event(store: MemoryStore, sink: EventSink | None, event: AnyEvent) -> None:
    """:func:`send_event` for async callers: a sink runs on the caller's thread, the event
    log's blocking write in a worker thread."""
    if sink is not None:
        deliver([sink], event)
    elif isinstance(store, EventLogStore):
        await asyncio.to_thread(store.emit, event)


def assemble_recall(
    store: MemoryStore,
    scope: Mapping[str, str],
    query: str | None = None,
    *,
    now: datetime | None = None,
    sink: EventSink | None = None,
    **options: Unpack[RecallArgs],
) -> RecallResult:
    """Assemble the turn-1 recall block for ``scope`` and the first user message.

    ``query`` is the first user message (``None`` for a profile + recency block); it
    is clipped to :data:`RECALL_QUERY_CHARS` first. ``options`` are
    :class:`RecallOptions`' fields (``agent``, ``budget_chars``, ``profile_budget_ratio``,
    ``pin_candidates``, ``max_hits``, ``scope_match``, ``show_ids``, ``preview_run``);
    one it refuses is a :class:`~memory_admin.errors.MemoryValidationError`. ``now``
    stamps the event (default: when assembly starts); ``sink`` receives the event instead
    of the store.

    Returns a :class:`RecallResult`; ``block`` is ``""`` when nothing is remembered.
    Store errors (busy, corruption) propagate as :class:`~memory_admin.errors.MemoryStoreError`;
    a failing sink or event log never fails the recall.
    """
    started, stamped = time.perf_counter(), now or utc_now()  # stamped before any read, like a search's event
    plan = _Plan(store, scope, query, options)
    found = run_steps(_gather(plan), lambda q: store.search(q, emit_event=False))
    result = _finish(plan, found, now=stamped, started=started)
    send_event(store, sink, result.event)
    return result


async def aassemble_recall(
    store: MemoryStore,
    scope: Mapping[str, str],
    query: str | None = None,
    *,
    now: datetime | None = None,
    sink: EventSink | None = None,
    **options: Unpack[RecallArgs],
) -> RecallResult:
    """The async twin of :func:`assemble_recall`: the same block, through ``asearch``."""
    started, stamped = time.perf_counter(), now or utc_now()
    plan = _Plan(store, scope, query, options)
    found = await arun_steps(_gather(plan), lambda q: store.asearch(q, emit_event=False))
    result = _finish(plan, found, now=stamped, started=started)
    await asend_event(store, sink, result.event)
    return result


__all__ = [
    "DEFAULT_BUDGET_CHARS",
    "DEFAULT_MAX_HITS",
    "DEFAULT_PROFILE_BUDGET_RATIO",
    "MIN_BUDGET_CHARS",
    "RECALL_QUERY_CHARS",
    "ProfilePlacement",
    "RecallArgs",
    "RecallOptions",
    "RecallReport",
    "RecallResult",
    "aassemble_recall",
    "asend_event",
    "assemble_recall",
    "clip_query",
    "entry_chars",
    "frame_chars",
    "place_profile",
    "profile_slice_chars",
    "render_entry",
    "send_event",
    "truncation_marker",
]
