"""Listing counts and states at a moment, over the demo corpus, without Django."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from memory_admin.dashboard.demo import DemoClock, demo_start, load_demo
from memory_admin.records import MemoryRecord, utc_now
from memory_admin.reports.listing import count_listing, record_state
from memory_admin.scope import Scope, is_subset_match
from memory_admin.store import BaseMemoryStore, InMemoryMemoryStore, RecordListQuery
from tests.reports.conftest import T0, rec
from tests.support.stores import backends, open_backend

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


@pytest.mark.parametrize(("match", "grant"), [("subset", {**DANA, "agent": "planner"}), ("visible", DANA)])
def test_grants_confine_the_counts(demo_store: InMemoryMemoryStore, match: str, grant: Scope) -> None:
    def granted(scope: Scope) -> bool:
        return is_subset_match(scope, grant)

    query = listing(invalidated=True, expired=True, scope_match=match)
    counts = count_listing(demo_store, query, [], granted, utc_now())
    every = list(demo_store.iter_records(query))
    mine = [record for record in every if granted(record.scope)]
    assert 0 < len(mine) < len(every)
    assert counts.listed == counts.everything == len(mine)


def test_past_the_cap_a_walk_says_more(demo_store: InMemoryMemoryStore) -> None:
    query = listing(invalidated=True, expired=True, limit=3, kinds=["fact", "preference", "episode", "profile"])
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


def walks(store: BaseMemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Records each walk of a listing the store is asked for."""
    seen: list[object] = []
    walking = store.iter_records

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append(args)
        return walking(*args, **kwargs)

    monkeypatch.setattr(store, "iter_records", counted)
    return seen


def test_counting_a_filtered_listing_walks_it_once(
    demo_store: InMemoryMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However much it hides, a filtered listing is counted by one walk, and the counts
    are the ones the filtered listing gives when walked on its own."""
    query = listing(limit=5, kinds=["fact", "preference", "episode"])
    page = [hit.record for hit in demo_store.list_records(query).hits]
    walked = walks(demo_store, monkeypatch)
    counts = count_listing(demo_store, query, page, everyone, utc_now())
    assert len(walked) == 1
    monkeypatch.undo()
    alone = sum(1 for _ in demo_store.iter_records(query))
    assert counts.listed == alone and counts.first == 1 and counts.shown == 5


@pytest.fixture(params=backends("memory", "sqlite", "postgres"))
def demo_on(request: pytest.FixtureRequest) -> Iterator[BaseMemoryStore]:
    """The demo corpus in a store of each backend."""
    clock = DemoClock(demo_start())
    store = open_backend(request.param, request, clock=clock)
    try:
        assert load_demo(store, clock) is not None
        yield store
    finally:
        store.close()


@pytest.mark.parametrize(("invalidated", "expired"), [(False, False), (True, False), (False, True), (True, True)])
def test_a_scope_s_listing_is_counted_from_the_store_s_counts(
    demo_on: BaseMemoryStore, monkeypatch: pytest.MonkeyPatch, invalidated: bool, expired: bool
) -> None:
    """A listing of a scope the reader may wholly see reads no record to count its first
    page, and tells every state apart as the listing's own rules do (an expired record
    the listing hides as invalidated is told once); a later page walks to where it starts."""
    demo_store = demo_on
    now = utc_now()
    every = list(demo_store.iter_records(listing(invalidated=True, expired=True)))
    gone = [r for r in every if r.invalid_at is not None and not invalidated]
    lapsed = [r for r in every if r.is_expired(now) and not expired and r not in gone]
    assert every and (invalidated or gone) and (expired or lapsed)
    query = listing(invalidated=invalidated, expired=expired, limit=4)
    first_page = demo_store.list_records(query)
    walked = walks(demo_store, monkeypatch)
    counts = count_listing(demo_store, query, [h.record for h in first_page.hits], everyone, now)
    assert walked == []
    assert counts.everything == len(every)
    assert (counts.hidden_invalidated, counts.hidden_expired) == (len(gone), len(lapsed))
    assert counts.listed == len(every) - len(gone) - len(lapsed) == len(list(demo_store.iter_records(query)))
    assert (counts.first, counts.last) == (1, 4)
    later = query.model_copy(update={"cursor": first_page.next_cursor})
    second = demo_store.list_records(later)
    counts = count_listing(demo_store, later, [h.record for h in second.hits], everyone, now)
    assert (counts.first, counts.last) == (5, 4 + len(second.hits))
