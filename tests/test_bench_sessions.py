"""The whole-sessions benchmark, on a small file shaped like LoCoMo with the real model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("numpy", reason=needs_extra("semantic"))

from bench.locomo import load_dataset
from bench.sessions import KS, RETRIEVERS, Measured, main, out_of_fold, picks, semantic_check
from memory_admin.embed import OnnxEmbedder

FILLER = [f"Bo: the notes for week {week} cover the budget review and the hiring plan." for week in range(20)]
TOPICS = [
    *("gardening and tomatoes", "a trip to Lisbon", "the new espresso machine", "chess club", "a cello"),
    *("her sister's wedding", "running a marathon", "a leaking roof", "the office move", "a new puppy"),
    *("learning Spanish", "a birthday cake", "the football final", "a camping weekend"),
]
PASSPORT = "Ann: my passport is in the blue folder."


def _sample() -> dict[str, Any]:
    """Fifteen dated sessions: fourteen short ones, then a long one whose last turn (past
    the model's first window) is the only one that says where Ann keeps her passport."""
    conversation: dict[str, Any] = {}
    sessions = [[f"Bo: we talked about {topic}.", "Cy: nice."] for topic in TOPICS] + [[*FILLER, PASSPORT]]
    for n, lines in enumerate(sessions, start=1):
        conversation[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
        conversation[f"session_{n}"] = [
            {"speaker": line.split(": ", 1)[0], "dia_id": f"D{n}:{i}", "text": line.split(": ", 1)[1]}
            for i, line in enumerate(lines, start=1)
        ]
    passport = f"D{len(sessions)}:{len(FILLER) + 1}"
    return {
        "sample_id": "conv-a",
        "conversation": conversation,
        "observation": {},
        "qa": [
            {
                "question": "Where does Ann keep her passport?",
                "answer": "the blue folder",
                "evidence": [passport],
                "category": 4,
            },
            {"question": "What did Bo say about Lisbon?", "answer": "a trip", "evidence": ["D2:1"], "category": 4},
            {"question": "Is there an answer?", "answer": "no", "evidence": ["D1:1"], "category": 5},
        ],
    }


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-sessions.json"
    path.write_text(json.dumps([_sample()]), encoding="utf-8")
    return path


def test_each_session_is_one_record_citing_its_turns(dataset: Path) -> None:
    loaded = load_dataset(dataset, "sessions")
    assert loaded.conversations == ["conv-a"]
    assert len(loaded.observations) == len(TOPICS) + 1
    lisbon = loaded.observations[1]
    assert lisbon.text == "Bo: we talked about a trip to Lisbon.\nCy: nice."
    assert lisbon.dialog_ids == frozenset({"D2:1", "D2:2"})
    assert lisbon.stated is not None and lisbon.stated.day == 2
    assert loaded.observations[-1].text.endswith("\n" + PASSPORT)
    assert len(loaded.observations[-1].dialog_ids) == len(FILLER) + 1
    assert [q.category for q in loaded.questions] == [4, 4], "category 5 is left out"


def test_the_report_compares_reading_whole_with_the_first_window(
    dataset: Path, tmp_path: Path, embedder: OnnxEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sessions.md"
    assert main([str(dataset), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text == capsys.readouterr().out
    assert "1 conversations, 15 sessions written as records" in text
    assert "15 records take 16 windows read whole, one each read first-window-only" in text
    first_table = next(block for block in text.split("\n\n") if block.startswith("| | the store"))
    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:]
        for line in first_table.splitlines()
        if line.startswith("| recall@")
    }
    assert list(rows) == [f"recall@{k}, {r}" for k in KS for r in RETRIEVERS]
    # the passport is said only past the last session's first window: read whole, that
    # session is among the three closest by meaning; read first-window-only, it is notes on budgets
    whole, first, _ = rows["recall@3, plain cosine"]
    assert float(whole) == float(first) + 0.5, "the passport question's evidence found (one question of two)"
    # keyword search reads every word either way: the same figures in both stores
    assert rows["recall@5, keyword"][0] == rows["recall@5, keyword"][1] == "1.0000"
    assert "| ingest (s, embedding included) |" in text
    assert "Semantic search against the plain cosine, the store (read whole, in windows):" in text
    # the best window's weight: every weight tried (0, the store's and --weights' default)
    weights = [line.split(" | ")[0].lstrip("| ") for line in text.split("## The best window's weight")[1].splitlines()]
    assert [w for w in weights if w[:1].isdigit()] == ["0", "0.25", "0.5", "0.75", "1"]
    assert text.rstrip().endswith("Folds need two conversations or more: the weight is not chosen here.")


def test_the_check_names_where_semantic_search_falls_below_the_plain_cosine() -> None:
    from bench.locomo import Dataset

    measured = Measured("a store")
    for k in KS:
        measured.recall["semantic", k] = {"c1": [0.5], "c2": [1.0]}
        measured.recall["plain cosine", k] = {"c1": [0.5], "c2": [0.75 if k < 10 else 1.0]}
    data = Dataset(["c1", "c2"], [], [])
    assert semantic_check(data, measured).endswith("at least as high on every conversation.")
    measured.recall["semantic", 10] = {"c1": [0.5], "c2": [0.5]}
    assert semantic_check(data, measured).endswith("below it on c2 at @10 (0.5000 against 1.0000).")


def test_each_conversation_s_weight_is_picked_on_the_others() -> None:
    """The fold rule: a conversation's weight is the one the other conversations' questions
    prefer (semantic plus hybrid recall@5, a tie to the smaller), and it is measured on the
    conversation's own questions at that weight."""

    def at(semantic: dict[str, list[float]], hybrid: dict[str, list[float]]) -> Measured:
        measured = Measured("a store")
        measured.recall["semantic", 5] = semantic
        measured.recall["hybrid", 5] = hybrid
        return measured

    by_weight = {
        0.0: at({"a": [0.5], "b": [0.5], "c": [0.5, 0.5]}, {"a": [0.5], "b": [0.5], "c": [0.5, 0.5]}),
        0.5: at({"a": [1.0], "b": [0.0], "c": [0.75, 0.75]}, {"a": [0.5], "b": [0.5], "c": [0.5, 0.5]}),
        1.0: at({"a": [0.0], "b": [1.0], "c": [0.5, 0.5]}, {"a": [0.5], "b": [0.5], "c": [0.0, 1.0]}),
    }
    chosen = picks(["a", "b", "c"], by_weight)
    # a: b's and c's questions sum 1.1667 at 1 (against 1.0); b: a's and c's 1.3333 at 0.5;
    # c: a's and b's 1.0 at every weight, a tie to the smallest
    assert chosen == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert out_of_fold(by_weight, chosen, "semantic", 5) == pytest.approx((0.0 + 0.0 + 0.5 + 0.5) / 4)
