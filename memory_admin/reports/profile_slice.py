"""Does a scope's profile tier fit the recall block's profile slice?

Recall (:func:`memory_admin.recall.assemble_recall`) places profile records newest
first, first fit, into their own slice of the budget (40 % of 4,000 characters by
default) and defers the rest. This replays that placement over the profile records
alone — with recall's own entry rendering and constants — to answer "is every recall
here truncated?" without assembling a block (and without adding a recall event).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memory_admin.recall import DEFAULT_BUDGET_CHARS, DEFAULT_PROFILE_BUDGET_RATIO, HEADINGS, entry_chars
from memory_admin.records import MemoryRecord


@dataclass(frozen=True)
class ProfileSlice:
    budget_chars: int
    slice_chars: int
    used_chars: int
    total_chars: int
    admitted: list[MemoryRecord] = field(default_factory=list)
    deferred: list[MemoryRecord] = field(default_factory=list)

    @property
    def slice_percent(self) -> int:
        return round(100 * self.slice_chars / self.budget_chars) if self.budget_chars else 0

    @property
    def overflows(self) -> bool:
        return bool(self.deferred)


def profile_slice(
    profiles: Sequence[MemoryRecord],
    *,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    ratio: float = DEFAULT_PROFILE_BUDGET_RATIO,
    size: Callable[[MemoryRecord], int] = entry_chars,
) -> ProfileSlice:
    """Place ``profiles`` newest first into the slice as recall does; the rest are
    deferred. ``size`` is a record's entry length (pass a cached one when replaying
    many scopes that share records)."""
    limit = int(budget_chars * ratio)
    heading = len(HEADINGS["profile"])
    used = 0
    total = heading if profiles else 0
    admitted: list[MemoryRecord] = []
    deferred: list[MemoryRecord] = []
    for record in sorted(profiles, key=lambda r: r.created_at, reverse=True):
        chars = size(record)
        total += chars
        cost = chars + (0 if admitted else heading)
        if used + cost <= limit:
            admitted.append(record)
            used += cost
        else:
            deferred.append(record)
    return ProfileSlice(budget_chars, limit, used, total, admitted, deferred)
