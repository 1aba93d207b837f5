"""The profile slice: replayed with recall's own placement, so it agrees with recall."""

from __future__ import annotations

from memory_admin.recall import assemble_recall
from memory_admin.reports.profile_slice import profile_slice
from memory_admin.store import InMemoryMemoryStore
from tests.reports.conftest import rec

USER = {"tenant": "acme", "user": "u1"}


def test_profile_slice_first_fit_newest_first() -> None:
    small = [rec(f"p{i}", "x" * 100, scope=USER, minutes=i, kind="profile") for i in range(3)]
    fits = profile_slice(small)
    assert not fits.overflows and fits.slice_chars == 1600 and len(fits.admitted) == 3
    big = [rec(f"b{i}", "y" * 400, scope=USER, minutes=i, kind="profile") for i in range(5)]
    over = profile_slice(big)
    assert over.overflows and over.used_chars <= over.slice_chars
    assert [r.id for r in over.admitted] == ["b4", "b3", "b2"]  # newest first
    assert over.total_chars > over.slice_chars


def test_the_replay_defers_what_recall_defers() -> None:
    store = InMemoryMemoryStore()
    for i, size in enumerate((700, 90, 500, 40, 300)):
        store.write(
            [
                {
                    "scope": USER,
                    "kind": "profile",
                    "key": f"k{i}",
                    "content": f"p{i} " + "z" * size,
                    "provenance": {"source": "test"},
                }
            ]
        )
    profiles = [hit.record for hit in store.search({"scope": USER, "kinds": ["profile"], "limit": 50})]
    for budget, ratio in ((4000, 0.4), (2000, 0.3), (4000, 0.1)):
        placed = profile_slice(profiles, budget_chars=budget, ratio=ratio)
        report = assemble_recall(store, USER, budget_chars=budget, profile_budget_ratio=ratio, max_hits=0).report
        assert [r.id for r in placed.admitted] == report.record_ids
        assert [r.id for r in placed.deferred] == report.deferred_ids
        assert set(report.deferred_reasons.values()) <= {"profile_slice"}
    store.close()
