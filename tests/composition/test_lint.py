"""The composition's health report: size per primitive with the ceiling as the hard
failure, conflicts, never-recalled records, staleness candidates."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory_admin.composition import (
    AgentComposition,
    CompositionError,
    LintReport,
    apply_memory_overlay,
    lint_composition,
    parse_composition,
)
from memory_admin.records import MemoryRecord
from tests.support.compositions import RECOVERY, T0, background, example_composition, judgment, learned

SUPPORT = example_composition()
NOW = T0 + timedelta(days=60)


def lint(*records: MemoryRecord, composition: AgentComposition = SUPPORT, **options: Any) -> LintReport:
    overlay = apply_memory_overlay(composition, records)
    return lint_composition(composition, overlay, now=NOW, **options)


def with_budgets(**budgets: int) -> AgentComposition:
    return parse_composition({**SUPPORT.model_dump(), "budgets": {**SUPPORT.budgets.model_dump(), **budgets}})


def test_a_healthy_composition_is_clean() -> None:
    report = lint()
    assert report.clean and not report.failed
    assert report.never_recalled is None  # not measured
    assert [size.primitive for size in report.sizes][:5] == ["persona", "tone", "methodology", "mission", "background"]
    assert {size.status for size in report.sizes} == {"ok"}
    assert report.ceiling.chars == apply_memory_overlay(SUPPORT, []).chars
    assert report.at == NOW and report.composition_version == SUPPORT.version
    assert "Never recalled: not measured" in report.text()


# --- size ----------------------------------------------------------------------------


def test_near_and_over_a_primitive_budget() -> None:
    authored = apply_memory_overlay(SUPPORT, []).sizes["recovery"].authored
    report = lint(composition=with_budgets(recovery=authored + 5, background=1))
    status = {size.primitive: size.status for size in report.sizes}
    assert status["recovery"] == "near" and status["background"] == "over" and status["judgment"] == "ok"
    assert not report.failed  # over a primitive's budget is curation, not the hard failure
    assert not report.clean


def test_a_spill_for_the_budget_is_over() -> None:
    report = lint(learned(1, "x" * 2000, RECOVERY))
    recovery = next(size for size in report.sizes if size.primitive == "recovery")
    assert (recovery.status, recovery.spilled) == ("over", 2002)
    assert not report.failed


def test_the_ceiling_is_the_hard_failure_when_a_learning_spills_for_it() -> None:
    composition = with_budgets(ceiling=apply_memory_overlay(SUPPORT, []).chars + 5)
    report = lint(learned(1, "Retry once.", RECOVERY), composition=composition)
    assert report.failed and report.ceiling.spilled == len("- Retry once.")
    assert "FAILED" in report.text()


def test_the_ceiling_fails_when_the_authored_composition_alone_passes_it() -> None:
    report = lint(composition=with_budgets(ceiling=100))
    assert report.failed and report.ceiling.spilled == 0 and report.ceiling.chars > 100


# --- conflicts -----------------------------------------------------------------------


def test_conflicts_list_collisions_learned_conflicts_and_unfit_records() -> None:
    report = lint(
        learned(1, "Deploys freeze on Fridays.", background("conventions", "deploy_freeze")),
        learned(2, "The release leaves on Tuesdays.", background("current_state", "release")),
        learned(3, "The release leaves on Thursdays.", background("current_state", "release")),
        learned(4, "Check the carrier first.", judgment("shipping")),
    )
    kinds = [(c.kind, c.record_id) for c in report.conflicts]
    assert kinds == [
        ("authored_collision", "mem_0001"),
        ("learned_conflict", "mem_0003"),
        ("unfit", "mem_0004"),
    ]
    collision = report.conflicts[0]
    assert collision.winner_text == "- Staging deploys freeze on the last business day of each month."
    assert report.conflicts[1].winner_id == "mem_0002"
    assert "mem_0003 [learned_conflict] the older learning mem_0002 holds" in report.text()


# --- never recalled ------------------------------------------------------------------


def test_never_recalled_records_come_from_the_counts_given() -> None:
    rule = learned(1, "Ask for the invoice.", judgment("billing"))
    other = learned(2, "Retry once.", RECOVERY)
    counts = {"mem_0002": 0, "mem_0001": 4, "mem_0077": 0}
    report = lint(rule, other, recall_counts=counts)
    assert [(n.record_id, n.section) for n in report.never_recalled or ()] == [
        ("mem_0002", "recovery"),
        ("mem_0077", None),
    ]
    assert lint(rule, recall_counts={"mem_0001": 1}).never_recalled == ()


# --- staleness -----------------------------------------------------------------------


def test_old_current_state_facts_and_expiring_records() -> None:
    old = learned(1, "The billing migration is half done.", background("current_state", "migration"))
    fresh = learned(2, "The release is frozen.", background("current_state", "release"), at=NOW - timedelta(days=3))
    old_convention = learned(3, "Staging rebuilds nightly.", background("conventions", "rebuild"))
    expiring = learned(4, "Retry once.", RECOVERY, expires_at=NOW + timedelta(days=2))
    expired = learned(5, "Ask for the invoice.", judgment("billing"), expires_at=NOW - timedelta(hours=1))
    later = learned(6, "Ask for the plan.", judgment("billing"), expires_at=NOW + timedelta(days=30))
    report = lint(old, fresh, old_convention, expiring, expired, later)
    found = [(s.record_id, s.reason) for s in report.stale]
    assert found == [("mem_0001", "old_current_state"), ("mem_0004", "expiring"), ("mem_0005", "expired")]
    assert report.stale[0].since == old.observed_at
    assert "was stated 59 days ago" in report.stale[0].detail
    assert report.stale[1].since == expiring.expires_at


def test_staleness_thresholds_are_the_callers_to_set() -> None:
    old = learned(1, "The billing migration is half done.", background("current_state", "migration"))
    assert lint(old, stale_after=timedelta(days=90)).stale == ()


def test_an_overlay_from_another_composition_is_refused() -> None:
    other = apply_memory_overlay(with_budgets(ceiling=9000), [])
    with pytest.raises(CompositionError, match="compose it again from this composition"):
        lint_composition(SUPPORT, other)
