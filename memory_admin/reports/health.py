"""The gardening report for one scope: what a curator should look at, found with
bounded work so the page stays fast on a big store.

Each check reads at most a fixed number of rows or events and says
how many it checked out of how many there are:

- **near-duplicates** — live records in the same scope whose word sets (the store's
  own :func:`~memory_admin.tokenize.tokenize`) overlap by at least 80 % (Jaccard),
  found with a prefix-filtered similarity join rather than comparing every pair;
- **key conflicts** — two live records on one key in one scope: the same slot (which
  a supersede should have prevented) or the same key across kinds;
- **expired, not yet swept** — what :meth:`sweep_expired` would delete;
- **never recalled** — live records, older than the recall window the check read, that
  no recall event of the tenant in that window injected;
- **profile overflow** — scopes whose profile records overflow the recall profile
  slice, so a recall there defers them unless its message matches them, beside what the
  logged recalls did (:mod:`memory_admin.reports.profile_slice`, which replays recall's
  own placement);
- **no usable provenance** — every provenance field is a placeholder ("unknown", "-");
- **corrupt rows** — rows that no longer validate (:meth:`find_corrupt`).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from memory_admin.errors import CapabilityError, MemoryCorruptionError
from memory_admin.recall import entry_chars
from memory_admin.records import MemoryRecord, Provenance
from memory_admin.reports.profile_slice import ProfileSlice, Truncation, profile_slice, truncation
from memory_admin.reports.recall_stats import read_recall_events
from memory_admin.scope import TENANT_KEY, Scope, format_scope, scope_json
from memory_admin.store.protocol import AdminMemoryStore, CorruptRecord, EventLogStore, RecordListQuery, ScopeCounts
from memory_admin.tokenize import tokenize

LIVE_SCAN = 5_000  # live records read for the record checks, newest first
EXPIRED_SCAN = 2_000  # records (every state) read to list expired ones
EVENT_SCAN = 20_000  # recall events read for "never recalled"
PROFILE_SCAN = 1_000  # live profile records read to find the scopes recall runs in
PROFILE_SCOPES = 500  # scopes whose profile slice is replayed
CORRUPT_SCAN = 5_000  # rows validated by find_corrupt (oldest first)
SHOWN = 50  # entries listed per check
SHOWN_DEFERRED = 5  # deferred profile records named per overflowing scope
SIMILARITY = 0.8
MIN_TOKENS = 3  # shorter records are too short to call near-duplicates
PAGE = 1_000

PLACEHOLDERS = frozenset(
    {"unknown", "none", "null", "nil", "n/a", "na", "undefined", "unspecified", "-", "--", "?", "tbd", "todo", "x"}
)

T = TypeVar("T")


# --- the pure checks ------------------------------------------------------------------


@dataclass(frozen=True)
class DuplicatePair:
    older: MemoryRecord
    newer: MemoryRecord
    similarity: float

    @property
    def percent(self) -> int:
        return math.floor(100 * self.similarity)


def near_duplicates(
    records: Iterable[MemoryRecord], *, threshold: float = SIMILARITY, min_tokens: int = MIN_TOKENS
) -> list[DuplicatePair]:
    """Pairs of records in the same scope with Jaccard similarity of their word sets
    at least ``threshold``, most similar first.

    A prefix-filtered similarity join: with tokens ordered rarest first, two sets that
    reach ``threshold`` must share a token among the first ``|A| - ceil(threshold·|A|) + 1``
    of each, so only records sharing such a token are compared.
    """
    by_scope: dict[str, list[tuple[MemoryRecord, frozenset[str]]]] = defaultdict(list)
    for record in records:
        tokens = frozenset(tokenize(record.content))
        if len(tokens) >= min_tokens:
            by_scope[scope_json(record.scope)].append((record, tokens))
    pairs: list[DuplicatePair] = []
    for group in by_scope.values():
        frequency = Counter(token for _, tokens in group for token in tokens)
        index: dict[str, list[int]] = defaultdict(list)
        for i, (record, tokens) in enumerate(group):
            ordered = sorted(tokens, key=lambda t: (frequency[t], t))
            prefix = ordered[: len(ordered) - math.ceil(threshold * len(ordered)) + 1]
            candidates = {j for token in prefix for j in index[token]}
            for j in sorted(candidates):
                other, other_tokens = group[j]
                shorter, longer = sorted((len(tokens), len(other_tokens)))
                if shorter < threshold * longer:
                    continue  # the size bound alone rules the pair out
                similarity = len(tokens & other_tokens) / len(tokens | other_tokens)
                if similarity >= threshold:
                    older, newer = sorted((record, other), key=lambda r: (r.created_at, r.id))
                    pairs.append(DuplicatePair(older, newer, similarity))
            for token in prefix:
                index[token].append(i)
    return sorted(pairs, key=lambda p: (p.similarity, p.newer.created_at), reverse=True)


@dataclass(frozen=True)
class KeyConflict:
    scope: Scope
    key: str
    records: list[MemoryRecord]

    @property
    def same_slot(self) -> bool:
        """True when two records share kind too: the store's one-live-per-slot rule broke."""
        kinds = [record.kind for record in self.records]
        return len(set(kinds)) < len(kinds)

    @property
    def scope_text(self) -> str:
        return format_scope(self.scope)


def key_conflicts(records: Iterable[MemoryRecord]) -> list[KeyConflict]:
    """Keys held by more than one live record in one scope (any kinds)."""
    holders: dict[tuple[str, str], list[MemoryRecord]] = defaultdict(list)
    for record in records:
        if record.key is not None:
            holders[(scope_json(record.scope), record.key)].append(record)
    return [
        KeyConflict(group[0].scope, key, sorted(group, key=lambda r: r.created_at))
        for (_, key), group in sorted(holders.items())
        if len(group) > 1
    ]


def usable(value: str | None) -> bool:
    return value is not None and value.strip().strip(".").lower() not in PLACEHOLDERS


def has_usable_provenance(provenance: Provenance) -> bool:
    """True when at least one provenance field names something real."""
    return any(
        usable(value) for value in (provenance.source, provenance.author, provenance.conversation_id, provenance.run_id)
    )


# --- the report -----------------------------------------------------------------------


@dataclass
class Check:
    """One section of the report: what it found and how much it looked at."""

    checked: int = 0
    of: int | None = None
    complete: bool = True
    problem: str | None = None
    """Why the check could not run (a missing capability, a corrupt row in the way)."""


@dataclass
class ProfileOverflow:
    scope: Scope
    slice: ProfileSlice
    truncation: Truncation

    @property
    def scope_text(self) -> str:
        return format_scope(self.scope)

    @property
    def first_deferred(self) -> list[MemoryRecord]:
        return self.slice.deferred[:SHOWN_DEFERRED]


@dataclass
class HealthReport:
    scope: Scope
    counts: ScopeCounts
    now: datetime
    live: Check = field(default_factory=Check)
    duplicates: list[DuplicatePair] = field(default_factory=list)
    conflicts: list[KeyConflict] = field(default_factory=list)
    no_provenance: list[MemoryRecord] = field(default_factory=list)
    expired: list[MemoryRecord] = field(default_factory=list)
    expired_check: Check = field(default_factory=Check)
    never_recalled: list[MemoryRecord] = field(default_factory=list)
    never_recalled_total: int = 0
    recall_check: Check = field(default_factory=Check)
    recall_events: int = 0
    oldest_recall: datetime | None = None  # the window the check read: its first recall…
    newest_recall: datetime | None = None  # …and its last
    too_new_to_judge: int = 0  # live records written after the window opened: not flagged
    overflows: list[ProfileOverflow] = field(default_factory=list)
    overflows_total: int = 0
    profile_check: Check = field(default_factory=Check)
    corrupt: list[CorruptRecord] = field(default_factory=list)
    corrupt_check: Check = field(default_factory=Check)

    @property
    def findings(self) -> int:
        return sum(
            (
                len(self.duplicates),
                len(self.conflicts),
                len(self.no_provenance),
                self.counts.expired,
                self.never_recalled_total,
                self.overflows_total,
                len(self.corrupt),
            )
        )


def _listing(scope: Scope, *, kinds: Sequence[str] | None = None, everything: bool = False) -> RecordListQuery:
    return RecordListQuery.model_validate(
        {
            "search": {"scope": scope, "kinds": kinds, "include_invalidated": everything, "limit": PAGE},
            "include_expired": everything,
        }
    )


def _take(items: Iterator[T], limit: int) -> list[T]:
    taken: list[T] = []
    for item in items:
        taken.append(item)
        if len(taken) == limit:
            break
    return taken


def build_health(
    store: AdminMemoryStore, scope: Scope, now: datetime, *, visible: Callable[[Scope], bool]
) -> HealthReport:
    """The gardening report for ``scope``; ``visible`` says which record scopes the
    reader may see (records outside it are neither listed nor counted). The
    never-recalled check reads the event log when the store keeps one."""
    report = HealthReport(scope=scope, counts=store.count_records(scope), now=now)
    live = _live_records(store, report, visible)
    report.duplicates = near_duplicates(live)[:SHOWN]
    report.conflicts = key_conflicts(live)[:SHOWN]
    report.no_provenance = [r for r in live if not has_usable_provenance(r.provenance)][:SHOWN]
    _expired(store, report, visible)
    _never_recalled(store, report, live, visible)
    _profiles(store, report, visible)
    _corrupt(store, report)
    return report


def _live_records(
    store: AdminMemoryStore, report: HealthReport, visible: Callable[[Scope], bool]
) -> list[MemoryRecord]:
    report.live.of = report.counts.live
    try:
        records = _take(store.iter_records(_listing(report.scope), page_size=PAGE), LIVE_SCAN)
    except MemoryCorruptionError as exc:
        report.live.problem = f"record {exc.record_id} is corrupt (see below), so the record checks could not run"
        return []
    report.live.checked = len(records)
    report.live.complete = len(records) < LIVE_SCAN
    return [record for record in records if visible(record.scope)]


def _expired(store: AdminMemoryStore, report: HealthReport, visible: Callable[[Scope], bool]) -> None:
    check = report.expired_check
    check.of = report.counts.total
    if not report.counts.expired:
        return
    try:
        records = _take(store.iter_records(_listing(report.scope, everything=True), page_size=PAGE), EXPIRED_SCAN)
    except MemoryCorruptionError as exc:
        check.problem = f"record {exc.record_id} is corrupt, so the expired records could not be listed"
        return
    check.checked = len(records)
    check.complete = len(records) < EXPIRED_SCAN
    report.expired = [r for r in records if r.is_expired(report.now) and visible(r.scope)][:SHOWN]


def _never_recalled(
    store: AdminMemoryStore, report: HealthReport, live: list[MemoryRecord], visible: Callable[[Scope], bool]
) -> None:
    check = report.recall_check
    if not store.capabilities().events or not isinstance(store, EventLogStore):
        check.problem = "this store keeps no event log"
        return
    # a record can be recalled from any scope of its tenant (visible match reads upwards)
    scan = read_recall_events(store, scope={TENANT_KEY: report.scope[TENANT_KEY]}, limit=EVENT_SCAN)
    # ... but only the recalls the reader may see are read, counted or dated: a user
    # granted one scope of the tenant learns nothing of the others' traffic
    recalls = [event for event in scan.recalls if visible(event.scope)]
    check.checked = len(recalls)
    check.complete = scan.complete
    report.recall_events = len(recalls)
    report.oldest_recall = min((event.at for event in recalls), default=None)
    report.newest_recall = max((event.at for event in recalls), default=None)
    if not recalls or report.oldest_recall is None:
        return
    recalled = {record_id for event in recalls for record_id in event.record_ids}
    # only a record that existed for the whole window had every recall in it as a chance;
    # one written later (today, after the last recall) says nothing yet
    window_opened = report.oldest_recall
    judged = [r for r in live if r.created_at < window_opened]
    report.too_new_to_judge = len(live) - len(judged)
    never = sorted((r for r in judged if r.id not in recalled), key=lambda r: r.created_at)
    report.never_recalled_total = len(never)
    report.never_recalled = never[:SHOWN]


def _profiles(store: AdminMemoryStore, report: HealthReport, visible: Callable[[Scope], bool]) -> None:
    """Replay the profile slice for every scope holding profile records under the report's
    scope. Recall reads a scope's own records and those shared above it (visible
    match); both sets come from two listings, and each scope's tier is picked from
    them in memory rather than with a query per scope."""
    check = report.profile_check
    try:
        below = _take(store.iter_records(_listing(report.scope, kinds=["profile"]), page_size=PAGE), PROFILE_SCAN)
        above = store.list_records(
            RecordListQuery.model_validate(
                {"search": {"scope": report.scope, "scope_match": "visible", "kinds": ["profile"], "limit": PAGE}}
            )
        ).hits
    except MemoryCorruptionError as exc:
        check.problem = f"record {exc.record_id} is corrupt, so the profile tier could not be read"
        return
    by_scope: dict[str, list[MemoryRecord]] = defaultdict(list)
    for record in {r.id: r for r in [*below, *(hit.record for hit in above)] if visible(r.scope)}.values():
        by_scope[scope_json(record.scope)].append(record)
    scopes = {key: records[0].scope for key, records in by_scope.items()}
    if visible(report.scope):
        scopes.setdefault(scope_json(report.scope), report.scope)
    check.of = len(scopes)
    check.complete = len(below) < PROFILE_SCAN and len(scopes) <= PROFILE_SCOPES
    sizes: dict[str, int] = {}
    events = store if isinstance(store, EventLogStore) and store.capabilities().events else None

    def size(record: MemoryRecord) -> int:  # shared records are measured once, not once per scope
        if record.id not in sizes:
            sizes[record.id] = entry_chars(record)
        return sizes[record.id]

    for key in sorted(scopes)[:PROFILE_SCOPES]:
        # the scope's own profile records and those of every scope above it
        tier = [r for above_key in _ancestors(scopes[key]) for r in by_scope.get(above_key, ())]
        check.checked += 1
        placed = profile_slice(tier, size=size)
        if placed.overflows:
            report.overflows_total += 1
            if len(report.overflows) < SHOWN:
                logged = truncation(events, scopes[key], placed)
                report.overflows.append(ProfileOverflow(scopes[key], placed, logged))


def _ancestors(scope: Scope) -> Iterator[str]:
    """The canonical keys of every scope visible from ``scope``: its tenant plus any
    subset of its other pairs (scopes hold a handful of pairs)."""
    others = [(k, v) for k, v in scope.items() if k != TENANT_KEY]
    for size in range(len(others) + 1):
        for chosen in itertools.combinations(others, size):
            yield scope_json({TENANT_KEY: scope[TENANT_KEY], **dict(chosen)})


def _corrupt(store: AdminMemoryStore, report: HealthReport) -> None:
    check = report.corrupt_check
    check.of = report.counts.total
    try:
        scan = store.find_corrupt(report.scope, limit=SHOWN, max_rows=CORRUPT_SCAN)
    except CapabilityError:
        check.problem = "this store cannot scan for corrupt rows yet"
        return
    check.checked = scan.checked
    check.complete = scan.complete
    report.corrupt = scan.corrupt


OVERVIEW_TENANTS = 50  # tenants the cross-tenant overview reports on


@dataclass(frozen=True)
class TenantHealth:
    """One row of the cross-tenant overview: a tenant's report in numbers."""

    report: HealthReport

    @property
    def tenant(self) -> str:
        return self.report.scope[TENANT_KEY]

    @property
    def scope_text(self) -> str:
        return format_scope(self.report.scope)

    @property
    def duplicates(self) -> int:
        return len(self.report.duplicates)

    @property
    def conflicts(self) -> int:
        return len(self.report.conflicts)

    @property
    def corrupt(self) -> int:
        return len(self.report.corrupt)

    @property
    def no_provenance(self) -> int:
        return len(self.report.no_provenance)

    @property
    def overflows(self) -> int:
        return self.report.overflows_total


def tenant_overview(
    store: AdminMemoryStore, tenants: Sequence[str], now: datetime, *, visible: Callable[[Scope], bool]
) -> list[TenantHealth]:
    """Each tenant's report (the first :data:`OVERVIEW_TENANTS`), for an admin's
    overview: records, live, duplicates, key conflicts, never recalled, corrupt (lists
    are counted up to :data:`SHOWN`)."""
    return [
        TenantHealth(build_health(store, {TENANT_KEY: tenant}, now, visible=visible))
        for tenant in tenants[:OVERVIEW_TENANTS]
    ]
