"""The semantic benchmark command, on a small file shaped like LoCoMo, with the real model."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.embed import main, measure, observation_dates
from memory_admin.embed import OnnxEmbedder
from memory_admin.tuning import KEYWORD_WEIGHT
from tests.support.locomo import conversation, write_dataset


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-mini.json"
    facts_a = [
        ("Ann adopted a grey cat named Pixel.", "D1:1"),
        ("Ann is a nurse at the hospital in Leeds.", "D1:2"),
        ("Ann went hiking in the Lake District last weekend.", "D1:3"),
    ]
    facts_b = [("Bo plays the cello in an orchestra.", "D1:1"), ("Bo has a cat called Miso.", "D1:2")]
    qa_a = [
        {"question": "What pet does Ann have?", "evidence": ["D1:1"], "category": 4},
        {"question": "Where does Ann work?", "evidence": ["D1:2"], "category": 1},
        {"question": "When did Ann go hiking?", "evidence": ["D1:3"], "category": 2},
        {"question": "Would Ann enjoy the outdoors?", "evidence": ["D1:3"], "category": 3},
    ]
    qa_b = [{"question": "Which instrument does Bo play?", "evidence": ["D1:1"], "category": 4}]
    return write_dataset(path, conversation("conv-a", facts_a, qa_a), conversation("conv-b", facts_b, qa_b))


def test_dates_follow_the_observations(dataset: Path) -> None:
    assert observation_dates(dataset) == ["8 May 2023"] * 5


def test_measure_finds_by_meaning_without_leaking(embedder: OnnxEmbedder, dataset: Path) -> None:
    figures = measure(dataset, "default")
    assert figures["model_id"] == embedder.model_id
    assert figures["leaked"] == 0
    recall = figures["recall"]
    # "Where does Ann work?" shares only the name with its fact; the hybrid still finds it
    assert recall["dense"]["all"] == pytest.approx(1.0)
    assert recall[f"z-score w={KEYWORD_WEIGHT} (store keyword)"]["all"] == pytest.approx(1.0)
    assert set(figures["latency_ms"]) == {"keyword", "dense", "hybrid", "porter"}
    assert figures["docs_per_s"] > 0 and figures["load_s"] > 0


def test_the_command_writes_its_report(embedder: OnnxEmbedder, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "semantic.md"
    appendix = tmp_path / "why.md"
    appendix.write_text("## Why\n\nBecause.\n")
    assert main([str(dataset), "--out", str(out), "--appendix", str(appendix)]) == 0
    text = out.read_text()
    assert f"| z-score w={KEYWORD_WEIGHT} (store keyword) |" in text
    assert "Dev curve" in text and text.endswith("Because.\n")
