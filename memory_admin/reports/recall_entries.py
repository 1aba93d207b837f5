"""One recall, entry by entry: what went into the block, in which tier, and what was
deferred and why — for an event's drill-down and for a preview (:func:`account_recall`),
plus the redaction a reader with partial grants needs (:func:`redact_block`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from memory_admin.errors import MemoryCorruptionError
from memory_admin.events import MemoryRecallEvent
from memory_admin.recall import TIERS, RecallReport, entry_chars, profile_slice_chars, render_entry
from memory_admin.records import MemoryRecord
from memory_admin.scope import Scope
from memory_admin.store.protocol import MemoryStore

REASONS = {
    "profile_slice": "the profile slice was full: profile records are placed newest first into their own share "
    "of the budget, and this one did not fit",
    "budget": "the block's budget was spent: entries are placed in tier order, first fit, and this one did not fit",
}
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
    )
