"""How many records a listing holds, where a page sits in it, and what its filters hide —
so a page of 25 can say "1–25 of 44" and "17 live of 24 — 7 invalidated, hidden" — and
a record's state at a moment (what an as-of listing shows).

Counting walks the listing itself (not a separate count query), so the numbers are the
rows a reader would page through: the same filters, the same grants. The walk stops at
``cap`` records; past that the counts say "more than".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Literal

from memory_admin.records import MemoryRecord
from memory_admin.scope import Scope
from memory_admin.store import AdminMemoryStore, RecordListQuery

COUNT_CAP = 1000
RecordState = Literal["live", "superseded", "invalidated", "expired", "unwritten"]


def record_state(record: MemoryRecord, at: datetime) -> RecordState:
    """The record's state at ``at``: ``unwritten`` before it was written, then ``live``
    until it was invalidated (``superseded`` when a newer version replaced it) or expired."""
    if record.created_at > at:
        return "unwritten"
    if record.invalid_at is not None and record.invalid_at <= at:
        return "superseded" if record.superseded_by else "invalidated"
    if record.is_expired(at):
        return "expired"
    return "live"


@dataclass(frozen=True)
class ListingCounts:
    """What a listing holds. A count of ``None`` is more than the cap."""

    listed: int | None  # rows the listing holds, every page
    first: int | None  # 1-based position of the page's first row (None: not found within the cap)
    shown: int  # rows on this page
    everything: int | None  # records under the scope in every state, the same other filters
    hidden_invalidated: int  # left out because the listing excludes invalidated records
    hidden_expired: int  # left out because it excludes expired ones
    cap: int

    @property
    def last(self) -> int | None:
        return None if self.first is None else self.first + self.shown - 1

    @property
    def hidden(self) -> int:
        return self.hidden_invalidated + self.hidden_expired


def count_listing(
    store: AdminMemoryStore,
    query: RecordListQuery,
    page: list[MemoryRecord],
    visible: Callable[[Scope], bool],
    now: datetime,
    *,
    cap: int = COUNT_CAP,
) -> ListingCounts:
    """Counts for ``query`` (a page of which is ``page``), among the records ``visible``
    lets the reader see. Hidden records are told apart by their state at the listing's
    as-of time (``now`` without one)."""
    start = query.model_copy(update={"cursor": None})
    listed_ids = _walk(store, start, visible, cap)
    listed = len(listed_ids) if len(listed_ids) <= cap else None
    first = listed_ids.index(page[0].id) + 1 if page and page[0].id in listed_ids else None
    hides_invalidated = not query.search.include_invalidated
    hides_expired = not query.include_expired
    if not (hides_invalidated or hides_expired):
        return ListingCounts(listed, first, len(page), listed, 0, 0, cap)
    everything_query = start.model_copy(
        update={"search": start.search.model_copy(update={"include_invalidated": True}), "include_expired": True}
    )
    shown_ids = set(listed_ids)
    at = query.search.as_of or now
    every = 0
    invalidated = expired = 0
    for record in _records(store, everything_query, visible, cap):
        every += 1
        if record.id in shown_ids:
            continue
        state = record_state(record, at)
        if state in ("invalidated", "superseded"):
            invalidated += 1
        elif state == "expired":
            expired += 1
    return ListingCounts(
        listed=listed,
        first=first,
        shown=len(page),
        everything=every if every <= cap else None,
        hidden_invalidated=invalidated,
        hidden_expired=expired,
        cap=cap,
    )


def _records(
    store: AdminMemoryStore, query: RecordListQuery, visible: Callable[[Scope], bool], cap: int
) -> Iterator[MemoryRecord]:
    """The listing's visible records, at most ``cap + 1`` of them (one more says "more")."""
    allowed = (record for record in store.iter_records(query, page_size=min(cap + 1, 500)) if visible(record.scope))
    return islice(allowed, cap + 1)


def _walk(store: AdminMemoryStore, query: RecordListQuery, visible: Callable[[Scope], bool], cap: int) -> list[str]:
    return [record.id for record in _records(store, query, visible, cap)]
