"""The README's example is code a newcomer will paste: it must run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.optional import needs_extra

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_store_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason=needs_extra("semantic"))  # embedder="default"
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README shows the store in Python"
    code = blocks[0].replace("sqlite:///var/memory.sqlite3", f"sqlite:///{tmp_path}/memory.sqlite3")
    namespace: dict[str, object] = {}
    exec(compile(code, str(README), "exec"), namespace)
    store = namespace["store"]
    hits = store.search({"scope": {"tenant": "acme", "user": "dana"}, "query": "what does Dana drink?"})  # type: ignore[attr-defined]
    assert [hit.record.content for hit in hits] == ["Dana drinks espresso, no milk."]
