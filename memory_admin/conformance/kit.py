"""The conformance cases. See :mod:`memory_admin.conformance` for how to use them."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest

from memory_admin.conformance.corpus import CORPUS, MATCH_CASES, MatchCase
from memory_admin.conformance.support import AsyncBridge, FakeClock
from memory_admin.errors import (
    CapabilityError,
    MemoryConflictError,
    MemoryCorruptionError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryScopeError,
    MemoryValidationError,
)
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.store.protocol import FullMemoryStore, MemoryNeeds, MemoryStore, RecordListQuery, require_memory
from memory_admin.tokenize import tokenize

ACME = {"tenant": "acme"}
U1 = {"tenant": "acme", "user": "u1"}
U10 = {"tenant": "acme", "user": "u10"}
U2 = {"tenant": "acme", "user": "u2"}
OTHER = {"tenant": "globex", "user": "u1"}
PROV = {"source": "conformance"}


def rec(content: str, scope: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """A write input with sensible defaults."""
    return {"scope": scope or U1, "kind": "fact", "content": content, "provenance": PROV, **fields}


def stored(store: MemoryStore, record_id: str) -> MemoryRecord:
    """The record with this id, which the case knows exists."""
    record = store.get(record_id)
    assert record is not None, f"{record_id} should exist"
    return record


def contents(hits: Sequence[MemoryHit]) -> list[str]:
    return [hit.record.content for hit in hits]


class MemoryStoreConformance(ABC):
    """Subclass and implement :meth:`make_store` to hold a backend to the contract."""

    @abstractmethod
    def make_store(self, clock: FakeClock) -> FullMemoryStore:
        """A new, empty store that reads time from ``clock``. ``self.tmp_path`` is a
        fresh directory for this test."""

    CORRUPTIONS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("kind", "belief"),
        ("tags", "{not json"),
        ("content", " "),
    )
    """Column edits :meth:`corrupt_row` makes in the corruption cases; a backend adds
    the ways its own columns can rot."""

    def corrupt_row(self, store: FullMemoryStore, record_id: str, column: str, value: str) -> bool:
        """Overwrite one stored column of a record behind the store's back, as disk rot or
        a careless manual edit would. Returns ``False`` where the backend cannot hold a
        row that no longer validates (records in RAM are validated models); the
        corruption cases then skip."""
        return False

    # --- fixtures -----------------------------------------------------------------

    @pytest.fixture(autouse=True)
    def _kit_tmp_path(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock()

    @pytest.fixture
    def raw_store(self, clock: FakeClock) -> Iterator[FullMemoryStore]:
        store = self.make_store(clock)
        yield store
        store.close()

    @pytest.fixture(params=["sync", "async"])
    def store(self, request: pytest.FixtureRequest, raw_store: FullMemoryStore) -> Iterator[FullMemoryStore]:
        if request.param == "sync":
            yield raw_store
            return
        bridge = AsyncBridge(raw_store)
        # the bridge answers every member of the protocol (async twins under sync names)
        yield cast(FullMemoryStore, bridge)
        bridge.close()

    @staticmethod
    def _needs(store: FullMemoryStore, **needs: Any) -> None:
        try:
            require_memory(store, MemoryNeeds(**needs))
        except CapabilityError as exc:
            pytest.skip(f"backend declares it lacks {', '.join(exc.missing)}")

    # === Tier 1: write ==============================================================

    def test_write_returns_records_in_input_order(self, store: FullMemoryStore) -> None:
        records = store.write([rec("first"), rec("second"), rec("third")])
        assert [r.content for r in records] == ["first", "second", "third"]
        assert len({r.id for r in records}) == 3
        assert [r.id for r in records] == sorted(r.id for r in records), "ids sort by creation"

    def test_write_empty_batch_is_a_no_op(self, store: FullMemoryStore) -> None:
        assert store.write([]) == []

    def test_batch_shares_one_now(self, store: FullMemoryStore) -> None:
        records = store.write([rec("a"), rec("b"), rec("c")])
        assert len({r.created_at for r in records}) == 1
        assert all(r.created_at == r.updated_at for r in records)
        assert records[0].created_at.utcoffset() == timedelta(0)

    def test_later_batches_get_later_ids(self, store: FullMemoryStore) -> None:
        first = store.write([rec("one")])[0]
        second = store.write([rec("two")])[0]
        assert first.id < second.id
        assert first.created_at <= second.created_at

    def test_scope_is_stored_canonically(self, store: FullMemoryStore) -> None:
        record = store.write([rec("x", {"user": " u1 ", "tenant": "acme"})])[0]
        assert record.scope == U1
        assert list(record.scope) == ["tenant", "user"]
        assert stored(store, record.id).scope == U1

    def test_record_round_trips_every_field(self, store: FullMemoryStore, clock: FakeClock) -> None:
        expires = clock.peek() + timedelta(days=30)
        written = store.write(
            [
                rec(
                    "Checking the status page first avoids duplicate incidents",
                    kind="episode",
                    key="triage.status",
                    tags=["Triage", "incidents"],
                    provenance={"source": "chat", "conversation_id": "c-1", "author": "agent:triage"},
                    target={"primitive": "example", "judgment_domain": "triage"},
                    payload={"scenario": "P1 escalation", "good": "check status page", "reasoning": "dedupe"},
                    expires_at=expires.isoformat(),
                )
            ]
        )[0]
        stored = store.get(written.id)
        assert stored == written
        assert stored.tags == ("triage", "incidents")
        assert stored.target is not None and stored.target.primitive == "example"
        assert stored.payload == {"scenario": "P1 escalation", "good": "check status page", "reasoning": "dedupe"}
        assert stored.provenance.conversation_id == "c-1"
        assert stored.expires_at == expires
        assert stored.supports == ()

    @pytest.mark.parametrize(
        "bad",
        [
            pytest.param({"scope": {"user": "u1"}}, id="missing-tenant"),
            pytest.param({"scope": {"tenant": "  "}}, id="blank-tenant"),
            pytest.param({"scope": {"tenant": "acme", "User": "u1"}}, id="bad-scope-key"),
            pytest.param({"scope": {"tenant": "acme", "user": ""}}, id="blank-scope-value"),
            pytest.param({"scope": {"tenant": "acme", "user": "x" * 500}}, id="huge-scope-value"),
            pytest.param({"content": "   "}, id="blank-content"),
            pytest.param({"content": "nul\x00byte"}, id="nul-in-content"),
            pytest.param({"kind": "belief"}, id="unknown-kind"),
            pytest.param({"provenance": {}}, id="untraceable-provenance"),
            pytest.param({"provenance": None}, id="missing-provenance"),
            pytest.param({"tags": "not-a-list"}, id="tags-as-string"),
            pytest.param({"tags": [" "]}, id="blank-tag"),
            pytest.param({"key": "two words"}, id="key-with-space"),
            pytest.param({"expires_at": "2030-01-01T00:00:00"}, id="naive-expiry"),
            pytest.param({"payload": {"a": 1}}, id="payload-without-target"),
            pytest.param(
                {"target": {"primitive": "example", "judgment_domain": "d"}, "payload": {"good": "x"}},
                id="example-payload-missing-scenario",
            ),
            pytest.param({"target": {"primitive": "bogus"}}, id="unknown-target"),
            pytest.param({"supports": [PROV]}, id="supports-not-writable"),
            pytest.param({"invalid_at": "2030-01-01T00:00:00Z"}, id="lifecycle-not-writable"),
            pytest.param({"surprise": 1}, id="extra-field"),
        ],
    )
    def test_invalid_input_rejects_the_whole_batch(self, store: FullMemoryStore, bad: dict[str, Any]) -> None:
        good = rec("a good record")
        with pytest.raises(MemoryValidationError) as info:
            store.write([good, {**rec("the bad one"), **bad}])
        assert info.value.problems, "the error lists what was wrong"
        assert store.search({"scope": ACME, "include_invalidated": True}) == []

    def test_past_expiry_is_refused(self, store: FullMemoryStore, clock: FakeClock) -> None:
        with pytest.raises(MemoryValidationError):
            store.write([rec("x", expires_at=(clock.peek() - timedelta(seconds=1)).isoformat())])
        assert store.search({"scope": ACME}) == []

    def test_content_over_the_backend_limit(self, store: FullMemoryStore) -> None:
        limit = store.capabilities().max_content_chars
        with pytest.raises(MemoryLimitError) as info:
            store.write([rec("fine"), rec("x" * (limit + 1))])
        assert info.value.extras["limit"] == limit
        assert store.search({"scope": ACME}) == []
        assert store.write([rec("y" * limit)])[0].content == "y" * limit

    def test_write_takes_a_list(self, store: FullMemoryStore) -> None:
        with pytest.raises(MemoryValidationError):
            store.write(rec("not in a list"))  # type: ignore[arg-type]

    # === Tier 1: supersede and key upsert ===========================================

    def test_supersede_links_both_ways(self, store: FullMemoryStore) -> None:
        old = store.write([rec("Dana drinks tea")])[0]
        new = store.write([rec("Dana drinks coffee", supersedes=old.id)])[0]
        retired = stored(store, old.id)
        assert new.supersedes == old.id
        assert retired.superseded_by == new.id
        assert retired.invalid_at == new.created_at
        assert retired.updated_at == new.created_at
        assert retired.created_at == old.created_at
        assert contents(store.search({"scope": U1})) == ["Dana drinks coffee"]

    def test_supersede_unknown_id_writes_nothing(self, store: FullMemoryStore) -> None:
        with pytest.raises(MemoryNotFoundError):
            store.write([rec("ok"), rec("fix", supersedes="mem_DOESNOTEXIST")])
        assert store.search({"scope": ACME}) == []

    def test_supersede_across_scopes_is_refused(self, store: FullMemoryStore) -> None:
        theirs = store.write([rec("u2's fact", U2)])[0]
        with pytest.raises(MemoryScopeError):
            store.write([rec("hijack", U1, supersedes=theirs.id)])
        assert stored(store, theirs.id).invalid_at is None
        assert contents(store.search({"scope": ACME})) == ["u2's fact"]

    def test_supersede_invalid_record_is_a_conflict(self, store: FullMemoryStore) -> None:
        old = store.write([rec("v1")])[0]
        store.write([rec("v2", supersedes=old.id)])
        with pytest.raises(MemoryConflictError):
            store.write([rec("v3", supersedes=old.id)])
        assert contents(store.search({"scope": U1})) == ["v2"]

    def test_two_successors_in_one_batch_is_a_conflict(self, store: FullMemoryStore) -> None:
        old = store.write([rec("v1")])[0]
        with pytest.raises(MemoryConflictError):
            store.write([rec("a", supersedes=old.id), rec("b", supersedes=old.id)])
        assert stored(store, old.id).invalid_at is None
        assert contents(store.search({"scope": U1})) == ["v1"]

    def test_key_upsert_supersedes_the_slot_holder(self, store: FullMemoryStore) -> None:
        first = store.write([rec("aisle seat", kind="preference", key="seat")])[0]
        second = store.write([rec("window seat", kind="preference", key="seat")])[0]
        assert second.supersedes == first.id
        assert stored(store, first.id).superseded_by == second.id
        live = store.search({"scope": U1, "keys": ["seat"]})
        assert contents(live) == ["window seat"]

    def test_key_slot_is_per_scope_and_kind(self, store: FullMemoryStore) -> None:
        store.write([rec("u1 aisle", kind="preference", key="seat")])
        store.write([rec("u2 window", U2, kind="preference", key="seat")])
        store.write([rec("u1 seat fact", kind="fact", key="seat")])
        assert len(store.search({"scope": ACME, "keys": ["seat"]})) == 3

    def test_key_repeated_in_one_batch_chains(self, store: FullMemoryStore) -> None:
        a, b, c = store.write(
            [
                rec("v1", kind="profile", key="name"),
                rec("v2", kind="profile", key="name"),
                rec("v3", kind="profile", key="name"),
            ]
        )
        assert (b.supersedes, c.supersedes) == (a.id, b.id)
        assert a.invalid_at is not None and b.invalid_at is not None and c.invalid_at is None
        assert stored(store, a.id).superseded_by == b.id
        assert contents(store.search({"scope": U1})) == ["v3"]

    def test_key_upsert_against_a_different_explicit_supersedes(self, store: FullMemoryStore) -> None:
        holder = store.write([rec("window", kind="preference", key="seat")])[0]
        other = store.write([rec("unrelated")])[0]
        with pytest.raises(MemoryConflictError) as info:
            store.write([rec("aisle", kind="preference", key="seat", supersedes=other.id)])
        assert info.value.extras["key_holder"] == holder.id
        assert stored(store, other.id).invalid_at is None

    def test_explicit_supersedes_of_the_key_holder(self, store: FullMemoryStore) -> None:
        holder = store.write([rec("window", kind="preference", key="seat")])[0]
        new = store.write([rec("aisle", kind="preference", key="seat", supersedes=holder.id)])[0]
        assert new.supersedes == holder.id

    def test_invalidated_slot_holder_is_not_superseded(self, store: FullMemoryStore) -> None:
        holder = store.write([rec("window", kind="preference", key="seat")])[0]
        store.invalidate(holder.id, "wrong")
        new = store.write([rec("aisle", kind="preference", key="seat")])[0]
        assert new.supersedes is None
        assert stored(store, holder.id).invalid_reason == "wrong"

    # === Tier 1: get, invalidate, delete ============================================

    def test_get_unknown_is_none(self, store: FullMemoryStore) -> None:
        assert store.get("mem_UNKNOWN") is None

    def test_get_bad_id_is_a_validation_error(self, store: FullMemoryStore) -> None:
        with pytest.raises(MemoryValidationError):
            store.get("")

    def test_invalidate_keeps_the_record(self, store: FullMemoryStore) -> None:
        record = store.write([rec("stale fact")])[0]
        result = store.invalidate(record.id, "  no longer true ")
        stored = store.get(record.id)
        assert result == stored
        assert stored.invalid_reason == "no longer true"
        assert stored.invalid_at is not None and stored.updated_at == stored.invalid_at
        assert stored.updated_at > stored.created_at
        assert stored.content == "stale fact"
        assert store.search({"scope": U1}) == []
        assert contents(store.search({"scope": U1, "include_invalidated": True})) == ["stale fact"]

    def test_invalidate_twice_keeps_the_first_reason(self, store: FullMemoryStore) -> None:
        record = store.write([rec("x")])[0]
        first = store.invalidate(record.id, "first")
        second = store.invalidate(record.id, "second")
        assert second.invalid_reason == "first"
        assert second.invalid_at == first.invalid_at
        assert stored(store, record.id).updated_at == first.updated_at

    def test_invalidate_unknown_raises_not_found(self, store: FullMemoryStore) -> None:
        with pytest.raises(MemoryNotFoundError):
            store.invalidate("mem_UNKNOWN")

    def test_delete_forgets(self, store: FullMemoryStore) -> None:
        keep, gone = store.write([rec("keep this"), rec("forget this canary")])
        assert store.delete(gone.id) is True
        assert store.get(gone.id) is None
        assert store.search({"scope": U1, "query": "canary"}) == []
        assert contents(store.search({"scope": U1})) == ["keep this"]
        assert store.delete(gone.id) is False
        assert store.get(keep.id) is not None

    def test_delete_leaves_a_tombstone_in_the_chain(self, store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        v1 = store.write([rec("v1")])[0]
        v2 = store.write([rec("v2", supersedes=v1.id)])[0]
        v3 = store.write([rec("v3", supersedes=v2.id)])[0]
        store.delete(v2.id)
        links = store.chain(v3.id)
        assert [link.id for link in links] == [v2.id, v3.id]
        assert links[0].record is None
        assert stored(store, v3.id).supersedes == v2.id
        assert stored(store, v1.id).superseded_by == v2.id

    # === Tier 1: search filters =====================================================

    def test_search_requires_a_scope(self, store: FullMemoryStore) -> None:
        queries: list[dict[str, Any]] = [{}, {"scope": {}}, {"scope": {"user": "u1"}}, {"query": "x"}]
        for query in queries:
            with pytest.raises(MemoryValidationError):
                store.search(query)

    def test_subset_match(self, store: FullMemoryStore) -> None:
        store.write([rec("tenant-wide", ACME), rec("u1's", U1), rec("u10's", U10), rec("other tenant", OTHER)])
        assert set(contents(store.search({"scope": ACME}))) == {"tenant-wide", "u10's", "u1's"}
        assert contents(store.search({"scope": U1})) == ["u1's"]
        assert contents(store.search({"scope": {"tenant": "globex"}})) == ["other tenant"]

    def test_visible_match(self, store: FullMemoryStore) -> None:
        store.write([rec("shared", ACME), rec("mine", U1), rec("theirs", U2), rec("u10", U10), rec("foreign", OTHER)])
        visible = store.search({"scope": U1, "scope_match": "visible"})
        assert sorted(contents(visible)) == ["mine", "shared"]
        with_query = store.search({"scope": U1, "scope_match": "visible", "query": "shared mine theirs"})
        assert sorted(contents(with_query)) == ["mine", "shared"]

    def test_agent_convention(self, store: FullMemoryStore) -> None:
        store.write(
            [
                rec("shared note", U1),
                rec("planner note", {**U1, "agent": "planner"}),
                rec("coder note", {**U1, "agent": "coder"}),
            ]
        )
        as_planner = store.search({"scope": U1, "agent": "planner"})
        assert sorted(contents(as_planner)) == ["planner note", "shared note"]
        queried = store.search({"scope": U1, "agent": "planner", "query": "note"})
        assert sorted(contents(queried)) == ["planner note", "shared note"]
        assert len(store.search({"scope": U1})) == 3

    def test_agent_filter_never_gives_a_short_page(self, store: FullMemoryStore) -> None:
        store.write([rec(f"shared {i}", U1) for i in range(3)])
        store.write([rec(f"other agent note {i}", {**U1, "agent": "other"}) for i in range(5)])
        page = store.search({"scope": U1, "agent": "me", "limit": 3})
        assert contents(page) == ["shared 2", "shared 1", "shared 0"]
        ranked = store.search({"scope": U1, "agent": "me", "limit": 3, "query": "shared note other"})
        assert sorted(contents(ranked)) == ["shared 0", "shared 1", "shared 2"]

    def test_kind_filter(self, store: FullMemoryStore) -> None:
        store.write([rec("a fact"), rec("a preference", kind="preference"), rec("a profile", kind="profile")])
        found = store.search({"scope": U1, "kinds": ["preference", "profile"]})
        assert sorted(contents(found)) == ["a preference", "a profile"]
        assert contents(store.search({"scope": U1, "kinds": ["fact"], "query": "a"})) == ["a fact"]

    def test_tag_filter_needs_every_tag(self, store: FullMemoryStore) -> None:
        store.write([rec("both", tags=["travel", "seat"]), rec("one", tags=["travel"]), rec("none")])
        assert sorted(contents(store.search({"scope": U1, "tags": ["Travel"]}))) == ["both", "one"]
        assert contents(store.search({"scope": U1, "tags": ["travel", "seat"]})) == ["both"]

    def test_target_filter(self, store: FullMemoryStore) -> None:
        store.write(
            [
                rec("a proposed heuristic", target={"primitive": "judgment", "domain": "triage", "slot": "heuristics"}),
                rec("a plain fact"),
            ]
        )
        assert contents(store.search({"scope": U1, "targeted": True})) == ["a proposed heuristic"]
        assert contents(store.search({"scope": U1, "targeted": False})) == ["a plain fact"]
        assert contents(store.search({"scope": U1, "targeted": True, "query": "a"})) == ["a proposed heuristic"]
        assert len(store.search({"scope": U1})) == 2

    def test_key_filters(self, store: FullMemoryStore) -> None:
        store.write(
            [
                rec("seat", key="travel.seat"),
                rec("meal", key="travel.meal"),
                rec("drink", key="drink"),
                rec("no key"),
            ]
        )
        assert contents(store.search({"scope": U1, "keys": ["drink"]})) == ["drink"]
        assert sorted(contents(store.search({"scope": U1, "keys": ["travel."], "key_match": "prefix"}))) == [
            "meal",
            "seat",
        ]
        assert store.search({"scope": U1, "keys": ["travel"]}) == []

    def test_as_of_shows_what_was_believed(self, store: FullMemoryStore, clock: FakeClock) -> None:
        before = clock.advance(seconds=1)
        clock.advance(seconds=1)
        old = store.write([rec("tea")])[0]
        clock.advance(seconds=10)
        between = clock.advance(seconds=1)
        clock.advance(seconds=10)
        store.write([rec("coffee", supersedes=old.id)])
        assert store.search({"scope": U1, "as_of": before.isoformat()}) == []
        assert contents(store.search({"scope": U1, "as_of": between.isoformat()})) == ["tea"]
        assert contents(store.search({"scope": U1, "as_of": clock.peek().isoformat()})) == ["coffee"]
        assert contents(store.search({"scope": U1, "query": "tea coffee", "as_of": between.isoformat()})) == ["tea"]
        both = store.search({"scope": U1, "as_of": clock.peek().isoformat(), "include_invalidated": True})
        assert sorted(contents(both)) == ["coffee", "tea"]

    def test_expired_records_never_appear_in_search(self, store: FullMemoryStore, clock: FakeClock) -> None:
        soon = clock.peek() + timedelta(minutes=5)
        expiring, _lasting = store.write([rec("expiring token", expires_at=soon.isoformat()), rec("lasting token")])
        assert sorted(contents(store.search({"scope": U1}))) == ["expiring token", "lasting token"]
        clock.advance(minutes=6)
        for query in (
            {"scope": U1},
            {"scope": U1, "query": "token"},
            {"scope": U1, "include_invalidated": True},
            {"scope": U1, "scope_match": "visible"},
        ):
            assert contents(store.search(query)) == ["lasting token"]
        assert store.get(expiring.id) is not None, "get still returns expired records"

    def test_limit_rules(self, store: FullMemoryStore) -> None:
        store.write([rec(f"note {i}") for i in range(15)])
        assert len(store.search({"scope": U1})) == 10, "default limit is 10"
        assert store.search({"scope": U1, "limit": 0}) == []
        assert store.search({"scope": U1, "limit": 0, "query": "note"}) == []
        assert len(store.search({"scope": U1, "limit": 15, "query": "note"})) == 15
        with pytest.raises(MemoryValidationError):
            store.search({"scope": U1, "limit": -1})
        with pytest.raises(MemoryValidationError):
            store.search({"scope": U1, "limit": store.capabilities().max_limit + 1})

    def test_recency_listing_order_and_batch_tie(self, store: FullMemoryStore) -> None:
        store.write([rec("a1"), rec("a2"), rec("a3")])
        store.write([rec("b1"), rec("b2")])
        assert contents(store.search({"scope": U1})) == ["b2", "b1", "a3", "a2", "a1"]
        assert contents(store.search({"scope": U1, "limit": 2})) == ["b2", "b1"]
        assert contents(store.search({"scope": U1, "limit": 4})) == ["b2", "b1", "a3", "a2"]

    def test_batch_tie_holds_across_scopes(self, store: FullMemoryStore) -> None:
        store.write([rec("u1 first", U1), rec("u2 second", U2), rec("tenant third", ACME)])
        assert contents(store.search({"scope": ACME, "limit": 2})) == ["tenant third", "u2 second"]

    # === Tier 1: search with a query ================================================

    def test_query_matches_any_token(self, store: FullMemoryStore) -> None:
        store.write([rec("Dana prefers aisle seats"), rec("Dana drinks espresso"), rec("Unrelated")])
        found = store.search({"scope": U1, "query": "aisle espresso"})
        assert sorted(contents(found)) == ["Dana drinks espresso", "Dana prefers aisle seats"]

    def test_more_query_tokens_outrank_fewer(self, store: FullMemoryStore) -> None:
        store.write([rec("alpha bravo charlie"), rec("alpha delta echo"), rec("foxtrot golf hotel")])
        found = store.search({"scope": U1, "query": "alpha bravo"})
        assert contents(found) == ["alpha bravo charlie", "alpha delta echo"]

    def test_equally_relevant_newer_first(self, store: FullMemoryStore) -> None:
        store.write([rec("the blue door")])
        store.write([rec("the blue gate")])
        store.write([rec("the blue wall")])
        assert contents(store.search({"scope": U1, "query": "blue"})) == [
            "the blue wall",
            "the blue gate",
            "the blue door",
        ]

    def test_rare_tokens_weigh_more(self, store: FullMemoryStore) -> None:
        common = [rec(f"what did the team say {i}") for i in range(8)]
        store.write([*common, rec("Melanie painted the sunrise")])
        found = store.search({"scope": U1, "query": "what did Melanie paint", "limit": 3})
        assert contents(found)[0] == "Melanie painted the sunrise"

    def test_query_is_scoped(self, store: FullMemoryStore) -> None:
        store.write([rec("secret plan", U2), rec("secret plan", OTHER), rec("my plan", U1)])
        assert contents(store.search({"scope": U1, "query": "secret plan"})) == ["my plan"]

    def test_query_without_tokens_matches_nothing(self, store: FullMemoryStore) -> None:
        store.write([rec("anything")])
        assert store.search({"scope": U1, "query": "?!  ..."}) == []
        assert store.search({"scope": U1, "query": ""}) == []

    def test_scores_order_is_relevance(self, store: FullMemoryStore) -> None:
        store.write([rec("kiwi"), rec("kiwi kiwi banana")])
        hits = store.search({"scope": U1, "query": "kiwi banana"})
        scores = [hit.score for hit in hits if hit.score is not None]
        assert scores == sorted(scores, reverse=True)

    @pytest.mark.parametrize(
        "text",
        [
            "AND OR NOT",
            "NEAR(a b, 3)",
            '"unbalanced',
            "a*",
            "col:value",
            "{content}: x",
            "^start",
            "x - y",
            "(((",
            "'; DROP TABLE memory_records; --",
            "\x00nul",
            "🙂 emoji 🙂",
            "שלום עולם",
            "a" * 5000,
            " ".join(["word"] * 500),
            "+-*/\\%$#@!~`",
        ],
    )
    def test_hostile_query_text_is_just_words(self, store: FullMemoryStore, text: str) -> None:
        store.write([rec("word start value unbalanced emoji")])
        hits = store.search({"scope": U1, "query": text})
        expected = {"word", "start", "value", "unbalanced", "emoji"} & set(tokenize(text))
        assert len(hits) == (1 if expected else 0)

    # === Tier 1: capabilities =======================================================

    def test_capabilities_declare_search_and_limits(self, store: FullMemoryStore) -> None:
        caps = store.capabilities()
        assert caps.search in ("keyword", "semantic", "hybrid")
        assert caps.max_limit >= 10 and caps.max_content_chars >= 1000 and caps.max_batch >= 1000

    def test_require_memory_names_every_missing_capability(self, store: FullMemoryStore) -> None:
        caps = store.capabilities()
        other = "semantic" if caps.search == "keyword" else "keyword"
        if caps.search == "hybrid":
            pytest.skip("a hybrid backend serves every search need")
        with pytest.raises(CapabilityError) as info:
            require_memory(store, MemoryNeeds(search=other, erasure=True, events=True, admin=True))
        assert f"search={other}" in info.value.missing
        for flag in ("erasure", "events", "admin"):
            assert (flag in info.value.missing) == (not getattr(caps, flag))
        assert require_memory(store, MemoryNeeds(search=caps.search)) == caps

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

    def test_scope_facets(self, store: FullMemoryStore) -> None:
        self._needs(store, admin=True)
        store.write([rec("a", U1), rec("b", U1), rec("c", U2), rec("d", ACME), rec("e", OTHER)])
        facets = {f.key: f for f in store.scope_facets({"tenant": "acme"})}
        assert facets["tenant"].records == 4
        assert {v.value: v.records for v in facets["user"].values} == {"u1": 2, "u2": 1}
        everywhere = {f.key: f for f in store.scope_facets()}
        assert {v.value: v.records for v in everywhere["tenant"].values} == {"acme": 4, "globex": 1}

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
        store.write([rec("tie a"), rec("tie b"), rec("tie c", U2)])
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

    # === Tier 2: match sets for keyword backends ====================================

    @pytest.fixture
    def corpus(self, raw_store: FullMemoryStore) -> dict[str, str]:
        self._needs(raw_store, search="keyword")
        records = raw_store.write([rec(content, tags=list(tags)) for content, tags in CORPUS.values()])
        return {record.id: label for label, record in zip(CORPUS, records, strict=True)}

    @pytest.mark.parametrize("case", MATCH_CASES, ids=[case.id for case in MATCH_CASES])
    def test_tier2_match_set(self, store: FullMemoryStore, corpus: dict[str, str], case: MatchCase) -> None:
        hits = store.search({"scope": U1, "query": case.query, "limit": 100})
        assert {corpus[hit.record.id] for hit in hits} == case.expected
        reference = {
            label
            for label, (content, tags) in CORPUS.items()
            if set(tokenize(case.query)) & set(tokenize(content + " " + " ".join(tags)))
        }
        assert reference == case.expected, "the case table agrees with tokenize()"

    # === corruption: reported, never skipped ========================================

    def test_a_corrupt_row_is_reported_by_every_read(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        store.write([rec("a healthy neighbour about gardens")])
        for column, value in self.CORRUPTIONS:
            victim = store.write([rec(f"the victim row about gardens ({column})")])[0]
            if not self.corrupt_row(raw_store, victim.id, column, value):
                pytest.skip("this backend cannot hold a corrupt row")
            with pytest.raises(MemoryCorruptionError) as info:
                store.get(victim.id)
            assert info.value.record_id == victim.id, column
            assert info.value.raw[column] == value, column
            assert info.value.scope == U1, "the scope still parses, so a curator can find the row"
            queries: list[dict[str, Any]] = [{"scope": U1}]
            if column != "content":  # a blank content no longer matches the query's words
                queries.append({"scope": U1, "query": "gardens"})
            for query in queries:
                with pytest.raises(MemoryCorruptionError) as found:
                    store.search(query)
                assert found.value.record_id == victim.id, (column, query)
            scan = store.find_corrupt()
            assert [c.id for c in scan.corrupt] == [victim.id] and scan.complete, column
            assert scan.corrupt[0].raw[column] == value
            assert store.delete(victim.id), "deleting is the repair a corrupt row can always take"
            assert store.find_corrupt().corrupt == []

    def test_find_corrupt_is_bounded_and_scoped(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        store.write([rec(f"fine {n}") for n in range(5)])
        store.write([rec("elsewhere", U2)])
        bad = store.write([rec("will break", U2)])[0]
        if not self.corrupt_row(raw_store, bad.id, "kind", "belief"):
            pytest.skip("this backend cannot hold a corrupt row")
        scan = store.find_corrupt()
        assert (scan.checked, scan.complete, [c.id for c in scan.corrupt]) == (7, True, [bad.id])
        assert store.find_corrupt(U1).corrupt == [] and store.find_corrupt(U1).checked == 5
        assert [c.id for c in store.find_corrupt(U2).corrupt] == [bad.id]
        assert store.find_corrupt(max_rows=3).complete is False
        assert len(store.find_corrupt(limit=1).corrupt) == 1

    # === the event log, buffered (one block: the cases and the hook they use) ========

    def open_again(self, store: FullMemoryStore) -> FullMemoryStore | None:
        """Another store object over ``store``'s data — what a second process opens —
        still readable after ``store`` is closed; ``None`` where the backend cannot (the
        cases that need it then skip). A backend whose data lives in the store object
        returns ``store`` itself."""
        return None

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
