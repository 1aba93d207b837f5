"""Learnings that act: the gate chain that promotes candidates into their agent's
composition, composing an agent from its authored composition and its promoted learnings,
a person's review decisions, and the gardening pass that proposes curation.

The pure layer (the composition, tiers, the overlay, the rendered prompt, lint) is
:mod:`memory_admin.composition`; the promotion state lives in the store
(:class:`~memory_admin.store.protocol.PromotionMemoryStore`). This package joins them.
"""

from __future__ import annotations

from memory_admin.learning.compose import Composed, acompose, compose, overlay_event
from memory_admin.learning.garden import GardenReport, garden, recall_counts
from memory_admin.learning.gates import (
    DEFAULT_RECURRENCE,
    CandidateOutcome,
    EvalGate,
    GateResult,
    PromotionPolicy,
    PromotionReport,
    conversations,
    promote_candidates,
    reconcile,
)
from memory_admin.learning.review import approve, edit_and_approve, pick_survivor, reject, rollback

__all__ = [
    "DEFAULT_RECURRENCE",
    "CandidateOutcome",
    "Composed",
    "EvalGate",
    "GardenReport",
    "GateResult",
    "PromotionPolicy",
    "PromotionReport",
    "acompose",
    "approve",
    "compose",
    "conversations",
    "edit_and_approve",
    "garden",
    "overlay_event",
    "pick_survivor",
    "promote_candidates",
    "recall_counts",
    "reconcile",
    "reject",
    "rollback",
]
