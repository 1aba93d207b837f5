"""How many records a listing holds, where a page sits in it, and what its filters hide —
so a page of 25 can say "1–25 of 44" and "17 live of 24 — 7 invalidated, hidden" — and
a record's state at a moment (what an as-of listing shows).

A listing that only picks a scope (and which states to show) is counted by the store's
own per-scope counts — the numbers the facet panel shows, exact at any size, no record
read — when every record under that scope lies inside the reader's grants. Any other
listing (a search, a kind, tag, key or as-of filter, records visible *from* a scope) is
counted by walking the listing itself, so the numbers are the rows a reader would page
through: the same filters, the same grants — once, whatever it hides. The walk stops at
``cap`` records (:data:`COUNT_CAP`, :data:`SEARCH_COUNT_CAP` for a search); past that the
counts say "more than".
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
SEARCH_COUNT_CAP = 100
"""A search's walk ranks as deep as it counts: past a hundred matches it says "more than
100" (a hybrid search fuses its hundred best candidates of each kind,
:data:`~memory_admin.tuning.FUSION_CANDIDATES`)."""
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
    cap: int | None = None,
) -> ListingCounts:
    """Counts for ``query`` (a page of which is ``page``), among the records ``visible``
    lets the reader see. ``visible`` is a grant check: a scope that contains a visible
    scope is visible too (so a subset listing under a visible scope hides nothing from
    the reader). ``cap`` defaults to :data:`SEARCH_COUNT_CAP` for a search, else
    :data:`COUNT_CAP`."""
    search = query.search
    if cap is None:
        cap = SEARCH_COUNT_CAP if search.query is not None else COUNT_CAP
    if search.scope is not None and _scope_only(query) and visible(search.scope):
        return _scope_counts(store, query, page, cap)
    return _walked_counts(store, query, page, visible, now, cap)


def _scope_only(query: RecordListQuery) -> bool:
    """True when the listing filters by nothing but a scope (subset) and the states it shows."""
    search = query.search
    return search.scope_match == "subset" and not search.model_dump(
        include={"query", "kinds", "tags", "keys", "targeted", "promoted", "agent", "as_of"}, exclude_none=True
    )


def _scope_counts(store: AdminMemoryStore, query: RecordListQuery, page: list[MemoryRecord], cap: int) -> ListingCounts:
    """The store's counts of the scope, told apart as the listing's own rules would; a
    later page's position is found by walking the listing's pages up to it."""
    counts = store.count_records(query.search.scope)
    hides_invalidated = not query.search.include_invalidated
    hides_expired = not query.include_expired
    invalidated = counts.invalidated if hides_invalidated else 0
    # an expired record the listing already hides as invalidated is told once, as invalidated
    expired_valid = counts.total - counts.invalidated - counts.live
    expired = (expired_valid if hides_invalidated else counts.expired) if hides_expired else 0
    first: int | None = None
    if page:
        first = 1 if query.cursor is None else _position(store, query, page[0], cap)
    return ListingCounts(
        listed=counts.total - invalidated - expired,
        first=first,
        shown=len(page),
        everything=counts.total,
        hidden_invalidated=invalidated,
        hidden_expired=expired,
        cap=cap,
    )


def _position(store: AdminMemoryStore, query: RecordListQuery, first: MemoryRecord, cap: int) -> int | None:
    """Where ``first`` sits in the listing (1-based), walking its pages from the start
    until it shows; ``None`` past ``cap`` records."""
    start = query.model_copy(update={"cursor": None})
    for position, record in enumerate(islice(store.iter_records(start, page_size=query.search.limit), cap), 1):
        if record.id == first.id:
            return position
    return None


def _walked_counts(
    store: AdminMemoryStore,
    query: RecordListQuery,
    page: list[MemoryRecord],
    visible: Callable[[Scope], bool],
    now: datetime,
    cap: int,
) -> ListingCounts:
    """Counts from one walk: of the listing itself when it hides nothing, else of the
    listing with everything it hides, each record told apart by the listing's own rules
    (invalidated by its as-of time, expired by ``now``). A ranked page's position is its
    cursor's; a recency page's, where the walk meets its first record."""
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
