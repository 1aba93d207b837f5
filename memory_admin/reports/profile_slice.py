"""Does a scope's profile tier fit the recall block's profile slice?

Recall (:func:`memory_admin.recall.assemble_recall`) places profile records newest
first, first fit, into their own slice of the budget (40 % of 4,000 characters by
default) and defers the rest. :func:`profile_slice` replays that placement —
:func:`memory_admin.recall.place_profile` itself, with recall's entry rendering and
constants — over the profile records alone, to answer "is every recall here
truncated?" without assembling a block (and without adding a recall event).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memory_admin.recall import (
    DEFAULT_BUDGET_CHARS,
    DEFAULT_PROFILE_BUDGET_RATIO,
    entry_chars,
    place_profile,
    profile_slice_chars,
)
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
    """Place ``profiles`` into the slice as recall does; the rest are deferred. ``size``
    is a record's entry length (pass a cached one when replaying many scopes that share
    records)."""
    limit = profile_slice_chars(budget_chars, ratio)
    placed = place_profile(profiles, limit, size=size)
    by_id = {record.id: record for record in profiles}
    return ProfileSlice(
        budget_chars,
        limit,
        placed.used_chars,
        placed.total_chars,
        list(placed.admitted),
        [by_id[record_id] for record_id in placed.deferred],
    )
