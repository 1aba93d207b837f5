"""The authored composition: its fields, its content hash, and reading it from TOML or
JSON with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_admin.composition import AgentComposition, Budgets, CompositionError, load_composition, parse_composition
from memory_admin.errors import MemoryStoreError, MemoryValidationError
from memory_admin.records import BackgroundTarget, ExamplePayload, JudgmentTarget
from tests.support.compositions import example_composition


def test_the_example_file_loads_every_primitive() -> None:
    composition = example_composition()
    assert composition.name == "support-agent"
    assert composition.persona and composition.tone and composition.methodology and composition.mission
    assert composition.background.conventions == {
        "deploy_freeze": "Staging deploys freeze on the last business day of each month."
    }
    assert [j.domain for j in composition.judgments] == ["triage", "billing"]
    triage = composition.judgment("triage")
    assert triage is not None and triage.escalation_triggers == ("A customer reports data loss.",)
    assert triage.examples[0].bad == "Open a new P1 without looking at the status page."
    assert composition.awareness[0].access_method == "https://status.acme.dev"
    assert len(composition.recovery) == 1
    assert composition.manual["refunds"].workflows[0].startswith("Look up the invoice")
    assert composition.budgets == Budgets()
    assert composition.judgment("shipping") is None


def test_names_follow_the_record_targets() -> None:
    """A target's names index the composition without translation."""
    target = BackgroundTarget(section="current_state", key="billing_migration")
    assert target.key in example_composition().background.section(target.section)
    slot = JudgmentTarget(domain="triage", slot="escalation_triggers")
    judgment = example_composition().judgment(slot.domain)
    assert judgment is not None and judgment.slot(slot.slot)
    assert example_composition().judgment("triage").examples[0] == ExamplePayload(  # type: ignore[union-attr]
        scenario="A customer says the dashboard is down for everyone.",
        good="Check the status page, link the open incident, and give the time of the next update.",
        bad="Open a new P1 without looking at the status page.",
        reasoning="Duplicate incidents split the responders' attention.",
    )


# --- the version ---------------------------------------------------------------------


def test_version_is_a_stable_content_hash() -> None:
    """Stores keep it: the same content must hash the same in every process and release."""
    composition = AgentComposition(name="tiny", persona="You help.")
    assert composition.version == "b209cb838548335e2102590b954ac5274a05b00b31115ac5a6d283ac5c3a5e2e"
    assert AgentComposition(name="tiny", persona="You help.").version == composition.version


def test_toml_and_json_of_the_same_content_share_the_version(tmp_path: Path) -> None:
    composition = example_composition()
    path = tmp_path / "agent.json"
    path.write_text(composition.model_dump_json(indent=2), encoding="utf-8")
    again = load_composition(path)
    assert again == composition
    assert again.version == composition.version


@pytest.mark.parametrize(
    "change",
    [
        {"name": "support-agent-2"},
        {"persona": "You are terse."},
        {"recovery": ["Retry once."]},
        {"budgets": {"ceiling": 15_000}},
        {"background": {"conventions": {"deploy_freeze": "Deploys freeze on Fridays."}}},
    ],
    ids=["name", "persona", "recovery", "budget", "background"],
)
def test_any_change_changes_the_version(change: dict[str, Any]) -> None:
    base = example_composition()
    changed = parse_composition({**base.model_dump(), **change})
    assert changed.version != base.version


def test_order_is_content() -> None:
    """Entries render in their order, so reordering them is a new version."""
    one = AgentComposition(name="a", recovery=("Retry once.", "Ask a person."))
    other = AgentComposition(name="a", recovery=("Ask a person.", "Retry once."))
    assert one.version != other.version


def test_a_composition_is_frozen() -> None:
    composition = example_composition()
    with pytest.raises(ValueError, match="frozen"):
        composition.name = "other"  # type: ignore[misc]


# --- errors from data ----------------------------------------------------------------


def problems_of(data: Any) -> list[dict[str, str]]:
    with pytest.raises(CompositionError) as caught:
        parse_composition(data)
    return caught.value.problems


@pytest.mark.parametrize(
    ("data", "loc"),
    [
        ({}, "name"),
        ({"name": " spaced "}, "name"),
        ({"name": "a", "persona": "   "}, "persona"),
        ({"name": "a", "tone": "bell\x07"}, "tone"),
        ({"name": "a", "judgments": [{"heuristics": ["x"]}]}, "judgments.0.domain"),
        ({"name": "a", "judgments": [{"domain": "t", "heuristics": [""]}]}, "judgments.0.heuristics.0"),
        ({"name": "a", "judgments": [{"domain": "t", "examples": [{"scenario": "s"}]}]}, "judgments.0.examples.0.good"),
        ({"name": "a", "awareness": [{"name": "x", "description": "y"}]}, "awareness.0.access_method"),
        ({"name": "a", "background": {"habits": {"k": "v"}}}, "background.habits"),
        ({"name": "a", "background": {"conventions": {"k": 3}}}, "background.conventions.k"),
        ({"name": "a", "budgets": {"judgment": -1}}, "budgets.judgment"),
        ({"name": "a", "budgets": {"ceiling": True}}, "budgets.ceiling"),
        ({"name": "a", "budgets": {"ceiling": "12000"}}, "budgets.ceiling"),
        ({"name": "a", "manual": {"refunds": {"steps": ["x"]}}}, "manual.refunds.steps"),
        ({"name": "a", "colour": "blue"}, "colour"),
    ],
    ids=[
        "no-name",
        "spaced-name",
        "blank-text",
        "control-character",
        "no-domain",
        "blank-heuristic",
        "example-without-good",
        "awareness-without-access",
        "unknown-section",
        "text-not-a-string",
        "negative-budget",
        "boolean-budget",
        "budget-as-text",
        "unknown-manual-section",
        "unknown-field",
    ],
)
def test_each_broken_field_is_named_by_its_path(data: dict[str, Any], loc: str) -> None:
    assert loc in [p["loc"] for p in problems_of(data)]


def test_repeated_domains_and_awareness_names_are_refused() -> None:
    [problem] = problems_of({"name": "a", "judgments": [{"domain": "t"}, {"domain": "u"}, {"domain": "t"}]})
    assert "judgments.2.domain 't' repeats judgments.0.domain" in problem["msg"]
    [problem] = problems_of({"name": "a", "awareness": [{"name": "x", "description": "d", "access_method": "m"}] * 2})
    assert "awareness.1.name 'x' repeats awareness.0.name" in problem["msg"]


def test_not_a_table() -> None:
    with pytest.raises(CompositionError, match="a composition is a table of fields"):
        parse_composition(["name", "a"])  # type: ignore[arg-type]


def test_the_error_is_in_the_validation_family() -> None:
    with pytest.raises(CompositionError) as caught:
        parse_composition({"name": ""})
    error = caught.value
    assert isinstance(error, MemoryValidationError) and isinstance(error, MemoryStoreError)
    assert error.to_dict()["error"] == "composition_error"
    assert error.to_dict()["problems"][0]["loc"] == "name"
    assert "Fix the fields named" in error.message


# --- errors from files ---------------------------------------------------------------


def load_error(path: Path) -> CompositionError:
    with pytest.raises(CompositionError) as caught:
        load_composition(path)
    assert caught.value.path == str(path)
    assert str(path) in caught.value.message
    return caught.value


def test_toml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('name = "a"\npersona = "unclosed\n', encoding="utf-8")
    error = load_error(path)
    assert (error.line, error.column) == (2, 20)
    assert "line 2, column 20: not valid TOML" in error.message


def test_json_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text('{\n  "name": "a",\n  "persona": \n}\n', encoding="utf-8")
    error = load_error(path)
    assert (error.line, error.column) == (4, 1)
    assert error.to_dict()["line"] == 4


def test_a_field_error_from_a_file_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('name = "a"\n\n[[judgments]]\ndomain = "triage"\nheuristics = ["  "]\n', encoding="utf-8")
    error = load_error(path)
    assert error.line is None
    assert [p["loc"] for p in error.problems] == ["judgments.0.heuristics.0"]
    assert "judgments.0.heuristics.0: content must not be blank" in error.message


def test_a_json_file_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(["name"]), encoding="utf-8")
    assert "a composition is a table of fields" in load_error(path).message


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("agent.yaml", b"name: a\n", "ends in .toml or .json"),
        ("agent", b"", "ends in .toml or .json"),
        ("agent.toml", b'name = "a"\npersona = "caf\xe9"\n', "line 2 is not UTF-8"),
    ],
    ids=["yaml", "no-suffix", "latin-1"],
)
def test_files_it_cannot_read(tmp_path: Path, name: str, content: bytes, expected: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert expected in load_error(path).message


def test_a_missing_file_and_a_directory(tmp_path: Path) -> None:
    assert "cannot read the composition file (No such file or directory)" in load_error(tmp_path / "gone.toml").message
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    assert "cannot read the composition file" in load_error(folder).message


def test_a_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_bytes(b'\xef\xbb\xbfname = "a"\n')
    assert load_composition(path).name == "a"
