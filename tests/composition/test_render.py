"""The composed prompt, every line attributed, and the difference a learning makes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_admin.composition import (
    AgentComposition,
    PromptLine,
    RenderedPrompt,
    apply_memory_overlay,
    diff,
    parse_composition,
    render_prompt,
)
from memory_admin.records import MemoryRecord
from tests.support.compositions import AWARENESS, RECOVERY, background, example_composition, judgment, learned

SUPPORT = example_composition()


def prompt(*records: MemoryRecord, composition: AgentComposition = SUPPORT) -> RenderedPrompt:
    return render_prompt(apply_memory_overlay(composition, records))


def lines_of(rendered: RenderedPrompt, section: str) -> list[PromptLine]:
    return [line for line in rendered.lines if line.section == section]


def test_the_authored_prompt_in_its_order_with_its_headings() -> None:
    rendered = prompt()
    headings = [line.text for line in rendered.lines if line.kind == "heading"]
    assert headings == [
        "## Persona",
        "## Tone",
        "## Methodology",
        "## Mission",
        "## Background",
        "### Team context",
        "### Conventions",
        "### Current state",
        "## Judgment: triage",
        "### Heuristics",
        "### Constraints",
        "### Escalation triggers",
        "### Examples",
        "## Judgment: billing",
        "### Heuristics",
        "## Awareness",
        "## Recovery",
        "## Manual: refunds",
        "### Workflows",
    ]
    assert {line.source for line in rendered.lines} == {"authored"}
    assert rendered.text.startswith("## Persona\nYou are Acme's support engineer")
    assert "\n\n## Background\n### Team context\n- The platform team" in rendered.text
    assert "### Project context" not in rendered.text  # an empty section is left out
    assert rendered.version == apply_memory_overlay(SUPPORT, []).version


def test_the_text_is_the_lines() -> None:
    """What the dashboard shows line by line is exactly what the agent receives."""
    rendered = prompt(learned(1, "Ask for the invoice.", judgment("billing")))
    blocks = rendered.text.split("\n\n")
    assert "\n".join(blocks) == "\n".join(line.text for line in rendered.lines)
    assert all(block.startswith("## ") for block in blocks)


def test_a_learned_line_names_its_record() -> None:
    rule = learned(1, "Ask for the invoice number first.", judgment("billing"))
    rendered = prompt(rule)
    [line] = [line for line in rendered.lines if line.source == "memory"]
    assert line == PromptLine(
        section="judgment.billing.heuristics",
        text="- Ask for the invoice number first.",
        source="memory",
        record_ids=(rule.id,),
    )
    billing = lines_of(rendered, "judgment.billing.heuristics")
    assert [(item.kind, item.source) for item in billing] == [
        ("heading", "authored"),
        ("entry", "authored"),
        ("entry", "memory"),
    ]


def test_a_learning_opens_a_section_the_authored_composition_left_empty() -> None:
    rendered = prompt(learned(1, "Staging runs Postgres 16.", background("project_context", "database")))
    assert "### Conventions" in rendered.text
    section = lines_of(rendered, "background.project_context")
    assert [line.text for line in section] == ["### Project context", "- Staging runs Postgres 16."]
    assert rendered.text.index("### Team context") < rendered.text.index("### Project context")
    assert rendered.text.index("### Project context") < rendered.text.index("### Conventions")


def test_spilled_learnings_are_marked_where_they_would_have_been() -> None:
    tight = parse_composition({**SUPPORT.model_dump(), "budgets": {**SUPPORT.budgets.model_dump(), "recovery": 100}})
    big = [learned(n, f"Recovery step number {n} is long enough to pass the budget.", RECOVERY) for n in (1, 2)]
    rendered = prompt(*big, composition=tight)
    [marker] = [line for line in rendered.lines if line.kind == "marker"]
    assert marker.section == "recovery" and marker.source == "memory"
    assert marker.record_ids == ("mem_0001", "mem_0002")
    assert marker.text == "[… 2 more learnings did not fit the budget; they stay in recall]"
    assert rendered.text.split("## Recovery\n")[1].split("\n\n")[0].endswith(marker.text)
    one = prompt(big[0], composition=tight)
    assert "[… 1 more learning did not fit the budget; it stays in recall]" in one.text


def test_a_spill_into_an_empty_section_gets_its_heading() -> None:
    tight = parse_composition({"name": "a", "budgets": {"awareness": 5}})
    wiki = {"name": "wiki", "description": "Runbooks.", "access_method": "wiki.acme.dev"}
    rendered = prompt(learned(1, "The wiki has runbooks.", AWARENESS, payload=wiki), composition=tight)
    assert rendered.text == "## Awareness\n[… 1 more learning did not fit the budget; it stays in recall]"


def test_an_empty_composition_renders_nothing() -> None:
    rendered = prompt(composition=AgentComposition(name="blank"))
    assert rendered.lines == () and rendered.text == ""


@settings(max_examples=50, deadline=None)
@given(st.permutations([learned(n, f"Heuristic {n}.", judgment("triage")) for n in range(1, 6)]))
def test_rendering_is_deterministic(records: list[MemoryRecord]) -> None:
    assert prompt(*records) == prompt(*sorted(records, key=lambda r: r.id))


# --- diff ----------------------------------------------------------------------------


def test_the_diff_a_candidate_makes() -> None:
    promoted = [learned(1, "Ask for the invoice.", judgment("billing"))]
    candidate = learned(2, "Ask which plan the customer is on.", judgment("billing"))
    before = apply_memory_overlay(SUPPORT, promoted)
    after = apply_memory_overlay(SUPPORT, [*promoted, candidate])
    change = diff(before, after)
    assert change.changed and (change.before_version, change.after_version) == (before.version, after.version)
    [section] = change.changes
    assert section.section == "judgment.billing.heuristics"
    assert section.before == "- Quote the invoice number in every reply about a charge.\n- Ask for the invoice."
    assert section.after == section.before + "\n- Ask which plan the customer is on."
    assert [(line.text, line.record_ids) for line in section.added] == [
        ("- Ask which plan the customer is on.", (candidate.id,))
    ]
    assert section.removed == ()
    assert "+- Ask which plan the customer is on." in change.unified()
    assert change.unified().startswith(f"--- before {before.version[:12]}\n+++ after {after.version[:12]}")


def test_no_change_no_diff() -> None:
    same = diff(apply_memory_overlay(SUPPORT, []), apply_memory_overlay(SUPPORT, []))
    assert not same.changed and same.changes == () and same.unified() == ""


def test_a_spill_and_a_removal_show_in_the_diff() -> None:
    tight = parse_composition({**SUPPORT.model_dump(), "budgets": {**SUPPORT.budgets.model_dump(), "recovery": 120}})
    fits = learned(1, "Retry once.", RECOVERY)
    spills = learned(2, "When the search tool times out, retry with a narrower query.", RECOVERY)
    change = diff(apply_memory_overlay(tight, [fits]), apply_memory_overlay(tight, [spills]))
    [section] = change.changes
    assert [line.text for line in section.removed] == ["- Retry once."]
    assert [line.kind for line in section.added] == ["marker"]


def test_a_diff_across_compositions_keeps_sections_only_the_old_one_had() -> None:
    without_billing = parse_composition({**SUPPORT.model_dump(), "judgments": [SUPPORT.judgments[0].model_dump()]})
    change = diff(apply_memory_overlay(SUPPORT, []), apply_memory_overlay(without_billing, []))
    [section] = change.changes
    assert section.section == "judgment.billing.heuristics" and section.after == ""
    assert "-## Judgment: billing" in change.unified()
