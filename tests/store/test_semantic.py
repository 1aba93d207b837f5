"""Recall by meaning with the real default model, on the file and on PostgreSQL: what the
kit's hashing embedder cannot show (a question finds an answer sharing no word with it),
and how a store is told which model to use."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("numpy", reason=needs_extra("semantic"))

from memory_admin import tuning
from memory_admin.conformance.base import U1, contents, rec
from memory_admin.embed import HashingEmbedder, OnnxEmbedder
from memory_admin.errors import CapabilityError, MemoryEmbedderMismatchError, MemoryValidationError
from memory_admin.store import BaseMemoryStore, MemoryNeeds, open_store, require_memory
from memory_admin.store.plan import Candidate
from tests.support.stores import backend_url, backends


def _question(store: BaseMemoryStore, text: str, mode: str | None = None) -> list[str]:
    return contents(store.search({"scope": U1, "query": text, "limit": 1, **({"mode": mode} if mode else {})}))


FACTS = [
    "Dana is a staff engineer on the payments team",
    "Dana's partner is allergic to peanuts",
    "The quarterly planning offsite is in Lisbon",
    "Dana prefers aisle seats on long flights",
]


@pytest.fixture(params=backends("sqlite", "postgres"))
def store_url(request: pytest.FixtureRequest) -> str:
    return backend_url(request.param, request)


@pytest.fixture
def semantic_store(store_url: str, embedder: OnnxEmbedder) -> Iterator[BaseMemoryStore]:
    store = open_store(store_url, embedder=embedder)
    store.write([rec(fact) for fact in FACTS])
    yield store
    store.close()


def test_a_question_finds_the_answer_that_shares_no_word(
    semantic_store: BaseMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _question(semantic_store, "Where does Dana work?", "keyword") != [FACTS[0]]
    assert _question(semantic_store, "Where does Dana work?", "semantic") == [FACTS[0]]
    assert _question(semantic_store, "Where does Dana work?") == [FACTS[0]], "hybrid is the default"
    assert _question(semantic_store, "food allergies at home") == [FACTS[1]]
    # a loose paraphrase (a cosine under 0.2) is below the relevance floor...
    assert _question(semantic_store, "company retreat location") == []
    monkeypatch.setattr(tuning, "RELEVANCE_FLOOR", None)  # ...and the closest record without it
    assert _question(semantic_store, "company retreat location") == [FACTS[2]]


def test_hybrid_hits_say_where_their_score_came_from(semantic_store: BaseMemoryStore) -> None:
    hits = semantic_store.search({"scope": U1, "query": "aisle seats", "limit": 4})
    assert contents(hits) == [FACTS[3]], "the rest share no word and are not close in meaning: no match"
    assert hits[0].keyword_score is not None and hits[0].keyword_score > 0
    assert hits[0].semantic_score is not None and hits[0].semantic_score > 0.5
    floor = tuning.RELEVANCE_FLOOR
    assert floor is not None
    hits = semantic_store.search({"scope": U1, "query": "food allergies at home", "limit": 4})
    assert contents(hits)[0] == FACTS[1] and all(hit.keyword_score is None for hit in hits)
    assert all(hit.semantic_score is not None and hit.semantic_score >= floor for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score or 0.0 for hit in hits), reverse=True)


THINGS = [
    "Dana drinks green tea every morning",
    "The office coffee machine broke on Monday",
    "Sam brought lemonade to the picnic",
    "Priya spent two weeks in Portugal last summer",
    "The team's retreat is planned for the mountains",
    "Dana adopted a rescue dog called Biscuit",
    "Sam's cat sleeps on the keyboard",
    "Priya cycles to work when it is dry",
    "The night bus stops running at one",
    "Dana is learning to play the cello",
    "Sam reads a mystery novel each month",
    "Priya bakes sourdough bread at weekends",
]


def test_a_fusion_ranks_by_the_centred_cosine_unless_told_not_to(
    store_url: str, embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tuning.FUSION_CENTRING`` off: hybrid search's semantic side ranks by the plain
    cosine, as semantic search does; on (the default) by the cosine from the centre."""
    for lift in ("CONTEXT_WEIGHT", "LENGTH_WEIGHT", "SEMANTIC_CONTEXT_WEIGHT", "SEMANTIC_LENGTH_WEIGHT"):
        monkeypatch.setattr(tuning, lift, 0.0)
    monkeypatch.setattr(tuning, "RELEVANCE_FLOOR", None)
    questions = ["beverages", "holidays", "animals", "transport", "hobbies"]  # no word of any record
    with open_store(store_url, embedder=embedder) as store:
        store.write([rec(thing) for thing in THINGS])

        def orders(mode: str) -> list[list[str]]:
            return [contents(store.search({"scope": U1, "query": q, "limit": 12, "mode": mode})) for q in questions]

        by_meaning = orders("semantic")
        assert all(len(order) == len(THINGS) for order in by_meaning)
        centred = orders("hybrid")
        monkeypatch.setattr(tuning, "FUSION_CENTRING", False)
        assert orders("hybrid") == by_meaning, "the plain cosine, as a semantic search ranks"
    assert centred != by_meaning, "measured from the centre, some question's order changes"


FILLER = " ".join(f"The notes for week {week} cover the budget review and the hiring plan." for week in range(20))
PASSPORT = "Dana keeps her passport in the blue folder in the hall cupboard."


@pytest.mark.parametrize("kind", backends("memory", "sqlite", "postgres"))
def test_a_long_record_is_found_by_its_best_window(
    kind: str, request: pytest.FixtureRequest, embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record the model reads in several windows keeps a vector per window beside its
    own, and a question about one part of it matches that part: the hit's semantic_score
    is its best window's cosine (its whole vector's alone with w = tuning.WINDOW_WEIGHT
    at 0), and the order mixes the two."""
    long = f"{FILLER} {PASSPORT}"
    question = "Where does Dana keep her passport?"
    whole, windows = embedder.embed_document_windows([long])
    assert windows[0] is not None and len(windows[0]) == 2
    asked = embedder.embed_query(question)
    alone, best = float(whole[0] @ asked), float((windows[0] @ asked).max())
    assert best > alone + 0.1, "the second window says what the question asks"
    with open_store(backend_url(kind, request), embedder=embedder) as store:
        store.write([rec(fact) for fact in FACTS] + [rec(long)])

        def score() -> float:
            hits = store.search({"scope": U1, "query": question, "mode": "semantic", "relevance": "rank"})
            found = [hit.semantic_score for hit in hits if hit.record.content == long]
            assert found and found[0] is not None
            return found[0]

        assert tuning.WINDOW_WEIGHT > 0
        assert score() == pytest.approx(best, abs=0.01)
        monkeypatch.setattr(tuning, "WINDOW_WEIGHT", 0.0)  # the record's own vector alone
        assert score() == pytest.approx(alone, abs=0.01)
        monkeypatch.undo()
        # the async write embeds on a worker thread and keeps the windows alike
        store.delete(store.search({"scope": U1, "query": "passport", "mode": "keyword"})[0].record.id)
        asyncio.run(store.awrite([rec(long)]))
        assert score() == pytest.approx(best, abs=0.01)


def test_the_best_window_mixes_into_a_long_record_s_similarity(monkeypatch: pytest.MonkeyPatch) -> None:
    """closest over stored blobs: a record without windows scores by its own vector; one
    with windows is ordered by (1 - w) × its own + w × its best window, and matches as
    closely as its best window does (the cosine the floor reads)."""
    import numpy as np

    from memory_admin.embed import to_blobs
    from memory_admin.store.vectors import by_meaning, closest, relevant

    def unit(*xs: float) -> list[float]:
        v = np.array([*xs, 0.0, 0.0][:4], dtype=np.float32)
        return list(v / np.linalg.norm(v))

    query = np.array(unit(1, 0, 0, 0), dtype=np.float32)
    short, whole = np.array([unit(0.5, 0.866)]), np.array([unit(0.3, 0.954)])
    windows = np.array([unit(0.1, 0.995), unit(0.9, 0.436)])
    rows = [("short", to_blobs(short)[0]), ("long", to_blobs(whole, [windows])[0])]
    found = {key: (cosine, score) for key, cosine, score in closest(query, rows, 4, 2, by_centre=False)}
    assert [key for key, *_ in closest(query, rows, 4, 2, by_centre=False)] == ["long", "short"]
    weight = tuning.WINDOW_WEIGHT
    assert found["long"] == pytest.approx((0.9, (1 - weight) * 0.3 + weight * 0.9), abs=0.01)
    assert found["short"] == pytest.approx((0.5, 0.5), abs=0.01)

    # a long record that disagrees with the query as a whole (-0.5) but one of whose parts
    # matches it (0.6): mixed, 0.05, under the relevance floor; it matches by that part
    turned = np.array([unit(-0.5, 0.866)])
    parts = np.array([unit(0.6, 0.8), unit(0.1, 0.995)])
    mixed = [("short", to_blobs(short)[0]), ("long", to_blobs(turned, [parts])[0])]
    scored = closest(query, mixed, 4, 2, by_centre=False)
    hits = by_meaning([Candidate(key, score, cosine=cosine) for key, cosine, score in scored])
    assert [(hit.id, round(hit.score, 2), round(hit.semantic_score or 0, 2)) for hit in hits] == [
        ("short", 0.5, 0.5),
        ("long", round((1 - weight) * -0.5 + weight * 0.6, 2), 0.6),
    ]
    monkeypatch.setattr(tuning, "RELEVANCE_FLOOR", 0.2)
    assert [hit.id for hit in relevant(hits)] == ["short", "long"], "it reaches the floor by its matching part"

    monkeypatch.setattr(tuning, "WINDOW_WEIGHT", 0.0)
    assert [key for key, *_ in closest(query, rows, 4, 2, by_centre=False)] == ["short", "long"]
    alone = closest(query, mixed, 4, 2, by_centre=False)
    assert [key for key, *_ in alone] == ["short", "long"]
    assert alone[1][1] == pytest.approx(-0.5, abs=0.01), "its own vector alone"


def test_a_large_scope_shortlists_a_long_record_by_its_best_window() -> None:
    """Past the exact-scan limit a scope is shortlisted by the signs of its vectors: a long
    record whose own vector disagrees with the query but one of whose windows agrees is
    listed by that window, once."""
    import numpy as np

    from memory_admin.embed import to_blobs
    from memory_admin.store.vectors import ScopeVectors, shortlist

    rng = np.random.default_rng(7)
    query = rng.standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    others = rng.standard_normal((1000, 384)).astype(np.float32)
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    rows = list(enumerate(to_blobs(others)))
    windows = np.stack([others[0], query, query])
    rows.append((1000, to_blobs(-query[None, :], [windows])[0]))  # its own vector the query's opposite
    scope = ScopeVectors.of(1, rows, 384)
    assert len(scope.keys) == 1001 and scope.window_keys.tolist() == [1000, 1000, 1000]
    listed = shortlist(query, [scope], 100)
    assert 1000 in listed, "listed by its windows"
    assert listed.count(1000) == 1 and len(set(listed)) == len(listed)
    alone = ScopeVectors(1, scope.keys, scope.bits)  # without the windows' signs
    assert 1000 not in shortlist(query, [alone], 100)
    assert scope.nbytes == alone.nbytes + 3 * (8 + 48)


def test_a_long_record_s_windows_leave_the_file_with_it(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    path = tmp_path / "memory.sqlite3"
    with open_store(f"sqlite:///{path}", embedder=embedder) as store:
        _, doomed = store.write([rec("garden notes kept"), rec(f"{FILLER} {PASSPORT} {FILLER}")])
        with closing(sqlite3.connect(path)) as conn:
            blob = conn.execute(
                "SELECT v.vec FROM memory_vectors v JOIN memory_records r ON r.rid = v.rid WHERE r.content = ?",
                [doomed.content],
            ).fetchone()[0]
        assert len(blob) == 388 * 4, "its own vector and three windows'"
        assert store.delete(doomed.id)
    wal = path.with_name(path.name + "-wal")
    leftover = path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert blob[388:] not in leftover and blob[:388] not in leftover, "no window's bytes are left"


def test_a_search_by_meaning_stops_at_the_relevance_floor(semantic_store: BaseMemoryStore) -> None:
    everything = semantic_store.search({"scope": U1, "query": "what does dana drink", "mode": "semantic"})
    floor = tuning.RELEVANCE_FLOOR
    assert floor is not None
    assert all(hit.semantic_score is not None and hit.semantic_score >= floor for hit in everything)
    assert len(everything) < len(FACTS), "not the whole scope, ranked"


def test_require_memory_names_the_embedder_a_keyword_store_lacks(store_url: str, embedder: OnnxEmbedder) -> None:
    with open_store(store_url, embedder="none") as keyword:
        with pytest.raises(CapabilityError, match="embedder='default'") as info:
            require_memory(keyword, MemoryNeeds(search="hybrid"))
        assert info.value.missing == ["search=hybrid"]
    with open_store(store_url, embedder=embedder) as hybrid:
        assert require_memory(hybrid, MemoryNeeds(search="semantic")).search == "hybrid"


def test_the_store_is_told_its_model_by_argument_url_environment_or_its_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    with open_store(url) as fresh:
        assert fresh.embedder is None and fresh.capabilities().search == "keyword"
    with open_store(url + "?embedder=hashing:64") as by_url:
        assert by_url.embedder is not None and by_url.embedder.model_id == "hashing-v1:64"
        by_url.write([rec("gardening every weekend")])
    with open_store(url) as adopted:
        assert adopted.embedder is not None and adopted.embedder.model_id == "hashing-v1:64", "the file's own model"
    with open_store(url, embedder="none") as keyword_only:
        assert keyword_only.embedder is None
    monkeypatch.setenv("MEMORY_EMBEDDER", "hashing:32")
    with open_store(url) as by_env:
        assert by_env.embedder is not None and by_env.embedder.model_id == "hashing-v1:32"
        with pytest.raises(MemoryEmbedderMismatchError, match="hashing-v1:64"):
            by_env.search({"scope": U1, "query": "gardens"})


def test_a_deleted_record_s_vector_leaves_the_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    with open_store(f"sqlite:///{path}", embedder=HashingEmbedder()) as store:
        kept, doomed = store.write([rec("garden notes kept"), rec("zebra crossing canary")])
        with closing(sqlite3.connect(path)) as conn:
            blob = conn.execute(
                "SELECT v.vec FROM memory_vectors v JOIN memory_records r ON r.rid = v.rid WHERE r.content = ?",
                ["zebra crossing canary"],
            ).fetchone()[0]
        assert blob in path.read_bytes() + path.with_name(path.name + "-wal").read_bytes()
        assert store.delete(doomed.id)
        assert store.embedding_status().embedded == 1
        assert kept.id in {hit.record.id for hit in store.search({"scope": U1, "query": "garden", "mode": "semantic"})}
    wal = path.with_name(path.name + "-wal")
    leftover = path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert blob not in leftover, "no byte of the forgotten vector is left in the file or its log"


def test_a_running_keyword_only_store_adopts_vectors_embedded_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    with open_store(url) as running:  # a long-running process, opened before any vector existed
        running.write([rec("gardening every weekend")])
        with open_store(url, embedder=HashingEmbedder()) as embedding:
            assert embedding.embed_missing() == 1
        assert running.embedder is None, "it does not look again at once"
        monkeypatch.setattr(running, "_adopt_checked", running._adopt_checked - 31)
        assert contents(running.search({"scope": U1, "query": "gardens", "mode": "semantic"})) == [
            "gardening every weekend"
        ]
        assert running.embedder is not None and running.embedder.model_id == HashingEmbedder().model_id


def test_the_toolbox_and_recall_find_by_meaning(semantic_store: BaseMemoryStore) -> None:
    from memory_admin.recall import HEADINGS, assemble_recall
    from memory_admin.toolbox import MemoryToolbox

    toolbox = MemoryToolbox(semantic_store, U1)
    answer = toolbox.call("memory_search", {"query": "Where does Dana work?", "limit": 1})
    assert [item["content"] for item in answer["results"]] == [FACTS[0]]
    recall = assemble_recall(semantic_store, U1, "Which team is Dana on at work?", max_hits=1)
    assert HEADINGS["hits"] in recall.block and FACTS[0] in recall.block
    keyword_only = open_store("memory://")
    keyword_only.write([rec(fact) for fact in FACTS])
    missed = MemoryToolbox(keyword_only, U1).call("memory_search", {"query": "Where does Dana work?", "limit": 1})
    assert [item["content"] for item in missed["results"]] != [FACTS[0]], "words alone do not find it"
    keyword_only.close()


def test_a_large_scope_s_shortlist_finds_what_an_exact_scan_finds(
    tmp_path: Path, embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    from bench.corpus import Corpus
    from memory_admin.embed.quantize import to_blobs
    from memory_admin.embed.query_map import map_query
    from memory_admin.store.vectors import closest

    monkeypatch.setattr(tuning, "SEMANTIC_LENGTH_WEIGHT", 0.0)
    corpus, rng = Corpus(), random.Random(4)
    texts = [corpus.sentence(rng) for _ in range(1200)]  # three times the exact-scan limit
    with open_store(f"sqlite:///{tmp_path / 'memory.sqlite3'}", embedder=embedder) as store:
        records = store.write([rec(text) for text in texts])
        blobs = list(zip((r.id for r in records), to_blobs(embedder.embed_documents(texts)), strict=True))
        overlap = []
        for _ in range(20):
            query = " ".join(rng.choice(texts).split()[:4])
            # without its length prior a semantic search ranks by the plain cosine (one batch: one
            # context, one lift) of the mapped query
            vector = map_query(embedder.model_id, embedder.embed_query(query))
            exact = [key for key, _, _ in closest(vector, blobs, embedder.dimensions, 10)]
            found = [hit.record.id for hit in store.search({"scope": U1, "query": query, "mode": "semantic"})]
            assert found[0] == exact[0], "the closest record is always found"
            overlap.append(len(set(found) & set(exact)) / 10)
        assert sum(overlap) / len(overlap) >= 0.9


def test_a_large_scope_s_hybrid_page_is_nearly_the_exhaustive_one(
    tmp_path: Path, embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the sizes ranked exhaustively, each side of a fusion scores only what its own
    page would; the page it makes stays the one every candidate would have made."""
    import random

    from bench.corpus import Corpus
    from memory_admin import tuning

    corpus, rng = Corpus(), random.Random(5)
    texts = [corpus.sentence(rng) for _ in range(1200)]  # past both exhaustive sizes
    queries = [" ".join(rng.choice(texts).split()[:3]) for _ in range(20)]
    with open_store(f"sqlite:///{tmp_path / 'memory.sqlite3'}", embedder=embedder) as store:
        store.write([rec(text) for text in texts])

        def pages() -> list[list[str]]:
            return [[h.record.id for h in store.search({"scope": U1, "query": q, "limit": 10})] for q in queries]

        bounded = pages()
        monkeypatch.setattr(tuning, "SMALL_SCOPE", 10**6)
        monkeypatch.setattr(tuning, "SHORTLIST", 10**6)
        monkeypatch.setattr(tuning, "PREFILTER_MIN", 10**6)
        exhaustive = pages()
    assert all(b[0] == e[0] for b, e in zip(bounded, exhaustive, strict=True)), "the best hit is always the same"
    overlap = [len(set(b) & set(e)) / 10 for b, e in zip(bounded, exhaustive, strict=True)]
    assert sum(overlap) / len(overlap) >= 0.9


def test_a_tenant_s_vectors_are_read_a_few_scopes_at_a_time() -> None:
    from memory_admin.store.sql.session import _groups

    sizes = {"a": 5000, "b": 3000, "c": 300, "d": 9000, "e": 10}
    groups = _groups(list(sizes), sizes.__getitem__, 8192)
    assert groups == [["a", "b"], ["c"], ["d"], ["e"]]
    assert [item for group in groups for item in group] == list(sizes), "every scope once, in order"
    assert all(sum(sizes[i] for i in g) <= 8192 or len(g) == 1 for g in groups)
    assert _groups([], sizes.__getitem__, 8192) == []


def test_a_store_opened_for_quality_ranks_every_query_that_way(store_url: str, embedder: OnnxEmbedder) -> None:
    with open_store(store_url, embedder=embedder, search_mode="quality") as store:
        store.write([rec(fact) for fact in FACTS])
        question = {"scope": U1, "query": "Where does Dana work?"}
        default = store.search(question)
        quality = store.search({**question, "mode": "quality"})
        hybrid = store.search({**question, "mode": "hybrid"})
        assert [(h.record.id, h.score) for h in default] == [(h.record.id, h.score) for h in quality]
        assert [h.score for h in default] != [h.score for h in hybrid], "the ranker's scores, not the fusion's"
        assert default[0].record.content == FACTS[0]
    with pytest.raises(CapabilityError, match="embedder"):
        open_store(store_url, embedder="none", search_mode="quality")
    with pytest.raises(MemoryValidationError, match="search_mode"):
        open_store(store_url, embedder=embedder, search_mode="best")  # type: ignore[arg-type]


def test_the_store_orders_by_the_moved_query_and_reports_the_query_s_own_cosine(
    semantic_store: BaseMemoryStore, embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from memory_admin.embed.query_map import map_query

    question = "Where does Dana work?"
    by_content = dict(zip(FACTS, embedder.embed_documents(FACTS), strict=True))

    def cosines(vector: np.ndarray) -> dict[str, float]:
        return {fact: float(by_content[fact] @ vector / np.linalg.norm(vector)) for fact in FACTS}

    def found() -> tuple[dict[str, float], dict[str, float]]:
        """Each hit's ordering cosine (its score less its lifts) and its semantic_score."""
        hits = semantic_store.search({"scope": U1, "query": question, "mode": "semantic", "relevance": "rank"})
        assert len(hits) == len(FACTS)
        ordering = {
            hit.record.content: (hit.score or 0.0) - (hit.context_score or 0.0) - (hit.length_score or 0.0)
            for hit in hits
        }
        return ordering, {hit.record.content: hit.semantic_score or 0.0 for hit in hits}

    def near(a: dict[str, float], b: dict[str, float]) -> bool:
        return all(abs(a[fact] - b[fact]) < 0.02 for fact in FACTS)

    raw = embedder.embed_query(question)
    moved, own = cosines(map_query(embedder.model_id, raw)), cosines(raw)
    assert not near(moved, own), "the map moves the query"
    ordering, reported = found()
    assert near(ordering, moved) and near(reported, own)
    monkeypatch.setattr(tuning, "QUERY_MAP", False)
    ordering, reported = found()  # the same text again: the store's query cache keeps the two apart
    assert near(ordering, own) and near(reported, own)
