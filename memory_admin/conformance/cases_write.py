"""Tier 1: writing a batch, superseding and key upserts, get, invalidate and delete."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory_admin.conformance.base import (
    ACME,
    PROV,
    U1,
    U2,
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
    MemoryScopeError,
    MemoryValidationError,
)
from memory_admin.records import (
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_PROVENANCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
)
from memory_admin.scope import MAX_SCOPE_KEY_CHARS, MAX_SCOPE_PAIRS, MAX_SCOPE_VALUE_CHARS
from memory_admin.store.protocol import FullMemoryStore


class WriteCases(ConformanceBase):
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
            pytest.param(
                {"scope": {"tenant": "acme", "user": "x" * (MAX_SCOPE_VALUE_CHARS + 1)}}, id="huge-scope-value"
            ),
            pytest.param({"scope": {"tenant": "acme", "k" * (MAX_SCOPE_KEY_CHARS + 1): "v"}}, id="huge-scope-key"),
            pytest.param(
                {"scope": {"tenant": "acme", **{f"k{n}": "v" for n in range(MAX_SCOPE_PAIRS)}}},
                id="too-many-scope-pairs",
            ),
            pytest.param({"content": "   "}, id="blank-content"),
            pytest.param({"content": "nul\x00byte"}, id="nul-in-content"),
            pytest.param({"kind": "belief"}, id="unknown-kind"),
            pytest.param({"provenance": {}}, id="untraceable-provenance"),
            pytest.param({"provenance": None}, id="missing-provenance"),
            pytest.param({"tags": "not-a-list"}, id="tags-as-string"),
            pytest.param({"tags": [" "]}, id="blank-tag"),
            pytest.param({"key": "two words"}, id="key-with-space"),
            pytest.param({"key": "k" * (MAX_KEY_CHARS + 1)}, id="huge-key"),
            pytest.param({"tags": [f"t{n}" for n in range(MAX_TAGS + 1)]}, id="too-many-tags"),
            pytest.param({"tags": ["t" * (MAX_TAG_CHARS + 1)]}, id="huge-tag"),
            pytest.param({"provenance": {"source": "s" * (MAX_PROVENANCE_CHARS + 1)}}, id="huge-provenance"),
            pytest.param({"supersedes": "mem_" + "A" * MAX_ID_CHARS}, id="huge-supersedes"),
            pytest.param(
                {"target": {"primitive": "judgment", "domain": "d" * 121, "slot": "heuristics"}}, id="huge-target-name"
            ),
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

    def test_observed_at_defaults_to_the_write_time(self, store: FullMemoryStore) -> None:
        record = store.write([rec("stated now")])[0]
        assert record.observed_at == record.created_at
        assert stored(store, record.id).observed_at == record.created_at

    def test_observed_at_keeps_when_a_fact_was_stated(self, store: FullMemoryStore, clock: FakeClock) -> None:
        stated = clock.peek() - timedelta(days=400, microseconds=7)
        old = store.write([rec("Dana moved to Lisbon", observed_at=stated.isoformat(), key="home")])[0]
        assert old.observed_at == stated
        assert stored(store, old.id).observed_at == stated
        assert [h.record.observed_at for h in store.search({"scope": U1, "query": "Lisbon"})] == [stated]
        new = store.write([rec("Dana moved to Porto", key="home")])[0]
        assert new.supersedes == old.id and new.observed_at == new.created_at
        assert stored(store, old.id).observed_at == stated, "superseding keeps when the old fact was stated"

    def test_observed_at_in_the_future_is_refused(self, store: FullMemoryStore, clock: FakeClock) -> None:
        later = clock.peek() + timedelta(days=1)
        with pytest.raises(MemoryValidationError) as info:
            store.write([rec("fine"), rec("a prophecy", observed_at=later.isoformat())])
        assert info.value.problems[0]["loc"] == "1.observed_at"
        assert store.search({"scope": ACME}) == []

    def test_content_over_the_backend_limit(self, store: FullMemoryStore) -> None:
        limit = store.capabilities().max_content_chars
        with pytest.raises(MemoryLimitError) as info:
            store.write([rec("fine"), rec("x" * (limit + 1))])
        assert info.value.extras["limit"] == limit
        assert store.search({"scope": ACME}) == []
        assert store.write([rec("y" * limit)])[0].content == "y" * limit

    def test_payload_over_the_backend_limit(self, store: FullMemoryStore) -> None:
        limit = store.capabilities().max_payload_chars
        recovery = {"primitive": "recovery"}
        with pytest.raises(MemoryLimitError) as info:
            store.write([rec("fine"), rec("a huge payload", target=recovery, payload={"notes": "x" * limit})])
        assert (info.value.extras["index"], info.value.extras["limit"]) == (1, limit)
        assert store.search({"scope": ACME}) == []
        fits = {"notes": "é" * (limit - len('{"notes":""}'))}  # characters of compact JSON, not bytes
        [kept] = store.write([rec("a payload just within the limit", target=recovery, payload=fits)])
        assert stored(store, kept.id).payload == fits

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
