"""The runnable example: a scripted host loop whose second conversation remembers the first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memory_admin.store import SqliteMemoryStore

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "agent_loop.py"


def run_example(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )


def test_the_example_runs_on_a_throwaway_store() -> None:
    done = run_example()
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "recall block: (empty: nothing remembered yet)" in out
    conversation_2 = out.split("=== Conversation 2")[1]
    assert "<memory>" in conversation_2 and "Dana prefers an aisle seat" in conversation_2
    assert "window seat." not in conversation_2, "the superseded preference is not recalled"
    assert "with an aisle seat" in conversation_2
    assert '"code":"invalid_arguments"' in out, "the model's attempt to pass a scope was refused"
    assert "The second conversation remembered the corrected seat." in out


def test_the_example_leaves_a_traceable_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    done = run_example("--store", f"sqlite:///{path}", "--scope", "tenant=acme,user=dana", "--agent", "travel")
    assert done.returncode == 0, done.stderr
    with SqliteMemoryStore(path) as store:
        hits = store.search({"scope": {"tenant": "acme", "user": "dana"}, "include_invalidated": True, "limit": 10})
        records = {hit.record.content: hit.record for hit in hits}
        assert set(records) == {
            "The user is Dana Reyes.",
            "Dana prefers a window seat.",
            "Dana takes espresso, no milk.",
            "Dana prefers an aisle seat (easier on her knee).",
        }
        window, aisle = (
            records["Dana prefers a window seat."],
            records["Dana prefers an aisle seat (easier on her knee)."],
        )
        assert window.superseded_by == aisle.id and aisle.supersedes == window.id
        assert {r.provenance.conversation_id for r in records.values()} == {"conv-1"}
        assert {r.provenance.author for r in records.values()} == {"travel"}
        recalls = store.query_events({"types": ["agent.memory.recall"]})
        assert [stored.event.count for stored in recalls] == [2, 0]  # newest first
