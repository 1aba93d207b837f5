"""docs/learnings.md's store and acting sections run as written, top to bottom, from the
project's root (the composition sections are tests/composition/test_docs.py's)."""

from __future__ import annotations

import re

import pytest

from memory_admin.learning import Composed
from tests.support.compositions import ROOT

DOC = ROOT / "docs" / "learnings.md"
SECTIONS = ("Promotion state in the store", "The gate chain", "Composing an agent")


def test_the_python_runs_as_written(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    parts = re.split(r"^## (.+)$", DOC.read_text(encoding="utf-8"), flags=re.M)
    found = {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}
    code = "\n".join(block for title in SECTIONS for block in re.findall(r"```python\n(.*?)```", found[title], re.S))
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "learnings_doc"}
    exec(compile(code, str(DOC), "exec"), namespace)
    composed = namespace["composed"]
    assert isinstance(composed, Composed) and namespace["learned"].record_ids == (namespace["lesson"].id,)  # type: ignore[attr-defined]
    assert namespace["lesson"].id not in namespace["recall"].report.record_ids  # type: ignore[attr-defined]
    assert "Gate chain over" in capsys.readouterr().out
