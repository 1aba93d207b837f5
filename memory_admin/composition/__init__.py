"""Learnings: the authored composition of an agent, promotion tiers, and the overlay that
folds promoted memories into it — pure functions over models, no store I/O.

A targeted memory record is a *candidate*; once the store promotes it, :func:`apply_memory_overlay`
folds it into the authored :class:`AgentComposition` (authored always wins, per-primitive
budgets, a content-hashed version), :func:`render_prompt` lays the result out as the prompt
with every line's source, and :func:`lint_composition` reports on its health.
"""

from __future__ import annotations

from memory_admin.composition.lint import (
    CeilingFinding,
    ConflictFinding,
    LintReport,
    NeverRecalled,
    SizeFinding,
    StaleFinding,
    lint_composition,
)
from memory_admin.composition.loading import load_composition, parse_composition
from memory_admin.composition.model import (
    BACKGROUND_SECTIONS,
    IDENTITY,
    JUDGMENT_SLOTS,
    LEARNABLE,
    PRIMITIVES,
    AgentComposition,
    AwarenessDomain,
    Background,
    Budgets,
    Example,
    Judgment,
    ManualCapability,
    Primitive,
)
from memory_admin.composition.overlay import (
    Dropped,
    Overlay,
    OverlayEntry,
    PrimitiveSize,
    Spilled,
    apply_memory_overlay,
    section_of,
    sections_of,
    target_section,
)
from memory_admin.composition.render import PromptDiff, PromptLine, RenderedPrompt, SectionChange, diff, render_prompt
from memory_admin.composition.tiers import TIERS, Tier, fits, payload_missing, refusal, slot_of, tier_of
from memory_admin.errors import CompositionError

__all__ = [
    "BACKGROUND_SECTIONS",
    "IDENTITY",
    "JUDGMENT_SLOTS",
    "LEARNABLE",
    "PRIMITIVES",
    "TIERS",
    "AgentComposition",
    "AwarenessDomain",
    "Background",
    "Budgets",
    "CeilingFinding",
    "CompositionError",
    "ConflictFinding",
    "Dropped",
    "Example",
    "Judgment",
    "LintReport",
    "ManualCapability",
    "NeverRecalled",
    "Overlay",
    "OverlayEntry",
    "Primitive",
    "PrimitiveSize",
    "PromptDiff",
    "PromptLine",
    "RenderedPrompt",
    "SectionChange",
    "SizeFinding",
    "Spilled",
    "StaleFinding",
    "Tier",
    "apply_memory_overlay",
    "diff",
    "fits",
    "lint_composition",
    "load_composition",
    "parse_composition",
    "payload_missing",
    "refusal",
    "render_prompt",
    "section_of",
    "sections_of",
    "slot_of",
    "target_section",
    "tier_of",
]
