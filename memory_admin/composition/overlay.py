"""The overlay: an authored composition with the promoted learnings folded in.

:func:`apply_memory_overlay` is pure and deterministic — the same composition and the same
records (in any order) give the same :class:`Overlay`, to the byte. Its rules, their one
home:

- **Authored always wins.** A learned entry that collides with an authored one (the same
  background key; the same heuristic, constraint, trigger, recovery step or workflow;
  an example with the same scenario; an awareness domain with the same name — text
  compared without case and spacing) is dropped and reported.
- **Merge per primitive.** Background entries go under their section by key; heuristics,
  constraints, escalation triggers and examples append to the judgment of their domain;
  awareness domains and recovery steps append. Authored entries come first, then learned
  ones from the oldest.
- **Learned against learned: the older wins** (``created_at``, then ``id``); the newer is
  dropped and reported with the winner.
- **A record that does not fit** (no target, a locked target, a domain the composition
  lacks, a structured target without its payload) is dropped and reported as ``unfit``.
- **Budgets.** Each learnable primitive's characters (authored and learned entries,
  as rendered) stay within its budget and the whole composition within the ceiling:
  a learned entry that would pass either is *spilled* — it stays in the recall tier and
  is listed and marked, never silently dropped. Older records are placed first.

Every record given ends in exactly one of ``applied``, ``dropped`` and ``spilled``. The
overlay does not judge validity or expiry: the caller passes the records that are
promoted and valid at the moment it composes for (``as_of`` included).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory_admin.composition.model import (
    BACKGROUND_SECTIONS,
    IDENTITY,
    JUDGMENT_SLOTS,
    LEARNABLE,
    AgentComposition,
    AwarenessDomain,
    Background,
    Example,
    Judgment,
    ManualCapability,
    Primitive,
)
from memory_admin.composition.tiers import payload_missing, refusal
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
from memory_admin.scope import has_control_chars

Source = Literal["authored", "memory"]
DropReason = Literal["authored_collision", "learned_conflict", "unfit"]
SpillReason = Literal["budget", "ceiling"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OverlayEntry(_Model):
    """One entry of the composed composition as the prompt shows it."""

    section: str
    """Where it sits: ``persona``, ``background.conventions``, ``judgment.triage.heuristics``,
    ``judgment.triage.examples``, ``awareness``, ``recovery``, ``manual.deploy.workflows``."""
    primitive: Primitive
    text: str
    """The entry as rendered (a paragraph for the identity, a bullet otherwise)."""
    source: Source
    record_id: str | None = None
    """The promoted record behind a learned entry."""


class Dropped(_Model):
    """A promoted record the overlay left out, and why."""

    record_id: str
    reason: DropReason
    detail: str
    """A sentence for a person: what collided with what, or why the record does not fit."""
    section: str | None = None
    """The section it aimed at (``None`` for a record without a target)."""
    text: str | None = None
    """The entry it would have been (``None`` when unfit)."""
    winner_id: str | None = None
    """The older record that keeps the slot (a learned conflict)."""
    winner_text: str | None = None
    """The entry that keeps the slot: the authored one, or the older record's."""


class Spilled(_Model):
    """A promoted record over its primitive's budget or the ceiling: it stays in the
    recall tier, and the composed prompt marks that it is missing."""

    record_id: str
    section: str
    primitive: Primitive
    text: str
    chars: int
    reason: SpillReason


class PrimitiveSize(_Model):
    """Characters of one primitive in the composed prompt against its budget."""

    primitive: Primitive
    authored: int
    learned: int
    spilled: int
    """Characters of the learned entries left out for the budget or the ceiling."""
    budget: int | None
    """``None`` for the identity, which has no budget (it counts toward the ceiling)."""

    @property
    def chars(self) -> int:
        return self.authored + self.learned


class Overlay(_Model):
    """An authored composition with its promoted learnings folded in."""

    version: str
    """A hex SHA-256 over the authored composition's version and the applied records' ids
    and contents: two overlays with the same version render the same prompt."""
    composition_version: str
    """The authored composition's version."""
    composition: AgentComposition
    """The composed composition (authored entries and the applied learnings)."""
    entries: tuple[OverlayEntry, ...]
    """Every entry of the composed composition, in the prompt's order."""
    sizes: dict[Primitive, PrimitiveSize]
    """Each primitive's characters and budget, identity included."""
    ceiling: int
    applied: dict[str, tuple[str, ...]]
    """The applied record ids per section (in the prompt's order), oldest first."""
    dropped: tuple[Dropped, ...]
    spilled: tuple[Spilled, ...]
    records: tuple[MemoryRecord, ...]
    """The promoted records given (each id once), oldest first."""

    @property
    def chars(self) -> int:
        """The characters of every entry (headings and line breaks are not counted)."""
        return sum(size.chars for size in self.sizes.values())

    @property
    def applied_ids(self) -> tuple[str, ...]:
        """Every applied record id, oldest first."""
        applied = {entry.record_id for entry in self.entries if entry.record_id is not None}
        return tuple(record.id for record in self.records if record.id in applied)

    def record(self, record_id: str) -> MemoryRecord | None:
        """The promoted record ``record_id`` among those given, or ``None``."""
        return next((r for r in self.records if r.id == record_id), None)


# --- entries: one home for what a composition puts into the prompt --------------------


def fold(text: str) -> str:
    """Text as entries are compared: case-folded, runs of spaces as one."""
    return " ".join(text.casefold().split())


def bullet(text: str) -> str:
    """A list entry; the lines after the first are indented under it."""
    return "- " + text.replace("\n", "\n  ")


def example_text(example: Example) -> str:
    lines = [f"Scenario: {example.scenario}", f"Good: {example.good}"]
    if example.bad:
        lines.append(f"Bad: {example.bad}")
    if example.reasoning:
        lines.append(f"Why: {example.reasoning}")
    return bullet("\n".join(lines))


def awareness_text(domain: AwarenessDomain) -> str:
    return bullet(f"{domain.name}: {domain.description} (access: {domain.access_method})")


def judgment_section(domain: str, slot: str) -> str:
    return f"judgment.{domain}.{slot}"


def manual_section(capability: str) -> str:
    return f"manual.{capability}.workflows"


@dataclass(frozen=True, slots=True)
class _Item:
    """One entry before it is placed: where, what, and what it is compared by."""

    section: str
    primitive: Primitive
    identity: str
    text: str
    value: object  # what the composed composition holds: a string, an Example, an AwarenessDomain
    key: str | None = None  # a background entry's key


def _authored(composition: AgentComposition) -> list[_Item]:
    items: list[_Item] = []
    for name in IDENTITY:
        text = getattr(composition, name)
        if text is not None:
            items.append(_Item(name, name, name, text, text))
    for section in BACKGROUND_SECTIONS:
        for key, text in composition.background.section(section).items():
            items.append(_Item(f"background.{section}", "background", key, bullet(text), text, key))
    for judgment in composition.judgments:
        for slot in JUDGMENT_SLOTS:
            where = judgment_section(judgment.domain, slot)
            items.extend(_Item(where, "judgment", fold(t), bullet(t), t) for t in judgment.slot(slot))
        where = judgment_section(judgment.domain, "examples")
        items.extend(_Item(where, "example", fold(e.scenario), example_text(e), e) for e in judgment.examples)
    items.extend(_Item("awareness", "awareness", fold(a.name), awareness_text(a), a) for a in composition.awareness)
    items.extend(_Item("recovery", "recovery", fold(t), bullet(t), t) for t in composition.recovery)
    for capability, manual in composition.manual.items():
        where = manual_section(capability)
        items.extend(_Item(where, "manual", fold(t), bullet(t), t) for t in manual.workflows)
    return items


def _learned(record: MemoryRecord) -> _Item:
    """The entry a fitting record makes (its target fits and its payload is there)."""
    target = record.target
    content = record.content
    if isinstance(target, BackgroundTarget):
        section = f"background.{target.section}"
        return _Item(section, "background", target.key, bullet(content), content, target.key)
    if isinstance(target, JudgmentTarget):
        where = judgment_section(target.domain, target.slot)
        return _Item(where, "judgment", fold(content), bullet(content), content)
    if isinstance(target, ExampleTarget):
        example = Example.model_validate(record.payload)
        where = judgment_section(target.judgment_domain, "examples")
        return _Item(where, "example", fold(example.scenario), example_text(example), example)
    if isinstance(target, AwarenessTarget):
        domain = AwarenessDomain.model_validate(record.payload)
        return _Item("awareness", "awareness", fold(domain.name), awareness_text(domain), domain)
    if isinstance(target, RecoveryTarget):
        return _Item("recovery", "recovery", fold(content), bullet(content), content)
    raise AssertionError(f"a {record.target!r} target does not fit a composition")  # refusal() said it fits


def _unfit(record: MemoryRecord, composition: AgentComposition) -> str | None:
    why = refusal(record.target, composition) or payload_missing(record)
    if why is None and isinstance(record.target, BackgroundTarget):
        key = record.target.key
        if key != key.strip() or has_control_chars(key):
            why = f"the background key {key!r} has surrounding spaces or control characters; supersede with a clean key"
    return why


def section_of(record: MemoryRecord) -> str | None:
    """The section ``record``'s target aims at (:func:`target_section`)."""
    return target_section(record.target)


def target_section(target: MemoryTarget | None) -> str | None:
    """The section ``target`` aims at — ``background.conventions``,
    ``judgment.triage.heuristics``, ``judgment.triage.examples``, ``awareness``,
    ``recovery``, ``manual.refunds.workflows`` — whether or not a composition has it
    (``None`` without a target)."""
    if isinstance(target, BackgroundTarget):
        return f"background.{target.section}"
    if isinstance(target, JudgmentTarget):
        return judgment_section(target.domain, target.slot)
    if isinstance(target, ExampleTarget):
        return judgment_section(target.judgment_domain, "examples")
    if isinstance(target, ManualTarget):
        return manual_section(target.capability)
    if target is None:
        return None
    return target.primitive


def apply_memory_overlay(composition: AgentComposition, promoted: Sequence[MemoryRecord]) -> Overlay:
    """``composition`` with the ``promoted`` records folded in (the module's rules).

    Pure: reads nothing but its arguments, changes neither; the result does not depend on
    the order of ``promoted`` (a record given twice counts once)."""
    records = sorted({r.id: r for r in promoted}.values(), key=lambda r: (r.created_at, r.id))
    authored = _authored(composition)
    held = {(item.section, item.identity): item for item in authored}
    claimed: dict[tuple[str, str], tuple[MemoryRecord, _Item]] = {}  # a slot's older learning
    dropped: list[Dropped] = []
    contenders: list[tuple[MemoryRecord, _Item]] = []
    for record in records:
        why = _unfit(record, composition)
        if why is not None:
            dropped.append(Dropped(record_id=record.id, reason="unfit", detail=why, section=section_of(record)))
            continue
        item = _learned(record)
        slot = (item.section, item.identity)
        if slot in held:
            dropped.append(_dropped(record, item, held[slot]))
        elif slot in claimed:
            winner, kept = claimed[slot]
            dropped.append(_dropped(record, item, kept, winner))
        else:
            claimed[slot] = (record, item)
            contenders.append((record, item))

    budgets = composition.budgets
    used: dict[Primitive, int] = dict.fromkeys((*IDENTITY, *LEARNABLE), 0)
    for item in authored:
        used[item.primitive] += len(item.text)
    authored_chars = dict(used)
    total = sum(used.values())
    spilled: list[Spilled] = []
    admitted: dict[str, list[tuple[MemoryRecord, _Item]]] = {}
    applied_records: list[MemoryRecord] = []
    for record, item in contenders:
        chars = len(item.text)
        budget = budgets.of(item.primitive)
        reason: SpillReason | None = None
        if budget is not None and used[item.primitive] + chars > budget:
            reason = "budget"
        elif total + chars > budgets.ceiling:
            reason = "ceiling"
        if reason is not None:
            spilled.append(
                Spilled(
                    record_id=record.id,
                    section=item.section,
                    primitive=item.primitive,
                    text=item.text,
                    chars=chars,
                    reason=reason,
                )
            )
            continue
        used[item.primitive] += chars
        total += chars
        admitted.setdefault(item.section, []).append((record, item))
        applied_records.append(record)

    spilled_chars: dict[Primitive, int] = dict.fromkeys(used, 0)
    for spill in spilled:
        spilled_chars[spill.primitive] += spill.chars
    sizes = {
        primitive: PrimitiveSize(
            primitive=primitive,
            authored=authored_chars[primitive],
            learned=used[primitive] - authored_chars[primitive],
            spilled=spilled_chars[primitive],
            budget=budgets.of(primitive),
        )
        for primitive in used
    }
    entries = _entries(composition, authored, admitted)
    applied = {
        section: tuple(r.id for r, _ in admitted[section])
        for section, _ in sections_of(composition)
        if section in admitted
    }
    # every part is built from validated models by the rules above: validating the whole
    # again would cost more than composing it
    return Overlay.model_construct(
        version=_version(composition, applied_records),
        composition_version=composition.version,
        composition=_composed(composition, admitted),
        entries=entries,
        sizes=sizes,
        ceiling=budgets.ceiling,
        applied=applied,
        dropped=tuple(dropped),
        spilled=tuple(spilled),
        records=tuple(records),
    )


def _dropped(record: MemoryRecord, item: _Item, kept: _Item, winner: MemoryRecord | None = None) -> Dropped:
    """``record``'s entry loses its slot to ``kept``: the authored entry, or the entry of
    the older learning ``winner``."""
    what = f"key {item.identity!r}" if item.key is not None else "entry"
    if winner is None:
        reason: DropReason = "authored_collision"
        detail = (
            f"the authored {what} in {item.section} wins over this learning; author the change in the "
            "composition file, or give the learning another target"
        )
    else:
        reason = "learned_conflict"
        detail = (
            f"the older learning {winner.id} holds the {what} in {item.section}; supersede it with this "
            "learning's content, or invalidate one of the two"
        )
    return Dropped(
        record_id=record.id,
        reason=reason,
        detail=detail,
        section=item.section,
        text=item.text,
        winner_id=None if winner is None else winner.id,
        winner_text=kept.text,
    )


def _entries(
    composition: AgentComposition, authored: list[_Item], admitted: dict[str, list[tuple[MemoryRecord, _Item]]]
) -> tuple[OverlayEntry, ...]:
    """Each section's authored entries in their order, then its learned ones, oldest first."""
    by_section: dict[str, list[OverlayEntry]] = {}
    for item in authored:
        by_section.setdefault(item.section, []).append(
            OverlayEntry(section=item.section, primitive=item.primitive, text=item.text, source="authored")
        )
    for section, pairs in admitted.items():
        by_section.setdefault(section, []).extend(
            OverlayEntry(section=section, primitive=item.primitive, text=item.text, source="memory", record_id=r.id)
            for r, item in pairs
        )
    return tuple(entry for section, _ in sections_of(composition) for entry in by_section.get(section, []))


def sections_of(composition: AgentComposition) -> list[tuple[str, Primitive]]:
    """Every section ``composition`` has, empty ones included, in the prompt's order: the
    identity, background by section, each judgment domain's slots then its examples,
    awareness, recovery, each capability's workflows. A learned entry can only land in
    one of them (memories never create domains)."""
    sections: list[tuple[str, Primitive]] = [(name, name) for name in IDENTITY]
    sections += [(f"background.{section}", "background") for section in BACKGROUND_SECTIONS]
    for judgment in composition.judgments:
        sections += [(judgment_section(judgment.domain, slot), "judgment") for slot in JUDGMENT_SLOTS]
        sections.append((judgment_section(judgment.domain, "examples"), "example"))
    sections += [("awareness", "awareness"), ("recovery", "recovery")]
    sections += [(manual_section(capability), "manual") for capability in composition.manual]
    return sections


def _composed(composition: AgentComposition, admitted: dict[str, list[tuple[MemoryRecord, _Item]]]) -> AgentComposition:
    """A new composition: ``composition`` with the admitted items appended where they go."""
    if not admitted:
        return composition

    def values(section: str) -> list[object]:
        return [item.value for _, item in admitted.get(section, ())]

    background = Background(
        **{
            section: {
                **composition.background.section(section),
                **{item.key: item.value for _, item in admitted.get(f"background.{section}", ()) if item.key},
            }
            for section in BACKGROUND_SECTIONS
        }
    )
    judgments = [
        Judgment(
            domain=j.domain,
            **{slot: (*j.slot(slot), *values(judgment_section(j.domain, slot))) for slot in JUDGMENT_SLOTS},
            examples=(*j.examples, *values(judgment_section(j.domain, "examples"))),
        )
        for j in composition.judgments
    ]
    return AgentComposition(
        name=composition.name,
        persona=composition.persona,
        tone=composition.tone,
        methodology=composition.methodology,
        mission=composition.mission,
        background=background,
        judgments=judgments,
        awareness=(*composition.awareness, *values("awareness")),
        recovery=(*composition.recovery, *values("recovery")),
        manual={
            capability: ManualCapability(workflows=(*manual.workflows, *values(manual_section(capability))))
            for capability, manual in composition.manual.items()
        },
        budgets=composition.budgets,
    )


def _version(composition: AgentComposition, applied: Sequence[MemoryRecord]) -> str:
    body = json.dumps(
        [composition.version, *([r.id, r.content, r.payload] for r in applied)],
        ensure_ascii=False,
        separators=(",", ":"),
        sort_keys=True,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()
