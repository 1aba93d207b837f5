"""Tier 1: the event log, and concurrent writers."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from memory_admin.conformance.base import (
    ACME,
    OTHER,
    U1,
    U2,
    U10,
    ConformanceBase,
    contents,
    rec,
)
from memory_admin.conformance.support import FakeClock
from memory_admin.errors import MemoryValidationError
from memory_admin.events import MemoryRecallEvent, MemorySearchEvent
from memory_admin.store.protocol import FullMemoryStore


class EventCases(ConformanceBase):
    # === Tier 1: events ============================================================

    def test_writes_and_searches_emit_events_to_sinks(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        seen: list[Any] = []
        raw_store.add_sink(seen.append)
        records = store.write([rec("a", U1), rec("b", U2), rec("c", U1)])
        store.search({"scope": U1, "query": "a b", "agent": "planner"})
        writes = [e for e in seen if e.type == "agent.memory.write"]
        assert sorted((e.scope["user"], e.count) for e in writes) == [("u1", 2), ("u2", 1)]
        assert sorted(i for e in writes for i in e.record_ids) == sorted(r.id for r in records)
        search = next(e for e in seen if e.type == "agent.memory.search")
        assert (search.scope, search.agent, search.query_preview, search.count) == (U1, "planner", "a b", 1)

    def test_a_failing_sink_never_fails_the_operation(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        def broken(event: Any) -> None:
            raise RuntimeError("sink down")

        raw_store.add_sink(broken)
        record = store.write([rec("still written")])[0]
        assert store.get(record.id) is not None
        assert contents(store.search({"scope": U1})) == ["still written"]

    def test_search_can_leave_its_event_to_the_caller(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        # recall reports its searches in its own event; they must not be counted twice
        store.write([rec("quiet note")])
        seen: list[Any] = []
        raw_store.add_sink(seen.append)
        assert contents(store.search({"scope": U1, "query": "quiet"}, emit_event=False)) == ["quiet note"]
        assert seen == []
        if raw_store.capabilities().events:
            assert raw_store.query_events({"types": ["agent.memory.search"]}) == []
        store.search({"scope": U1, "query": "quiet"})
        assert [event.type for event in seen] == ["agent.memory.search"]

    def test_event_previews_are_capped(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        seen: list[Any] = []
        raw_store.add_sink(seen.append)
        store.search({"scope": U1, "query": "é" * 600})
        event = seen[-1]
        assert len(event.query_preview.encode()) <= 512
        assert event.query_clipped is True
        assert event.query_preview.endswith("…")

    def test_event_log_persists_and_filters(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock
    ) -> None:
        self._needs(store, events=True)
        store.write([rec("one", U1), rec("two", {**U2, "agent": "coder"})])
        store.search({"scope": U1, "query": "one"})
        writes = raw_store.query_events({"types": ["agent.memory.write"]})
        assert len(writes) == 2
        assert writes[0].id > writes[1].id, "newest first"
        assert [e.event.scope for e in raw_store.query_events({"scope": U2})] == [{**U2, "agent": "coder"}]
        assert len(raw_store.query_events({"agent": "coder"})) == 1
        assert len(raw_store.query_events({"scope": ACME})) == 3
        assert raw_store.query_events({"since": clock.advance(hours=1).isoformat()}) == []
        stored = raw_store.get_event(writes[0].id)
        assert stored == writes[0]
        assert raw_store.get_event(10**9) is None

    def test_event_queries_and_imports_refuse_text_that_is_not_unicode(
        self, store: FullMemoryStore, raw_store: FullMemoryStore
    ) -> None:
        self._needs(store, events=True)
        store.write([rec("one", {**U1, "agent": "coder"})])
        for query in ({"agent": "\ud800"}, {"agent": "a" * 201}, {"scope": {"tenant": "\udfff"}}):
            with pytest.raises(MemoryValidationError):
                raw_store.query_events(query)
        [logged] = raw_store.query_events({})
        forged = logged.model_dump()
        forged["id"] += 1
        for field, value in (("agent", "\ud800"), ("agent", "a" * 201), ("type", "agent.memory.search")):
            forged["event"][field] = value
            if field == "type":  # a search event whose preview is past the bound every preview is clipped to
                forged["event"] = {
                    **{k: v for k, v in forged["event"].items() if k not in ("kinds", "superseded_ids")},
                    "agent": None,
                    "query_preview": "q" * 513,
                    "limit": 10,
                    "duration_ms": 1.0,
                }
            with pytest.raises(MemoryValidationError):
                raw_store.import_events([forged])
        assert raw_store.query_events({}) == [logged]

    def test_prune_events_keeps_records(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock
    ) -> None:
        self._needs(store, events=True)
        store.write([rec("old")])
        clock.advance(days=40)
        store.write([rec("new")])
        pruned = raw_store.prune_events(clock.peek() - timedelta(days=30))
        assert pruned == 1
        assert len(raw_store.query_events({})) == 1
        assert sorted(contents(store.search({"scope": U1}))) == ["new", "old"]

    def test_import_events_keeps_ids(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock
    ) -> None:
        self._needs(store, events=True)
        store.write([rec("one", U1), rec("two", U2)])
        store.search({"scope": U1, "query": "one"})
        logged = raw_store.query_events({})
        assert raw_store.prune_events(clock.advance(days=1)) == len(logged) == 3
        assert raw_store.import_events([stored.model_dump() for stored in reversed(logged)]) == 3
        assert raw_store.query_events({}) == logged
        assert raw_store.import_events(logged) == 0, "ids already in the log are skipped"
        store.write([rec("three")])
        assert raw_store.query_events({"limit": 1})[0].id > max(stored.id for stored in logged)

    def test_erase_removes_the_scopes_events(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        self._needs(store, events=True, erasure=True)
        store.write([rec("u1 note", U1), rec("u10 note", U10)])
        store.search({"scope": U1, "query": "secret question"})
        assert store.preview_erase(U1).events == 2
        report = store.erase(U1)
        assert report.events == 2
        remaining = raw_store.query_events({"scope": ACME})
        assert [e.event.scope for e in remaining] == [U10]

    # === Tier 1: concurrency ========================================================

    def test_concurrent_key_upserts_leave_one_live_record(self, raw_store: FullMemoryStore) -> None:
        errors: list[BaseException] = []

        def writer(n: int) -> None:
            try:
                for i in range(10):
                    raw_store.write([rec(f"w{n}-{i}", kind="profile", key="name")])
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        everything = raw_store.search({"scope": U1, "include_invalidated": True, "limit": 100})
        assert len(everything) == 40
        assert len([h for h in everything if h.record.invalid_at is None]) == 1
        successors = [h.record.superseded_by for h in everything if h.record.superseded_by]
        assert len(successors) == len(set(successors)) == 39

    # --- the event log, buffered --------------------------------------------------------

    def _other(self, store: FullMemoryStore) -> FullMemoryStore:
        self._needs(store, events=True)
        other = self.open_again(store)
        if other is None:
            pytest.skip("this backend cannot open a second store over the same data")
        return other

    @staticmethod
    def _searches(store: FullMemoryStore) -> int:
        return len(store.query_events({"types": ["agent.memory.search"], "limit": 10_000}))

    def test_a_store_reads_its_own_events_at_once(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        self._needs(store, events=True)
        store.write([rec("a note")])
        for n in range(20):
            store.search({"scope": U1, "query": f"note {n}"})
        assert self._searches(raw_store) == 20, "reads commit this store's own buffered events first"
        stats = raw_store.event_log_stats()
        assert (stats.logging, stats.dropped, stats.pending) == (True, 0, 0)
        assert stats.flush_interval_s > 0

    def test_closing_commits_every_buffered_event(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        other = self._other(raw_store)
        store.write([rec("a note")])
        for n in range(25):
            store.search({"scope": U1, "query": f"note {n}"})
        raw_store.close()
        try:
            assert self._searches(other) == 25, "no event is lost in a clean shutdown"
            assert len(other.query_events({"types": ["agent.memory.write"]})) == 1
        finally:
            if other is not raw_store:
                other.close()

    def test_buffered_events_reach_the_log_without_a_read(
        self, store: FullMemoryStore, raw_store: FullMemoryStore
    ) -> None:
        self._needs(store, events=True)
        for n in range(10):
            store.search({"scope": U1, "query": f"note {n}"})
        started = time.monotonic()
        while raw_store.event_log_stats().pending:  # the writer thread takes them: nothing here reads
            assert time.monotonic() - started < 10, "the writer thread never took the events"
            time.sleep(0.02)
        assert self._searches(raw_store) == 10

    # --- forgetting reaches the events ----------------------------------------------------

    @staticmethod
    def _previews(store: FullMemoryStore) -> dict[str, bool]:
        """Every stored query preview, and whether its event was redacted."""
        found: dict[str, bool] = {}
        for stored_event in store.query_events({"include_previews": True, "limit": 10_000}):
            event = stored_event.event
            if isinstance(event, MemorySearchEvent | MemoryRecallEvent):
                found[event.query_preview or ""] = found.get(event.query_preview or "", False) or event.redacted
        return found

    @pytest.mark.parametrize("forgetting", ["delete", "sweep"])
    def test_deleting_a_record_removes_the_query_text_of_events_that_found_it(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock, forgetting: str
    ) -> None:
        self._needs(store, events=True, admin=forgetting == "sweep")
        expires = (clock.peek() + timedelta(seconds=1)).isoformat() if forgetting == "sweep" else None
        victim = store.write([rec("Mei eats vegetarian at Vlondel", U2, expires_at=expires)])[0]
        store.write([rec("the weather is mild", U1)])
        store.search({"scope": U2, "query": "does Mei eat at Vlondel"})
        store.search({"scope": ACME, "query": "Vlondel vegetarian"})
        store.search({"scope": U1, "query": "weather"})
        if forgetting == "sweep":  # expired, then swept: as gone as deleted
            clock.advance(seconds=5)
            assert raw_store.sweep_expired(U2) == 1
        else:
            assert store.delete(victim.id)
        previews = self._previews(store)
        assert not any("Vlondel" in text for text in previews), previews
        assert previews.get("") is True, "the events that found it are marked redacted"
        assert previews.get("weather") is False, "an event that never found it keeps its text"

    def test_erasing_a_scope_removes_the_query_text_of_tenant_wide_events(self, store: FullMemoryStore) -> None:
        self._needs(store, events=True, erasure=True)
        store.write([rec("Mei eats vegetarian at Vlondel", U2), rec("Vlondel is closed on Mondays", U1)])
        store.search({"scope": ACME, "query": "Vlondel vegetarian"})  # found both: tenant-wide, outlives the erasure
        store.search({"scope": U1, "query": "when is Vlondel closed"})  # found only U1's
        assert store.erase(U2).records == 1
        previews = self._previews(store)
        assert "Vlondel vegetarian" not in previews and previews.get("") is True
        assert previews.get("when is Vlondel closed") is False

    @staticmethod
    def _found(clock: FakeClock, scope: dict[str, str], query: str, record_ids: list[str]) -> MemorySearchEvent:
        """The event of a search that has just run: on its way to the log (in another
        process's buffer, or a thread's that finished reading before a forgetting)."""
        return MemorySearchEvent(
            at=clock(), scope=scope, query_preview=query, count=len(record_ids), limit=10,
            record_ids=record_ids, duration_ms=0.5, mode="keyword",
        )  # fmt: skip

    @pytest.mark.parametrize("forgetting", ["erase", "delete", "sweep"])
    def test_events_on_their_way_to_the_log_when_their_tenant_forgets_are_withheld(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock, forgetting: str
    ) -> None:
        self._needs(store, events=True, erasure=forgetting == "erase", admin=forgetting == "sweep")
        expires = (clock.peek() + timedelta(seconds=1)).isoformat() if forgetting == "sweep" else None
        victim = store.write([rec("Mei eats vegetarian at Vlondel", U2, expires_at=expires)])[0]
        store.write([rec("Vlondel is closed on Mondays", OTHER)])
        in_flight = [
            self._found(clock, U2, "does Mei eat at Vlondel", [victim.id]),
            self._found(clock, ACME, "Vlondel vegetarian", [victim.id]),  # tenant-wide: outlives an erasure
            self._found(clock, U1, "what about Mei", []),  # found nothing, and may still quote it
        ]
        elsewhere = self._found(clock, OTHER, "Vlondel on Mondays", [])
        before = raw_store.event_log_stats()
        if forgetting == "erase":
            store.erase(U2)
        elif forgetting == "sweep":
            clock.advance(seconds=5)  # the record expires
            assert raw_store.sweep_expired(U2) == 1
        else:
            assert store.delete(victim.id)
        for event in [*in_flight, elsewhere]:
            raw_store.emit(event)
        clock.advance(minutes=1)
        later = self._found(clock, U1, "Mei again", [])
        raw_store.emit(later)
        logged = raw_store.query_events({"types": ["agent.memory.search"], "include_previews": True})
        previews = [getattr(stored.event, "query_preview", None) for stored in logged]
        assert previews == ["Mei again", "Vlondel on Mondays"], (
            "the tenant's events from before its forgetting are withheld; another tenant's, and later ones, are not"
        )
        after = raw_store.event_log_stats()
        assert after.withheld == before.withheld + len(in_flight), "withheld events are counted"
        assert after.dropped == before.dropped, "apart from the ones a writer that fell behind dropped"
