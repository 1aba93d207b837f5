"""Composing an agent: its authored composition with the promoted learnings folded in.

:func:`compose` is what a host calls at each instantiate: one bounded, indexed read of the
records promoted and live for the scope (its own and those shared above it, never a
sibling's; the agent convention applied), :func:`~memory_admin.composition.apply_memory_overlay`
(through the store, which folds one composition and set of learnings once)
over them, the prompt with every line's source (:func:`~memory_admin.composition.render_prompt`),
and one ``agent.memory.overlay`` event. With ``as_of`` it is a replay: the composition the
scope had registered then and the records promoted and live then, and no event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from memory_admin.composition import AgentComposition, Overlay, RenderedPrompt
from memory_admin.errors import MemoryNotFoundError, MemoryValidationError
from memory_admin.events import MemoryOverlayEvent
from memory_admin.records import MemoryRecord, UtcDatetime, utc_now
from memory_admin.scope import Scope, canonical_scope, read_view
from memory_admin.store.protocol import EventLogStore, MemoryNeeds, PromotionMemoryStore, require_memory

CompositionLike = AgentComposition | str | None
"""A composition, a registered composition's version, or ``None``: the one registered
for the scope (at the replay's moment)."""


class Composed(BaseModel):
    """An agent's composition for one scope: the overlay and the prompt it renders."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: Scope
    agent: str | None
    as_of: UtcDatetime | None
    overlay: Overlay
    prompt: RenderedPrompt

    @property
    def version(self) -> str:
        return self.overlay.version


def overlay_event(composed: Composed, at: datetime, duration_ms: float) -> MemoryOverlayEvent:
    """The ``agent.memory.overlay`` event of one composition: ids and sizes, no content."""
    overlay = composed.overlay
    return MemoryOverlayEvent(
        at=at,
        scope=composed.scope,
        agent=composed.agent,
        composition_version=overlay.composition_version,
        version=overlay.version,
        record_ids=list(overlay.applied_ids),
        chars={primitive: size.chars for primitive, size in overlay.sizes.items()},
        budgets={primitive: size.budget for primitive, size in overlay.sizes.items() if size.budget is not None},
        dropped={d.record_id: d.reason for d in overlay.dropped},
        spilled=[s.record_id for s in overlay.spilled],
        duration_ms=duration_ms,
    )


def _resolve(
    store: PromotionMemoryStore, scope: Scope, composition: CompositionLike, as_of: datetime | None
) -> AgentComposition:
    if isinstance(composition, AgentComposition):
        return composition
    if isinstance(composition, str):
        found = store.composition(composition)
        if found is None:
            raise MemoryNotFoundError(composition, f"No composition {composition[:12]!r} is registered in this store.")
        return found
    if composition is not None:
        raise MemoryValidationError(
            "compose() takes an AgentComposition, a registered version, or None.",
            [{"loc": "composition", "msg": "expected an AgentComposition"}],
        )
    registered = store.registered_composition(scope, as_of=as_of)
    if registered is None:
        when = f" by {as_of.isoformat()}" if as_of is not None else ""
        raise MemoryNotFoundError(
            "composition",
            f"No composition was registered for this scope{when}; pass the composition (compose registers it).",
        )
    return registered


def compose(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    composition: CompositionLike = None,
    *,
    agent: str | None = None,
    as_of: datetime | None = None,
    register: bool = True,
    emit: bool = True,
    now: datetime | None = None,
) -> Composed:
    """``composition`` for ``scope`` (and ``agent``) with the learnings promoted for it.

    Now (no ``as_of``): registers ``composition`` for the scope unless it runs it already
    (``register=False`` skips that), reads the promoted, live records the scope sees,
    folds them in and emits ``agent.memory.overlay`` (stamped ``now``, by default when
    composing starts; ``emit=False`` — a person looking, not an agent being composed —
    emits nothing). With ``as_of``: a replay of that moment, the composition the scope
    registered then unless one is given; nothing is written and no event is emitted.
    Promoted records leave the scope's recall block
    (:func:`~memory_admin.recall.assemble_recall`): they are part of the agent now.
    """
    require_memory(store, MemoryNeeds(promotion=True))
    started, stamped = time.perf_counter(), now or utc_now()
    canonical = canonical_scope(scope)
    authored = _resolve(store, canonical, composition, as_of)
    if register and as_of is None:
        store.register_composition(authored, canonical)
    view = read_view(canonical, agent)
    promoted = store.promoted_records(view, agent=agent, as_of=as_of)
    composed = _composed(store, canonical, agent, as_of, authored, promoted)
    if emit and as_of is None and isinstance(store, EventLogStore):
        store.emit(overlay_event(composed, stamped, round((time.perf_counter() - started) * 1000, 3)))
    return composed


async def acompose(
    store: PromotionMemoryStore,
    scope: Mapping[str, str],
    composition: CompositionLike = None,
    *,
    agent: str | None = None,
    as_of: datetime | None = None,
    register: bool = True,
    emit: bool = True,
    now: datetime | None = None,
) -> Composed:
    """The async twin of :func:`compose`, through the store's async methods."""
    require_memory(store, MemoryNeeds(promotion=True))
    started, stamped = time.perf_counter(), now or utc_now()
    canonical = canonical_scope(scope)
    if isinstance(composition, AgentComposition):
        authored = composition
    else:
        authored = await asyncio.to_thread(_resolve, store, canonical, composition, as_of)
    if register and as_of is None:
        await store.aregister_composition(authored, canonical)
    view = read_view(canonical, agent)
    promoted = await store.apromoted_records(view, agent=agent, as_of=as_of)
    composed = _composed(store, canonical, agent, as_of, authored, promoted)
    if emit and as_of is None and isinstance(store, EventLogStore):
        event = overlay_event(composed, stamped, round((time.perf_counter() - started) * 1000, 3))
        await asyncio.to_thread(store.emit, event)  # the event log is a blocking write
    return composed


def _composed(
    store: PromotionMemoryStore,
    scope: Scope,
    agent: str | None,
    as_of: datetime | None,
    authored: AgentComposition,
    promoted: Sequence[MemoryRecord],
) -> Composed:
    overlay = store.overlay(authored, promoted)  # folded and rendered once per composition and set of learnings
    return Composed(scope=scope, agent=agent, as_of=as_of, overlay=overlay, prompt=store.prompt(overlay))


__all__ = ["Composed", "CompositionLike", "acompose", "compose", "overlay_event"]
