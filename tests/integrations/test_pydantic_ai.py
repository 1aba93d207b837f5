"""The memory toolset in pydantic-ai, driven by pydantic-ai's own test models (no network)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from memory_admin.integrations.pydantic_ai import AgentMemory
from memory_admin.store import BaseMemoryStore
from memory_admin.toolbox import TOOL_NAMES, MemoryPolicy

DANA = {"tenant": "acme", "user": "dana"}


def returns(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """The tool answers the model has been handed so far."""
    return [
        part.content  # type: ignore[misc]
        for message in messages
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    ]


class Script:
    """A FunctionModel body: each model request gets the next scripted response; it
    keeps the instructions and tool answers it was shown."""

    def __init__(self, *responses: ModelResponse) -> None:
        self.responses = list(responses)
        self.instructions: list[str | None] = []
        self.answers: list[dict[str, Any]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.instructions.append(info.instructions)
        self.answers = returns(messages)
        return self.responses.pop(0)


def test_an_agent_saves_corrects_and_recalls_with_the_toolset(store: BaseMemoryStore) -> None:
    memory = AgentMemory(store, DANA, agent="planner", conversation_id="c1")
    save = {"content": "Dana prefers aisle seats.", "kind": "preference", "key": "seat"}
    script = Script(
        ModelResponse(parts=[ToolCallPart("memory_save", json.dumps(save), tool_call_id="1")]),
        ModelResponse(parts=[ToolCallPart("memory_save", {**save, "content": "Dana prefers window seats."}, "2")]),
        ModelResponse(parts=[TextPart("Noted: window seats.")]),
    )
    agent = Agent(FunctionModel(script), instructions="You book trips.", toolsets=[memory.toolset()])
    result = agent.run_sync("I like window seats now")
    assert result.output == "Noted: window seats."
    first, second = script.answers
    assert first["ok"] and second["ok"] and second["superseded"] == first["saved"]["id"]
    assert "You book trips." in script.instructions[0] and "You have persistent memory" in script.instructions[0]
    assert memory.recalled is not None and memory.recalled.block == ""  # nothing remembered yet

    later = AgentMemory(store, DANA, agent="planner", conversation_id="c2")
    script2 = Script(ModelResponse(parts=[TextPart("Window seat.")]))
    Agent(FunctionModel(script2), toolsets=[later.toolset()]).run_sync("Which seat do I like?")
    assert later.recalled is not None and later.recalled.block
    assert later.recalled.block in (script2.instructions[0] or "")
    assert "Dana prefers window seats." in later.recalled.block and "aisle" not in later.recalled.block


def test_test_model_calls_every_tool_and_nothing_raises(store: BaseMemoryStore) -> None:
    memory = AgentMemory(store, DANA)
    agent = Agent(TestModel(call_tools="all"), toolsets=[memory.toolset()])
    result = agent.run_sync("hello")
    answers = returns(result.all_messages())
    assert {a["ok"] for a in answers} <= {True, False} and len(answers) == len(TOOL_NAMES)
    for answer in answers:  # what the generated arguments could not be is a tool error, never a raise
        assert answer["ok"] or answer["error"]["code"] in ("invalid_arguments", "not_found")


def test_hostile_arguments_come_back_as_tool_errors(store: BaseMemoryStore) -> None:
    memory = AgentMemory(store, DANA)
    hostile = [
        {"content": "x", "scope": {"tenant": "globex"}},
        {"content": "x" * 50_000},
        # (a lone surrogate never reaches a tool here: pydantic-ai's own serialisation of the call refuses it)
        {"content": "", "kind": "secret"},
    ]
    script = Script(
        ModelResponse(parts=[ToolCallPart("memory_save", args, tool_call_id=str(i)) for i, args in enumerate(hostile)]),
        ModelResponse(parts=[TextPart("done")]),
    )
    Agent(FunctionModel(script), toolsets=[memory.toolset()]).run_sync("go")
    assert [a["error"]["code"] for a in script.answers] == ["invalid_arguments"] * len(hostile)
    assert store.search({"scope": {"tenant": "acme"}}) == []


def test_policy_gates(store: BaseMemoryStore) -> None:
    store.write([{"scope": DANA, "kind": "profile", "content": "Dana is vegetarian.", "provenance": {"source": "t"}}])
    off = AgentMemory(store, DANA, policy=MemoryPolicy(enabled=False))
    script = Script(ModelResponse(parts=[TextPart("ok")]))
    Agent(FunctionModel(script), instructions="Base.", toolsets=[off.toolset()]).run_sync("hi")
    assert script.instructions[0] == "Base."
    assert off.tools() == []
    on = AgentMemory(store, DANA)
    script = Script(ModelResponse(parts=[TextPart("ok")]))
    Agent(FunctionModel(script), toolsets=[on.toolset()]).run_sync("what do I eat?")
    assert "Dana is vegetarian." in (script.instructions[0] or "")
