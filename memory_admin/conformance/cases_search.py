"""Tier 1: search filters, ranked search and capabilities."""

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
)
from memory_admin.conformance.support import FakeClock
from memory_admin.errors import (
    CapabilityError,
    MemoryValidationError,
)
from memory_admin.store.protocol import FullMemoryStore, MemoryNeeds, require_memory
from memory_admin.store.ranking import record_text
from memory_admin.tokenize import tokenize


class SearchCases(ConformanceBase):
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

    def test_a_ranked_hit_says_which_of_its_terms_scored_how_much(self, store: FullMemoryStore) -> None:
        store.write([rec("the window seat on long flights"), rec("a seat by the window, always")])
        store.write([rec(f"an unrelated note number {i}") for i in range(10)])  # rare words weigh more than the floor
        hits = store.search({"scope": U1, "query": "window seats flights", "mode": "keyword"})
        assert len(hits) == 2
        for hit in hits:
            assert hit.terms is not None and hit.score is not None
            held = set(tokenize(hit.record.content))
            assert set(hit.terms) == {"window", "seat", "flight"} & held, "the query's terms the record holds"
            assert all(part > 0 for part in hit.terms.values())
            assert sum(hit.terms.values()) == pytest.approx(hit.score, rel=1e-6)
        assert store.search({"scope": U1})[0].terms is None, "a listing ranks nothing"

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

    def test_an_empty_filter_list_means_the_same_everywhere(self, store: FullMemoryStore) -> None:
        """``kinds`` and ``keys`` keep the records with one of the values listed, so an
        empty list keeps none; ``tags`` keeps those holding every tag listed, so an empty
        list keeps all. Past a thousand records in the scope, so a backend that plans a
        large scope another way is held to it too."""
        store.write([rec(f"note {i}", key=f"slot{i}", tags=["t"]) for i in range(1001)])
        for query in (None, "note"):
            search = {"scope": U1, "query": query, "limit": 5}
            assert store.search({**search, "kinds": []}) == []
            assert store.search({**search, "keys": []}) == []
            assert store.search({**search, "keys": [], "key_match": "prefix"}) == []
            assert len(store.search({**search, "tags": []})) == 5

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
        [record] = store.write([rec("word start value unbalanced emoji")])
        hits = store.search({"scope": U1, "query": text})
        expected = set(tokenize(record_text(record.content, record.tags, record.observed_at))) & set(tokenize(text))
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
