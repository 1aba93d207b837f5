"""The gardening report's pure checks against brute force, and the report itself over
the demo corpus, without Django."""

from __future__ import annotations

import itertools
import random

import pytest

from memory_admin.records import MemoryRecord, MemoryWriteInput, Provenance, utc_now
from memory_admin.reports import health
from memory_admin.reports.health import build_health, has_usable_provenance, key_conflicts, near_duplicates
from memory_admin.store import InMemoryMemoryStore
from memory_admin.tokenize import tokenize
from tests.reports.conftest import rec


def test_near_duplicates_in_one_scope_only() -> None:
    a = rec("a", "The staging cluster is rebuilt every Sunday night.")
    b = rec("b", "The staging cluster is rebuilt every Sunday night!", minutes=1)
    c = rec("c", "The staging cluster is rebuilt every Sunday night.", scope={"tenant": "t", "user": "u"})
    d = rec("d", "The production cluster is never rebuilt.")
    short = [rec("e", "Yes."), rec("f", "Yes!")]
    [pair] = near_duplicates([a, b, c, d, *short])
    assert (pair.older.id, pair.newer.id, pair.percent) == ("a", "b", 100)


def jaccard(x: MemoryRecord, y: MemoryRecord) -> float:
    a, b = set(tokenize(x.content)), set(tokenize(y.content))
    return len(a & b) / len(a | b)


@pytest.mark.parametrize("seed", range(5))
def test_prefix_filtering_finds_what_brute_force_finds(seed: int) -> None:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(25)]
    records = [
        rec(f"r{i:03}", " ".join(rng.sample(words, rng.randint(3, 9))), scope={"tenant": rng.choice("ab")}, minutes=i)
        for i in range(150)
    ]
    records += [rec(f"s{i:03}", records[i].content, scope=records[i].scope, minutes=200 + i) for i in range(10)]
    for threshold in (0.5, 0.8):
        found = {(p.older.id, p.newer.id) for p in near_duplicates(records, threshold=threshold)}
        brute = {
            tuple(sorted((x.id, y.id), key=lambda i: (next(r for r in records if r.id == i).created_at, i)))
            for x, y in itertools.combinations(records, 2)
            if x.scope == y.scope and jaccard(x, y) >= threshold
        }
        assert found == brute and (threshold < 0.8 or len(found) >= 10)


def test_key_conflicts_across_kinds_and_in_one_slot() -> None:
    live = [
        rec("a", "Mei prefers vegetarian dinners.", kind="preference", key="diet"),
        rec("b", "Mei eats vegetarian.", key="diet", minutes=1),
        rec("c", "Seat 1.", key="seat"),
        rec("d", "Seat 2.", key="seat", minutes=1),
        rec("e", "Seat 3.", key="seat", scope={"tenant": "t", "user": "u"}),
    ]
    diet, seat = key_conflicts(live)
    assert (diet.key, diet.same_slot, [r.id for r in diet.records]) == ("diet", False, ["a", "b"])
    assert (seat.key, seat.same_slot, [r.id for r in seat.records]) == ("seat", True, ["c", "d"])


@pytest.mark.parametrize(
    ("fields", "usable"),
    [
        ({"source": "unknown"}, False),
        ({"source": "N/A", "author": "-"}, False),
        ({"source": "?", "run_id": "tbd."}, False),
        ({"source": "unknown", "conversation_id": "c-17"}, True),
        ({"author": "dana"}, True),
    ],
)
def test_usable_provenance(fields: dict[str, str], usable: bool) -> None:
    assert has_usable_provenance(Provenance(**fields)) is usable


# --- the report over the demo corpus --------------------------------------------------------

ACME = {"tenant": "acme"}


def test_the_demo_report_finds_what_the_demo_planted(demo_store: InMemoryMemoryStore) -> None:
    report = build_health(demo_store, ACME, utc_now(), visible=lambda scope: True)
    [diet] = [conflict for conflict in report.conflicts if conflict.key == "diet"]
    assert diet.scope_text == "tenant=acme,user=mei" and not diet.same_slot
    assert report.counts.expired == len(report.expired) == 3
    assert "tenant=acme,user=dana" in {overflow.scope_text for overflow in report.overflows}
    assert report.recall_events > 0 and 0 < report.never_recalled_total < report.live.checked
    assert report.live.complete and report.corrupt_check.complete and report.corrupt == []


def test_the_report_stays_inside_what_the_reader_may_see(demo_store: InMemoryMemoryStore) -> None:
    report = build_health(demo_store, ACME, utc_now(), visible=lambda scope: scope.get("user") != "dana")
    assert "tenant=acme,user=dana" not in {overflow.scope_text for overflow in report.overflows}
    shown = [*report.expired, *report.never_recalled, *report.no_provenance]
    shown += [record for conflict in report.conflicts for record in conflict.records]
    assert shown and all(record.scope.get("user") != "dana" for record in shown)


def test_scans_are_bounded_and_say_so(demo_store: InMemoryMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "LIVE_SCAN", 5)
    report = build_health(demo_store, ACME, utc_now(), visible=lambda scope: True)
    assert (report.live.checked, report.live.of, report.live.complete) == (5, 43, False)


def test_never_recalled_judges_only_records_older_than_the_window(demo_store: InMemoryMemoryStore) -> None:
    report = build_health(demo_store, {"tenant": "acme"}, utc_now(), visible=lambda scope: True)
    assert report.oldest_recall is not None and report.newest_recall is not None
    assert report.oldest_recall <= report.newest_recall
    assert all(record.created_at < report.oldest_recall for record in report.never_recalled)
    assert report.too_new_to_judge > 0  # the demo writes records after its last recall
    written = MemoryWriteInput.model_validate(
        {"scope": {"tenant": "acme"}, "kind": "fact", "content": "Written just now.", "provenance": {"source": "test"}}
    )
    [fresh] = demo_store.write([written])
    again = build_health(demo_store, {"tenant": "acme"}, utc_now(), visible=lambda scope: True)
    assert fresh.id not in {record.id for record in again.never_recalled}
    assert again.too_new_to_judge == report.too_new_to_judge + 1
