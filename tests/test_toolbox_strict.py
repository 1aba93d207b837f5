"""The tools' strict schemas (strict tool calling: OpenAI's ``strict: true``, the OpenAI
Agents SDK) and the toolbox answering calls made in that form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_admin.store import BaseMemoryStore
from memory_admin.toolbox import TOOL_NAMES, MemoryToolbox, input_schema, openai_tools

DANA = {"tenant": "acme", "user": "dana"}


def objects(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for item in node for found in objects(item)]
    if not isinstance(node, dict):
        return []
    found = [node] if node.get("type") == "object" else []
    return found + [deeper for value in node.values() for deeper in objects(value)]


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_a_strict_schema_is_closed_and_requires_every_property(name: str) -> None:
    schema = input_schema(name, strict=True)
    assert "default" not in json.dumps(schema).replace('"description"', "")
    for node in objects(schema):
        assert node.get("additionalProperties") is False
        assert "properties" in node, "a free-form object is what strict mode refuses"
        assert node["required"] == list(node["properties"])


def test_only_the_strict_form_changes() -> None:
    assert input_schema("memory_save")["properties"]["payload"]["anyOf"][0]["type"] == "object"
    assert input_schema("memory_save", strict=True)["properties"]["payload"]["anyOf"][0] == {"type": "string"}
    strict = openai_tools(["memory_save"], strict=True)[0]["function"]
    assert strict["strict"] is True and strict["parameters"] == input_schema("memory_save", strict=True)
    assert "strict" not in openai_tools(["memory_save"])[0]["function"]


def test_a_call_in_the_strict_form_saves_its_payload(store: BaseMemoryStore) -> None:
    box = MemoryToolbox(store, DANA)
    payload = {"scenario": "a renewal", "good": "cc legal", "bad": None, "reasoning": None}
    arguments = {
        "content": "On renewals, cc legal.",
        "kind": "fact",
        "key": None,
        "tags": [],
        "supersedes": None,
        "corroborates": None,
        "target": {"primitive": "example", "judgment_domain": "renewals"},
        "payload": json.dumps(payload),
    }
    assert set(arguments) == set(input_schema("memory_save", strict=True)["required"])
    answer = box.call("memory_save", json.dumps(arguments))
    assert answer["ok"], answer
    assert store.get(answer["saved"]["id"]).payload == payload  # type: ignore[union-attr]
    listed = box.call("memory_list", {"kinds": None, "tags": None, "keys": None, "key_match": "exact", "limit": 5})
    assert listed["count"] == 1


@pytest.mark.parametrize("payload", ["[1, 2]", "{not json", '"text"'])
def test_payload_text_that_is_not_a_json_object_is_refused(store: BaseMemoryStore, payload: str) -> None:
    answer = MemoryToolbox(store, DANA).call(
        "memory_save",
        {"content": "x", "target": {"primitive": "example", "judgment_domain": "d"}, "payload": payload},
    )
    assert answer["ok"] is False and answer["error"]["code"] == "invalid_arguments"
    assert "JSON object" in answer["error"]["message"]
