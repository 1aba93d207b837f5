"""Promotion tiers exactly as seed 001's table, and why a target cannot enter a composition."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from memory_admin.composition import TIERS, Tier, fits, payload_missing, refusal, slot_of, tier_of
from memory_admin.records import MemoryTarget
from tests.support.compositions import AWARENESS, RECOVERY, background, example, example_composition, judgment, learned

TARGET: TypeAdapter[MemoryTarget] = TypeAdapter(MemoryTarget)


@pytest.mark.parametrize(
    ("target", "tier"),
    [
        (background("team_context", "lead"), Tier.AUTO),
        (background("project_context", "stack"), Tier.AUTO),
        (background("conventions", "deploy_freeze"), Tier.AUTO),
        (background("current_state", "release"), Tier.AUTO),
        (AWARENESS, Tier.AUTO),
        (judgment("triage", "heuristics"), Tier.EARNED),
        (example("triage"), Tier.EARNED),
        (judgment("triage", "constraints"), Tier.GUARDED),
        (judgment("billing", "escalation_triggers"), Tier.GUARDED),
        (RECOVERY, Tier.GUARDED),
        (judgment("shipping", "heuristics"), Tier.LOCKED),
        (judgment("shipping", "constraints"), Tier.LOCKED),
        (example("shipping"), Tier.LOCKED),
        (judgment("Triage", "heuristics"), Tier.LOCKED),
        ({"primitive": "manual", "capability": "refunds"}, Tier.LOCKED),
    ],
    ids=[
        "background.team_context",
        "background.project_context",
        "background.conventions",
        "background.current_state",
        "awareness",
        "judgment.heuristics",
        "example",
        "judgment.constraints",
        "judgment.escalation_triggers",
        "recovery",
        "new-domain-heuristic",
        "new-domain-constraint",
        "new-domain-example",
        "domain-names-match-exactly",
        "manual",
    ],
)
def test_the_seed_table(target: dict[str, Any], tier: Tier) -> None:
    assert tier_of(TARGET.validate_python(target), example_composition()) is tier


def test_the_table_names_identity_locked_and_every_target_slot() -> None:
    assert {name for name, tier in TIERS.items() if tier is Tier.LOCKED} == {
        "persona",
        "tone",
        "methodology",
        "mission",
        "manual",
    }
    slots = {"background", "awareness", "example", "recovery", "manual"} | {
        f"judgment.{slot}" for slot in ("heuristics", "constraints", "escalation_triggers")
    }
    assert slots <= set(TIERS)
    assert slot_of(TARGET.validate_python(judgment("triage", "constraints"))) == "judgment.constraints"
    assert Tier("guarded") is Tier.GUARDED


def test_fitting_targets_have_no_refusal() -> None:
    composition = example_composition()
    for target in (background("conventions", "k"), AWARENESS, RECOVERY, judgment("triage"), example("billing")):
        parsed = TARGET.validate_python(target)
        assert refusal(parsed, composition) is None
        assert fits(parsed, composition)


@pytest.mark.parametrize(
    ("target", "says"),
    [
        (None, "has no target, so it informs recall only"),
        (judgment("shipping"), "has no judgment domain 'shipping', and memories never create domains"),
        (example("shipping"), "add the domain to the composition file"),
        ({"primitive": "manual", "capability": "refunds"}, "the manual is authored only in this version"),
    ],
    ids=["untargeted", "new-domain", "new-domain-example", "manual"],
)
def test_a_refusal_says_why_and_what_to_do(target: dict[str, Any] | None, says: str) -> None:
    parsed = None if target is None else TARGET.validate_python(target)
    reason = refusal(parsed, example_composition())
    assert reason is not None and says in reason
    assert not fits(parsed, example_composition())


def test_a_structured_target_without_its_payload_cannot_promote() -> None:
    bare_example = learned(1, "Check the status page first.", example("triage"))
    reason = payload_missing(bare_example)
    assert reason is not None and "scenario, good" in reason and "supersede it with the payload set" in reason
    bare_awareness = learned(2, "The status page lists incidents.", AWARENESS)
    reason = payload_missing(bare_awareness)
    assert reason is not None and "name, description, access_method" in reason


def test_prose_targets_and_structured_ones_with_payload_miss_nothing() -> None:
    payload = {"scenario": "s", "good": "g"}
    assert payload_missing(learned(1, "x", example("triage"), payload=payload)) is None
    assert payload_missing(learned(2, "x", judgment("triage"))) is None
    assert payload_missing(learned(3, "x", None)) is None
