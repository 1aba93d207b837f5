"""One recall entry by entry: tiers in block order, and the accounting of an event."""

from __future__ import annotations

from memory_admin.recall import assemble_recall
from memory_admin.reports.recall_entries import account_recall, tiers_in_order
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
    from_report = account_recall(store, lambda scope: True, result.report)
    from_event = account_recall(store, lambda scope: True, result.event)
    assert from_report == from_event  # the default ratio: the event's slice is the report's
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
    account = account_recall(demo_store, lambda scope: True, result.report)
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
