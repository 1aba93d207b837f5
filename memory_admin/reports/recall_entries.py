"""One recall, entry by entry: what went into the block, in which tier, and what was
deferred and why — for an event's drill-down and for a preview (:func:`account_recall`),
plus the redaction a reader with partial grants needs (:func:`redact_block`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from memory_admin.errors import MemoryCorruptionError
from memory_admin.events import MemoryRecallEvent
from memory_admin.recall import TIERS, RecallReport, entry_chars, profile_slice_chars, read_view, render_entry
from memory_admin.records import MemoryRecord, MemorySearchQuery
from memory_admin.scope import Scope
from memory_admin.store.protocol import MemoryStore

REASONS = {
    "profile_slice": "the profile slice was full: profile records are placed newest first into their own share "
    "of the budget, and this one did not fit",
    "budget": "the block's budget was spent: entries are placed in tier order, first fit, and this one did not fit",
    "not_read": "never a candidate: recall reads only as many profile records, newest first, as the profile slice "
    "could hold (plus one, to know whether anything is left out), and this older one was beyond them; "
    "the block's marker does not count it",
}
UNREAD_SCAN = 500  # profile records read to find the ones a preview's recall did not read
HIDDEN_ENTRY = "- [a memory from a scope outside your grants: hidden here, {chars} characters in the real block]\n"


@dataclass(frozen=True)
class Entry:
    """One record of a recall. ``record`` is ``None`` when it is gone (deleted or erased
    since) or outside the reader's grants: then only its id is shown."""

    id: str
    record: MemoryRecord | None
    tier: str | None = None
    reason: str | None = None
    corrupt: bool = False

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


def block_entries(
    store: MemoryStore, allows: Callable[[Scope], bool], record_ids: Sequence[str], tiers: Sequence[str]
) -> list[Entry]:
    entries = []
    for index, record_id in enumerate(record_ids):
        record, corrupt = _load(store, record_id, allows)
        tier = tiers[index] if index < len(tiers) else None
        entries.append(Entry(record_id, record, tier=tier, corrupt=corrupt))
    return entries


def deferred_entries(
    store: MemoryStore, allows: Callable[[Scope], bool], record_ids: Sequence[str], reasons: Mapping[str, str]
) -> list[Entry]:
    entries = []
    for record_id in record_ids:
        record, corrupt = _load(store, record_id, allows)
        entries.append(Entry(record_id, record, reason=reasons.get(record_id), corrupt=corrupt))
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
class RecallAccount:
    """One recall's accounting: its entries in block order (with their tiers), the
    deferred records (with their reasons), the tier summary and how full the block was."""

    entries: list[Entry]
    deferred: list[Entry]
    tiers: str
    fill_percent: int
    profile_chars: int
    """The profile slice: the report's own, or for an event (which does not record the
    ratio) the slice at the default ratio."""
    unread: list[Entry] = field(default_factory=list)
    """For a preview: live profile records recall could see but never read (beyond its
    profile fetch), so that every profile record is accounted for exactly once."""

    @property
    def marker_count(self) -> int:
        """What the block's truncation marker counts: the deferred list, exactly."""
        return len(self.deferred)


def account_recall(
    store: MemoryStore, allows: Callable[[Scope], bool], recall: MemoryRecallEvent | RecallReport
) -> RecallAccount:
    """The accounting of a logged recall event or of a freshly assembled report; records
    that ``allows`` refuses, or that are gone, are shown by id only."""
    tiers = {str(tier): count for tier, count in recall.tiers.items()}
    profile_chars = (
        recall.profile_budget_chars if isinstance(recall, RecallReport) else profile_slice_chars(recall.budget_chars)
    )
    return RecallAccount(
        entries=block_entries(store, allows, recall.record_ids, tiers_in_order(tiers)),
        deferred=deferred_entries(store, allows, recall.deferred_ids, recall.deferred_reasons),
        tiers=tier_summary(tiers),
        fill_percent=round(100 * recall.chars / recall.budget_chars) if recall.budget_chars else 0,
        profile_chars=profile_chars,
        # only a fresh report matches today's store; an old event's candidates are gone
        unread=unread_profiles(store, allows, recall) if isinstance(recall, RecallReport) else [],
    )


def unread_profiles(store: MemoryStore, allows: Callable[[Scope], bool], report: RecallReport) -> list[Entry]:
    """The live profile records visible to ``report``'s recall that it neither put in
    the block nor deferred: older than the profile records it read."""
    query = MemorySearchQuery.model_validate(
        {
            "scope": read_view(report.scope, report.agent, report.scope_match),
            "scope_match": report.scope_match,
            "agent": report.agent,
            "kinds": ["profile"],
            "limit": UNREAD_SCAN,
        }
    )
    seen = set(report.record_ids) | set(report.deferred_ids)
    hits = store.search(query, emit_event=False)
    return [
        Entry(hit.record.id, hit.record if allows(hit.record.scope) else None, reason="not_read")
        for hit in sorted(hits, key=lambda hit: hit.record.created_at, reverse=True)
        if hit.record.id not in seen
    ]
