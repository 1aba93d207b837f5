"""The memory tools in the OpenAI Agents SDK: strict function tools and recall as
dynamic instructions, driven by a scripted model (the SDK's Model interface, no network)."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs the openai-agents extra")

from agents import Agent, ModelSettings, RunConfig, Runner
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.strict_schema import ensure_strict_json_schema
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from memory_admin.integrations.openai_agents import AgentMemory
from memory_admin.store import BaseMemoryStore
from memory_admin.toolbox import TOOL_NAMES, MemoryPolicy, input_schema

DANA = {"tenant": "acme", "user": "dana"}


def call(name: str, arguments: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        arguments=json.dumps(arguments), call_id=call_id, name=name, type="function_call", id=f"fc_{call_id}"
    )


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        role="assistant",
        status="completed",
        type="message",
    )


class ScriptedModel(Model):
    """Answers each model call with the next scripted output, and keeps what it was shown."""

    def __init__(self, *turns: list[Any]) -> None:
        self.turns = list(turns)
        self.seen: list[dict[str, Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        self.seen.append({"instructions": system_instructions, "input": copy.deepcopy(input), "tools": tools})
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the scripted model does not stream")


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_strict_schema_passes_the_sdks_strict_mode_unchanged(name: str) -> None:
    schema = input_schema(name, strict=True)
    assert ensure_strict_json_schema(copy.deepcopy(schema)) == schema


def test_the_free_form_payload_is_what_strict_mode_refused() -> None:
    with pytest.raises(Exception, match="additionalProperties"):
        ensure_strict_json_schema(copy.deepcopy(input_schema("memory_save")))


@pytest.mark.asyncio
async def test_an_agent_saves_corrects_and_recalls_through_the_sdk(store: BaseMemoryStore) -> None:
    memory = AgentMemory(store, DANA, agent="planner", conversation_id="c1")
    tools = memory.tools()
    assert [t.name for t in tools] == list(TOOL_NAMES) and all(t.strict_json_schema for t in tools)
    save = {"content": "Dana prefers aisle seats.", "kind": "preference", "key": "seat", "tags": [],
            "supersedes": None, "target": None, "payload": None}  # fmt: skip
    model = ScriptedModel(
        [call("memory_save", save, "1")],
        [call("memory_save", {**save, "content": "Dana prefers window seats."}, "2")],
        [say("Noted: window seats.")],
    )
    agent = Agent(name="planner", instructions=memory.instructions("You book trips."), tools=tools, model=model)
    result = await Runner.run(agent, "I like window seats now", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "Noted: window seats."
    outputs = [item for item in model.seen[2]["input"] if item.get("type") == "function_call_output"]
    answers = [json.loads(item["output"]) for item in outputs]
    assert [a["ok"] for a in answers] == [True, True] and answers[1]["superseded"] == answers[0]["saved"]["id"]
    first = model.seen[0]["instructions"]
    assert first.startswith("You book trips.") and "You have persistent memory" in first
    assert memory.recalled is not None and memory.recalled.block == ""  # nothing remembered yet: no block

    # the next conversation starts with the recall block in its instructions
    later = AgentMemory(store, DANA, agent="planner", conversation_id="c2")
    model2 = ScriptedModel([say("Window seat it is.")])
    agent2 = Agent(name="planner", instructions=later.instructions("Trips."), tools=later.tools(), model=model2)
    await Runner.run(agent2, "Which seat do I like?", run_config=RunConfig(tracing_disabled=True))
    block = model2.seen[0]["instructions"]
    assert block.endswith(later.recalled.block if later.recalled else "?") and "\n\n<memory>\n" in block
    assert "Dana prefers window seats." in block and "aisle" not in block
    assert later.recalled is not None and later.recalled.report.count == 1


@pytest.mark.asyncio
async def test_bad_arguments_and_hostile_input_come_back_as_tool_errors(store: BaseMemoryStore) -> None:
    memory = AgentMemory(store, DANA)
    save = next(t for t in memory.tools() if t.name == "memory_save")
    hostile = [
        "{not json",
        json.dumps({"content": "x", "scope": {"tenant": "globex"}}),
        json.dumps({"content": "x" * 50_000}),
        json.dumps({"content": "fine", "payload": "[1, 2]"}),
        '{"content": "' + "\\ud800" + '"}',
    ]
    for arguments in hostile:
        answer = json.loads(await save.on_invoke_tool(None, arguments))  # type: ignore[arg-type]
        assert answer["ok"] is False and answer["error"]["code"] == "invalid_arguments", arguments
    assert store.search({"scope": {"tenant": "acme"}}) == []
    good = json.dumps({"content": "Dana's café order: ½ flat white ☕", "payload": None, "tags": ["café"]})
    answer = json.loads(await save.on_invoke_tool(None, good))  # type: ignore[arg-type]
    assert answer["ok"] and answer["saved"]["content"] == "Dana's café order: ½ flat white ☕"


@pytest.mark.asyncio
async def test_a_policy_gate_keeps_tools_and_recall_out(store: BaseMemoryStore) -> None:
    store.write([{"scope": DANA, "kind": "profile", "content": "Dana is vegetarian.", "provenance": {"source": "t"}}])
    off = AgentMemory(store, DANA, policy=MemoryPolicy(incognito=True))
    assert off.tools() == []
    model = ScriptedModel([say("ok")])
    agent = Agent(name="a", instructions=off.instructions("Base."), tools=off.tools(), model=model)
    await Runner.run(agent, "hi", run_config=RunConfig(tracing_disabled=True))
    assert model.seen[0]["instructions"] == "Base."
    no_reads = AgentMemory(store, DANA, policy=MemoryPolicy(agent_reads=False))
    assert [t.name for t in no_reads.tools()] == ["memory_save", "memory_invalidate"]
    text = await no_reads.instructions("Base.")(None, None)  # type: ignore[arg-type]
    assert "vegetarian" not in text and "You have persistent memory" in text
