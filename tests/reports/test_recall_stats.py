"""Recall events over time: buckets, their sizes and the bounded read of the log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory_admin.events import MemoryRecallEvent
from memory_admin.reports.recall_stats import BUCKETS, choose_bucket, floor_time, read_recall_events, summarize
from memory_admin.store import InMemoryMemoryStore

T0 = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)  # a Monday


def event(
    minutes: float, *, count: int = 3, chars: int = 900, truncated: bool = False, **extra: object
) -> MemoryRecallEvent:
    return MemoryRecallEvent.model_validate(
        {
            "at": T0 + timedelta(minutes=minutes),
            "scope": {"tenant": "t"},
            "count": count,
            "chars": chars,
            "budget_chars": 4000,
            "truncated": truncated,
            "deferred": int(truncated),
            "record_ids": [f"m{i}" for i in range(count)],
            **extra,
        }
    )


def test_buckets_fill_gaps_and_average() -> None:
    series = summarize(
        [
            event(0, count=2, chars=1000),
            event(10, count=4, chars=3000, truncated=True, deferred_reasons={"x": "profile_slice"}),
            event(185, count=6),
        ],
        bucket="hour",
    )
    assert series.bucket == "hour" and [b.recalls for b in series.buckets] == [2, 0, 0, 1]
    first = series.buckets[0]
    assert first.start == datetime(2026, 1, 5, 9, tzinfo=UTC) and first.label == "01-05 09:00"
    assert (first.avg_records, first.avg_chars, first.max_chars) == (3.0, 2000.0, 3000)
    assert first.truncation_percent == 50.0 and first.by_profile_slice == 1 and first.by_budget == 0
    assert series.buckets[1].avg_records is None  # a gap
    assert series.totals.recalls == 3 and series.totals.fill_percent == 40.8
    data = series.chart_data()
    assert data["records"] == [3.0, None, None, 6.0] and data["truncation"] == [50.0, None, None, 0.0]


def test_bucket_size_choice() -> None:
    assert choose_bucket(timedelta(hours=20)) == ("hour", None)
    assert choose_bucket(timedelta(days=5)) == ("6h", None)
    assert choose_bucket(timedelta(days=40)) == ("day", None)
    assert choose_bucket(timedelta(days=400)) == ("week", None)
    name, note = choose_bucket(timedelta(days=365), "hour")
    assert name == "day" and note is not None  # 8,760 hourly buckets would be too many
    assert choose_bucket(timedelta(days=3), "day") == ("day", None)


def test_floor_time_aligns_weeks_on_mondays() -> None:
    sunday = datetime(2026, 1, 11, 23, 59, tzinfo=UTC)
    assert floor_time(sunday, BUCKETS["week"]) == datetime(2026, 1, 5, tzinfo=UTC)
    assert floor_time(sunday, BUCKETS["6h"]) == datetime(2026, 1, 11, 18, tzinfo=UTC)


def test_reading_the_log_is_bounded(demo_store: InMemoryMemoryStore) -> None:
    scan = read_recall_events(demo_store, scope=None, limit=5)
    assert len(scan.events) == 5 and not scan.complete
    full = read_recall_events(demo_store, scope={"tenant": "acme"})
    assert full.complete and len(full.events) == 10
    assert [s.id for s in full.events] == sorted((s.id for s in full.events), reverse=True)
