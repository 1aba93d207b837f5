"""Promotion tiers: how far a learning reaches decides what it takes to promote it.

The table (seed 001, "Targets and promotion"), its one home:

========  ===============================================================  ====================================
tier      targets                                                          bar to promote
========  ===============================================================  ====================================
auto      ``background.*``, ``awareness``                                  written and reconciled; no approval
earned    ``judgment.heuristics``, ``example``                             recurrence or a passing eval gate
guarded   ``judgment.constraints``, ``judgment.escalation_triggers``,      a person's approval, never an agent's
          ``recovery``
locked    ``persona``, ``tone``, ``methodology``, ``mission``, a judgment  not promotable: authored only
          domain the composition lacks, ``manual`` (in this version)
========  ===============================================================  ====================================

The identity primitives have no target arm at all: no record can even point at them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never

from memory_admin.composition.model import AgentComposition
from memory_admin.records import (
    AwarenessTarget,
    BackgroundTarget,
    ExampleTarget,
    JudgmentTarget,
    ManualTarget,
    MemoryRecord,
    MemoryTarget,
    RecoveryTarget,
)


class Tier(StrEnum):
    AUTO = "auto"
    EARNED = "earned"
    GUARDED = "guarded"
    LOCKED = "locked"


TIERS: dict[str, Tier] = {
    "persona": Tier.LOCKED,
    "tone": Tier.LOCKED,
    "methodology": Tier.LOCKED,
    "mission": Tier.LOCKED,
    "background": Tier.AUTO,
    "awareness": Tier.AUTO,
    "judgment.heuristics": Tier.EARNED,
    "example": Tier.EARNED,
    "judgment.constraints": Tier.GUARDED,
    "judgment.escalation_triggers": Tier.GUARDED,
    "recovery": Tier.GUARDED,
    "manual": Tier.LOCKED,
}
"""Each slot's tier when its composition has what it points at (a judgment target's
domain). The key is ``primitive`` or ``primitive.slot``."""

STRUCTURED = ("example", "awareness")
"""The target arms whose learning is their payload: without it they cannot promote."""


def slot_of(target: MemoryTarget) -> str:
    """The key of ``target``'s slot in :data:`TIERS` (``judgment.constraints``, ``example`` …)."""
    return f"judgment.{target.slot}" if isinstance(target, JudgmentTarget) else target.primitive


def tier_of(target: MemoryTarget, composition: AgentComposition) -> Tier:
    """The promotion tier of ``target`` in ``composition``: the table's tier, except that a
    judgment or example target naming a domain the composition lacks is locked
    (memories never create domains)."""
    return Tier.LOCKED if missing_domain(target, composition) is not None else TIERS[slot_of(target)]


def refusal(target: MemoryTarget | None, composition: AgentComposition) -> str | None:
    """Why a record with ``target`` can never enter ``composition`` (a sentence that says
    what to do instead), or ``None`` when it can once promoted."""
    if target is None:
        return "the record has no target, so it informs recall only; write a targeted record to propose a learning"
    domain = missing_domain(target, composition)
    if domain is not None:
        return (
            f"composition {composition.name!r} has no judgment domain {domain!r}, and memories never create "
            "domains; add the domain to the composition file, or target an existing one"
        )
    if isinstance(target, ManualTarget):
        return "the manual is authored only in this version; write the workflow into the composition file"
    if isinstance(target, BackgroundTarget | AwarenessTarget | JudgmentTarget | ExampleTarget | RecoveryTarget):
        return None
    assert_never(target)


def fits(target: MemoryTarget | None, composition: AgentComposition) -> bool:
    """True when a promoted record with ``target`` can enter ``composition``."""
    return refusal(target, composition) is None


def payload_missing(record: MemoryRecord) -> str | None:
    """Why ``record`` cannot promote yet although its target fits: a structured arm
    (``example``, ``awareness``) whose learning is its payload, written without one.
    ``None`` when nothing is missing."""
    if record.target is None or record.target.primitive not in STRUCTURED or record.payload is not None:
        return None
    fields = (
        "scenario, good (bad, reasoning optional)"
        if record.target.primitive == "example"
        else ("name, description, access_method")
    )
    return (
        f"an {record.target.primitive} target promotes its payload ({fields}) and this record has none; "
        "supersede it with the payload set"
    )


def missing_domain(target: MemoryTarget, composition: AgentComposition) -> str | None:
    """The judgment domain ``target`` names that ``composition`` lacks, or ``None``."""
    if isinstance(target, JudgmentTarget):
        domain = target.domain
    elif isinstance(target, ExampleTarget):
        domain = target.judgment_domain
    else:
        return None
    return None if composition.judgment(domain) is not None else domain
