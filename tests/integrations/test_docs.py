"""docs/integrations.md is code a developer pastes: every Python snippet runs as written.

Each framework's section runs top to bottom in one namespace, in a scratch directory (so
``sqlite:///var/memory.sqlite3`` is a fresh file there). The only substitutions are the
models: pydantic-ai's test ``FunctionModel`` and a scripted Agents SDK model stand in for
the hosted ones, so nothing goes to the network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.graph", reason="needs the langgraph extra")
pytest.importorskip("langmem", reason="needs langmem (dev)")
pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
pytest.importorskip("agents", reason="needs the openai-agents extra")

from agents import set_tracing_disabled
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memory_admin.store import RecordListQuery, open_store
from tests.integrations.test_openai_agents import ScriptedModel, say

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
PYDANTIC_MODEL = 'model = "openai:gpt-5.1"  # any pydantic-ai model'
AGENTS_MODEL = 'model="gpt-5.1",'


def sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    found = {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}
    return {title: "\n".join(re.findall(r"```python\n(.*?)```", body, re.S)) for title, body in found.items()}


def run(code: str, **names: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "integrations_doc", **names}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    set_tracing_disabled(True)  # the SDK's traces would go to OpenAI's servers
    (tmp_path / "var").mkdir()
    yield tmp_path
    set_tracing_disabled(False)


def every_record(path: Path) -> list[Any]:
    store = open_store(f"sqlite:///{path}")
    try:
        query = {"search": {"scope": {"tenant": "acme"}, "include_invalidated": True, "limit": 1000}}
        return list(store.iter_records(RecordListQuery.model_validate(query)))
    finally:
        store.close()


def test_every_framework_has_runnable_snippets() -> None:
    code = sections()
    for title in ("LangGraph", "pydantic-ai", "OpenAI Agents SDK"):
        assert code[title], f"{title} shows no Python"
    assert PYDANTIC_MODEL in code["pydantic-ai"] and AGENTS_MODEL in code["OpenAI Agents SDK"]


def test_the_langgraph_section_runs(scratch: Path) -> None:
    run(sections()["LangGraph"])
    records = every_record(scratch / "var" / "memory.sqlite3")
    drinks = [r for r in records if '"drink"' in r.content]
    assert len(drinks) == 2 and sum(r.invalid_at is None for r in drinks) == 1  # the second put superseded
    assert {r.provenance.source for r in records} == {"langgraph"}
    assert any(r.scope == {"agent": "planner", "tenant": "acme", "user": "dana"} for r in records)


def test_the_pydantic_ai_and_agents_sections_share_one_memory(scratch: Path) -> None:
    def save_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(part, ToolReturnPart) for message in messages for part in getattr(message, "parts", [])):
            return ModelResponse(parts=[TextPart("Saved: window seats.")])
        arguments = {"content": "Dana prefers window seats.", "kind": "preference", "key": "seat"}
        return ModelResponse(parts=[ToolCallPart("memory_save", json.dumps(arguments), tool_call_id="1")])

    code = sections()
    pydantic_code = code["pydantic-ai"].replace(PYDANTIC_MODEL, "model = TEST_MODEL")
    first = run(pydantic_code, TEST_MODEL=FunctionModel(save_then_answer))
    assert first["result"].output == "Saved: window seats."
    scripted = ScriptedModel([say("Window seats.")])
    second = run(code["OpenAI Agents SDK"].replace(AGENTS_MODEL, "model=SCRIPTED,"), SCRIPTED=scripted)
    assert second["result"].final_output == "Window seats."
    instructions = scripted.seen[0]["instructions"]
    assert instructions.startswith("You plan Dana's trips.") and "Dana prefers window seats." in instructions
    [record] = every_record(scratch / "var" / "memory.sqlite3")
    assert record.provenance.source == "agent-toolbox" and record.provenance.conversation_id == "c-1"
