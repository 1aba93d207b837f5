"""One recall, entry by entry: what went into the block, in which tier, and what was
deferred and why — for an event's drill-down and for a preview (:func:`account_recall`),
plus the redaction a reader with partial grants needs (:func:`redact_block`).

Each record in or deferred carries a :class:`Rank`: why it stood where it did (its tier,
the message's words it shares, the store's score when the search gave one). Records
under the recall's scope that were never candidates are listed with why not
(:func:`not_candidates`), so every record there is accounted for exactly once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice

from memory_admin.errors import MemoryCorruptionError, MemoryValidationError
from memory_admin.events import MemoryRecallEvent
from memory_admin.recall import (
    DEFAULT_MAX_HITS,
    TIERS,
    entry_chars,
    profile_slice_chars,
    render_entry,
)
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.reports.listing import record_state
from memory_admin.scope import Scope, ScopeMatch, read_view, scope_matches, visible_to_agent
from memory_admin.store.protocol import AdminMemoryStore, MemoryStore, RecordListQuery
from memory_admin.tokenize import tokenize, unique_tokens

REASONS = {
    "profile_slice": "the profile slice was full: profile records are placed newest first into their own share "
    "of the budget, and this one did not fit",
    "budget": "the block's budget was spent: entries are placed in tier order, first fit, and this one did not fit",
    "not_read": "never a candidate: recall reads only as many profile records, newest first, as the profile slice "
    "could hold (plus one, to know whether anything is left out), and this older one was beyond them; "
    "the block's marker does not count it",
    # why a record under the recall's scope was never a candidate (not counted by the marker)
    "unwritten": "written after this recall",
    "superseded": "superseded by a newer version before this recall",
    "invalidated": "invalidated before this recall",
    "expired": "expired before this recall",
    "outside": "outside what the recall reads: a narrower scope's record, or another agent's private one",
    "outranked": "shares a word with the message, but the keyword search ranked it below the hits recall took "
    f"(at most {DEFAULT_MAX_HITS} by default)",
    "no_match": "no word in common with the message",
    "no_match_older": "no word in common with the message, and not among the newest records that stood in",
    "older": "not among the newest records recall took (there was no message to match)",
    "message_removed": "not known: the message was removed from the event log (a memory it held was forgotten)",
    "hidden": "outside the scopes you may see: whether it shared a word with the message is not shown",
}
NOT_CANDIDATE_ORDER = (
    "unwritten",
    "superseded",
    "invalidated",
    "expired",
    "outside",
    "not_read",
    "outranked",
    "no_match",
    "no_match_older",
    "older",
    "message_removed",
    "hidden",
)
CONTENT_REASONS = frozenset({"outranked", "no_match", "no_match_older"})
"""Reasons read off a record's words: never given for a record outside the reader's grants."""
UNREAD_SCAN = 500  # records read under each of a recall's scopes to find the ones it never took
HIDDEN_ENTRY = "- [a memory from a scope outside your grants: hidden here, {chars} characters in the real block]\n"
SCORE_PARTS = (
    ("keyword", "keyword_score"),
    ("semantic", "semantic_score"),
    ("context", "context_score"),
    ("length", "length_score"),
)
"""Contributions to a hit's score a store may report beside ``score`` (hybrid search:
shared words, closeness in meaning, the lift of what was stated with it, the prior for
how much it says), by the name shown and the hit's attribute; shown when present, never
required."""
COMMON_WORDS = frozenset(
    tokenize(
        "a an the and or but of to in on at by for from with about as is are was were be been being am do does "
        "did have has had i me my we our you your he she it its they them their this that these those what which "
        "who whom when where why how can could should would will shall may might must not no so if then than "
        "there here up out over into just also very too"
    )
)
"""Words the inspector does not list as a match (search still matches them: there are no
stopwords; BM25 weighs them next to nothing). Said apart, so "the" never reads as a reason."""
TIER_ORDER = {
    "profile": "newest first, into the profile slice",
    "pinned": "newest first (a proposed learning)",
    "hits": "by relevance to the message: its words, and its meaning when the store embeds",
    "recent": "newest first",
}


@dataclass(frozen=True)
class Rank:
    """Why an entry stood where it did: its ``tier``, its ``place`` in that tier (1-based;
    ``None`` for a deferred record), the message's ``words`` it shares, and the store's
    ``score`` with any ``parts`` of it when the search gave them, and each shared word's
    part of the keyword score (``weights``) when the search said. ``inferred`` marks a
    tier read off the record because the event did not log it."""

    tier: str | None
    place: int | None = None
    words: tuple[str, ...] = ()
    score: float | None = None
    parts: tuple[tuple[str, float], ...] = ()
    inferred: bool = False
    weights: tuple[tuple[str, float | None], ...] = ()

    @property
    def weighed_words(self) -> tuple[tuple[str, float | None], ...]:
        """Each shared word that tells something (not a :data:`COMMON_WORDS` one) with its
        part of the keyword score (``None``: not known)."""
        known = dict(self.weights)
        return tuple((word, known.get(word)) for word in self.words if word not in COMMON_WORDS)

    @property
    def common_words(self) -> tuple[str, ...]:
        """The shared words every text holds ("the", "what"): they match, and weigh next to nothing."""
        return tuple(word for word in self.words if word in COMMON_WORDS)

    @property
    def order(self) -> str:
        return TIER_ORDER.get(self.tier or "", "")


@dataclass(frozen=True)
class Entry:
    """One record of a recall. ``record`` is ``None`` when it is gone (deleted or erased
    since) or outside the reader's grants: then only its id is shown."""

    id: str
    record: MemoryRecord | None
    tier: str | None = None
    reason: str | None = None
    corrupt: bool = False
    rank: Rank | None = None

    @property
    def chars(self) -> int | None:
        return entry_chars(self.record) if self.record is not None else None

    @property
    def explanation(self) -> str:
        return REASONS.get(self.reason or "", self.reason or "")


def tier_summary(counts: Mapping[str, int]) -> str:
    """``profile 11 · hits 5``: the tiers that placed anything, in block order."""
    return " · ".join(f"{tier} {counts[tier]}" for tier in TIERS if counts.get(tier))


def tiers_in_order(counts: Mapping[str, int]) -> list[str]:
    """The tier of each block entry: entries come in tier order, ``counts[tier]`` each."""
    return [tier for tier in TIERS for _ in range(counts.get(tier, 0))]


def _load(store: MemoryStore, record_id: str, allows: Callable[[Scope], bool]) -> tuple[MemoryRecord | None, bool]:
    try:
        record = store.get(record_id)
    except MemoryCorruptionError:
        return None, True
    return (record if record is not None and allows(record.scope) else None), False


def matched_words(words: Sequence[str], record: MemoryRecord) -> tuple[str, ...]:
    """The message's ``words`` that ``record`` holds, as the keyword search matches them
    (one tokenizer, over content and tags)."""
    if not words:
        return ()
    held = set(tokenize(record.content + " " + " ".join(record.tags)))
    return tuple(word for word in words if word in held)


def score_parts(hit: MemoryHit) -> tuple[tuple[str, float], ...]:
    """The contributions to ``hit.score`` a store reported (see :data:`SCORE_PARTS`)."""
    parts = []
    for name, attribute in SCORE_PARTS:
        value = getattr(hit, attribute, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts.append((name, float(value)))
    return tuple(parts)


def _guess_tier(record: MemoryRecord | None, reason: str | None, words: Sequence[str], fallback: bool) -> str | None:
    """A deferred record's tier when the event did not log it, from what it must have been."""
    if reason == "profile_slice":
        return "profile"
    if record is None:
        return None
    if record.kind == "profile" and not matched_words(words, record):
        return "profile"
    if matched_words(words, record):
        return "hits"
    return "recent" if fallback else None


def block_entries(
    store: MemoryStore,
    allows: Callable[[Scope], bool],
    record_ids: Sequence[str],
    tiers: Sequence[str],
    *,
    words: Sequence[str] = (),
    hits: Mapping[str, MemoryHit] | None = None,
) -> list[Entry]:
    entries = []
    places: dict[str, int] = {}
    for index, record_id in enumerate(record_ids):
        record, corrupt = _load(store, record_id, allows)
        tier = tiers[index] if index < len(tiers) else None
        places[tier or ""] = places.get(tier or "", 0) + 1
        # a score explains a place only in the tier ordered by it
        hit = (hits or {}).get(record_id) if tier == "hits" else None
        rank = _rank(record, tier, places[tier or ""], words, hit)
        entries.append(Entry(record_id, record, tier=tier, corrupt=corrupt, rank=rank))
    return entries


def _rank(
    record: MemoryRecord | None,
    tier: str | None,
    place: int | None,
    words: Sequence[str],
    hit: MemoryHit | None,
    *,
    inferred: bool = False,
) -> Rank:
    if record is None:  # gone, or outside the grants: nothing drawn from its content
        return Rank(tier, place, inferred=inferred)
    return Rank(
        tier,
        place,
        words=matched_words(words, record),
        score=hit.score if hit is not None else None,
        parts=score_parts(hit) if hit is not None else (),
        inferred=inferred,
        weights=tuple((hit.terms or {}).items()) if hit is not None else (),
    )


def deferred_entries(
    store: MemoryStore,
    allows: Callable[[Scope], bool],
    record_ids: Sequence[str],
    reasons: Mapping[str, str],
    *,
    tiers: Mapping[str, str] | None = None,
    words: Sequence[str] = (),
    hits: Mapping[str, MemoryHit] | None = None,
    fallback: bool = False,
) -> list[Entry]:
    entries = []
    for record_id in record_ids:
        record, corrupt = _load(store, record_id, allows)
        reason = reasons.get(record_id)
        tier = (tiers or {}).get(record_id)
        guessed = tier is None
        if guessed:
            tier = _guess_tier(record, reason, words, fallback)
        rank = _rank(record, tier, None, words, (hits or {}).get(record_id), inferred=guessed and tier is not None)
        entries.append(Entry(record_id, record, reason=reason, corrupt=corrupt, rank=rank))
    return entries


def redact_block(block: str, records: Sequence[MemoryRecord], allows: Callable[[Scope], bool]) -> tuple[str, int]:
    """``block`` with each entry from outside the grants replaced by a placeholder line,
    and how many were replaced. Recall reads shared scopes above the one asked for, and a
    user granted only a part of a tenant must not read the tenant-wide records that way."""
    hidden = 0
    for record in records:
        if not allows(record.scope):
            line = render_entry(record)
            block = block.replace(line, HIDDEN_ENTRY.format(chars=len(line)), 1)
            hidden += 1
    return block, hidden


@dataclass(frozen=True)
class NotCandidates:
    """Records of one reason for never being a candidate."""

    reason: str
    entries: list[Entry]

    @property
    def explanation(self) -> str:
        return REASONS[self.reason]


@dataclass(frozen=True)
class RecallAccount:
    """One recall's accounting: its entries in block order (with their tiers and ranks),
    the deferred records (with their reasons), the records under its scope that were
    never candidates (with why not), the tier summary and how full the block was."""

    entries: list[Entry]
    deferred: list[Entry]
    tiers: str
    fill_percent: int
    profile_chars: int
    """The profile slice: the report's own, or for an event (which does not record the
    ratio) the slice at the default ratio."""
    others: list[Entry] = field(default_factory=list)
    """Records under the recall's scope that were neither in the block nor deferred,
    each with its reason (:data:`NOT_CANDIDATE_ORDER`), in that order."""
    others_complete: bool = True
    """False when a scan stopped at :data:`UNREAD_SCAN` records: more may be left out."""
    words: tuple[str, ...] = ()
    """The message's words, as the keyword search sees them."""
    scored: bool = False
    """True when the search gave scores (a preview); an event logs none."""

    @property
    def marker_count(self) -> int:
        """What the block's truncation marker counts: the deferred list, exactly."""
        return len(self.deferred)

    @property
    def scan_limit(self) -> int:
        return UNREAD_SCAN

    @property
    def unread(self) -> list[Entry]:
        """The profile records recall could see but never read (beyond its profile fetch)."""
        return [entry for entry in self.others if entry.reason == "not_read"]

    @property
    def groups(self) -> list[NotCandidates]:
        by_reason: dict[str, list[Entry]] = {}
        for entry in self.others:
            by_reason.setdefault(entry.reason or "", []).append(entry)
        return [NotCandidates(reason, by_reason[reason]) for reason in NOT_CANDIDATE_ORDER if reason in by_reason]


def account_recall(
    store: AdminMemoryStore,
    allows: Callable[[Scope], bool],
    event: MemoryRecallEvent,
    *,
    hits: Sequence[MemoryHit] = (),
    message: str | None = None,
) -> RecallAccount:
    """The accounting of a recall from its event — a logged one, or a fresh recall's
    (:attr:`~memory_admin.recall.RecallResult.event`, with its search's ``hits``, whose
    scores explain the hits tier, and ``message``, the text it was given, which the event
    clips); records that ``allows`` refuses, or that are gone, are shown by id only."""
    by_id = {hit.record.id: hit for hit in hits}
    if message is None:
        message = event.query_preview
    profile_chars = (
        event.profile_budget_chars
        if event.profile_budget_chars is not None
        else profile_slice_chars(event.budget_chars)
    )
    words = tuple(unique_tokens(message or ""))
    tiers = {str(tier): count for tier, count in event.tiers.items()}
    entries = block_entries(store, allows, event.record_ids, tiers_in_order(tiers), words=words, hits=by_id)
    deferred = deferred_entries(
        store,
        allows,
        event.deferred_ids,
        event.deferred_reasons,
        tiers=event.deferred_tiers,
        words=words,
        hits=by_id,
        fallback=event.fallback,
    )
    others, complete = not_candidates(
        store,
        allows,
        scope=event.scope,
        agent=event.agent,
        scope_match=event.scope_match,
        at=event.at,
        taken={*event.record_ids, *event.deferred_ids},
        words=None if event.redacted else words,
        fallback=event.fallback,
        reads_profile=profile_chars > 0,
    )
    return RecallAccount(
        entries=entries,
        deferred=deferred,
        tiers=tier_summary(tiers),
        fill_percent=round(100 * event.chars / event.budget_chars) if event.budget_chars else 0,
        profile_chars=profile_chars,
        others=others,
        others_complete=complete,
        words=words,
        scored=bool(by_id),
    )


def _under(store: AdminMemoryStore, scope: Scope, match: ScopeMatch) -> Iterator[MemoryRecord]:
    query = RecordListQuery.model_validate(
        {
            "search": {"scope": scope, "scope_match": match, "include_invalidated": True, "limit": UNREAD_SCAN},
            "include_expired": True,
        }
    )
    return islice(store.iter_records(query, page_size=UNREAD_SCAN), UNREAD_SCAN + 1)


def not_candidates(
    store: AdminMemoryStore,
    allows: Callable[[Scope], bool],
    *,
    scope: Scope,
    agent: str | None,
    scope_match: ScopeMatch,
    at: datetime,
    taken: Iterable[str],
    words: Sequence[str] | None,
    fallback: bool,
    reads_profile: bool = True,
) -> tuple[list[Entry], bool]:
    """The records under ``scope`` (and shared above it) that a recall at ``at`` neither
    placed nor deferred (``taken``), each with why it was not a candidate, in
    :data:`NOT_CANDIDATE_ORDER`; and whether the scan saw every one. ``words`` is
    ``None`` when the message is no longer known."""
    try:
        view = read_view(scope, agent, scope_match)
    except MemoryValidationError:
        view = scope
    seen = set(taken)
    found: list[Entry] = []
    complete = True
    for listing in (_under(store, scope, "subset"), _under(store, view, "visible")):
        read = 0
        for record in listing:
            read += 1
            if read > UNREAD_SCAN:
                complete = False
                break
            if record.id in seen:
                continue
            seen.add(record.id)
            shown = record if allows(record.scope) else None
            reason = _why_not(record, view, scope_match, agent, at, words, fallback, reads_profile)
            if shown is None and reason in CONTENT_REASONS:
                reason = "hidden"  # the reason would tell what a record outside the grants says
            found.append(Entry(record.id, shown, reason=reason, rank=_rank(shown, None, None, words or (), None)))
    order = {reason: index for index, reason in enumerate(NOT_CANDIDATE_ORDER)}
    found.sort(key=lambda entry: (order[entry.reason or ""], -_created(entry)))
    return found, complete


def _created(entry: Entry) -> float:
    return entry.record.created_at.timestamp() if entry.record is not None else 0.0


def _why_not(
    record: MemoryRecord,
    view: Scope,
    scope_match: ScopeMatch,
    agent: str | None,
    at: datetime,
    words: Sequence[str] | None,
    fallback: bool,
    reads_profile: bool,
) -> str:
    state = record_state(record, at)
    if state != "live":
        return state
    if not (scope_matches(record.scope, view, scope_match) and visible_to_agent(record.scope, agent)):
        return "outside"
    if record.kind == "profile" and reads_profile:
        return "not_read"
    if words is None:
        return "message_removed"
    if not words:
        return "older"
    if matched_words(words, record):
        return "outranked"
    return "no_match_older" if fallback else "no_match"
