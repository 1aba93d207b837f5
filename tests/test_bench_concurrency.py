"""The concurrency benchmark command, tiny: it prints its tables, never asserts timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_admin.bench.concurrency import main


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
    assert "1 process: search throughput ≥ 0.95× events-off" in printed
    assert out.read_text().startswith(
        "# Concurrency benchmark\n\n```\npython -m memory_admin.bench.concurrency --records 300"
    )
