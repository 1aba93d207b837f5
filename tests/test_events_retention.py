from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory_admin.conformance import FakeClock
from memory_admin.dashboard.stores import reset_stores
from memory_admin.errors import CapabilityError, MemoryValidationError
from memory_admin.recall import assemble_recall
from memory_admin.records import utc_now
from memory_admin.retention import parse_age, prune_events_older_than
from memory_admin.store import (
    BaseMemoryStore,
    InMemoryMemoryStore,
    MemoryStoreCapabilities,
    RecordListQuery,
    SqliteMemoryStore,
)
from memory_admin.toolbox import MemoryToolbox
from tests.support.records import DANA, rec


@pytest.fixture
def clock() -> FakeClock:
    # real time, so the command's "now" and the store's agree
    return FakeClock(start=utc_now() - timedelta(days=40))


def fill(store: BaseMemoryStore, clock: FakeClock) -> list[str]:
    """Forty days of history: every event type, and records in every state."""
    old = store.write([rec("Dana lives in Porto.", key="home"), rec("Espresso, no milk.")])
    store.write([rec("Dana lives in Lisbon.", key="home")])  # supersedes the first
    store.invalidate(old[1].id, "she switched to tea")
    store.write([rec("Conference pass", expires_at=clock.peek() + timedelta(days=1))])
    store.search({"scope": DANA, "query": "Lisbon"})
    assemble_recall(store, DANA, "where does Dana live", now=clock.peek())
    clock.advance(days=39)
    store.write([rec("Dana started learning Portuguese.")])
    assemble_recall(store, DANA, "Portuguese", now=clock.peek())
    return everything(store)


def everything(store: BaseMemoryStore) -> list[str]:
    """Every record id under the scope: invalidated and expired ones too."""
    query = RecordListQuery.model_validate(
        {"search": {"scope": DANA, "include_invalidated": True}, "include_expired": True}
    )
    return sorted(record.id for record in store.iter_records(query))


def test_parse_age() -> None:
    assert parse_age("30d") == timedelta(days=30)
    assert parse_age(" 12h ") == timedelta(hours=12)
    assert parse_age("90m") == timedelta(minutes=90)
    assert parse_age("2W") == timedelta(weeks=2)
    assert parse_age("45s") == timedelta(seconds=45)
    for bad in ("", "30", "d", "0d", "-1d", "1.5d", "30 days", "1y"):
        with pytest.raises(MemoryValidationError):
            parse_age(bad)


def test_pruning_removes_old_events_and_keeps_every_record(store: BaseMemoryStore, clock: FakeClock) -> None:
    records = fill(store, clock)
    assert len(records) == 5
    counts = store.count_records(DANA)
    events = store.query_events({"include_previews": True})
    cutoff = clock.peek() - timedelta(days=30)
    old = [stored for stored in events if stored.event.at < cutoff]
    assert {stored.event.type for stored in old} == {"agent.memory.write", "agent.memory.search", "agent.memory.recall"}

    report = prune_events_older_than(store, "30d", now=clock.peek())

    assert report.pruned == len(old) and report.cutoff == cutoff
    remaining = store.query_events({"include_previews": True})
    assert [stored.id for stored in remaining] == [stored.id for stored in events if stored.event.at >= cutoff]
    assert {stored.event.type for stored in remaining} == {"agent.memory.write", "agent.memory.recall"}
    assert everything(store) == records, "every record survives, invalidated and expired ones included"
    assert store.count_records(DANA) == counts
    assert prune_events_older_than(store, timedelta(days=30), now=clock.peek()).pruned == 0


def test_a_store_without_an_event_log_says_so(clock: FakeClock) -> None:
    class NoLog(InMemoryMemoryStore):
        def capabilities(self) -> MemoryStoreCapabilities:
            return super().capabilities().model_copy(update={"events": False})

    with pytest.raises(CapabilityError) as missing:
        prune_events_older_than(NoLog(clock=clock), "30d")
    assert missing.value.missing == ["events"]


def test_the_command_prunes_events_only(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "memory.sqlite3"
    with SqliteMemoryStore(path, clock=clock) as store:
        records = fill(store, clock)
        before = len(store.query_events({}))
    out = StringIO()
    try:
        call_command("memory_events_prune", "--older-than", "30d", "--store", f"sqlite:///{path}", stdout=out)
    finally:
        reset_stores()
    assert "memory records are untouched" in out.getvalue()
    with SqliteMemoryStore(path, clock=clock) as store:
        after = len(store.query_events({}))
        assert 0 < after < before
        assert f"Pruned {before - after} events" in out.getvalue()
        assert everything(store) == records


def test_the_command_refuses_a_bad_age(tmp_path: Path) -> None:
    try:
        with pytest.raises(CommandError, match="not an age"):
            call_command("memory_events_prune", "--older-than", "soon", "--store", "memory://")
    finally:
        reset_stores()


# --- a failing sink never fails what it reports --------------------------------------


def test_a_failing_sink_never_fails_a_toolbox_save_or_a_recall(store: BaseMemoryStore) -> None:
    def broken(event: Any) -> None:
        raise RuntimeError("sink down")

    store.add_sink(broken)
    toolbox = MemoryToolbox(store, DANA, agent="planner")
    saved = toolbox.call("memory_save", {"content": "Dana prefers window seats."})
    assert saved["ok"] is True and store.get(saved["saved"]["id"]) is not None
    assert toolbox.call("memory_search", {"query": "window"})["count"] == 1
    result = assemble_recall(store, DANA, "window seat", agent="planner")
    assert result.report.count == 1
    assert [stored.event.type for stored in store.query_events({})][:1] == ["agent.memory.recall"]
