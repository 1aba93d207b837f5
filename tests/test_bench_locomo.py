"""The LoCoMo benchmark command, on a two-conversation file shaped like the dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.folds import HEADROOM
from bench.locomo import load_dataset, main
from tests.support.locomo import conversation, write_dataset
from tests.support.optional import needs_extra


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark keeps a dataset's vectors in the cache folder: a test's own."""
    monkeypatch.setenv("MEMORY_ADMIN_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return write_dataset(
        tmp_path / "locomo-mini.json",
        conversation(
            "conv-a",
            [("Ann adopted a grey cat named Pixel.", "D1:1"), ("Ann works as a nurse in Leeds.", ["D1:2", "D1:3"])],
            [
                {"question": "What is the name of Ann's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
                {"question": "Where does Ann work?", "answer": "Leeds", "evidence": ["D1:2; D1:3"], "category": 1},
                {"question": "Did Ann buy a boat?", "answer": "no", "evidence": [], "category": 5},
            ],
            date=None,
        ),
        conversation(
            "conv-b",
            [("Bo plays the cello in an orchestra.", "D1:1"), ("Bo has a cat called Miso.", "D1:2")],
            [{"question": "Which instrument does Bo play?", "answer": "cello", "evidence": ["D1:1"], "category": 4}],
            date=None,
        ),
    )


def test_the_dataset_loader_keeps_categories_one_to_four_and_splits_evidence(dataset: Path) -> None:
    loaded = load_dataset(dataset)
    assert loaded.conversations == ["conv-a", "conv-b"]
    assert len(loaded.observations) == 4
    assert [q.category for q in loaded.questions] == [4, 1, 4]
    assert loaded.questions[1].evidence == frozenset({"D1:2", "D1:3"})
    assert loaded.ceiling() == 1.0


def test_the_command_prints_and_writes_its_figures(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "docs" / "locomo.md"
    assert main([str(dataset), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == out.read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in printed.splitlines() if line.startswith("| ")}
    assert rows["recall@10"] == "| recall@10 | 1.0000 | 1.0000 | 1.0000 |"
    assert rows["cross-scope leakage (records, 3 own-scope + 3 other-scope searches)"].endswith("| 0 | 0 | 0 |")
    assert "| truncation rate | 0.0000 (0 of 3) |" in printed
    assert printed.rstrip().endswith("Verdict: pass.")
    assert f"Command: `python -m bench.locomo {dataset} --out {out}`" in printed


def test_an_in_memory_store_can_be_measured(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(dataset), "--store", "memory://", "--no-events"]) == 0
    assert "Store: memory, keyword search, event log off." in capsys.readouterr().out


def test_hybrid_is_measured_beside_keyword_mode_rrf_and_without_its_floor(
    dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("numpy", reason=needs_extra("semantic"))  # the hashing embedder computes with it
    assert main([str(dataset), "--mode", "hybrid", "--embedder", "hashing", "--no-events"]) == 0
    out = capsys.readouterr().out
    assert "Store: sqlite, hybrid search with hashing-v1:256" in out
    header = next(line for line in out.splitlines() if line.startswith("| | memory store (hybrid search"))
    assert "memory store, keyword mode" in header and "naive RRF (k = 60)" in header
    assert "without the relevance floor" in header
    leakage = next(line for line in out.splitlines() if line.startswith("| cross-scope leakage"))
    assert leakage.endswith("| 0 | 0 | 0 | 0 | 0 | 0 |")
    assert "| recall block: evidence covered (mean) |" in out


def test_the_quality_mode_is_timed_beside_hybrid(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("numpy", reason=needs_extra("semantic"))
    assert main([str(dataset), "--mode", "quality", "--embedder", "hashing", "--no-events"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| | memory store"))
    assert "quality search" in header and header.endswith("| memory store, hybrid mode (the default) |")


def test_dialog_turns_can_be_the_records(dataset: Path) -> None:
    loaded = load_dataset(dataset, "turns")
    assert [o.text for o in loaded.observations][:2] == [
        "Ann: Ann adopted a grey cat named Pixel.",
        "Ann: Ann works as a nurse in Leeds.",
    ]
    assert loaded.observations[1].dialog_ids == frozenset({"D1:2"})
    assert len(loaded.questions) == 3


def test_every_tuned_choice_is_measured_out_of_fold(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("numpy", reason=needs_extra("semantic"))
    args = [str(dataset), "--mode", "hybrid", "--embedder", "hashing", "--folds", "--no-events", "--train-quality"]
    assert main(args) == 0
    out = capsys.readouterr().out
    section = out[out.index("## Out of fold") :]
    agreed = next(line for line in section.splitlines() if line.startswith("At the store's settings"))
    for units in ("observations", "turns"):
        assert f"{units}: keyword 3 of 3, semantic 3 of 3, hybrid 3 of 3, quality 3 of 3" in agreed
    choices = [line for line in section.splitlines() if line.startswith(("| keyword |", "| semantic |", "| hybrid |"))]
    assert len(choices) == 3 + 13 + 2, "each mode's choices together, each choice alone, the floor of two searches"
    assert section.count("Semantic search against the plain cosine:") == 2
    assert "| quality, out of fold" not in section and "| observations: quality, out of fold |" in section
    assert "QUALITY_WEIGHTS: dict[str, float] = {" in out
    for mode, weights in (("semantic", "0, 0.02, 0.03, 0.05"), ("hybrid", "0, 0.15, 0.3, 0.5")):
        assert f"| {mode} | a prior for longer records (their z-scored log length) | {weights} | 0 |" in section
    joint = ("| semantic | centring off", "| hybrid | keyword weight 0")
    baselines = [line.split(" | ")[1] for line in choices if line.startswith(joint)]
    assert len(baselines) == 2 and all("length prior 0" in line for line in baselines), "each baseline says it"
    tried = [
        line.split(" | ")[0] for line in section.splitlines() if line.endswith(("| lost: not in the store |", "why) |"))
    ]
    assert tried == [
        "| a second round, its query moved towards the first round's top three",
        "| diversity across sessions (the top ten picked one by one)",
        "| names in common with the question",
        "| diversity by meaning (the top ten picked one by one, less their likeness)",
        "| records written next to the best match",
    ]
    lines = section.splitlines()
    header = next(n for n, line in enumerate(lines) if line.startswith("Where the evidence a search misses sits"))
    assert lines[header + 2] == "| | observations: hybrid | observations: quality | turns: hybrid | turns: quality |"
    headroom = {
        row.split(" | ")[0][2:]: [float(cell) for cell in row[:-2].split(" | ")[1:]]
        for row in lines[header + 4 : header + 10]
    }
    assert list(headroom) == list(HEADROOM)
    for column in range(4):
        cut = [headroom[measure][column] for measure in HEADROOM[:5]]
        assert cut == sorted(cut), "ten, twenty, fifty, every candidate, every record: each holds the one before"
        assert headroom[HEADROOM[5]][column] >= headroom["recall@10"][column]
    assert headroom["ceiling"][:2] == [1.0, 1.0], "an observation cites every evidence turn here"


def test_an_evidence_turn_is_counted_near_when_the_top_ten_cite_the_turn_beside_it() -> None:
    from bench.folds import Asked, Collected, Conversation, near_recall_at, recall_at
    from bench.locomo import Question

    cites = {"a": frozenset({"D2:4"}), "b": frozenset({"D3:6"}), "c": frozenset({"D1:1", "D10:9"})}
    held = Conversation(list(cites), cites, {}, {}, [], None, None)  # type: ignore[arg-type]
    data = Collected({"conv": held}, [], [])
    evidence = frozenset({"D2:5", "D3:6", "D3:8", "D1:9", "D10:10", "X7"})
    asked = Asked(Question("conv", "?", 1, evidence), 1, None, [], [], {})
    assert recall_at(asked, ["a", "b", "c"], data) == 1 / 6  # D3:6 only
    # D2:5 is beside D2:4 and D10:10 beside D10:9; D3:8 is two turns from D3:6, D1:9 is in
    # another session than D10:9 (and far from D1:1), X7 is no turn
    assert near_recall_at(asked, ["a", "b", "c"], data) == 3 / 6
    assert near_recall_at(asked, ["b"], data) == 1 / 6


def test_a_second_run_takes_the_dataset_s_vectors_from_the_cache(dataset: Path, tmp_path: Path) -> None:
    pytest.importorskip("numpy", reason=needs_extra("semantic"))
    from bench.embedded import CachedEmbedder
    from memory_admin.embed import HashingEmbedder

    assert main([str(dataset), "--mode", "hybrid", "--embedder", "hashing", "--no-events"]) == 0
    [stored] = (tmp_path / "cache" / "bench-vectors").glob("*.npz")
    again = CachedEmbedder(HashingEmbedder())
    vectors = again.embed_documents(["Ann adopted a grey cat named Pixel.", "Bo plays the cello in an orchestra."])
    assert again.hits == 2 and stored.is_file(), "written by the first run, read by the second"
    assert (
        vectors
        == HashingEmbedder().embed_documents(
            ["Ann adopted a grey cat named Pixel.", "Bo plays the cello in an orchestra."]
        )
    ).all()


def test_the_query_map_moves_another_conversation_s_questions_to_their_answers() -> None:
    """Questions sit closest to the record after their answer's; a map fitted on one
    conversation's questions turns the other's towards their own answers."""
    np = pytest.importorskip("numpy", reason=needs_extra("semantic"))
    from bench.folds import Asked, Collected, Conversation, fit_query_map
    from bench.locomo import Question
    from memory_admin.embed.quantize import to_blobs
    from memory_admin.store.vectors import ScopeVectors

    size = 8
    records = np.eye(size, dtype=np.float32)
    blobs = list(enumerate(to_blobs(records)))

    def held(name: str) -> Conversation:
        ids = [f"{name}-{k}" for k in range(size)]
        return Conversation(
            ids=ids,
            cites={key: frozenset({f"D1:{k}"}) for k, key in enumerate(ids)},
            contexts={key: (name, k) for k, key in enumerate(ids)},
            texts={key: key for key in ids},
            blobs=blobs,
            vectors=ScopeVectors.of(1, blobs, size),
            centre=None,
        )

    def asked(name: str, k: int) -> Asked:
        vector = 0.6 * records[(k + 1) % size] + 0.4 * records[k]
        question = Question(name, f"question {k}", 4, frozenset({f"D1:{k}"}))
        return Asked(question, 2, vector / np.linalg.norm(vector), [], [], {})

    conversations = {name: held(name) for name in ("a", "b")}
    data = Collected(conversations, [asked(name, k) for name in conversations for k in range(size)], [], "test")
    matrix = fit_query_map({"observations": data}, {"a"}, 0.01)
    for one in data.asked[size:]:  # conversation b: not fitted on
        moved = one.vector + matrix @ one.vector
        k = int(one.question.text.split()[-1])
        assert int(np.argmax(records @ one.vector)) == (k + 1) % size, "as embedded: the wrong record"
        assert int(np.argmax(records @ moved)) == k, "moved: its answer"
    heavy = fit_query_map({"observations": data}, {"a"}, 1e6)
    assert float(np.abs(heavy).max()) < 1e-3, "a ridge penalty that large leaves the query where it was"


def test_the_quality_ranker_is_fitted_one_question_at_a_time() -> None:
    """The listwise fit learns what orders a question's own candidates: a feature that
    marks the evidence among them gains, and one that differs only between questions
    (the same for each of a question's candidates) teaches it nothing."""
    np = pytest.importorskip("numpy", reason=needs_extra("semantic"))
    from bench.folds import fit, fit_pointwise
    from memory_admin.store.quality import FEATURES

    rng = np.random.default_rng(3)
    marks, between = FEATURES.index("coverage"), FEATURES.index("named_time")
    tables = []
    for n in range(60):
        table = rng.normal(size=(12, len(FEATURES)))
        labels = np.zeros(12)
        labels[n % 12] = 1.0
        table[:, marks] += 3.0 * labels  # the evidence stands out on one feature
        table[:, between] = float(n % 3)  # one value per question...
        tables.append((table, labels))
    tables.append((rng.normal(size=(12, len(FEATURES))), np.zeros(12)))  # no evidence: nothing to learn
    weights = fit(tables)
    assert max(weights, key=lambda name: abs(weights[name])) == "coverage" and weights["coverage"] > 0
    assert weights["named_time"] == 0.0, "...which orders no question's candidates"
    firsts = [int(np.argmax(table @ np.array([weights[f] for f in FEATURES]))) for table, _ in tables[:60]]
    assert sum(first == n % 12 for n, first in enumerate(firsts)) >= 50, "the evidence first, nearly always"
    assert fit_pointwise(tables)["coverage"] > 0, "the comparison learns it too"


def test_a_model_s_query_map_is_chosen_out_of_fold_and_trained(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    np = pytest.importorskip("numpy", reason=needs_extra("semantic"))
    from memory_admin.embed import query_map as maps

    path = tmp_path / "hashing.query-map.npy"
    np.save(path, np.zeros((256, 256), dtype=np.float16))
    monkeypatch.setattr(maps, "map_path", lambda model_id: path if model_id == "hashing-v1:256" else None)
    maps.query_map.cache_clear()
    args = [str(dataset), "--mode", "hybrid", "--embedder", "hashing", "--folds", "--no-events", "--train-query-map"]
    try:
        assert main(args) == 0
        out = capsys.readouterr().out
        trained = maps.query_map("hashing-v1:256")
    finally:
        maps.query_map.cache_clear()
    section = out[out.index("## Out of fold") :]
    agreed = next(line for line in section.splitlines() if line.startswith("At the store's settings"))
    for units in ("observations", "turns"):
        assert f"{units}: keyword 3 of 3, semantic 3 of 3, hybrid 3 of 3, quality 3 of 3" in agreed
    rows = [line for line in section.splitlines() if "| the query map" in line]
    assert [row.split(" | ")[0] for row in rows] == ["| semantic", "| hybrid"]
    assert "Wrote the query map fitted on all five conversations (penalty 0.1)" not in out
    assert f"Wrote the query map fitted on every conversation (penalty 0.1) to {path.name}" in out
    assert float(np.abs(trained).max()) > 0, "the file holds the fitted map"
    header = out[: out.index("## Out of fold")]
    assert "query map, which was fitted on these very conversations" in header, "its in-sample figures say so"
