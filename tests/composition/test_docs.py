"""docs/learnings.md is what a developer pastes: the composition sections' Python runs as
written (top to bottom, from the project's root, where the example file is), and their
TOML is a composition."""

from __future__ import annotations

import re
import tomllib

import pytest

from memory_admin.composition import Overlay, parse_composition
from tests.support.compositions import ROOT

DOC = ROOT / "docs" / "learnings.md"
SECTIONS = ("The composition file", "Tiers", "The overlay", "Attribution: the prompt, line by line")


def section_blocks(language: str) -> str:
    parts = re.split(r"^## (.+)$", DOC.read_text(encoding="utf-8"), flags=re.M)
    found = {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}
    missing = [title for title in SECTIONS if title not in found]
    assert not missing, f"docs/learnings.md lacks the sections {missing}"
    return "\n".join(
        block for title in SECTIONS for block in re.findall(rf"```{language}\n(.*?)```", found[title], re.S)
    )


def test_the_python_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "learnings_doc"}
    exec(compile(section_blocks("python"), str(DOC), "exec"), namespace)
    overlay = namespace["overlay"]
    assert isinstance(overlay, Overlay) and overlay.applied == {"judgment.billing.heuristics": ("mem_01",)}
    assert namespace["line"].record_ids == ("mem_01",)  # type: ignore[attr-defined]


def test_the_toml_is_a_composition() -> None:
    composition = parse_composition(tomllib.loads(section_blocks("toml")))
    assert composition.judgment("triage") is not None
