"""The concurrency benchmark command, tiny: it prints its tables, never asserts timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.concurrency import main, mean_interval


def test_sqlite_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "concurrency.md"
    args = ["--records", "300", "--processes", "1,2", "--seconds", "0.3", "--rounds", "1", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "### SQLite (one file)" in printed and "1-minute load average during the run: mean " in printed
    for processes in (1, 2):
        for mode in ("on", "off"):
            assert f"| {processes} | {mode} | " in printed
    assert "| 1 | " in printed.split("searches/s on/off")[1]
    assert "1 process: search throughput ≥ 0.95× events-off (measured " in printed
    assert "round pairs: mean (95 % interval)" in printed and "95 % interval " in printed
    assert out.read_text().startswith("# Concurrency benchmark\n\n```\npython -m bench.concurrency --records 300")


def test_mean_interval_brackets_the_mean_of_the_round_pairs() -> None:
    assert mean_interval([0.9]) == (0.9, 0.9, 0.9)
    assert mean_interval([1.0, 1.0, 1.0]) == (1.0, 1.0, 1.0)
    ratios = [0.88, 0.91, 0.93, 0.95, 0.97, 0.99, 1.02, 0.9, 0.94, 0.96]
    mean, low, high = mean_interval(ratios)
    assert mean == pytest.approx(sum(ratios) / len(ratios))
    assert min(ratios) < low < mean < high < max(ratios)
    # four times the rounds with the same spread: about half the width
    _, long_low, long_high = mean_interval(ratios * 4)
    assert 0.35 < (long_high - long_low) / (high - low) < 0.65
    # the same rounds give the same interval
    assert mean_interval(ratios) == (mean, low, high)
