"""Compositions and promoted records for the tests of learnings: the example support
agent's composition file, and records built directly (their ids and times chosen by the
test, as the store would return them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_admin.composition import AgentComposition, load_composition
from memory_admin.records import MemoryRecord

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_FILE = ROOT / "examples" / "support_agent.toml"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def example_composition() -> AgentComposition:
    """The example support agent (``examples/support_agent.toml``): domains ``triage``
    and ``billing``, a capability ``refunds``, one entry in most sections."""
    return load_composition(EXAMPLE_FILE)


def background(section: str, key: str) -> dict[str, str]:
    return {"primitive": "background", "section": section, "key": key}


def judgment(domain: str, slot: str = "heuristics") -> dict[str, str]:
    return {"primitive": "judgment", "domain": domain, "slot": slot}


def example(domain: str) -> dict[str, str]:
    return {"primitive": "example", "judgment_domain": domain}


AWARENESS = {"primitive": "awareness"}
RECOVERY = {"primitive": "recovery"}


def learned(
    n: int,
    content: str,
    target: dict[str, str] | None,
    *,
    payload: dict[str, Any] | None = None,
    at: datetime | None = None,
    scope: dict[str, str] | None = None,
    **fields: Any,
) -> MemoryRecord:
    """A stored record ``mem_{n:04d}`` written ``n`` minutes after :data:`T0` (or ``at``)."""
    when = at or T0 + timedelta(minutes=n)
    return MemoryRecord(
        id=f"mem_{n:04d}",
        scope=scope or {"tenant": "acme"},
        kind="fact",
        content=content,
        provenance={"conversation_id": f"conv-{n}"},
        created_at=when,
        updated_at=when,
        observed_at=when,
        target=target,
        payload=payload,
        **fields,
    )
