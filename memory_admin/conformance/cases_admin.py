"""Tier 1: the erasure and admin extensions."""

from __future__ import annotations

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
    stored,
)
from memory_admin.conformance.support import FakeClock
from memory_admin.errors import (
    MemoryConflictError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memory_admin.records import MAX_ID_CHARS, MAX_REASON_CHARS, MAX_SUPPORTS, Provenance
from memory_admin.store.protocol import FullMemoryStore, RecordListQuery


class ExtensionCases(ConformanceBase):
    # === Tier 1: erasure extension ==================================================

    def test_erase_stops_exactly_at_the_scope(self, store: FullMemoryStore) -> None:
        self._needs(store, erasure=True)
        store.write(
            [
                rec("u1 fact", U1),
                rec("u1 agent note", {**U1, "agent": "planner"}, kind="episode"),
                rec("u10 fact", U10),
                rec("tenant fact", ACME),
                rec("other tenant u1", OTHER),
            ]
        )
        preview = store.preview_erase(U1)
        assert preview.dry_run and preview.records == 2
        assert len(store.search({"scope": ACME})) == 4, "a preview removes nothing"
        report = store.erase(U1)
        assert report.records == 2 and not report.dry_run
        assert report.by_kind == {"fact": 1, "episode": 1}
        assert sorted(s.get("agent", "") for s in report.scopes) == ["", "planner"]
        assert sorted(contents(store.search({"scope": ACME}))) == ["tenant fact", "u10 fact"]
        assert contents(store.search({"scope": {"tenant": "globex"}})) == ["other tenant u1"]
        assert sorted(contents(store.search({"scope": ACME, "query": "fact note"}))) == ["tenant fact", "u10 fact"]

    def test_erase_preview_names_records_elsewhere_that_mention_the_scope(self, store: FullMemoryStore) -> None:
        self._needs(store, erasure=True)
        mei = {"tenant": "acme", "user": "mei"}
        store.write([rec("Mei eats vegetarian.", mei), rec("Mei moved to Osaka.", mei)])
        [about_mei] = store.write([rec("Dana shares the ledger with Mei.", U2)])
        store.write([rec("Dana likes tea.", U2), rec("Mei of globex, another person.", OTHER)])
        preview = store.preview_erase(mei)
        assert preview.records == 2 and preview.mentions == [about_mei.id], "only other scopes, only this tenant"
        assert preview.mentioned_words == {about_mei.id: ["mei"]}, "each with the words it names"
        assert store.preview_erase({"tenant": "acme", "user": "zed"}).mentions == []
        # a value whose stem stems again to another one ("increase" → "increas" → "increa")
        valued = {"tenant": "acme", "user": "increase"}
        store.write([rec("its own note", valued)])
        [about_it] = store.write([rec("The increase was agreed.", U2)])
        assert store.preview_erase(valued).mentions == [about_it.id], "the value's words, not their stems, are searched"
        assert store.preview_erase(valued).mentioned_words == {about_it.id: ["increase"]}
        report = store.erase(mei)
        assert report.mentions == [] and store.get(about_mei.id) is not None, "erasure leaves them to a person"

    def test_erase_needs_a_tenant(self, store: FullMemoryStore) -> None:
        self._needs(store, erasure=True)
        with pytest.raises(MemoryValidationError):
            store.erase({"user": "u1"})

    def test_erase_removes_everything_in_the_chain(self, store: FullMemoryStore) -> None:
        self._needs(store, erasure=True)
        v1 = store.write([rec("v1", kind="profile", key="name")])[0]
        store.write([rec("v2", kind="profile", key="name")])
        store.erase(U1)
        assert store.get(v1.id) is None
        assert store.search({"scope": U1, "include_invalidated": True}) == []

    # === Tier 1: admin extension ====================================================

    def test_keyset_pages_cover_everything_once(self, store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        store.write([rec(f"n{i}") for i in range(7)])
        store.write([rec(f"m{i}") for i in range(6)])
        seen: list[str] = []
        cursor = None
        while True:
            page = store.list_records(RecordListQuery(search={"scope": U1, "limit": 5}, cursor=cursor))
            seen += contents(page.hits)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
            store.write([rec("written while paging")])  # newer rows never shift later pages
        expected = [f"m{i}" for i in reversed(range(6))] + [f"n{i}" for i in reversed(range(7))]
        assert seen == expected

    def test_ranked_pages(self, store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        store.write([rec(f"kiwi {i}") for i in range(12)])
        first = store.list_records(RecordListQuery(search={"scope": U1, "query": "kiwi", "limit": 5}))
        second = store.list_records(
            RecordListQuery(search={"scope": U1, "query": "kiwi", "limit": 5}, cursor=first.next_cursor)
        )
        third = store.list_records(
            RecordListQuery(search={"scope": U1, "query": "kiwi", "limit": 5}, cursor=second.next_cursor)
        )
        everything = contents(first.hits) + contents(second.hits) + contents(third.hits)
        assert sorted(everything) == sorted(f"kiwi {i}" for i in range(12))
        assert third.next_cursor is None

    def test_bad_cursor_is_a_validation_error(self, store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        for cursor in ("garbage", "r12", "o-1"):
            with pytest.raises(MemoryValidationError):
                store.list_records(RecordListQuery(search={"scope": U1}, cursor=cursor))

    def test_listing_can_include_expired(self, store: FullMemoryStore, clock: FakeClock) -> None:
        self._needs(store, admin=True)
        store.write([rec("short-lived", expires_at=(clock.peek() + timedelta(seconds=1)).isoformat())])
        clock.advance(seconds=5)
        query = {"scope": U1}
        assert store.list_records(RecordListQuery(search=query)).hits == []
        assert contents(store.list_records(RecordListQuery(search=query, include_expired=True)).hits) == ["short-lived"]

    def test_iter_records_streams_every_page(self, store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        store.write([rec(f"r{i}") for i in range(23)])
        records = list(store.iter_records(RecordListQuery(search={"scope": ACME}), page_size=5))
        assert len(records) == 23 and len({r.id for r in records}) == 23
        as_mapping: Any = {"search": {"scope": ACME}}  # a mapping, as list_records takes one
        assert [r.id for r in store.iter_records(as_mapping, page_size=5)] == [r.id for r in records]
        sizes: tuple[Any, ...] = (0, -5, True, 2.5)
        for size in sizes:  # a typed refusal before any read, never an IndexError
            with pytest.raises(MemoryValidationError, match="page_size is a positive integer"):
                next(store.iter_records(RecordListQuery(search={"scope": ACME}), page_size=size))

    def test_scope_facets(self, store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        store.write([rec("a", U1), rec("b", U1), rec("c", U2), rec("d", ACME), rec("e", OTHER)])
        facets = {f.key: f for f in store.scope_facets({"tenant": "acme"})}
        assert facets["tenant"].records == 4
        assert {v.value: v.records for v in facets["user"].values} == {"u1": 2, "u2": 1}
        everywhere = {f.key: f for f in store.scope_facets()}
        assert {v.value: v.records for v in everywhere["tenant"].values} == {"acme": 4, "globex": 1}
        (users,) = [f for f in store.scope_facets(ACME, values_per_key=1) if f.key == "user"]
        assert [v.value for v in users.values] == ["u1"] and users.more_values  # the commonest value first
        for per_key in (0, -1, True):  # alike on every backend: refused, never "no limit"
            with pytest.raises(MemoryValidationError, match="values_per_key is a positive integer"):
                store.scope_facets(values_per_key=per_key)

    def test_count_records(self, store: FullMemoryStore, clock: FakeClock) -> None:
        self._needs(store, admin=True)
        a, _, _ = store.write(
            [
                rec("a"),
                rec("b", kind="profile"),
                rec("c", expires_at=(clock.peek() + timedelta(seconds=1)).isoformat()),
            ]
        )
        store.invalidate(a.id, "x")
        clock.advance(seconds=5)
        counts = store.count_records(U1)
        assert (counts.total, counts.live, counts.invalidated, counts.expired) == (3, 1, 1, 1)
        assert counts.by_kind["fact"] == 2 and counts.by_kind["profile"] == 1

    def test_chain_is_oldest_first(self, store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        v1 = store.write([rec("v1", kind="preference", key="k")])[0]
        v2 = store.write([rec("v2", kind="preference", key="k")])[0]
        v3 = store.write([rec("v3", kind="preference", key="k")])[0]
        for record in (v1, v2, v3):
            assert [link.id for link in store.chain(record.id)] == [v1.id, v2.id, v3.id]
        with pytest.raises(MemoryNotFoundError):
            store.chain("mem_UNKNOWN")

    def test_sweep_expired_stops_exactly_at_the_scope(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock
    ) -> None:
        self._needs(store, admin=True)
        soon = (clock.peek() + timedelta(seconds=1)).isoformat()
        brief, lasting, *elsewhere = store.write(
            [
                rec("brief", expires_at=soon),
                rec("lasting"),
                rec("u10 brief", U10, expires_at=soon),
                rec("other tenant brief", OTHER, expires_at=soon),
            ]
        )
        assert raw_store.sweep_expired(U1) == 0, "nothing has expired yet"
        clock.advance(seconds=5)
        assert raw_store.sweep_expired(U1) == 1
        assert store.get(brief.id) is None and store.get(lasting.id) is not None
        assert all(store.get(record.id) is not None for record in elsewhere)
        assert raw_store.sweep_expired(U1) == 0

    def test_import_records_round_trips_verbatim(
        self, store: FullMemoryStore, raw_store: FullMemoryStore, clock: FakeClock
    ) -> None:
        self._needs(store, admin=True)
        v1 = store.write([rec("v1 tea", kind="preference", key="drink")])[0]
        store.write([rec("v2 coffee", kind="preference", key="drink")])
        v3 = store.write([rec("v3 water", kind="preference", key="drink")])[0]
        assert v3.supersedes is not None
        store.delete(v3.supersedes)  # a tombstone inside the chain
        stated = (clock.peek() - timedelta(days=30)).isoformat()
        store.write([rec("tie a", observed_at=stated), rec("tie b"), rec("tie c", U2)])
        dropped = store.write([rec("dropped", expires_at=(clock.peek() + timedelta(seconds=1)).isoformat())])[0]
        store.invalidate(store.write([rec("retired", tags=["x"])])[0].id, "wrong")
        clock.advance(seconds=5)
        everything = RecordListQuery(search={"scope": ACME, "include_invalidated": True}, include_expired=True)
        snapshot = list(raw_store.iter_records(everything, page_size=3))
        listing = contents(store.search({"scope": ACME, "include_invalidated": True, "limit": 100}))
        chain = [(link.id, link.record) for link in store.chain(v3.id)]
        for record in snapshot:
            store.delete(record.id)
        assert store.search({"scope": ACME, "include_invalidated": True}) == []

        assert raw_store.import_records(list(reversed(snapshot))) == len(snapshot) == 7
        for record in snapshot:
            assert store.get(record.id) == record
        assert contents(store.search({"scope": ACME, "include_invalidated": True, "limit": 100})) == listing
        assert [(link.id, link.record) for link in store.chain(v3.id)] == chain
        assert store.get(dropped.id) is not None and contents(store.search({"scope": U1, "query": "dropped"})) == []
        assert contents(store.search({"scope": U1, "query": "water tea"})) == ["v3 water"]
        assert raw_store.import_records(snapshot, skip_existing=True) == 0
        with pytest.raises(MemoryConflictError):
            raw_store.import_records(snapshot[:1])
        v4 = store.write([rec("v4 juice", kind="preference", key="drink")])[0]
        assert v4.supersedes == v3.id, "imported key holders are superseded like written ones"
        assert stored(store, v1.id).superseded_by is not None

    def test_import_holds_records_to_every_bound(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        caps = store.capabilities()
        [model] = store.write([rec("a record to copy", target={"primitive": "recovery"})])
        store.delete(model.id)
        over: list[dict[str, Any]] = [
            {"content": "x" * (caps.max_content_chars + 1)},
            {"payload": {"notes": "x" * caps.max_payload_chars}},
            {"invalid_at": model.created_at, "invalid_reason": "r" * (MAX_REASON_CHARS + 1)},
            {"supersedes": "mem_" + "A" * MAX_ID_CHARS},
            {"superseded_by": "mem_" + "A" * MAX_ID_CHARS},
            {"supports": [Provenance(source=f"s{n}") for n in range(MAX_SUPPORTS + 1)]},
        ]
        for fields in over:
            refused = model.model_copy(update={"id": "mem_IMPORTEDOVERBOUND", **fields})
            with pytest.raises((MemoryLimitError, MemoryValidationError)):
                raw_store.import_records([model, refused])
            assert store.get(model.id) is None, f"nothing of the batch went in ({', '.join(fields)})"
        assert raw_store.import_records([model]) == 1

    def test_import_refuses_a_second_live_key_holder(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        holder = store.write([rec("aisle", kind="preference", key="seat")])[0]
        intruder = holder.model_copy(update={"id": "mem_IMPORTEDINTRUDER", "content": "window"})
        with pytest.raises(MemoryConflictError) as info:
            raw_store.import_records([intruder])
        assert info.value.extras["key_holder"] == holder.id
        assert contents(store.search({"scope": U1})) == ["aisle"]

    def test_optimize_keeps_everything_findable(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        store.write([rec(f"note {i} about kiwis") for i in range(30)])
        raw_store.optimize()
        assert len(store.search({"scope": U1, "query": "kiwis", "limit": 50})) == 30
        assert len(store.search({"scope": U1, "limit": 50})) == 30
