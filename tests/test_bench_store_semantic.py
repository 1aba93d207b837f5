"""The store benchmark with the embedder, run at a tiny size: it prints its report (with
the real default model), never asserts timings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.store_semantic import main
from tests.support.locomo import conversation, write_dataset


def test_report_at_a_tiny_size(tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: object) -> None:
    """(``embedder``: skipped where the semantic extra is missing.)"""
    dana = conversation("c0", [("Dana works on the payments team.", "D1:1")], [])
    texts = write_dataset(tmp_path / "locomo.json", dana)
    out = tmp_path / "store-semantic.md"
    args = ["--sizes", "600", "--queries", "20", "--ingest", "30", "--dir", str(tmp_path), "--out", str(out)]
    assert main([*args, "--texts", str(texts)]) == 0
    printed = capsys.readouterr().out
    for row in ("user-scoped hybrid p50 / p99 (ms)", "tenant-wide hybrid p50 / p99 (ms)", "bytes per record"):
        assert f"| {row}" in printed
    observations = (
        "| ingest with embedding, LoCoMo observations of 32 characters (records/s, median of 3 runs (range)) |"
    )
    assert observations in printed
    # each of the three runs is its own, into a fresh file: a median and a range of three rates
    cell = printed.split(observations)[1].split("|")[0].strip()
    assert re.fullmatch(r"\d+ \(\d+–\d+\)", cell), cell
    low, high = map(int, re.findall(r"\d+", cell)[1:])
    assert low <= int(cell.split()[0]) <= high
    assert "| records with a vector | 600 |" in printed, "every filled record has its vector"
    assert "first tenant-wide search of a tenant in a process" in printed
    assert out.read_text() == printed
