"""One recall entry by entry: tiers in block order, and the accounting of an event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory_admin.dashboard.demo import DemoClock
from memory_admin.events import MemoryRecallEvent, parse_event
from memory_admin.recall import assemble_recall, profile_slice_chars
from memory_admin.records import MemoryHit
from memory_admin.reports.recall_entries import account_recall, score_parts, tiers_in_order
from memory_admin.store import InMemoryMemoryStore

USER = {"tenant": "acme", "user": "u1"}


def test_tiers_in_block_order() -> None:
    assert tiers_in_order({"hits": 2, "profile": 1, "recent": 0}) == ["profile", "hits", "hits"]


def test_an_event_and_its_report_account_alike() -> None:
    store = InMemoryMemoryStore()
    store.write(
        [
            {
                "scope": USER,
                "kind": "profile",
                "content": f"Profile line {i} " + "p" * 300,
                "key": f"k{i}",
                "provenance": {"source": "test"},
            }
            for i in range(8)
        ]
    )
    result = assemble_recall(store, USER, "line", sink=lambda event: None)
    from_report = account_recall(store, lambda scope: True, result.event)
    logged = parse_event(result.event.model_dump_json())  # as the event log gives it back
    assert isinstance(logged, MemoryRecallEvent)
    from_event = account_recall(store, lambda scope: True, logged)
    assert from_report.profile_chars == from_event.profile_chars == result.report.profile_budget_chars
    older = logged.model_copy(update={"profile_budget_chars": None})  # logged before the slice was
    assert account_recall(store, lambda scope: True, older).profile_chars == profile_slice_chars(older.budget_chars)
    assert [(e.id, e.tier) for e in from_report.entries] == [(e.id, e.tier) for e in from_event.entries]
    assert [(e.id, e.reason) for e in from_report.deferred] == [(e.id, e.reason) for e in from_event.deferred]
    assert from_report.others == from_event.others
    assert [e.id for e in from_report.entries] == result.report.record_ids
    assert {e.id: e.reason for e in from_report.deferred} == result.report.deferred_reasons
    assert from_report.fill_percent == round(100 * result.report.chars / result.report.budget_chars)
    hidden = account_recall(store, lambda scope: False, result.event)
    assert all(entry.record is None for entry in [*hidden.entries, *hidden.deferred])
    store.close()


def test_a_preview_accounts_for_every_profile_record_exactly_once(demo_store: InMemoryMemoryStore) -> None:
    dana = {"tenant": "acme", "user": "dana"}
    result = assemble_recall(
        demo_store, dana, "Book me a flight to Berlin next week", budget_chars=1500, sink=lambda event: None
    )
    account = account_recall(demo_store, lambda scope: True, result.event)
    listed = [e.id for e in account.entries] + [e.id for e in account.deferred] + [e.id for e in account.unread]
    assert len(listed) == len(set(listed))  # nobody twice
    profiles = demo_store.search(
        {"scope": dana, "scope_match": "visible", "kinds": ["profile"], "limit": 500}, emit_event=False
    )
    assert {hit.record.id for hit in profiles} <= set(listed)  # and nobody missing
    summary = next(hit.record for hit in profiles if hit.record.key == "profile.summary")
    assert summary.id in {e.id for e in account.unread}
    # the block's marker counts the deferred list, exactly
    assert f"[… {account.marker_count} more memories did not fit" in result.block
    assert account.marker_count == result.report.deferred == len(account.deferred)


BERLIN = "Book me a flight to Berlin next week"
DANA = {"tenant": "acme", "user": "dana"}


def test_a_preview_explains_each_rank(demo_store: InMemoryMemoryStore) -> None:
    result = assemble_recall(demo_store, DANA, BERLIN, budget_chars=1500, sink=lambda event: None)
    account = account_recall(demo_store, lambda scope: True, result.event, hits=result.hits, message=BERLIN)
    assert account.words == ("book", "me", "a", "flight", "to", "berlin", "next", "week") and account.scored
    for entry in account.entries:
        assert entry.rank is not None and entry.rank.tier == entry.tier and entry.rank.place is not None
    hits = [entry.rank for entry in account.entries if entry.tier == "hits" and entry.rank]
    assert hits and all(rank.words and rank.score is not None for rank in hits)
    assert [rank.place for rank in hits] == list(range(1, len(hits) + 1))
    scores = [rank.score for rank in hits if rank.score is not None]
    assert scores == sorted(scores, reverse=True)  # the tier's order is the score's
    # a profile entry is placed newest first, not by score: none is shown for it
    assert all(e.rank and e.rank.score is None for e in account.entries if e.tier == "profile")
    by_tier = result.report.deferred_tiers
    assert {e.id: e.rank.tier for e in account.deferred if e.rank} == by_tier and not any(
        e.rank and e.rank.inferred for e in account.deferred
    )
    berlin = next(e for e in account.entries if e.rank and "berlin" in e.rank.words)
    assert berlin.record is not None and "berlin" in berlin.record.content.lower()


def test_an_event_explains_ranks_without_scores(demo_store: InMemoryMemoryStore) -> None:
    stored = next(
        s
        for s in demo_store.query_events({"types": ["agent.memory.recall"], "scope": DANA, "limit": 100})
        if isinstance(s.event, MemoryRecallEvent) and s.event.deferred and s.event.query_preview
    )
    assert isinstance(stored.event, MemoryRecallEvent)
    account = account_recall(demo_store, lambda scope: True, stored.event)
    assert not account.scored and all(e.rank and e.rank.score is None for e in account.entries)
    assert all(e.rank and e.rank.tier for e in account.deferred)  # profile slice → profile, else inferred
    hidden = account_recall(demo_store, lambda scope: False, stored.event)
    # nothing drawn from a hidden record's content: no words, no reasons that quote it
    assert all(e.rank and not e.rank.words for e in [*hidden.entries, *hidden.deferred, *hidden.others])
    assert {e.reason for e in hidden.others}.isdisjoint({"outranked", "no_match", "no_match_older"})
    assert [e.id for e in hidden.others] != [] and len(hidden.others) == len(account.others)


def test_score_parts_are_shown_when_a_store_reports_them() -> None:
    store = InMemoryMemoryStore()
    [record] = store.write([{"scope": USER, "kind": "fact", "content": "Berlin", "provenance": {"source": "t"}}])
    assert score_parts(MemoryHit(record=record, score=1.0)) == ()
    assert score_parts(MemoryHit(record=record, score=1.0, keyword_score=0.7, semantic_score=0.3)) == (
        ("keyword", 0.7),
        ("semantic", 0.3),
    )
    hybrid = MemoryHit(record=record, score=1.0, keyword_score=0.7, context_score=0.2, length_score=-0.1)
    assert score_parts(hybrid) == (("keyword", 0.7), ("context", 0.2), ("length", -0.1)), "a drop is a part too"
    store.close()


def test_a_past_event_accounts_for_every_record_under_its_scope_once() -> None:
    """In the block, deferred, or not a candidate with why — as of the recall's time."""
    clock = DemoClock(datetime(2026, 3, 2, 9, tzinfo=UTC))
    store = InMemoryMemoryStore(clock=clock)

    def write(content: str, scope: dict[str, str] = USER, **fields: object) -> str:
        [record] = store.write([{"scope": scope, "content": content, "provenance": {"source": "t"}, **fields}])
        clock.advance(minutes=1)
        return record.id

    flight = write("Dana flies to Berlin often", kind="fact")
    tea = write("Dana likes green tea", kind="preference")
    gone = write("Dana flew to Berlin in 2019", kind="fact")
    store.invalidate(gone, "wrong year")
    clock.advance(minutes=1)
    expired = write("A Berlin hotel hold", kind="fact", expires_at=clock.now + timedelta(minutes=2))
    other_agent = write("Coder's Berlin notes", scope={**USER, "agent": "coder"}, kind="fact")
    narrower = write("Berlin session note", scope={**USER, "session": "s1"}, kind="fact")
    clock.advance(minutes=5)  # the hold expires
    events: list[object] = []
    result = assemble_recall(store, USER, "Berlin", agent="planner", sink=events.append, now=clock.now)
    [event] = events
    assert isinstance(event, MemoryRecallEvent)
    clock.advance(minutes=1)
    later = write("Dana moved to Berlin", kind="fact")
    account = account_recall(store, lambda scope: True, event)
    reasons = {entry.id: entry.reason for entry in account.others}
    assert [e.id for e in account.entries] == result.report.record_ids == [flight]
    assert reasons == {
        tea: "no_match",
        gone: "invalidated",
        expired: "expired",
        other_agent: "outside",
        narrower: "outside",
        later: "unwritten",
    }
    listed = [e.id for e in [*account.entries, *account.deferred, *account.others]]
    assert len(listed) == len(set(listed)) == 7  # every record once
    assert account.others_complete
    store.close()
