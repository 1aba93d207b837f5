"""Recall events over time: the numbers behind the recall page's graphs and its table.

:func:`read_recall_events` pages through the store's event log (newest
first, bounded); :func:`summarize` puts the events into time buckets — recalls, records
injected, characters against the budget, truncation — filling empty buckets so a gap
in traffic shows as a gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_admin.events import EventQuery, MemoryRecallEvent, StoredEvent
from memory_admin.scope import Scope
from memory_admin.store.protocol import EventLogStore

RECALL = "agent.memory.recall"
MAX_EVENTS = 20_000
"""Recall events one page view reads at most (newest first); the page says when it stopped."""
EVENT_PAGE = 5_000

BUCKETS: dict[str, timedelta] = {
    "hour": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "day": timedelta(days=1),
    "week": timedelta(weeks=1),
}
BUCKET_LABELS = {"hour": "hour", "6h": "6 hours", "day": "day", "week": "week"}
TARGET_BUCKETS = 60  # "auto" picks the finest size with at most this many buckets
MAX_BUCKETS = 400  # a finer size asked for a long range is coarsened to stay under this
_ANCHOR = datetime(1970, 1, 5, tzinfo=UTC)  # a Monday at midnight: weeks start on Mondays


@dataclass(frozen=True)
class EventScan:
    """Recall events read from the log, newest first."""

    events: list[StoredEvent]
    complete: bool
    """False when the scan stopped at :data:`MAX_EVENTS` and older events were not read."""

    @property
    def recalls(self) -> list[MemoryRecallEvent]:
        return [stored.event for stored in self.events if isinstance(stored.event, MemoryRecallEvent)]


def read_recall_events(
    store: EventLogStore,
    *,
    scope: Scope | None,
    agent: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = MAX_EVENTS,
    before: int | None = None,
) -> EventScan:
    """Recall events under ``scope`` (all when ``None``), newest first, at most ``limit``,
    older than the event id ``before`` when given. Previews are never included: they
    are kept out of the production graphs."""
    found: list[StoredEvent] = []
    while len(found) < limit:
        page_size = min(EVENT_PAGE, limit - len(found))
        query = EventQuery(
            types=(RECALL,),
            scope=scope,
            agent=agent,
            since=since,
            until=until,
            before_id=before,
            limit=page_size,
        )
        page = store.query_events(query)
        found += page
        if len(page) < page_size:
            return EventScan(found, complete=True)
        before = page[-1].id
    return EventScan(found, complete=False)


def floor_time(moment: datetime, size: timedelta) -> datetime:
    """The start of the bucket of ``size`` that holds ``moment`` (UTC; weeks from Monday)."""
    steps = (moment.astimezone(UTC) - _ANCHOR) // size
    return _ANCHOR + steps * size


def choose_bucket(span: timedelta, requested: str | None = None) -> tuple[str, str | None]:
    """The bucket size for ``span``: ``requested`` if it keeps under :data:`MAX_BUCKETS`
    buckets, otherwise (or for "auto") the finest size with at most
    :data:`TARGET_BUCKETS`. Returns the size's name and a note when a request was coarsened."""
    names = list(BUCKETS)
    if requested in BUCKETS:
        for name in names[names.index(requested) :]:
            if span / BUCKETS[name] <= MAX_BUCKETS or name == names[-1]:
                note = None if name == requested else f"{BUCKET_LABELS[requested]} buckets would be too many here"
                return name, note
    for name in names:
        if span / BUCKETS[name] <= TARGET_BUCKETS:
            return name, None
    return names[-1], None


@dataclass(frozen=True)
class BucketRange:
    """Time buckets from a first to a last moment: their size's name (and a note when a
    requested size was coarsened), the first bucket's start, how many."""

    name: str
    note: str | None
    start: datetime
    count: int

    @property
    def size(self) -> timedelta:
        return BUCKETS[self.name]

    def starts(self) -> list[datetime]:
        return [self.start + i * self.size for i in range(self.count)]

    def index(self, moment: datetime) -> int | None:
        """The bucket ``moment`` falls in, or ``None`` outside the range."""
        position = int((moment - self.start) // self.size)
        return position if 0 <= position < self.count else None


def bucket_range(first: datetime, last: datetime, requested: str | None = None) -> BucketRange:
    """The buckets that cover ``first`` to ``last`` (:func:`choose_bucket` picks their size)."""
    name, note = choose_bucket(max(last - first, timedelta(0)), requested)
    start = floor_time(first, BUCKETS[name])
    return BucketRange(name, note, start, int((last - start) / BUCKETS[name]) + 1)


def label(start: datetime, bucket: str) -> str:
    if bucket in ("hour", "6h"):
        return start.strftime("%m-%d %H:%M")
    if bucket == "week":
        return start.strftime("week of %Y-%m-%d")
    return start.strftime("%Y-%m-%d")


@dataclass
class Bucket:
    """The recalls of one time bucket (or of the whole range, for the totals)."""

    start: datetime | None = None
    label: str = ""
    recalls: int = 0
    truncated: int = 0
    records: int = 0
    chars: int = 0
    budget: int = 0
    max_chars: int = 0
    deferred: int = 0
    by_profile_slice: int = 0
    """Recalls that deferred at least one record because the profile slice was full."""
    by_budget: int = 0
    """Recalls that deferred at least one record because the whole budget was spent."""
    fallbacks: int = 0

    def add(self, event: MemoryRecallEvent) -> None:
        self.recalls += 1
        self.truncated += int(event.truncated)
        self.records += event.count
        self.chars += event.chars
        self.budget += event.budget_chars
        self.max_chars = max(self.max_chars, event.chars)
        self.deferred += event.deferred
        reasons = set(event.deferred_reasons.values())
        self.by_profile_slice += int("profile_slice" in reasons)
        self.by_budget += int("budget" in reasons)
        self.fallbacks += int(event.fallback)

    def _mean(self, total: int) -> float | None:
        return round(total / self.recalls, 1) if self.recalls else None

    @property
    def avg_records(self) -> float | None:
        return self._mean(self.records)

    @property
    def avg_chars(self) -> float | None:
        return self._mean(self.chars)

    @property
    def avg_budget(self) -> float | None:
        return self._mean(self.budget)

    @property
    def fill_percent(self) -> float | None:
        """Characters used as a share of the budget, over the bucket's recalls."""
        return round(100 * self.chars / self.budget, 1) if self.budget else None

    @property
    def truncation_percent(self) -> float | None:
        return round(100 * self.truncated / self.recalls, 1) if self.recalls else None


SMALL_SAMPLE = 5  # recalls in a bucket below which its percentages are shown as counts


@dataclass
class RecallSeries:
    bucket: str
    buckets: list[Bucket]
    totals: Bucket
    agents: list[str] = field(default_factory=list)
    note: str | None = None

    @property
    def bucket_label(self) -> str:
        return BUCKET_LABELS[self.bucket]

    @property
    def active_buckets(self) -> list[Bucket]:
        """Buckets with at least one recall, newest first (the table)."""
        return [b for b in reversed(self.buckets) if b.recalls]

    def chart_data(self) -> dict[str, Any]:
        """The series the charts draw, as plain JSON-able lists (``None`` is a gap)."""
        return {
            "bucket": self.bucket_label,
            "labels": [b.label for b in self.buckets],
            "recalls": [b.recalls for b in self.buckets],
            "records": [b.avg_records for b in self.buckets],
            "chars": [b.avg_chars for b in self.buckets],
            "max_chars": [b.max_chars if b.recalls else None for b in self.buckets],
            "budget": [b.avg_budget for b in self.buckets],
            "truncation": [b.truncation_percent for b in self.buckets],
            "truncated": [b.truncated if b.recalls else None for b in self.buckets],
            # a bucket without recalls is a gap, never a 0 %: the charts mark it apart
            "empty": [b.recalls == 0 for b in self.buckets],
            # a percentage of so few recalls says little: the charts pale it and give counts
            "small_sample": SMALL_SAMPLE,
        }


def summarize(
    events: Sequence[MemoryRecallEvent],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    bucket: str | None = None,
) -> RecallSeries:
    """Recall events in time buckets from ``since`` (default: the oldest event) to
    ``until`` (default: the newest), empty buckets included."""
    totals = Bucket(label="all")
    agents = sorted({event.agent for event in events if event.agent})
    if not events and (since is None or until is None):
        return RecallSeries(bucket or "day", [], totals, agents)
    span = bucket_range(since or min(event.at for event in events), until or max(event.at for event in events), bucket)
    buckets = [Bucket(start=start, label=label(start, span.name)) for start in span.starts()]
    for event in events:
        index = span.index(event.at)
        if index is not None:
            buckets[index].add(event)
            totals.add(event)
    return RecallSeries(span.name, buckets, totals, agents, span.note)
