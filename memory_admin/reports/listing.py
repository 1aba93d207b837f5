"""How many records a listing holds, where a page sits in it, and what its filters hide —
so a page of 25 can say "1–25 of 44" and "17 live of 24 — 7 invalidated, hidden" — and
a record's state at a moment (what an as-of listing shows).

Counting walks the listing itself (not a separate count query), so the numbers are the
rows a reader would page through: the same filters, the same grants — once, whatever it
hides. The walk stops at ``cap`` records; past that the counts say "more than".
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
from memory_admin.store.plan import Cursor

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
    lets the reader see, from one walk: of the listing itself when it hides nothing, else
    of the listing with everything it hides, each record told apart by the listing's own
    rules (invalidated by its as-of time, expired by ``now``). A ranked page's position is
    its cursor's; a recency page's, where the walk meets its first record."""
    start = query.model_copy(update={"cursor": None})
    hides_invalidated = not query.search.include_invalidated
    hides_expired = not query.include_expired
    if hides_invalidated or hides_expired:
        start = start.model_copy(
            update={"search": start.search.model_copy(update={"include_invalidated": True}), "include_expired": True}
        )
    as_of = query.search.as_of
    listed = every = invalidated = expired = 0
    first: int | None = None
    for record in _records(store, start, visible, cap):
        every += 1
        if hides_invalidated and record.invalid_at is not None and (as_of is None or record.invalid_at <= as_of):
            invalidated += 1
        elif hides_expired and record.is_expired(now):
            expired += 1
        else:
            listed += 1
            if page and record.id == page[0].id:
                first = listed
    if page and query.search.query is not None:
        cursor = Cursor.decode(query.cursor) if query.cursor else None
        first = (cursor.offset or 0) + 1 if cursor is not None else 1
    return ListingCounts(
        listed=listed if every <= cap else None,
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
