"""Write inputs for the tests of the acting layer."""

from __future__ import annotations

from typing import Any

ACME = {"tenant": "acme"}
DANA = {"tenant": "acme", "user": "dana"}
MEI = {"tenant": "acme", "user": "mei"}


def candidate(
    content: str,
    target: dict[str, str],
    *,
    scope: dict[str, str] | None = None,
    conversation: str = "c1",
    **fields: Any,
) -> dict[str, Any]:
    """A targeted write input, as an agent's memory_save makes one."""
    return {
        "scope": scope or DANA,
        "kind": "episode",
        "content": content,
        "provenance": {"source": "agent-toolbox", "conversation_id": conversation},
        "target": target,
        **fields,
    }
