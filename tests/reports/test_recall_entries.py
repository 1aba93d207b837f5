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
