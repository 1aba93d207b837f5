"""The composed prompt, every line attributed: ``authored``, or ``memory`` with the ids of
the records behind it — "why does the agent believe X?" resolves line → record →
provenance. And the difference a learning makes: two overlays compared section by section.

The layout, its one home: a ``##`` heading per primitive (one per judgment domain and per
capability), a ``###`` heading per section within it, the entries under it in the
overlay's order, and — where learnings were spilled — a marker line naming them. A part
with nothing in it is left out. Blocks are separated by one blank line.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory_admin.composition.model import BACKGROUND_SECTIONS, IDENTITY, JUDGMENT_SLOTS, AgentComposition
from memory_admin.composition.overlay import Overlay, Source, Spilled, judgment_section, manual_section

LineKind = Literal["heading", "entry", "marker"]

_TITLES = {
    "team_context": "Team context",
    "project_context": "Project context",
    "conventions": "Conventions",
    "current_state": "Current state",
    "heuristics": "Heuristics",
    "constraints": "Constraints",
    "escalation_triggers": "Escalation triggers",
    "examples": "Examples",
}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PromptLine(_Model):
    """One line of the composed prompt (an entry may span several lines of text)."""

    section: str
    """The section it belongs to (``judgment.triage.heuristics``); a ``##`` heading's is
    its block (``background``, ``judgment.triage``)."""
    text: str
    source: Source
    """``authored`` for the composition's own entries and the headings, ``memory`` for a
    learned entry and for a marker of spilled learnings."""
    record_ids: tuple[str, ...] = ()
    """The records behind a learned entry, or the spilled records a marker names."""
    kind: LineKind = "entry"


class RenderedPrompt(_Model):
    """The composed prompt as lines and as the finished text."""

    version: str
    """The overlay's version."""
    lines: tuple[PromptLine, ...]
    text: str

    def section_text(self, section: str) -> str:
        """The entry and marker lines of ``section``, one per line (headings left out)."""
        return "\n".join(line.text for line in self.lines if line.section == section and line.kind != "heading")


def spill_marker(count: int) -> str:
    if count == 1:
        return "[… 1 more learning did not fit the budget; it stays in recall]"
    return f"[… {count} more learnings did not fit the budget; they stay in recall]"


@dataclass(frozen=True, slots=True)
class _Block:
    section: str
    heading: str
    parts: tuple[tuple[str, str | None], ...]  # (section, its ### heading or None)


def _blocks(composition: AgentComposition) -> list[_Block]:
    blocks = [_Block(name, f"## {name.capitalize()}", ((name, None),)) for name in IDENTITY]
    background = tuple((f"background.{s}", f"### {_TITLES[s]}") for s in BACKGROUND_SECTIONS)
    blocks.append(_Block("background", "## Background", background))
    for judgment in composition.judgments:
        slots = (*JUDGMENT_SLOTS, "examples")
        parts = tuple((judgment_section(judgment.domain, s), f"### {_TITLES[s]}") for s in slots)
        blocks.append(_Block(f"judgment.{judgment.domain}", f"## Judgment: {judgment.domain}", parts))
    blocks.append(_Block("awareness", "## Awareness", (("awareness", None),)))
    blocks.append(_Block("recovery", "## Recovery", (("recovery", None),)))
    for capability in composition.manual:
        parts = ((manual_section(capability), "### Workflows"),)
        blocks.append(_Block(f"manual.{capability}", f"## Manual: {capability}", parts))
    return blocks


def render_prompt(overlay: Overlay) -> RenderedPrompt:
    """``overlay``'s composition as the agent receives it. Deterministic: the same overlay
    gives the same lines and text."""
    entries: dict[str, list[PromptLine]] = {}
    for entry in overlay.entries:
        ids = () if entry.record_id is None else (entry.record_id,)
        entries.setdefault(entry.section, []).append(
            PromptLine(section=entry.section, text=entry.text, source=entry.source, record_ids=ids)
        )
    spilled: dict[str, list[Spilled]] = {}
    for spill in overlay.spilled:
        spilled.setdefault(spill.section, []).append(spill)

    lines: list[PromptLine] = []
    chunks: list[str] = []
    for block in _blocks(overlay.composition):
        body: list[PromptLine] = []
        for section, heading in block.parts:
            part = entries.get(section, [])
            spills = spilled.get(section, [])
            if spills:
                names = tuple(s.record_id for s in spills)
                marker = PromptLine(
                    section=section, text=spill_marker(len(names)), source="memory", record_ids=names, kind="marker"
                )
                part = [*part, marker]
            if part and heading is not None:
                body.append(PromptLine(section=section, text=heading, source="authored", kind="heading"))
            body.extend(part)
        if body:
            block_lines = [
                PromptLine(section=block.section, text=block.heading, source="authored", kind="heading"),
                *body,
            ]
            lines.extend(block_lines)
            chunks.append("\n".join(line.text for line in block_lines))
    return RenderedPrompt(version=overlay.version, lines=tuple(lines), text="\n\n".join(chunks))


# --- the difference between two overlays --------------------------------------------------


class SectionChange(_Model):
    """One section whose lines differ between two overlays."""

    section: str
    before: str
    """The section's entry and marker lines before, one per line (empty: it had none)."""
    after: str
    added: tuple[PromptLine, ...]
    """Lines in ``after`` that ``before`` lacks (text, source and record ids compared)."""
    removed: tuple[PromptLine, ...]


class PromptDiff(_Model):
    """What changes in the composed prompt from one overlay to another: the sections that
    differ, in the prompt's order, and both texts whole."""

    before_version: str
    after_version: str
    changes: tuple[SectionChange, ...]
    before_text: str
    after_text: str

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def unified(self, context: int = 2) -> str:
        """The two prompts as a unified diff (for a terminal), empty when they are the same."""
        lines = difflib.unified_diff(
            self.before_text.splitlines(),
            self.after_text.splitlines(),
            fromfile=f"before {self.before_version[:12]}",
            tofile=f"after {self.after_version[:12]}",
            n=context,
            lineterm="",
        )
        return "\n".join(lines)


def diff(before: Overlay, after: Overlay) -> PromptDiff:
    """The sections whose lines differ from ``before`` to ``after`` — for example the same
    composition without and with a candidate learning: its effect on the prompt."""
    old, new = render_prompt(before), render_prompt(after)
    changes = []
    for section in _union(_sections(before), _sections(after)):
        was, now = _body(old, section), _body(new, section)
        if [_key(line) for line in was] == [_key(line) for line in now]:
            continue
        changes.append(
            SectionChange(
                section=section,
                before=old.section_text(section),
                after=new.section_text(section),
                added=_minus(now, was),
                removed=_minus(was, now),
            )
        )
    return PromptDiff(
        before_version=before.version,
        after_version=after.version,
        changes=tuple(changes),
        before_text=old.text,
        after_text=new.text,
    )


def _sections(overlay: Overlay) -> list[str]:
    return [section for block in _blocks(overlay.composition) for section, _ in block.parts]


def _union(first: Iterable[str], second: Iterable[str]) -> list[str]:
    """``second``'s order, then what only ``first`` has, in its order."""
    merged = list(dict.fromkeys(second))
    seen = set(merged)
    return merged + [s for s in first if s not in seen]


def _body(prompt: RenderedPrompt, section: str) -> list[PromptLine]:
    return [line for line in prompt.lines if line.section == section and line.kind != "heading"]


def _key(line: PromptLine) -> tuple[str, str, tuple[str, ...], str]:
    return (line.text, line.source, line.record_ids, line.kind)


def _minus(lines: list[PromptLine], other: list[PromptLine]) -> tuple[PromptLine, ...]:
    """``lines`` less those ``other`` has too (as many times as it has them)."""
    left = Counter(_key(line) for line in other)
    out = []
    for line in lines:
        key = _key(line)
        if left[key]:
            left[key] -= 1
        else:
            out.append(line)
    return tuple(out)
