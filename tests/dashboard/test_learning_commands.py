"""memory_compose, memory_promote, memory_learnings, memory_review and memory_garden over a
SQLite memory file, as an operator runs them (the installed `memory-admin` runs the same code)."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memory_admin.dashboard.stores import reset_stores
from memory_admin.store import SqliteMemoryStore
from tests.support.compositions import EXAMPLE_FILE, background, judgment

DANA = {"tenant": "acme", "user": "dana"}
SCOPE = "tenant=acme,user=dana"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.sqlite3'}"


@pytest.fixture
def learnings(url: str) -> dict[str, str]:
    """A memory file with a learning of each kind of fate."""
    with SqliteMemoryStore(url.removeprefix("sqlite:///")) as store:
        rows = store.write(
            [
                {
                    "scope": DANA,
                    "kind": "fact",
                    "content": "Deploys need a second reviewer.",
                    "provenance": {"conversation_id": "c1"},
                    "target": background("conventions", "reviews"),
                },
                {
                    "scope": DANA,
                    "kind": "episode",
                    "content": "Never share another customer's ticket.",
                    "provenance": {"conversation_id": "c1"},
                    "target": judgment("triage", "constraints"),
                },
                {
                    "scope": DANA,
                    "kind": "episode",
                    "content": "Ask for the workspace id first.",
                    "provenance": {"conversation_id": "c1"},
                    "target": judgment("triage"),
                },
            ]
        )
    yield {"convention": rows[0].id, "constraint": rows[1].id, "heuristic": rows[2].id}
    reset_stores()


def test_promote_then_compose_traces_every_learned_line(url: str, learnings: dict[str, str]) -> None:
    dry = run("memory_promote", "--store", url, "--scope", SCOPE, "--composition", str(EXAMPLE_FILE), "--dry-run")
    assert "dry run" in dry and f"{learnings['convention']} [auto] promoted" in dry
    assert f"{learnings['heuristic']} [earned] held" in dry and "recurrence no" in dry
    before = run("memory_compose", "--store", url, "--scope", SCOPE, "--composition", str(EXAMPLE_FILE))
    assert "second reviewer" not in before, "a dry run applied nothing"
    report = run("memory_promote", "--store", url, "--scope", SCOPE, "--composition", str(EXAMPLE_FILE))
    assert f"{learnings['constraint']} [guarded] pending_review" in report
    prompt = run("memory_compose", "--store", url, "--scope", SCOPE)  # the composition promote registered
    lines = prompt.splitlines()
    learned = lines.index("- Deploys need a second reviewer.")
    assert lines[learned + 1] == f"    ↳ memory {learnings['convention']}"
    assert "## Persona" in prompt and "1 learning applied" in prompt
    bare = run("memory_compose", "--store", url, "--scope", SCOPE, "--no-attribution")
    assert "↳" not in bare and "- Deploys need a second reviewer." in bare


def test_review_as_a_person_and_replay_the_past(url: str, learnings: dict[str, str]) -> None:
    run("memory_promote", "--store", url, "--scope", SCOPE, "--composition", str(EXAMPLE_FILE))
    with pytest.raises(CommandError, match="needs --reason"):
        run("memory_review", "reject", learnings["constraint"], "--store", url)
    approved = run("memory_review", "approve", learnings["constraint"], "--store", url, "--actor", "lena")
    assert "is promoted now" in approved and "by lena" in approved
    with pytest.raises(CommandError, match="moved"):
        run("memory_review", "rollback", learnings["constraint"], "--store", url, "--reason", "x", "--revision", "1")
    composed = run("memory_compose", "--store", url, "--scope", SCOPE)
    assert "Never share another customer's ticket." in composed
    rolled = run("memory_review", "rollback", learnings["constraint"], "--store", url, "--reason", "too broad")
    assert "is demoted now" in rolled
    learnt = run("memory_learnings", "--store", url, "--scope", "tenant=acme", "--since", "1d")
    assert "demoted (rollback)" in learnt and "why: too broad" in learnt and "promoted" in learnt
    assert "Never share another customer's ticket." in learnt and "from: c1" in learnt
    with pytest.raises(CommandError, match="No memory record"):
        run("memory_review", "approve", "mem_00000000000000000000000000", "--store", url)


def test_garden_proposes_and_a_person_accepts(url: str, learnings: dict[str, str]) -> None:
    with SqliteMemoryStore(url.removeprefix("sqlite:///")) as store:
        [twin] = store.write(
            [
                {
                    "scope": DANA,
                    "kind": "episode",
                    "content": "Ask for the workspace id first!",
                    "provenance": {"conversation_id": "c2"},
                    "target": judgment("triage"),
                }
            ]
        )
    out = run("memory_garden", "--store", url, "--scope", SCOPE, "--composition", str(EXAMPLE_FILE))
    proposal = re.search(rf"#(\d+) merge {twin.id} into {learnings['heuristic']}", out)
    assert proposal is not None and "Size per primitive" in out
    with pytest.raises(CommandError, match="needs --reason"):
        run("memory_garden", "--store", url, "--reject", proposal.group(1))
    accepted = run("memory_garden", "--store", url, "--accept", proposal.group(1), "--actor", "lena")
    assert "accepted: merge" in accepted
    with SqliteMemoryStore(url.removeprefix("sqlite:///")) as store:
        assert store.get(twin.id).invalid_at is not None  # type: ignore[union-attr]


def test_bad_input_is_a_clear_error_and_changes_nothing(url: str, learnings: dict[str, str], tmp_path: Path) -> None:
    broken = tmp_path / "agent.toml"
    broken.write_text('name = "support"\npersona = "one"\n[[judgments]\ndomain = "triage"\n')
    with pytest.raises(CommandError, match=r"agent\.toml.*line 3"):
        run("memory_promote", "--store", url, "--scope", SCOPE, "--composition", str(broken))
    with pytest.raises(CommandError, match="No composition is registered"):
        run("memory_compose", "--store", url, "--scope", SCOPE)
    with pytest.raises(CommandError, match="not a time"):
        run("memory_compose", "--store", url, "--scope", SCOPE, "--composition", str(EXAMPLE_FILE), "--as-of", "soon")
    with pytest.raises(CommandError, match="tenant"):
        run("memory_promote", "--store", url, "--scope", "user=dana", "--composition", str(EXAMPLE_FILE))
    with SqliteMemoryStore(url.removeprefix("sqlite:///")) as store:
        assert {store.promotion(i).state for i in learnings.values()} == {"candidate"}  # type: ignore[union-attr]
