"""Properties of the overlay over generated compositions and records: every record has
exactly one fate, order never matters, authored entries are never displaced, budgets and
the ceiling hold whenever a learning was placed; the prompt attributes every learned line
to its record; a composition survives its JSON."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_admin.composition import (
    LEARNABLE,
    AgentComposition,
    Overlay,
    apply_memory_overlay,
    parse_composition,
    render_prompt,
)
from memory_admin.composition.model import BackgroundSection
from memory_admin.composition.overlay import fold
from memory_admin.records import MemoryRecord
from tests.support.compositions import AWARENESS, RECOVERY, T0, background, example, judgment, learned

DOMAINS = ("triage", "billing")
KEYS = ("lead", "stack", "freeze")
WORDS = ("Check the status page.", "check the STATUS page.", "Ask for the invoice.", "Retry once.", "Escalate.")
SECTIONS: tuple[BackgroundSection, ...] = ("team_context", "conventions", "current_state")

texts = st.sampled_from(WORDS)
small_budget = st.integers(min_value=0, max_value=120)


@st.composite
def compositions(draw: st.DrawFn) -> AgentComposition:
    domains = draw(st.lists(st.sampled_from(DOMAINS), unique=True, max_size=2))
    data: dict[str, Any] = {
        "name": "generated",
        "persona": draw(st.none() | texts),
        "background": {
            section: draw(st.dictionaries(st.sampled_from(KEYS), texts, max_size=2)) for section in SECTIONS
        },
        "judgments": [
            {
                "domain": domain,
                "heuristics": draw(st.lists(texts, max_size=2)),
                "constraints": draw(st.lists(texts, max_size=1)),
                "examples": [{"scenario": s, "good": "Do it."} for s in draw(st.lists(texts, unique=True, max_size=1))],
            }
            for domain in domains
        ],
        "recovery": draw(st.lists(texts, max_size=2)),
        "budgets": {primitive: draw(small_budget) for primitive in LEARNABLE} | {"ceiling": draw(st.integers(0, 400))},
    }
    return parse_composition(data)


@st.composite
def record_sets(draw: st.DrawFn) -> list[MemoryRecord]:
    targets = st.one_of(
        st.builds(background, st.sampled_from(SECTIONS), st.sampled_from(KEYS)),
        st.builds(judgment, st.sampled_from((*DOMAINS, "shipping")), st.sampled_from(("heuristics", "constraints"))),
        st.builds(example, st.sampled_from((*DOMAINS, "shipping"))),
        st.just(AWARENESS),
        st.just(RECOVERY),
        st.none(),
    )
    count = draw(st.integers(min_value=0, max_value=12))
    records = []
    for n in range(count):
        target = draw(targets)
        payload = None
        primitive = target and target["primitive"]
        if primitive == "example" and draw(st.booleans()):
            payload = {"scenario": draw(texts), "good": "Do it."}
        elif primitive == "awareness" and draw(st.booleans()):
            payload = {"name": draw(st.sampled_from(("wiki", "status"))), "description": "d", "access_method": "m"}
        minutes = draw(st.integers(min_value=0, max_value=3))  # ties on created_at are common
        records.append(learned(n, draw(texts), target, payload=payload, at=T0 + timedelta(minutes=minutes)))
    return records


@settings(max_examples=300, deadline=None)
@given(compositions(), record_sets(), st.randoms(use_true_random=False))
def test_overlay_properties(composition: AgentComposition, records: list[MemoryRecord], rnd: Any) -> None:
    result = apply_memory_overlay(composition, records)

    # every record has exactly one fate
    fates = [*result.applied_ids, *(d.record_id for d in result.dropped), *(s.record_id for s in result.spilled)]
    assert sorted(fates) == sorted(r.id for r in records)

    # order never matters, and the authored composition is left as it was
    shuffled = list(records)
    rnd.shuffle(shuffled)
    assert apply_memory_overlay(composition, shuffled) == result
    assert apply_memory_overlay(composition, []).composition == composition

    authored = apply_memory_overlay(composition, []).entries
    for section in {e.section for e in result.entries}:
        mine = [e for e in result.entries if e.section == section]
        before = [e for e in authored if e.section == section]
        # authored entries first and untouched; learned ones after
        assert mine[: len(before)] == before
        assert all(e.source == "memory" for e in mine[len(before) :])
        if not section.startswith("background."):  # (background entries are told apart by key)
            # never two learned alike, nor one like an authored entry
            learned_texts = [fold(e.text) for e in mine[len(before) :]]
            assert len(set(learned_texts)) == len(learned_texts)
            assert not set(learned_texts) & {fold(e.text) for e in before}

    for section in SECTIONS:
        assert composition.background.section(section).items() <= result.composition.background.section(section).items()
    assert_budgets(result)
    assert {rid for ids in result.applied.values() for rid in ids} == set(result.applied_ids)


def assert_budgets(result: Overlay) -> None:
    placed = False
    for size in result.sizes.values():
        if size.learned:
            placed = True
            assert size.budget is not None and size.chars <= size.budget
    if placed:
        assert result.chars <= result.ceiling
    assert result.chars == sum(len(e.text) for e in result.entries)


@settings(max_examples=200, deadline=None)
@given(compositions(), record_sets())
def test_every_learned_line_is_attributed(composition: AgentComposition, records: list[MemoryRecord]) -> None:
    result = apply_memory_overlay(composition, records)
    prompt = render_prompt(result)
    entries = [line for line in prompt.lines if line.kind == "entry"]
    learned_ids = [rid for line in entries if line.source == "memory" for rid in line.record_ids]
    assert learned_ids == [e.record_id for e in result.entries if e.record_id is not None]
    assert sorted(learned_ids) == sorted(result.applied_ids)
    marked = [rid for line in prompt.lines if line.kind == "marker" for rid in line.record_ids]
    assert sorted(marked) == sorted(s.record_id for s in result.spilled)
    assert all(not line.record_ids for line in entries if line.source == "authored")
    assert prompt.text.replace("\n\n## ", "\n## ") == "\n".join(line.text for line in prompt.lines)


@settings(max_examples=100, deadline=None)
@given(compositions())
def test_a_composition_survives_its_json(composition: AgentComposition) -> None:
    again = parse_composition(json.loads(composition.model_dump_json()))
    assert again == composition and again.version == composition.version
