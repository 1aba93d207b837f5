"""Search by meaning: every rule of a search in each mode, and the vectors' life cycle.

The store under test embeds with :class:`~memory_admin.embed.hashing.HashingEmbedder`
(deterministic, no model), so these cases pin the store's plumbing — which records a
semantic or hybrid search may return, where vectors live and when they go — not a
model's quality (``tests/embed`` and the LoCoMo benchmark measure that).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from memory_admin import tuning
from memory_admin.conformance.base import ACME, OTHER, U1, U2, U10, ConformanceBase, contents, rec
from memory_admin.conformance.support import APIS, FakeClock, through
from memory_admin.embed.hashing import HashingEmbedder
from memory_admin.errors import CapabilityError, MemoryEmbedderMismatchError
from memory_admin.records import SearchMode
from memory_admin.store.protocol import FullMemoryStore, RecordListQuery

MODES: tuple[SearchMode, ...] = ("keyword", "semantic", "hybrid", "quality")
BY_MEANING: tuple[SearchMode, ...] = ("semantic", "hybrid", "quality")


def _needs_numpy() -> None:
    """The hashing embedder computes with numpy, which the semantic extra installs."""
    pytest.importorskip("numpy", reason="the semantic cases need numpy: pip install 'memory-admin[semantic]'")


class SemanticCases(ConformanceBase):
    @pytest.fixture
    def raw_embedding_store(self, clock: FakeClock) -> Iterator[FullMemoryStore]:
        _needs_numpy()
        store = self.make_store(clock, embedder=HashingEmbedder())
        yield store
        store.close()

    @pytest.fixture(params=APIS)
    def estore(self, request: pytest.FixtureRequest, raw_embedding_store: FullMemoryStore) -> Iterator[FullMemoryStore]:
        yield from through(request.param, raw_embedding_store)

    @staticmethod
    def _find(store: FullMemoryStore, mode: SearchMode, query: str = "garden notes", **extra: Any) -> list[str]:
        return sorted(contents(store.search({"scope": U1, "query": query, "mode": mode, "limit": 50, **extra})))

    # === what a store with an embedder declares =====================================

    def test_an_embedder_makes_the_store_hybrid(self, estore: FullMemoryStore, store: FullMemoryStore) -> None:
        assert estore.capabilities().search == "hybrid"
        assert store.capabilities().search == "keyword"
        assert estore.capabilities().modes == MODES
        assert store.capabilities().modes == ("keyword",)
        for mode in BY_MEANING:
            with pytest.raises(CapabilityError, match="embedder"):
                store.search({"scope": U1, "query": "garden", "mode": mode})

    def test_the_default_mode_is_hybrid_and_reports_both_scores(self, estore: FullMemoryStore) -> None:
        estore.write([rec("garden notes from spring"), rec("tax papers")])
        hits = estore.search({"scope": U1, "query": "garden notes"})
        assert hits[0].record.content == "garden notes from spring"
        assert hits[0].keyword_score is not None and hits[0].keyword_score > 0
        assert hits[0].semantic_score is not None
        assert all(hit.score is not None for hit in hits)

    def test_semantic_mode_finds_records_sharing_no_word(self, estore: FullMemoryStore) -> None:
        estore.write([rec("gardening every weekend"), rec("quarterly taxes")])
        assert estore.search({"scope": U1, "query": "gard", "mode": "keyword"}) == []
        found = estore.search({"scope": U1, "query": "gard", "mode": "semantic", "limit": 1})
        assert contents(found) == ["gardening every weekend"], "trigram pieces bring it closest"
        assert found[0].keyword_score is None and found[0].semantic_score is not None
        assert found[0].context_score is not None, "the score is the cosine, its context's lift and its length's"
        assert found[0].length_score is not None
        parts = found[0].semantic_score + found[0].context_score + found[0].length_score
        assert found[0].score == pytest.approx(parts, abs=1e-5)

    def test_hybrid_lifts_what_was_stated_with_its_best_match(self, estore: FullMemoryStore) -> None:
        trip, other_day = timedelta(days=-3), timedelta(days=-9)
        now = estore.write([rec("garden notes")])[0].created_at
        estore.write(
            [
                rec("garden notes about the spring planting", observed_at=now + trip),
                rec("the hotel by the river", observed_at=now + trip),
                rec("the kitchen by the river", observed_at=now + other_day),
            ]
        )
        # every record ranked: the lift of records that match nothing, too
        hits = estore.search({"scope": U1, "query": "spring planting garden notes", "limit": 10, "relevance": "rank"})
        by = {hit.record.content: hit for hit in hits}
        best = by["garden notes about the spring planting"]
        assert hits[0] is best
        hotel, kitchen = by["the hotel by the river"], by["the kitchen by the river"]
        assert best.context_score is not None and best.context_score > 0
        assert hotel.context_score == best.context_score, "one context, one lift: the best match's"
        assert kitchen.context_score is not None and kitchen.context_score < hotel.context_score
        by_meaning = estore.search(
            {"scope": U1, "query": "spring planting garden notes", "mode": "semantic", "relevance": "rank"}
        )
        lifts = {hit.record.content: hit.context_score for hit in by_meaning}
        assert lifts["the hotel by the river"] == lifts["garden notes about the spring planting"], "one context"
        cosines = {hit.record.content: hit.semantic_score for hit in by_meaning}
        closest = cosines["garden notes about the spring planting"]
        assert closest is not None
        assert lifts["the hotel by the river"] == pytest.approx(tuning.SEMANTIC_CONTEXT_WEIGHT * closest, abs=1e-5)

    @pytest.mark.parametrize(
        ("mode", "weight"), [("hybrid", "NAMED_TIME_WEIGHT"), ("semantic", "SEMANTIC_NAMED_TIME_WEIGHT")]
    )
    def test_a_question_naming_a_day_lifts_what_was_stated_that_day(
        self, estore: FullMemoryStore, monkeypatch: pytest.MonkeyPatch, mode: SearchMode, weight: str
    ) -> None:
        now = estore.write([rec("tax papers")])[0].created_at
        named, other = now - timedelta(days=40), now - timedelta(days=2)
        estore.write(
            [
                rec("garden notes about the roses", observed_at=named),
                rec("garden notes about the roses and the tulips", observed_at=other),
            ]
        )
        day = f"{named.day} {named:%B} {named.year}"

        def scores(question: str, lift: float | None = None) -> dict[str, Any]:
            if lift is not None:
                monkeypatch.setattr(tuning, weight, lift)
            hits = estore.search({"scope": U1, "query": question, "mode": mode, "relevance": "rank"})
            monkeypatch.undo()
            return {hit.record.content: hit for hit in hits}

        roses, tulips = "garden notes about the roses", "garden notes about the roses and the tulips"
        for question in (f"garden notes on {day}", f"garden notes on {named:%B} {named.day}, {named.year}"):
            lifted, plain = scores(question), scores(question, 0.0)
            gained = (lifted[roses].context_score or 0.0) - (plain[roses].context_score or 0.0)
            assert gained == pytest.approx(getattr(tuning, weight), abs=1e-5), "stated on the day the question names"
            assert lifted[tulips].context_score == plain[tulips].context_score, "stated on another day"
            assert next(iter(lifted)) == roses
            if mode == "semantic":
                hit = lifted[roses]
                parts = (hit.semantic_score or 0.0) + (hit.context_score or 0.0) + (hit.length_score or 0.0)
                assert hit.score == pytest.approx(parts, abs=1e-5), "its score says why"
        assert next(iter(scores(f"garden notes in {named:%B} {named.year}"))) == roses, "what was stated that month"
        unnamed = "garden notes about roses"
        assert scores(unnamed)[roses].context_score == scores(unnamed, 0.0)[roses].context_score, "no time, no lift"

    @pytest.mark.parametrize(("mode", "weight"), [("hybrid", "LENGTH_WEIGHT"), ("semantic", "SEMANTIC_LENGTH_WEIGHT")])
    def test_a_search_weighs_how_much_a_record_says(
        self, estore: FullMemoryStore, monkeypatch: pytest.MonkeyPatch, mode: SearchMode, weight: str
    ) -> None:
        said = [
            "garden",
            "garden notes: the café's roses — ☕ and 🌹 by the gate",  # characters, not bytes
            "garden notes about the roses by the gate, the tulips along the fence and the shed",
        ]
        estore.write([rec(text) for text in said])
        query = {"scope": U1, "query": "garden", "mode": mode, "relevance": "rank"}
        sizes = [math.log1p(len(text)) for text in said]
        mean = sum(sizes) / len(sizes)
        spread = math.sqrt(sum((s - mean) ** 2 for s in sizes) / len(sizes))
        monkeypatch.setattr(tuning, weight, 10.0)
        hits = {hit.record.content: hit for hit in estore.search(query)}
        assert list(hits) == said[::-1], "the longest first, at a weight that outweighs the match"
        for text, size in zip(said, sizes, strict=True):
            assert hits[text].length_score == pytest.approx(10.0 * (size - mean) / spread, abs=1e-5)
        monkeypatch.setattr(tuning, weight, 0.0)
        assert all(hit.length_score is None for hit in estore.search(query)), "off: no part of the score"
        monkeypatch.setattr(tuning, "QUALITY_WEIGHTS", {"length": 1.0})
        assert contents(estore.search({**query, "mode": "quality"})) == said[::-1], "a quality feature too"
        monkeypatch.setattr(tuning, "QUALITY_WEIGHTS", {"length": -1.0})
        assert contents(estore.search({**query, "mode": "quality"})) == said

    def test_quality_weighs_the_time_a_question_names(
        self, estore: FullMemoryStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        now = estore.write([rec("tax papers")])[0].created_at
        named = now - timedelta(days=40)
        estore.write(
            [
                rec("garden notes about the roses", observed_at=named),
                rec("garden notes about the tulips", observed_at=now - timedelta(days=2)),
            ]
        )
        query = {"scope": U1, "query": f"garden notes on {named.day} {named:%B} {named.year}", "mode": "quality"}
        monkeypatch.setattr(tuning, "QUALITY_WEIGHTS", {"named_time": 1.0})
        assert contents(estore.search({**query, "relevance": "rank"}))[0] == "garden notes about the roses"
        monkeypatch.setattr(tuning, "QUALITY_WEIGHTS", {"named_time": -1.0})
        assert contents(estore.search({**query, "relevance": "rank"}))[-1] == "garden notes about the roses"

    @pytest.mark.parametrize("mode", BY_MEANING)
    def test_a_search_by_meaning_returns_what_matches_not_the_whole_scope(
        self, estore: FullMemoryStore, mode: SearchMode
    ) -> None:
        estore.write([rec("garden notes from spring"), rec("quarterly taxes filed"), rec("zzz qqq xxx")])
        found = contents(estore.search({"scope": U1, "query": "garden notes", "mode": mode, "limit": 50}))
        assert found[0] == "garden notes from spring"
        assert "zzz qqq xxx" not in found, "a record below the relevance floor sharing no word is no match"
        floor = tuning.RELEVANCE_FLOOR
        assert floor is not None
        hits = estore.search({"scope": U1, "query": "garden notes", "mode": mode, "limit": 50})
        for hit in hits:
            assert hit.keyword_score is not None or (hit.semantic_score or -1.0) >= floor, hit

    @pytest.mark.parametrize("mode", BY_MEANING)
    def test_ranking_asked_for_returns_every_record_in_reach(self, estore: FullMemoryStore, mode: SearchMode) -> None:
        estore.write([rec("garden notes from spring"), rec("quarterly taxes filed"), rec("zzz qqq xxx")])
        estore.write([rec("garden notes of u2", U2)])
        query = {"scope": U1, "query": "garden notes", "mode": mode, "limit": 50}
        assert "zzz qqq xxx" not in contents(estore.search(query))
        every = contents(estore.search({**query, "relevance": "rank"}))
        assert every[0] == "garden notes from spring"
        assert sorted(every) == ["garden notes from spring", "quarterly taxes filed", "zzz qqq xxx"], "in scope only"
        assert len(estore.search({**query, "relevance": "rank", "limit": 2})) == 2
        keyword = estore.search({**query, "mode": "keyword", "relevance": "rank"})
        assert contents(keyword) == ["garden notes from spring"], "words match or they do not"

    @pytest.mark.parametrize("mode", ["hybrid", "quality"])
    def test_a_fusion_keeps_a_word_in_common_below_the_floor(
        self, estore: FullMemoryStore, monkeypatch: pytest.MonkeyPatch, mode: SearchMode
    ) -> None:
        estore.write([rec("garden notes from spring"), rec("the shed key hangs by the door")])
        monkeypatch.setattr(tuning, "RELEVANCE_FLOOR", 1.0)  # nothing is close enough by meaning alone
        assert contents(estore.search({"scope": U1, "query": "shed", "mode": "semantic"})) == []
        fused = estore.search({"scope": U1, "query": "shed", "mode": mode})
        assert contents(fused) == ["the shed key hangs by the door"], "it shares a word"
        for ranking in BY_MEANING:  # ranking asked for: every record, the closest first
            assert len(estore.search({"scope": U1, "query": "shed", "mode": ranking, "relevance": "rank"})) == 2

    def test_quality_orders_by_its_weighted_features(
        self, estore: FullMemoryStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(tuning, "RELEVANCE_FLOOR", None)
        monkeypatch.setattr(tuning, "SEMANTIC_CONTEXT_WEIGHT", 0.0)
        estore.write(
            [
                rec("garden notes from the spring garden"),
                rec("notes on the garden shed"),
                rec("gardening every weekend"),
                rec("quarterly taxes filed"),
                rec("the notes of a garden party"),
            ]
        )
        query = {"scope": U1, "query": "garden notes spring", "limit": 10}

        def order(mode: SearchMode) -> list[str]:
            return contents(estore.search({**query, "mode": mode}))

        monkeypatch.setattr(tuning, "QUALITY_WEIGHTS", {"keyword_z": 1.0})
        by_words = order("quality")
        assert by_words[:4] == order("keyword"), "BM25's order first, then what shares no word"
        monkeypatch.setattr(tuning, "QUALITY_WEIGHTS", {"cosine_z": 1.0})
        assert order("quality") == order("semantic"), "the plain cosine's order"
        monkeypatch.setattr(tuning, "QUALITY_WEIGHTS", {"cosine_z": -1.0})
        assert order("quality") == order("semantic")[::-1], "a weight's sign is the direction"

    def test_a_quality_hit_says_where_its_score_came_from(self, estore: FullMemoryStore) -> None:
        estore.write([rec("garden notes from spring"), rec("gardening every weekend")])
        hits = estore.search({"scope": U1, "query": "garden notes", "mode": "quality"})
        assert hits[0].record.content == "garden notes from spring", "the shipped weights favour it"
        assert hits[0].keyword_score is not None and hits[0].terms is not None
        assert all(hit.semantic_score is not None and hit.score is not None for hit in hits)
        assert [hit.score for hit in hits] == sorted((hit.score or 0.0 for hit in hits), reverse=True)

    def test_erase_preview_mentions_name_the_person_whatever_the_mode(self, estore: FullMemoryStore) -> None:
        self._needs(estore, erasure=True)
        mei = {"tenant": "acme", "user": "mei"}
        estore.write([rec("Mei eats vegetarian.", mei)])
        [named] = estore.write([rec("Dana shares the ledger with Mei.", U2)])
        estore.write([rec("Ravi moved to Berlin and eats vegetarian.", U2), rec("Dana likes tea.", U2)])
        preview = estore.preview_erase(mei)
        assert preview.mentions == [named.id], "named by a word, never a neighbour by meaning"
        assert preview.mentioned_words == {named.id: ["mei"]}

    # === every rule holds in every mode =============================================

    @pytest.mark.parametrize("mode", MODES)
    def test_scope_rules_in_every_mode(self, estore: FullMemoryStore, mode: SearchMode) -> None:
        estore.write(
            [
                rec("garden notes tenant-wide", ACME),
                rec("garden notes mine", U1),
                rec("garden notes theirs", U2),
                rec("garden notes u10", U10),
                rec("garden notes foreign", OTHER),
            ]
        )
        assert self._find(estore, mode) == ["garden notes mine"]
        visible = self._find(estore, mode, scope_match="visible")
        assert visible == ["garden notes mine", "garden notes tenant-wide"]
        wide = sorted(contents(estore.search({"scope": ACME, "query": "garden notes", "mode": mode, "limit": 50})))
        assert wide == ["garden notes mine", "garden notes tenant-wide", "garden notes theirs", "garden notes u10"]

    @pytest.mark.parametrize("mode", MODES)
    def test_agent_convention_in_every_mode(self, estore: FullMemoryStore, mode: SearchMode) -> None:
        estore.write(
            [
                rec("garden notes shared", U1),
                rec("garden notes planner", {**U1, "agent": "planner"}),
                rec("garden notes coder", {**U1, "agent": "coder"}),
            ]
        )
        assert self._find(estore, mode, agent="planner") == ["garden notes planner", "garden notes shared"]

    @pytest.mark.parametrize("mode", MODES)
    def test_kind_tag_key_and_target_filters_in_every_mode(self, estore: FullMemoryStore, mode: SearchMode) -> None:
        estore.write(
            [
                rec("garden notes plain"),
                rec("garden notes preferred", kind="preference"),
                rec("garden notes tagged", tags=["outdoor", "spring"]),
                rec("garden notes keyed", key="garden.plan"),
                rec("garden notes other key", key="house.plan"),
                rec("garden notes aimed", target={"primitive": "judgment", "domain": "triage", "slot": "heuristics"}),
            ]
        )
        assert self._find(estore, mode, kinds=["preference"]) == ["garden notes preferred"]
        assert self._find(estore, mode, tags=["outdoor", "spring"]) == ["garden notes tagged"]
        assert self._find(estore, mode, tags=["outdoor", "winter"]) == []
        assert self._find(estore, mode, keys=["garden.plan"]) == ["garden notes keyed"]
        assert self._find(estore, mode, keys=["garden."], key_match="prefix") == ["garden notes keyed"]
        assert self._find(estore, mode, targeted=True) == ["garden notes aimed"]

    @pytest.mark.parametrize("mode", MODES)
    def test_invalidation_expiry_and_as_of_in_every_mode(
        self, estore: FullMemoryStore, clock: FakeClock, mode: SearchMode
    ) -> None:
        old = estore.write([rec("garden notes old plan", key="plan")])[0]
        clock.advance(minutes=1)
        before = clock.peek()
        clock.advance(minutes=1)
        new = estore.write([rec("garden notes new plan", key="plan")])[0]
        estore.write([rec("garden notes short-lived", expires_at=clock() + timedelta(minutes=5))])
        assert self._find(estore, mode) == ["garden notes new plan", "garden notes short-lived"]
        everything = self._find(estore, mode, include_invalidated=True)
        assert everything == ["garden notes new plan", "garden notes old plan", "garden notes short-lived"]
        assert self._find(estore, mode, as_of=before) == ["garden notes old plan"]
        clock.advance(minutes=10)
        assert self._find(estore, mode) == ["garden notes new plan"]
        assert new.supersedes == old.id

    @pytest.mark.parametrize("mode", BY_MEANING)
    def test_pages_of_a_ranked_search_never_repeat(self, estore: FullMemoryStore, mode: SearchMode) -> None:
        estore.write([rec(f"garden notes number {i}") for i in range(12)])
        search = {"scope": U1, "query": "garden notes", "mode": mode, "limit": 5}
        seen: list[str] = []
        cursor: str | None = None
        while True:
            page = estore.list_records(RecordListQuery(search=search, cursor=cursor))
            seen += contents(page.hits)
            if (cursor := page.next_cursor) is None:
                break
        assert sorted(seen) == sorted(f"garden notes number {i}" for i in range(12))

    def test_filters_that_rule_out_the_closest_still_find_the_rest(self, estore: FullMemoryStore) -> None:
        estore.write([rec(f"garden notes number {i}") for i in range(260)])
        estore.write([rec(f"a preference of {name}", kind="preference") for name in ("ann", "bo", "cy")])
        # "the rest" are far: ranked, not matched (this pins the scan, not the floor)
        query = {"scope": U1, "query": "garden notes", "mode": "semantic", "kinds": ["preference"], "relevance": "rank"}
        found = estore.search(query)
        assert sorted(contents(found)) == ["a preference of ann", "a preference of bo", "a preference of cy"]

    def test_another_store_object_sees_what_this_one_wrote_and_forgot(
        self, raw_embedding_store: FullMemoryStore
    ) -> None:
        first, doomed = raw_embedding_store.write([rec("garden notes first"), rec("garden notes doomed")])
        other = self.open_again(raw_embedding_store, embedder=HashingEmbedder())
        if other is None:
            pytest.skip("this backend cannot open its data again")
        try:
            assert self._find(other, "semantic") == ["garden notes doomed", "garden notes first"]
            raw_embedding_store.write([rec("garden notes later")])
            assert raw_embedding_store.delete(doomed.id)
            assert self._find(other, "semantic") == ["garden notes first", "garden notes later"]
            assert self._find(other, "hybrid") == ["garden notes first", "garden notes later"]
        finally:
            if other is not raw_embedding_store:
                other.close()
        assert first.id

    # === vectors live and die with their records ====================================

    def test_every_write_path_stores_a_vector(self, estore: FullMemoryStore) -> None:
        written = estore.write([rec("garden notes one"), rec("garden notes two")])
        copied = [r.model_copy(update={"id": r.id + "c"}) for r in written]
        estore.import_records(copied)
        status = estore.embedding_status()
        assert (status.embedded, status.records, status.missing) == (4, 4, 0)
        assert status.model_id == status.embedder == HashingEmbedder().model_id

    def test_a_vector_goes_with_its_record(self, estore: FullMemoryStore) -> None:
        _kept, doomed = estore.write([rec("garden notes kept"), rec("garden notes doomed")])
        estore.write([rec("garden notes of u2", U2), rec("more of u2", U2)])
        assert estore.delete(doomed.id)
        assert estore.embedding_status().embedded == 3
        assert "garden notes doomed" not in self._find(estore, "semantic")
        estore.erase(U2)
        assert (estore.embedding_status().embedded, estore.embedding_status().records) == (1, 1)
        assert self._find(estore, "semantic") == ["garden notes kept"]

    def test_a_failed_batch_leaves_no_vector(self, estore: FullMemoryStore) -> None:
        estore.write([rec("garden notes keyed", key="plan")])
        with pytest.raises(Exception):  # noqa: B017 - the kit pins that nothing is written, whatever the error
            estore.write([rec("fine"), rec("x" * (estore.capabilities().max_content_chars + 1))])
        assert estore.embedding_status().embedded == 1

    def test_a_keyword_only_store_leaves_records_to_embed_later(self, raw_store: FullMemoryStore) -> None:
        _needs_numpy()
        raw_store.write([rec("gardening every weekend"), rec("quarterly taxes"), rec("garden notes", U2)])
        embedding = self.open_again(raw_store, embedder=HashingEmbedder())
        if embedding is None or embedding is raw_store:
            pytest.skip("this backend cannot open its data again with an embedder")
        try:
            assert embedding.embedding_status().missing == 3
            assert embedding.search({"scope": U1, "query": "gardens", "mode": "semantic"}) == []
            seen: list[tuple[int, int]] = []
            assert embedding.embed_missing(batch_size=2, progress=lambda done, total: seen.append((done, total))) == 3
            assert seen == [(2, 3), (3, 3)]
            assert embedding.embed_missing() == 0, "resumable: nothing is embedded twice"
            found = embedding.search({"scope": U1, "query": "gardens", "mode": "semantic", "limit": 1})
            assert contents(found) == ["gardening every weekend"]
        finally:
            embedding.close()

    def test_another_model_is_refused_until_re_embedded(self, raw_embedding_store: FullMemoryStore) -> None:
        raw_embedding_store.write([rec("gardening every weekend")])
        other = self.open_again(raw_embedding_store, embedder=HashingEmbedder(64))
        if other is None or other is raw_embedding_store:
            pytest.skip("this backend cannot open its data again with another embedder")
        try:
            with pytest.raises(MemoryEmbedderMismatchError, match="embed --rebuild") as info:
                other.search({"scope": U1, "query": "gardens", "mode": "semantic"})
            assert info.value.stored == HashingEmbedder().model_id
            with pytest.raises(MemoryEmbedderMismatchError):
                other.write([rec("written with the wrong model")])
            assert contents(other.search({"scope": U1, "query": "gardening", "mode": "keyword"})) == [
                "gardening every weekend"
            ], "keyword search works meanwhile, and the refused write left nothing"
            with pytest.raises(MemoryEmbedderMismatchError):
                other.embed_missing()
            assert other.embed_missing(rebuild=True) == 1
            assert other.embedding_status().model_id == HashingEmbedder(64).model_id
            assert contents(other.search({"scope": U1, "query": "gardens", "mode": "semantic"})) == [
                "gardening every weekend"
            ]
        finally:
            other.close()
