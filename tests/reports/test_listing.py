"""Listing counts and states at a moment, over the demo corpus, without Django."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory_admin.records import MemoryRecord, utc_now
from memory_admin.reports.listing import count_listing, record_state
from memory_admin.scope import Scope
from memory_admin.store import InMemoryMemoryStore, RecordListQuery
from tests.reports.conftest import T0, rec

DANA = {"tenant": "acme", "user": "dana"}


def listing(*, invalidated: bool = False, expired: bool = False, limit: int = 25, **search: object) -> RecordListQuery:
    return RecordListQuery.model_validate(
        {
            "search": {"scope": DANA, "include_invalidated": invalidated, "limit": limit, **search},
            "include_expired": expired,
        }
    )


def everyone(scope: Scope) -> bool:
    return True


def test_a_tenant_user_listing_says_what_it_hides(demo_store: InMemoryMemoryStore) -> None:
    query = listing()
    page = [hit.record for hit in demo_store.list_records(query).hits]
    counts = count_listing(demo_store, query, page, everyone, utc_now())
    every = demo_store.count_records(DANA)
    assert (counts.listed, counts.first, counts.last) == (len(page), 1, len(page))
    assert counts.everything == every.total  # what the facet panel counts
    assert counts.listed + counts.hidden == every.total
    assert counts.hidden_invalidated == every.invalidated and counts.hidden_expired == every.expired
    assert counts.hidden_invalidated > 0 and counts.hidden_expired > 0


def test_later_pages_know_where_they_start(demo_store: InMemoryMemoryStore) -> None:
    query = listing(invalidated=True, expired=True, limit=5)
    seen = 0
    cursor = None
    while True:
        page_query = query.model_copy(update={"cursor": cursor})
        result = demo_store.list_records(page_query)
        counts = count_listing(demo_store, page_query, [h.record for h in result.hits], everyone, utc_now())
        assert (counts.first, counts.last) == (seen + 1, seen + len(result.hits))
        assert counts.hidden == 0 and counts.listed == counts.everything
        seen += len(result.hits)
        if result.next_cursor is None:
            break
        cursor = result.next_cursor
    assert seen == counts.listed


def test_grants_confine_the_counts(demo_store: InMemoryMemoryStore) -> None:
    query = listing(invalidated=True, expired=True)
    page = [hit.record for hit in demo_store.list_records(query).hits]
    only_shared = count_listing(demo_store, query, page[:0], lambda scope: "agent" not in scope, utc_now())
    agent_records = sum("agent" in record.scope for record in page)
    assert agent_records and only_shared.listed == len(page) - agent_records


def test_past_the_cap_the_counts_say_more(demo_store: InMemoryMemoryStore) -> None:
    query = listing(invalidated=True, expired=True, limit=3)
    page = [hit.record for hit in demo_store.list_records(query).hits]
    counts = count_listing(demo_store, query, page, everyone, utc_now(), cap=5)
    assert counts.listed is None and counts.everything is None and counts.first == 1


def test_state_at_a_moment() -> None:
    two_days = T0 + timedelta(days=2)
    old: MemoryRecord = rec("a", "Dana drinks espresso.", invalid_at=two_days, superseded_by="b", updated_at=two_days)
    dropped = rec("c", "Wrong.", invalid_at=T0 + timedelta(days=1), updated_at=T0 + timedelta(days=1))
    fleeting = rec("d", "At the airport.", expires_at=T0 + timedelta(hours=3))
    assert record_state(old, T0 - timedelta(minutes=1)) == "unwritten"
    assert record_state(old, T0 + timedelta(days=1)) == "live"  # before the newer version came
    assert record_state(old, T0 + timedelta(days=2)) == "superseded"
    assert record_state(dropped, T0 + timedelta(days=3)) == "invalidated"
    assert record_state(fleeting, T0 + timedelta(hours=1)) == "live"
    assert record_state(fleeting, T0 + timedelta(hours=4)) == "expired"


def test_counting_walks_the_listing_once(demo_store: InMemoryMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """However much it hides, a listing is counted by one walk, and the counts are the
    ones the filtered listing gives when walked on its own."""
    query = listing(limit=5)
    page = [hit.record for hit in demo_store.list_records(query).hits]
    walks: list[object] = []
    walking = demo_store.iter_records

    def counted(*args: Any, **kwargs: Any) -> Any:
        walks.append(args)
        return walking(*args, **kwargs)

    monkeypatch.setattr(demo_store, "iter_records", counted)
    counts = count_listing(demo_store, query, page, everyone, utc_now())
    assert len(walks) == 1
    monkeypatch.undo()
    alone = sum(1 for _ in demo_store.iter_records(query))
    assert counts.listed == alone and counts.first == 1 and counts.shown == 5
