"""Does a scope's profile tier fit the recall block's profile slice, and what did its
recalls leave out? The one truncation story every page tells.

Recall (:func:`memory_admin.recall.assemble_recall`) places profile records newest
first, first fit, into their own slice of the budget (40 % of 4,000 characters by
default) and defers the rest. :func:`profile_slice` replays that placement —
:func:`memory_admin.recall.place_profile` itself, with recall's entry rendering and
constants — over the profile records alone, without assembling a block (and without
adding a recall event).

What a deferred profile record means for a recall is recall's own rule: it stays out,
and the block is truncated (its marker counts it), *unless the recall's message matches
it*, when it comes in as a hit. So an overflowing slice truncates every recall without
a message, not every recall; :func:`truncation` puts the slice beside what the logged
recalls under the scope actually did, the numbers the recall pages show.
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
from memory_admin.reports.recall_stats import read_recall_events
from memory_admin.scope import Scope
from memory_admin.store.protocol import EventLogStore


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


@dataclass(frozen=True)
class Truncation:
    """A scope's truncation story: its profile slice, and its logged recalls (the newest
    :data:`~memory_admin.reports.recall_stats.MAX_EVENTS`; previews never count)."""

    slice: ProfileSlice
    recalls: int
    """Recall events logged under the scope."""
    truncated: int
    """Of them, how many left something out."""
    brought_in: int
    """Of them, how many carried a record the slice defers, as a hit."""
    complete: bool
    """False when older events were not read."""

    @property
    def deferred_ids(self) -> frozenset[str]:
        return frozenset(record.id for record in self.slice.deferred)


def truncation(store: EventLogStore | None, scope: Scope, placed: ProfileSlice) -> Truncation:
    """``placed`` (the scope's :func:`profile_slice`) beside the recalls logged under
    ``scope`` (none without an event log)."""
    if store is None:
        return Truncation(placed, 0, 0, 0, True)
    scan = read_recall_events(store, scope=scope)
    deferred = {record.id for record in placed.deferred}
    recalls = scan.recalls
    return Truncation(
        slice=placed,
        recalls=len(recalls),
        truncated=sum(1 for event in recalls if event.truncated),
        brought_in=sum(1 for event in recalls if deferred.intersection(event.record_ids)),
        complete=scan.complete,
    )
