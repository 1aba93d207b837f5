"""Memory events: what every write, search and recall reports.

Events are typed models delivered to any callable sink. A sink that raises never fails
the operation it reports: the error is logged and the operation's result stands.
Previews of user text are capped at :data:`PREVIEW_BYTES` bytes and marked when clipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_admin.records import UtcDatetime
from memory_admin.scope import AGENT_KEY, Scope, ScopeMatch

log = logging.getLogger(__name__)

PREVIEW_BYTES = 512
CLIP_MARK = "…"


def preview(text: str | None, limit: int = PREVIEW_BYTES) -> tuple[str | None, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes (marker included) and whether it was cut.

    The cut never splits a character.
    """
    if text is None:
        return None, False
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, False
    budget = limit - len(CLIP_MARK.encode("utf-8"))
    clipped = raw[:budget].decode("utf-8", errors="ignore")
    return clipped + CLIP_MARK, True


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: UtcDatetime
    scope: Scope
    agent: str | None = None


class MemoryWriteEvent(_Event):
    """One committed write batch, one event per distinct scope in it."""

    type: Literal["agent.memory.write"] = "agent.memory.write"
    count: int
    record_ids: list[str]
    kinds: dict[str, int]
    superseded_ids: list[str] = Field(default_factory=list)


class MemorySearchEvent(_Event):
    """One search (or listing) through the store."""

    type: Literal["agent.memory.search"] = "agent.memory.search"
    scope_match: ScopeMatch = "subset"
    query_preview: str | None = None
    query_clipped: bool = False
    count: int
    limit: int
    record_ids: list[str]
    duration_ms: float


class MemoryRecallEvent(_Event):
    """One assembled turn-1 recall block."""

    type: Literal["agent.memory.recall"] = "agent.memory.recall"
    query_preview: str | None = None
    query_clipped: bool = False
    count: int
    chars: int
    budget_chars: int
    truncated: bool
    deferred: int
    record_ids: list[str]
    deferred_ids: list[str] = Field(default_factory=list)
    tiers: dict[str, int] = Field(default_factory=dict)
    fallback: bool = False
    preview_run: bool = False


MemoryEvent = Annotated[
    MemoryWriteEvent | MemorySearchEvent | MemoryRecallEvent, Field(discriminator="type")
]
EventSink = Callable[[MemoryWriteEvent | MemorySearchEvent | MemoryRecallEvent], object]


def agent_of(scope: Scope) -> str | None:
    return scope.get(AGENT_KEY)


def deliver(sinks: Iterable[EventSink], event: MemoryWriteEvent | MemorySearchEvent | MemoryRecallEvent) -> None:
    """Hand ``event`` to every sink; a failing sink is logged, never raised."""
    for sink in sinks:
        try:
            sink(event)
        except Exception:  # a broken sink must not fail the operation it reports
            log.exception("memory event sink %r failed on %s", sink, event.type)
