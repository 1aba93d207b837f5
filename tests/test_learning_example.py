"""The runnable learning example: a learning goes candidate -> promoted -> demoted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memory_admin.store import SqliteMemoryStore

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "learning_agent.py"


def run_example(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )


def test_the_learning_goes_candidate_promoted_demoted(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    done = run_example("--store", f"sqlite:///{path}")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    first, second, third, fourth = out.split("=== Conversation")[1:]
    assert "held: earned tier not met yet: seen in 1 of the 2" in first
    assert "'corroborate'" in second and "promoted: earned tier: passed recurrence" in second
    assert "1 learned line(s)" in third and "<- memory mem_" in third and "quotes the lesson: False" in third
    assert "0 learned line(s)" in fourth and "('demoted', 'invalidated')" in fourth
    assert out.rstrip().endswith("The learning went from candidate to promoted to demoted.")
    with SqliteMemoryStore(path) as store:
        [transition] = store.transitions({"tenant": "acme"}, states=["demoted"]).transitions
        assert [t.state for t in store.promotion_history(transition.record_id)] == [
            "candidate",
            "held",
            "promoted",
            "demoted",
        ]
        assert store.get(transition.record_id) is not None, "demoted, never deleted"
