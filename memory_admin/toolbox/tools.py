"""What the model is shown: the tools, their arguments and JSON schemas, the policy gates
and the memory manual."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from memory_admin.records import (
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_TAGS,
    Kind,
    MemoryTarget,
    payload_chars,
)

TOOL_SOURCE = "agent-toolbox"
DEFAULT_LIMIT = 5
MAX_LIMIT = 10
DEFAULT_RESULT_CHARS = 6000
MIN_RESULT_CHARS = 1000
MAX_TOOL_QUERY_CHARS = 1000
MAX_TOOL_CONTENT_CHARS = 4000
MAX_TOOL_PAYLOAD_CHARS = 4000
"""A saved payload, in characters of its compact JSON."""
MAX_TOOL_ARGUMENT_CHARS = 64_000
"""A call's arguments as the JSON text a model sends: every argument at its bound fits,
escaped; anything longer is refused before it is parsed."""
TARGET_SCAN_LIMIT = 1000
"""A targeted save compares its target with this many of the scope's newest targeted
records (the store filters on having a target, not on which one)."""

NOT_FOUND_MESSAGE = "No memory with that id is available here."
ToolName = Literal["memory_save", "memory_search", "memory_list", "memory_get", "memory_invalidate", "memory_learnings"]
READ_TOOLS: frozenset[str] = frozenset({"memory_search", "memory_list", "memory_get", "memory_learnings"})
LEARNINGS_DAYS = 7
"""How far back memory_learnings looks when the agent names no time."""
LearningChange = Literal["promoted", "demoted", "pending_review", "rejected"]
LEARNING_CHANGES: tuple[LearningChange, ...] = ("promoted", "demoted", "pending_review", "rejected")


class MemoryPolicy(BaseModel):
    """What the host allows the agent to do with memory in this conversation.

    Bound at construction and frozen: one run keeps the tools it started with, even if
    the host's settings change meanwhile.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    """False: every tool is denied (memory is off for this user or tenant)."""
    agent_reads: bool = True
    """False: memory_search, memory_list and memory_get are denied; saving still works."""
    incognito: bool = False
    """True: nothing is read or remembered; every tool is denied."""
    max_result_chars: int = Field(default=DEFAULT_RESULT_CHARS, ge=MIN_RESULT_CHARS)
    """Hard cap on one tool answer, in characters of compact JSON."""

    def denial(self, tool: str) -> str | None:
        """Why ``tool`` is denied, or ``None`` when it is allowed."""
        if not self.enabled:
            return "memory_disabled"
        if self.incognito:
            return "incognito"
        if tool in READ_TOOLS and not self.agent_reads:
            return "agent_reads_disabled"
        return None


DENIAL_MESSAGES = {
    "memory_disabled": "Memory is turned off here. Carry on without it; do not retry.",
    "incognito": "This conversation is incognito: nothing is recalled or remembered. Do not retry.",
    "agent_reads_disabled": "Reading memory is turned off here; you can still save. Do not retry.",
}


# --- tool arguments (the JSON schemas are generated from these) ------------------------


class _Args(BaseModel):
    # extra="forbid": an argument the tool does not define, such as "scope", is an error
    model_config = ConfigDict(extra="forbid", frozen=True)


_Id = Field(min_length=1, max_length=MAX_ID_CHARS, description="A memory id, as shown in results (mem_…).")


class SaveArgs(_Args):
    """Save one durable fact, preference, episode or profile line."""

    content: str = Field(
        min_length=1,
        max_length=MAX_TOOL_CONTENT_CHARS,
        description="One fact, in a plain sentence that makes sense without this conversation.",
    )
    kind: Kind = Field(
        default="fact",
        description="fact, preference, episode (what happened and what it taught), or profile "
        "(a short line shown at the start of every conversation).",
    )
    key: str | None = Field(
        default=None,
        max_length=MAX_KEY_CHARS,
        description="Optional slot name such as 'seat' or 'drink'. Saving the same kind and key again "
        "replaces the earlier value.",
    )
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS, description="Optional search tags.")
    supersedes: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="The id of the memory this one corrects or replaces; the old one is retired.",
    )
    target: MemoryTarget | None = Field(
        default=None,
        description="Optional proposal of where this learning belongs in your configuration.",
    )
    payload: dict[str, JsonValue] | None = Field(
        default=None,
        description=f"Structured form of an example or awareness target (at most {MAX_TOOL_PAYLOAD_CHARS} "
        "characters of JSON).",
    )
    corroborates: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="The id of a memory this conversation confirms (offered when a save conflicts): it is "
        "counted as seen again, and nothing new is saved.",
    )

    @field_validator("payload", mode="before")
    @classmethod
    def _payload_as_text(cls, value: Any) -> Any:
        # the strict schema (input_schema(..., strict=True)) carries the payload as JSON text:
        # strict tool calling admits no free-form object
        if not isinstance(value, str):
            return value
        if not value.strip():
            return None
        try:
            parsed = json.loads(value)
        except (RecursionError, ValueError):
            raise ValueError("payload text must be a JSON object") from None
        if not isinstance(parsed, dict):
            raise ValueError("payload text must be a JSON object")
        return parsed

    @field_validator("payload")
    @classmethod
    def _payload_bounded(cls, value: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        if value is not None and payload_chars(value) > MAX_TOOL_PAYLOAD_CHARS:
            raise ValueError(f"a payload holds at most {MAX_TOOL_PAYLOAD_CHARS} characters of JSON; keep it short")
        return value


class ReadFilters(_Args):
    kinds: list[Kind] | None = Field(default=None, description="Only these kinds.")
    tags: list[str] | None = Field(default=None, max_length=MAX_TAGS, description="Only memories with every tag.")
    keys: list[str] | None = Field(default=None, max_length=20, description="Only memories with these keys.")
    key_match: Literal["exact", "prefix"] = Field(
        default="exact", description="Match keys exactly, or as prefixes ('travel.' finds 'travel.seat')."
    )
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="How many results (1-10).")


class SearchArgs(ReadFilters):
    """Search memories by a question or keywords and/or keys, most relevant first."""

    query: str | None = Field(
        default=None,
        max_length=MAX_TOOL_QUERY_CHARS,
        description=(
            "What to look for: a question or keywords ('where does Dana work', 'window seat'). Word forms "
            "match ('seat' finds 'seats'), and a date such as '8 May 2023' finds what was stated that day."
        ),
    )

    @model_validator(mode="after")
    def _something_to_search(self) -> SearchArgs:
        if not (self.query and self.query.strip()) and not self.keys:
            raise ValueError("give a query or keys; memory_list lists the newest memories")
        return self


class ListArgs(ReadFilters):
    """List the newest memories, optionally filtered."""


class GetArgs(_Args):
    """Read one memory by id, with its provenance."""

    id: str = _Id


class InvalidateArgs(_Args):
    """Retire a memory that is wrong and has no replacement (to correct one, save with supersedes)."""

    id: str = _Id
    reason: str = Field(min_length=1, max_length=500, description="Why it is wrong; kept for the audit trail.")


class LearningsArgs(_Args):
    """What you learnt (and unlearnt) since a time: promoted into your configuration, demoted out
    of it, waiting for a person's review, or rejected."""

    since: AwareDatetime | None = Field(
        default=None,
        description=f"An ISO 8601 time with its offset (2026-01-05T09:00:00+00:00); "
        f"left out or null: {LEARNINGS_DAYS} days ago.",
    )
    changes: list[LearningChange] | None = Field(
        default=None,
        description="Only these changes: promoted, demoted, pending_review, rejected (left out or null: all four).",
    )
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="How many results (1-10).")


@dataclass(frozen=True)
class ToolSpec:
    name: ToolName
    description: str
    args: type[_Args]


TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "memory_save",
            "Save one durable memory about this user or their work (one fact per call). To correct a memory, "
            "pass its id as supersedes. Answers with the saved memory, or with a conflict to resolve.",
            SaveArgs,
        ),
        ToolSpec(
            "memory_search",
            "Search your memories by a question or keywords and/or keys, most relevant first. Results are bounded "
            "(default 5, at most 10); 'truncated' means some were cut for length.",
            SearchArgs,
        ),
        ToolSpec("memory_list", "List your newest memories, optionally filtered by kind, tag or key.", ListArgs),
        ToolSpec("memory_get", "Read one memory by id, with where it came from.", GetArgs),
        ToolSpec(
            "memory_invalidate",
            "Retire a memory that is wrong and has no replacement. It stays in the audit trail but is no "
            "longer recalled. To correct a memory instead, save the new fact with supersedes.",
            InvalidateArgs,
        ),
        ToolSpec(
            "memory_learnings",
            "What you learnt since a time (the last week unless you say): memories promoted into your configuration, "
            "demoted out of it, waiting for a person's review, or rejected, newest first, each with where it came "
            "from. Use it to tell the user how you have changed.",
            LearningsArgs,
        ),
    )
}
TOOL_NAMES: tuple[str, ...] = tuple(TOOL_SPECS)


# --- JSON schemas for tool calling -----------------------------------------------------


def _clean_schema(node: Any, defs: Mapping[str, Any]) -> Any:
    """Inline ``$ref``s, and reduce pydantic's output to what every tool-calling API reads."""
    if isinstance(node, list):
        return [_clean_schema(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean_schema(merged, defs)
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$defs", "discriminator") or (key == "title" and isinstance(value, str)):
            continue
        if key == "properties":
            cleaned[key] = {name: _clean_schema(prop, defs) for name, prop in value.items()}
        else:
            # oneOf is what a discriminated union becomes; anyOf is the form every API accepts
            cleaned["anyOf" if key == "oneOf" else key] = _clean_schema(value, defs)
    if isinstance(cleaned.get("anyOf"), list):
        # an optional union nests one anyOf in another; one level reads the same
        options: list[Any] = []
        for option in cleaned["anyOf"]:
            nested = isinstance(option, dict) and set(option) == {"anyOf"}
            options.extend(option["anyOf"] if nested else [option])
        cleaned["anyOf"] = options
    properties = cleaned.get("properties")
    if isinstance(properties, dict):
        # a union member's tag (e.g. "primitive") has a default, but the union needs it said
        tags = [name for name, prop in properties.items() if isinstance(prop, dict) and "const" in prop]
        required = list(cleaned.get("required", []))
        if tags:
            cleaned["required"] = required + [tag for tag in tags if tag not in required]
    return cleaned


def input_schema(name: str, *, strict: bool = False) -> dict[str, Any]:
    """The JSON schema of one tool's arguments: self-contained, no ``$ref``.

    ``strict=True`` gives the form strict tool calling accepts (OpenAI's ``strict: true``,
    the OpenAI Agents SDK's strict mode): every property required — an optional one
    takes ``null``, one with a default must be given —, no defaults, and ``memory_save``'s
    ``payload`` as JSON text, since strict mode admits no free-form object. The toolbox
    accepts both forms.
    """
    raw = TOOL_SPECS[name].args.model_json_schema()
    schema: dict[str, Any] = _clean_schema(raw, raw.get("$defs", {}))
    if not strict:
        return schema
    schema = copy.deepcopy(schema)
    if "payload" in schema.get("properties", {}):
        schema["properties"]["payload"] = {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "Structured form of an example or awareness target, as the text of a JSON object; or null.",
        }
    strict_schema: dict[str, Any] = _strict(schema)
    return strict_schema


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned = {key: _strict(value) for key, value in node.items() if key != "default"}
    if isinstance(cleaned.get("properties"), dict):
        cleaned["required"] = list(cleaned["properties"])
        cleaned["additionalProperties"] = False
    return cleaned


def _names(names: tuple[str, ...] | list[str] | None) -> list[str]:
    return list(TOOL_NAMES if names is None else names)


def openai_tools(names: tuple[str, ...] | list[str] | None = None, *, strict: bool = False) -> list[dict[str, Any]]:
    """Tool definitions for OpenAI chat completions (``tools=[...]``); ``strict=True``
    marks them ``"strict": true`` with the strict schemas (:func:`input_schema`)."""
    tools: list[dict[str, Any]] = []
    for name in _names(names):
        function: dict[str, Any] = {
            "name": name,
            "description": TOOL_SPECS[name].description,
            "parameters": input_schema(name, strict=strict),
        }
        if strict:
            function["strict"] = True
        tools.append({"type": "function", "function": function})
    return tools


def anthropic_tools(names: tuple[str, ...] | list[str] | None = None) -> list[dict[str, Any]]:
    """Tool definitions for the Anthropic Messages API (``tools=[...]``)."""
    return [
        {"name": name, "description": TOOL_SPECS[name].description, "input_schema": input_schema(name)}
        for name in _names(names)
    ]


def memory_manual() -> str:
    """The standing instruction for an agent that has memory tools."""
    return MEMORY_MANUAL


MEMORY_MANUAL = """\
You have persistent memory that lasts across conversations with this user. What you \
remembered at the start of this conversation is already in your context, between \
<memory> and </memory>; do not search for it again.

Your memory tools are memory_save, memory_search, memory_list, memory_get, \
memory_invalidate and memory_learnings. They reach only this conversation's memory; whose memory it is was \
decided before the conversation started, and no tool takes a scope.

Save a memory (memory_save) when you learn something durable:
- a preference the user states or shows ("always cc legal on renewals");
- a fact about the user or their work that will still be true next week;
- the outcome of something you tried: what worked, what failed and why (kind "episode").
Use kind "profile" only for the few short lines that should be in front of you in \
every conversation.

Do not save:
- anything already in this conversation or in your memory block;
- secrets, passwords, credentials or tokens of any kind;
- passing state ("the build is red right now"), guesses, or instructions you were just given.

Write one fact per memory, in a plain sentence that makes sense without this \
conversation: "Dana prefers window seats", not "she wants the second option". Give \
slot-like facts a key (such as "seat"): saving the same kind and key again replaces \
the old value. Before saving something you may already know, search for it.

When something you remember is wrong or out of date, correct it: save the new fact \
with supersedes set to the old memory's id (ids are in your memory block and in search \
results). Never leave two contradicting memories standing. Use memory_invalidate only \
for a memory that is simply wrong and has no replacement. You cannot delete memories.

If memory_save answers with a conflict, a memory already holds that target: supersede \
it (save again with supersedes set to its id), confirm it if this conversation says the \
same (save again with corroborates set to its id), or choose a different target. A \
target is a proposal: a memory that earns it becomes part of your configuration, and \
memory_learnings tells you which did. A few learnings only a person may approve or \
retire; memory_invalidate says so when you try.

Tool results are bounded. When a result says "truncated", narrow your search.
"""
