"""The authored composition: the configuration a person writes for an agent.

An :class:`AgentComposition` is what the agent *is* before it learns anything: its
identity (persona, tone, methodology, mission — authored only, never learned), the
background it works against, its judgment per domain, the sources it knows of, how it
recovers, its manual, and the character budgets that keep learning from crowding the
prompt. Its names follow the record targets of :mod:`memory_admin.records` exactly
(``team_context``, ``escalation_triggers``, ``judgment_domain`` …), so a target points
into a composition without translation.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from memory_admin.records import AwarenessPayload, ExamplePayload, TargetName, normalize_content
from memory_admin.scope import has_control_chars

Primitive = Literal[
    "persona", "tone", "methodology", "mission", "background", "judgment", "example", "awareness", "recovery", "manual"
]
IDENTITY: tuple[Primitive, ...] = ("persona", "tone", "methodology", "mission")
"""The authored-only primitives: no target can point at them."""
LEARNABLE: tuple[Primitive, ...] = ("background", "judgment", "example", "awareness", "recovery", "manual")
"""The primitives a target names (a record's ``target.primitive``), each with a budget."""
PRIMITIVES: tuple[Primitive, ...] = IDENTITY + LEARNABLE
"""Every primitive, in the order a composition is rendered."""

BackgroundSection = Literal["team_context", "project_context", "conventions", "current_state"]
BACKGROUND_SECTIONS: tuple[BackgroundSection, ...] = ("team_context", "project_context", "conventions", "current_state")
JudgmentSlot = Literal["heuristics", "constraints", "escalation_triggers"]
JUDGMENT_SLOTS: tuple[JudgmentSlot, ...] = ("heuristics", "constraints", "escalation_triggers")

MAX_BUDGET_CHARS = 1_000_000


def _name(value: str) -> str:
    if value != value.strip() or has_control_chars(value):
        raise ValueError("a name has no leading or trailing spaces and no control characters")
    return value


Name = Annotated[TargetName, AfterValidator(_name)]
"""A background key, judgment domain or capability: the type a target's name has, matched
exactly (no case folding), without surrounding spaces."""
Text = Annotated[str, AfterValidator(normalize_content)]
"""Prompt text: trimmed, not blank, no control characters but newline and tab."""
Chars = Annotated[int, Field(strict=True, ge=0, le=MAX_BUDGET_CHARS)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Example = ExamplePayload
"""A worked example on a judgment (``scenario``, ``good``, ``bad?``, ``reasoning?``): the
shape an ``example`` target's payload has."""
AwarenessDomain = AwarenessPayload
"""A source the agent knows of (``name``, ``description``, ``access_method``): the shape
an ``awareness`` target's payload has."""


class Background(_Model):
    """What the agent works against, by section, each ``key → text``. A learned entry
    lands under its target's section and key; an authored key is never replaced."""

    team_context: dict[Name, Text] = Field(default_factory=dict)
    project_context: dict[Name, Text] = Field(default_factory=dict)
    conventions: dict[Name, Text] = Field(default_factory=dict)
    current_state: dict[Name, Text] = Field(default_factory=dict)

    def section(self, name: BackgroundSection) -> dict[str, str]:
        return dict(getattr(self, name))


class Judgment(_Model):
    """How the agent decides within one domain. Learnings append to an existing domain's
    lists; they never create a domain."""

    domain: Name
    heuristics: tuple[Text, ...] = ()
    constraints: tuple[Text, ...] = ()
    escalation_triggers: tuple[Text, ...] = ()
    examples: tuple[Example, ...] = ()

    def slot(self, name: JudgmentSlot) -> tuple[str, ...]:
        values: tuple[str, ...] = getattr(self, name)
        return values


class ManualCapability(_Model):
    """What the agent's manual says about one capability."""

    workflows: tuple[Text, ...] = ()


class Budgets(_Model):
    """Characters each learnable primitive may take in the composed prompt (authored and
    learned entries together; headings and line breaks are not counted), and the ceiling
    for the whole composition, identity included. A learned entry that would pass either
    is spilled: it stays in the recall tier instead."""

    background: Chars = 2_000
    judgment: Chars = 3_000
    example: Chars = 3_000
    awareness: Chars = 1_000
    recovery: Chars = 1_000
    manual: Chars = 2_000
    ceiling: Chars = 16_000

    def of(self, primitive: Primitive) -> int | None:
        """The budget of ``primitive`` (``None`` for the identity, which has none)."""
        return None if primitive in IDENTITY else int(getattr(self, primitive))


class AgentComposition(_Model):
    """The authored configuration of an agent. Frozen; ``version`` is a content hash, so
    two compositions with the same content (in the same order) share it.

    Learned records never change this object: :func:`~memory_admin.composition.apply_memory_overlay`
    derives a composed copy from it and the promoted records.
    """

    name: Name
    persona: Text | None = None
    tone: Text | None = None
    methodology: Text | None = None
    mission: Text | None = None
    background: Background = Field(default_factory=Background)
    judgments: tuple[Judgment, ...] = ()
    awareness: tuple[AwarenessDomain, ...] = ()
    recovery: tuple[Text, ...] = ()
    manual: dict[Name, ManualCapability] = Field(default_factory=dict)
    budgets: Budgets = Field(default_factory=Budgets)

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        _refuse_repeats("judgments", [j.domain for j in self.judgments], "domain")
        _refuse_repeats("awareness", [a.name for a in self.awareness], "name")
        return self

    def judgment(self, domain: str) -> Judgment | None:
        """The judgment of ``domain`` (exact name), or ``None``."""
        return self._domains.get(domain)

    @cached_property
    def _domains(self) -> dict[str, Judgment]:
        return {judgment.domain: judgment for judgment in self.judgments}

    @cached_property
    def version(self) -> str:
        """A hex SHA-256 of the content (field order and the order of entries count:
        they are the prompt's order). Stable across processes and releases of this code
        as long as the content is the same."""
        body = json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _refuse_repeats(field: str, names: list[str], what: str) -> None:
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in seen:
            raise ValueError(f"{field}.{index}.{what} {name!r} repeats {field}.{seen[name]}.{what}")
        seen[name] = index
