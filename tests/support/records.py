"""The scopes and write inputs the tests of what is built on the store share (recall, the
toolbox, retention): Dana and Bob of tenant acme."""

from __future__ import annotations

from typing import Any

DANA = {"tenant": "acme", "user": "dana"}
BOB = {"tenant": "acme", "user": "bob"}
ACME = {"tenant": "acme"}
PROV = {"source": "test"}


def rec(content: str, scope: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """A write input: a fact of ``scope`` (Dana's by default), ``fields`` on top."""
    return {"scope": scope or DANA, "kind": "fact", "content": content, "provenance": PROV, **fields}
