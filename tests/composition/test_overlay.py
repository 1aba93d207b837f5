"""The overlay: promoted records folded into the authored composition — authored wins,
merge per primitive, the older learning wins, budgets spill to recall, a content-hashed
version; pure and deterministic."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_admin.composition import (
    AgentComposition,
    Overlay,
    apply_memory_overlay,
    parse_composition,
    section_of,
    target_section,
)
from memory_admin.records import MemoryRecord
from tests.support.compositions import (
    AWARENESS,
    RECOVERY,
    T0,
    background,
    example,
    example_composition,
    judgment,
    learned,
)

SUPPORT = example_composition()


def overlay(*records: MemoryRecord, composition: AgentComposition = SUPPORT) -> Overlay:
    return apply_memory_overlay(composition, records)


def fates(result: Overlay) -> dict[str, str]:
    """Every given record id → ``applied``, or the reason it was dropped or spilled."""
    out = {rid: "applied" for rid in result.applied_ids}
    out.update({d.record_id: d.reason for d in result.dropped})
    out.update({s.record_id: f"spilled:{s.reason}" for s in result.spilled})
    return out


def with_budgets(**budgets: int) -> AgentComposition:
    return parse_composition({**SUPPORT.model_dump(), "budgets": {**SUPPORT.budgets.model_dump(), **budgets}})


# --- nothing promoted ----------------------------------------------------------------


def test_nothing_promoted_composes_the_authored_composition() -> None:
    result = overlay()
    assert result.composition == SUPPORT
    assert result.composition_version == SUPPORT.version
    assert {e.source for e in result.entries} == {"authored"}
    assert result.applied == {} and result.dropped == () and result.spilled == ()
    assert result.entries[0].section == "persona"
    assert [e.section for e in result.entries][-1] == "manual.refunds.workflows"


# --- merge rules per primitive ------------------------------------------------------------


def test_background_entries_land_under_their_section_by_key_after_the_authored_ones() -> None:
    staging = learned(1, "Staging is rebuilt every night at 02:00 UTC.", background("conventions", "staging_rebuild"))
    result = overlay(staging)
    assert result.composition.background.conventions == {
        "deploy_freeze": "Staging deploys freeze on the last business day of each month.",
        "staging_rebuild": "Staging is rebuilt every night at 02:00 UTC.",
    }
    conventions = [e for e in result.entries if e.section == "background.conventions"]
    assert [(e.source, e.record_id) for e in conventions] == [("authored", None), ("memory", "mem_0001")]
    assert conventions[1].text == "- Staging is rebuilt every night at 02:00 UTC."
    assert result.applied == {"background.conventions": ("mem_0001",)}


def test_judgment_slots_and_examples_append_to_their_domain() -> None:
    records = [
        learned(1, "Ask for the invoice number first.", judgment("billing", "heuristics")),
        learned(2, "Never refund over 500 EUR without finance.", judgment("billing", "constraints")),
        learned(3, "A charge appears twice on one invoice.", judgment("billing", "escalation_triggers")),
        learned(
            4,
            "Refund questions: look up the invoice first.",
            example("billing"),
            payload={"scenario": "A customer asks for a refund.", "good": "Look up the invoice first."},
        ),
    ]
    result = overlay(*records)
    billing = result.composition.judgment("billing")
    assert billing is not None
    assert billing.heuristics == (
        "Quote the invoice number in every reply about a charge.",
        "Ask for the invoice number first.",
    )
    assert billing.constraints == ("Never refund over 500 EUR without finance.",)
    assert billing.escalation_triggers == ("A charge appears twice on one invoice.",)
    assert [e.scenario for e in billing.examples] == ["A customer asks for a refund."]
    assert result.composition.judgment("triage") == SUPPORT.judgment("triage")
    examples = [e for e in result.entries if e.section == "judgment.billing.examples"]
    assert examples[0].text == "- Scenario: A customer asks for a refund.\n  Good: Look up the invoice first."
    assert examples[0].primitive == "example"


def test_awareness_and_recovery_append() -> None:
    wiki = {"name": "runbook wiki", "description": "Runbooks per service.", "access_method": "wiki.acme.dev"}
    result = overlay(
        learned(1, "The runbook wiki has a page per service.", AWARENESS, payload=wiki),
        learned(2, "After a timeout, retry once with a smaller page.", RECOVERY),
    )
    assert [a.name for a in result.composition.awareness] == ["status page", "runbook wiki"]
    assert result.composition.recovery[-1] == "After a timeout, retry once with a smaller page."
    awareness = [e.text for e in result.entries if e.section == "awareness"]
    assert awareness[-1] == "- runbook wiki: Runbooks per service. (access: wiki.acme.dev)"


def test_a_multi_line_learning_stays_one_indented_entry() -> None:
    result = overlay(learned(1, "Retry once.\nThen hand over.", RECOVERY))
    assert [e.text for e in result.entries if e.record_id] == ["- Retry once.\n  Then hand over."]


# --- authored wins ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        learned(1, "Deploys freeze on Fridays.", background("conventions", "deploy_freeze")),
        learned(
            1,
            "check STATUS.acme.dev before opening an incident:   most P1 reports are a known outage.",
            judgment("triage", "heuristics"),
        ),
        learned(
            1,
            "Dashboard down: check status.",
            example("triage"),
            payload={"scenario": "A customer says the dashboard is DOWN for everyone.", "good": "Check status."},
        ),
        learned(
            1,
            "The status page has incidents.",
            AWARENESS,
            payload={"name": "Status Page", "description": "Incidents.", "access_method": "status.acme.dev"},
        ),
    ],
    ids=["background-key", "heuristic-text", "example-scenario", "awareness-name"],
)
def test_a_learning_colliding_with_an_authored_entry_is_dropped_and_reported(record: MemoryRecord) -> None:
    result = overlay(record)
    [dropped] = result.dropped
    assert dropped.reason == "authored_collision" and dropped.record_id == record.id
    assert dropped.winner_text is not None and dropped.text is not None
    assert "wins over this learning" in dropped.detail
    assert result.composition == SUPPORT
    assert result.version == overlay().version


# --- learned against learned -------------------------------------------------------------


def test_the_older_learning_wins_and_the_newer_is_reported() -> None:
    older = learned(1, "The release train leaves on Tuesdays.", background("current_state", "release"))
    newer = learned(2, "The release train leaves on Thursdays.", background("current_state", "release"))
    for given in ([older, newer], [newer, older]):
        result = overlay(*given)
        assert result.composition.background.current_state["release"] == older.content
        [dropped] = result.dropped
        assert (dropped.record_id, dropped.reason, dropped.winner_id) == (newer.id, "learned_conflict", older.id)
        assert dropped.winner_text == "- The release train leaves on Tuesdays."
        assert "supersede it with this learning's content" in dropped.detail


def test_at_the_same_time_the_smaller_id_wins() -> None:
    one = learned(7, "Ask which plan the customer is on.", judgment("billing"), at=T0)
    two = learned(3, "ask which plan the customer is on.", judgment("billing"), at=T0)
    result = overlay(one, two)
    assert fates(result) == {"mem_0003": "applied", "mem_0007": "learned_conflict"}


# --- records that do not fit ------------------------------------------------------------


def test_records_that_do_not_fit_are_dropped_as_unfit_with_the_reason() -> None:
    records = [
        learned(1, "Untargeted fact.", None),
        learned(2, "Check the carrier first.", judgment("shipping")),
        learned(3, "Refund workflow.", {"primitive": "manual", "capability": "refunds"}),
        learned(4, "An example without its payload.", example("triage")),
        learned(5, "A key with spaces.", background("conventions", " spaced")),
    ]
    result = overlay(*records)
    assert set(fates(result).values()) == {"unfit"}
    details = {d.record_id: d.detail for d in result.dropped}
    assert "no target" in details["mem_0001"]
    assert "no judgment domain 'shipping'" in details["mem_0002"]
    assert "authored only in this version" in details["mem_0003"]
    assert "has none" in details["mem_0004"]
    assert "surrounding spaces" in details["mem_0005"]
    assert [d.section for d in result.dropped] == [
        None,
        "judgment.shipping.heuristics",
        "manual.refunds.workflows",
        "judgment.triage.examples",
        "background.conventions",
    ]


# --- budgets ---------------------------------------------------------------------------


def test_a_record_over_its_primitive_budget_spills_and_a_smaller_later_one_still_fits() -> None:
    authored = overlay().sizes["recovery"].authored
    composition = with_budgets(recovery=authored + 40)
    big = learned(1, "When the search tool times out, retry with a narrower query and fewer filters.", RECOVERY)
    small = learned(2, "Retry once.", RECOVERY)
    result = overlay(big, small, composition=composition)
    assert fates(result) == {"mem_0001": "spilled:budget", "mem_0002": "applied"}
    [spill] = result.spilled
    assert (spill.section, spill.primitive, spill.chars) == ("recovery", "recovery", len("- " + big.content))
    size = result.sizes["recovery"]
    assert (size.authored, size.learned, size.spilled, size.budget) == (authored, 13, spill.chars, authored + 40)
    assert size.chars <= authored + 40
    assert big.content not in result.composition.recovery


def test_the_ceiling_spills_what_the_budgets_let_through() -> None:
    composition = with_budgets(ceiling=overlay().chars + 20)
    records = [learned(1, "Ask for the invoice.", judgment("billing")), learned(2, "Ask for the plan.", RECOVERY)]
    result = overlay(*records, composition=composition)
    assert fates(result) == {"mem_0001": "spilled:ceiling", "mem_0002": "applied"}
    assert result.chars <= result.ceiling


def test_authored_content_over_a_budget_stays_and_every_learning_spills() -> None:
    composition = with_budgets(judgment=10)
    result = overlay(learned(1, "Ask for the invoice.", judgment("billing")), composition=composition)
    assert fates(result) == {"mem_0001": "spilled:budget"}
    assert result.sizes["judgment"].authored > 10
    assert result.composition == composition


def test_the_identity_counts_toward_the_ceiling_and_has_no_budget() -> None:
    sizes = overlay().sizes
    assert sizes["persona"].budget is None
    assert sizes["persona"].authored == len(SUPPORT.persona or "")
    assert overlay().chars == sum(len(e.text) for e in overlay().entries)


# --- the version, purity ------------------------------------------------------------------


def test_version_follows_what_was_applied_only() -> None:
    base = overlay()
    rule = learned(1, "Ask for the invoice.", judgment("billing"))
    applied = overlay(rule)
    assert applied.version != base.version
    dropped = overlay(rule, learned(2, "ask for the invoice.", judgment("billing")))
    assert dropped.version == applied.version
    spilled = overlay(rule, learned(3, "x" * 4000, judgment("billing")))
    assert spilled.version == applied.version
    other = overlay(learned(1, "Ask for the plan.", judgment("billing")))
    assert other.version != applied.version
    edited_composition = parse_composition({**SUPPORT.model_dump(), "tone": "Terse."})
    assert overlay(rule, composition=edited_composition).version != applied.version


def test_the_authored_composition_is_not_touched() -> None:
    composition = example_composition()
    before = composition.model_dump()
    result = overlay(learned(1, "Ask for the invoice.", judgment("billing")), composition=composition)
    assert composition.model_dump() == before
    assert result.composition is not composition
    assert result.composition.version != composition.version


def test_a_record_given_twice_counts_once_and_records_are_kept_oldest_first() -> None:
    rule = learned(2, "Ask for the invoice.", judgment("billing"))
    early = learned(1, "Retry once.", RECOVERY)
    result = overlay(rule, early, rule)
    assert [r.id for r in result.records] == ["mem_0001", "mem_0002"]
    assert result.applied_ids == ("mem_0001", "mem_0002")
    assert result.record("mem_0002") == rule and result.record("mem_9999") is None


def test_times_not_ids_order_learnings() -> None:
    late_small_id = learned(1, "Retry once.", RECOVERY, at=T0 + timedelta(days=2))
    early_big_id = learned(9, "Ask a person.", RECOVERY, at=T0)
    assert overlay(late_small_id, early_big_id).composition.recovery[-2:] == ("Ask a person.", "Retry once.")


def test_applied_lists_sections_in_the_prompts_order() -> None:
    result = overlay(
        learned(1, "Retry once.", RECOVERY),
        learned(2, "Ask for the invoice.", judgment("billing")),
        learned(3, "Staging runs Postgres 16.", background("project_context", "database")),
    )
    assert list(result.applied) == ["background.project_context", "judgment.billing.heuristics", "recovery"]


@pytest.mark.parametrize(
    ("target", "section"),
    [
        (background("current_state", "release"), "background.current_state"),
        (judgment("triage", "escalation_triggers"), "judgment.triage.escalation_triggers"),
        (example("billing"), "judgment.billing.examples"),
        (AWARENESS, "awareness"),
        (RECOVERY, "recovery"),
        ({"primitive": "manual", "capability": "refunds"}, "manual.refunds.workflows"),
        (None, None),
    ],
    ids=["background", "judgment", "example", "awareness", "recovery", "manual", "none"],
)
def test_the_section_a_target_aims_at(target: dict[str, str] | None, section: str | None) -> None:
    record = learned(1, "Something learned.", target)
    assert target_section(record.target) == section_of(record) == section
