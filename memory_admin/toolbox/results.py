"""Tool answers: the envelope, the non-disclosing not-found, bounded result lists and
a record as the model sees it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from memory_admin.promotion import Transition
from memory_admin.records import (
    MemoryRecord,
)
from memory_admin.scope import Scope
from memory_admin.toolbox.tools import (
    NOT_FOUND_MESSAGE,
)

# --- results -------------------------------------------------------------------------


def dumps(result: Mapping[str, Any]) -> str:
    """A tool answer as compact JSON: the form the character cap is measured on."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def tool_error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, **extra}}


def not_found() -> dict[str, Any]:
    """The one answer for every id the agent may not see: it never echoes the id."""
    return tool_error("not_found", NOT_FOUND_MESSAGE)


def _fits(result: Mapping[str, Any], cap: int) -> bool:
    return len(dumps(result)) <= cap


def _clip_item(item: dict[str, Any], envelope: Callable[[dict[str, Any]], dict[str, Any]], cap: int) -> dict[str, Any]:
    """``item`` with its content (and if need be its bulky fields) cut to fit ``cap``."""
    content = str(item.get("content", ""))
    for dropped in ((), ("payload",), ("payload", "tags", "target")):
        base = {k: v for k, v in item.items() if k not in dropped}
        base["clipped"] = True
        if dropped:
            base["omitted_fields"] = list(dropped)
        if not _fits(envelope({**base, "content": "…"}), cap):
            continue
        low, high = 0, len(content)  # the longest prefix that fits
        while low < high:
            middle = (low + high + 1) // 2
            if _fits(envelope({**base, "content": content[:middle] + "…"}), cap):
                low = middle
            else:
                high = middle - 1
        return {**base, "content": content[:low] + "…"}
    return {"id": item.get("id"), "clipped": True, "omitted_fields": sorted(set(item) - {"id"})}


def bounded_results(items: list[dict[str, Any]], cap: int) -> dict[str, Any]:
    """``{"ok", "results", "count", "truncated", "omitted"}`` no longer than ``cap``.

    Items are kept in order while they fit; the first that does not ends the list (a
    result never skips a better match to show a worse one). A single item too long on
    its own is shown clipped.
    """

    def envelope(kept: list[dict[str, Any]]) -> dict[str, Any]:
        # measured with the longest flag value and the largest count these can take,
        # so the final answer is never longer than what was measured
        return {"ok": True, "results": kept, "count": len(kept), "truncated": False, "omitted": len(items)}

    kept: list[dict[str, Any]] = []
    for item in items:
        if _fits(envelope([*kept, item]), cap):
            kept.append(item)
            continue
        if not kept:
            kept.append(_clip_item(item, lambda it: envelope([it]), cap))
        break
    clipped = any(item.get("clipped") for item in kept)
    omitted = len(items) - len(kept)
    return {"ok": True, "results": kept, "count": len(kept), "truncated": bool(omitted) or clipped, "omitted": omitted}


def project(record: MemoryRecord, bound: Scope, *, full: bool = False) -> dict[str, Any]:
    """What the agent sees of a record. Scope values stay with the host; ``shared`` says
    whether the record lives above this conversation's scope (readable, not writable)."""
    item: dict[str, Any] = {
        "id": record.id,
        "kind": record.kind,
        "content": record.content,
        "saved_at": record.created_at.isoformat(),
        "shared": record.scope != bound,
    }
    if record.observed_at != record.created_at:
        item["stated_at"] = record.observed_at.isoformat()  # imported from an earlier conversation
    if record.key is not None:
        item["key"] = record.key
    if record.tags:
        item["tags"] = list(record.tags)
    if record.target is not None:
        item["target"] = record.target.model_dump(mode="json")
    if full:
        if record.payload is not None:
            item["payload"] = record.payload
        if record.supersedes is not None:
            item["supersedes"] = record.supersedes
        if record.expires_at is not None:
            item["expires_at"] = record.expires_at.isoformat()
        item["provenance"] = record.provenance.model_dump(mode="json", exclude_none=True)
    return item


LEARNING_WORDS = {
    "promoted": "promoted into your configuration",
    "demoted": "demoted out of your configuration",
    "pending_review": "waiting for a person's review",
    "rejected": "rejected",
}


def learning_item(transition: Transition, record: MemoryRecord | None, bound: Scope) -> dict[str, Any]:
    """One learning as the agent sees it: what changed, when and why, and the memory with
    where it came from (``None`` once the memory is forgotten)."""
    item: dict[str, Any] = {
        "id": transition.record_id,
        "change": transition.state,
        "meaning": LEARNING_WORDS.get(transition.state, transition.state),
        "at": transition.at.isoformat(),
        "by": "a person"
        if transition.by == "person"
        else "the promotion gates"
        if transition.by == "gate"
        else "memory",
    }
    if transition.reason:
        item["reason"] = transition.reason
    if transition.cause:
        item["cause"] = transition.cause
    if record is None:
        item["forgotten"] = True
        return item
    item["content"] = record.content
    if record.target is not None:
        item["target"] = record.target.model_dump(mode="json")
    item["provenance"] = record.provenance.model_dump(mode="json", exclude_none=True)
    if record.supports:
        item["seen_in"] = len({p.conversation_id or p.run_id for p in (record.provenance, *record.supports)} - {None})
    item["shared"] = record.scope != bound
    return item
