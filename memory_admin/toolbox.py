"""The agent's memory tools: save, search, list, get and invalidate, bound to one scope.

:class:`MemoryToolbox` is built by the host for one conversation, with the scope the
host derives from who the conversation is for. The model never names a scope: no tool
takes one, and an argument the tool does not define (``scope`` included) is a
validation error, not silently dropped. What the model can reach:

* **writes** go to exactly the bound scope, with provenance filled in by the toolbox
  (source ``agent-toolbox``, the agent as author, the conversation id);
* **reads** use *visible* match: the bound scope's records, records shared above it
  (``{tenant}``), and — with ``agent`` — that agent's private records; never a
  sibling's (another user's) and never another agent's. This is the recall block's
  view too (:func:`memory_admin.recall.read_view`), so what an agent saves is what it
  recalls. Invalidated and expired records are invisible to the agent.

Every tool answers with a JSON-serialisable dict, ``{"ok": true, ...}`` or
``{"ok": false, "error": {"code": ..., "message": ...}}``; nothing raises into the
agent loop, store errors included. Read results are bounded: ``limit`` defaults to 5
and may not exceed 10, and the whole answer stays under the policy's character cap
(measured on compact JSON) with ``truncated``/``omitted`` saying what was cut.

``memory_get`` answers a missing, deleted, foreign-scope, invalidated or expired id
with one byte-identical not-found, so the agent learns nothing about records it may
not see. A second ``memory_save`` with the same target in the same scope returns a
conflict envelope (supersede the holder, or choose another target) instead of a
duplicate. Policy gates (memory disabled, incognito, agent reads disabled) deny
before any storage call. There is no delete tool: forgetting is a host operation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine, Generator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from memory_admin.errors import (
    MemoryBusyError,
    MemoryConflictError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryScopeError,
    MemoryStoreError,
    MemoryValidationError,
)
from memory_admin.recall import read_view
from memory_admin.records import (
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_TAGS,
    Kind,
    MemoryRecord,
    MemorySearchQuery,
    MemoryTarget,
    MemoryWriteInput,
    Provenance,
    utc_now,
    validation_problems,
)
from memory_admin.scope import Scope, ScopeMatch, canonical_scope, scope_matches, visible_to_agent
from memory_admin.store.protocol import MemoryStore

log = logging.getLogger(__name__)

TOOL_SOURCE = "agent-toolbox"
DEFAULT_LIMIT = 5
MAX_LIMIT = 10
DEFAULT_RESULT_CHARS = 6000
MIN_RESULT_CHARS = 1000
MAX_TOOL_QUERY_CHARS = 1000
MAX_TOOL_CONTENT_CHARS = 4000
TARGET_SCAN_LIMIT = 1000
"""A targeted save compares its target with this many of the scope's newest targeted
records (the store filters on having a target, not on which one)."""

NOT_FOUND_MESSAGE = "No memory with that id is available here."
ToolName = Literal["memory_save", "memory_search", "memory_list", "memory_get", "memory_invalidate"]
READ_TOOLS: frozenset[str] = frozenset({"memory_search", "memory_list", "memory_get"})


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


_DENIAL_MESSAGES = {
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
        default=None, description="Structured form of an example or awareness target."
    )


class _Filters(_Args):
    kinds: list[Kind] | None = Field(default=None, description="Only these kinds.")
    tags: list[str] | None = Field(default=None, max_length=MAX_TAGS, description="Only memories with every tag.")
    keys: list[str] | None = Field(default=None, max_length=20, description="Only memories with these keys.")
    key_match: Literal["exact", "prefix"] = Field(
        default="exact", description="Match keys exactly, or as prefixes ('travel.' finds 'travel.seat')."
    )
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="How many results (1-10).")


class SearchArgs(_Filters):
    """Search memories by keywords and/or keys, most relevant first."""

    query: str | None = Field(
        default=None,
        max_length=MAX_TOOL_QUERY_CHARS,
        description="Keywords to look for (whole words; no stemming: 'seat' does not find 'seats').",
    )

    @model_validator(mode="after")
    def _something_to_search(self) -> SearchArgs:
        if not (self.query and self.query.strip()) and not self.keys:
            raise ValueError("give a query or keys; memory_list lists the newest memories")
        return self


class ListArgs(_Filters):
    """List the newest memories, optionally filtered."""


class GetArgs(_Args):
    """Read one memory by id, with its provenance."""

    id: str = _Id


class InvalidateArgs(_Args):
    """Retire a memory that is wrong and has no replacement (to correct one, save with supersedes)."""

    id: str = _Id
    reason: str = Field(min_length=1, max_length=500, description="Why it is wrong; kept for the audit trail.")


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
            "Search your memories by keywords and/or keys, most relevant first. Results are bounded "
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


def input_schema(name: str) -> dict[str, Any]:
    """The JSON schema of one tool's arguments: self-contained, no ``$ref``."""
    raw = TOOL_SPECS[name].args.model_json_schema()
    schema: dict[str, Any] = _clean_schema(raw, raw.get("$defs", {}))
    return schema


def _names(names: tuple[str, ...] | list[str] | None) -> list[str]:
    return list(TOOL_NAMES if names is None else names)


def openai_tools(names: tuple[str, ...] | list[str] | None = None) -> list[dict[str, Any]]:
    """Tool definitions for OpenAI chat completions (``tools=[...]``)."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": TOOL_SPECS[name].description,
                "parameters": input_schema(name),
            },
        }
        for name in _names(names)
    ]


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

Your memory tools are memory_save, memory_search, memory_list, memory_get and \
memory_invalidate. They reach only this conversation's memory; whose memory it is was \
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
it (save again with supersedes set to its id) or choose a different target.

Tool results are bounded. When a result says "truncated", narrow your search.
"""


# --- results -------------------------------------------------------------------------


def dumps(result: Mapping[str, Any]) -> str:
    """A tool answer as compact JSON: the form the character cap is measured on."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def tool_error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, **extra}}


def not_found() -> dict[str, Any]:
    """The one answer for every id the agent may not see: it never echoes the id."""
    return tool_error("not_found", NOT_FOUND_MESSAGE)


def _fits(result: Mapping[str, Any], cap: int) -> bool:
    return len(dumps(result)) <= cap


def _clip_item(item: dict[str, Any], envelope: Callable[[dict[str, Any]], dict[str, Any]], cap: int) -> dict[str, Any]:
    """``item`` with its content (and if need be its bulky fields) cut to fit ``cap``."""
    content = str(item.get("content", ""))
    for dropped in ((), ("payload",), ("payload", "tags", "target")):
        base = {k: v for k, v in item.items() if k not in dropped}
        base["clipped"] = True
        if dropped:
            base["omitted_fields"] = list(dropped)
        if not _fits(envelope({**base, "content": "…"}), cap):
            continue
        low, high = 0, len(content)  # the longest prefix that fits
        while low < high:
            middle = (low + high + 1) // 2
            if _fits(envelope({**base, "content": content[:middle] + "…"}), cap):
                low = middle
            else:
                high = middle - 1
        return {**base, "content": content[:low] + "…"}
    return {"id": item.get("id"), "clipped": True, "omitted_fields": sorted(set(item) - {"id"})}


def bounded_results(items: list[dict[str, Any]], cap: int) -> dict[str, Any]:
    """``{"ok", "results", "count", "truncated", "omitted"}`` no longer than ``cap``.

    Items are kept in order while they fit; the first that does not ends the list (a
    result never skips a better match to show a worse one). A single item too long on
    its own is shown clipped.
    """

    def envelope(kept: list[dict[str, Any]]) -> dict[str, Any]:
        # measured with the longest flag value and the largest count these can take,
        # so the final answer is never longer than what was measured
        return {"ok": True, "results": kept, "count": len(kept), "truncated": False, "omitted": len(items)}

    kept: list[dict[str, Any]] = []
    for item in items:
        if _fits(envelope([*kept, item]), cap):
            kept.append(item)
            continue
        if not kept:
            kept.append(_clip_item(item, lambda it: envelope([it]), cap))
        break
    clipped = any(item.get("clipped") for item in kept)
    omitted = len(items) - len(kept)
    return {"ok": True, "results": kept, "count": len(kept), "truncated": bool(omitted) or clipped, "omitted": omitted}


def project(record: MemoryRecord, bound: Scope, *, full: bool = False) -> dict[str, Any]:
    """What the agent sees of a record. Scope values stay with the host; ``shared`` says
    whether the record lives above this conversation's scope (readable, not writable)."""
    item: dict[str, Any] = {
        "id": record.id,
        "kind": record.kind,
        "content": record.content,
        "saved_at": record.created_at.isoformat(),
        "shared": record.scope != bound,
    }
    if record.key is not None:
        item["key"] = record.key
    if record.tags:
        item["tags"] = list(record.tags)
    if record.target is not None:
        item["target"] = record.target.model_dump(mode="json")
    if full:
        if record.payload is not None:
            item["payload"] = record.payload
        if record.supersedes is not None:
            item["supersedes"] = record.supersedes
        if record.expires_at is not None:
            item["expires_at"] = record.expires_at.isoformat()
        item["provenance"] = record.provenance.model_dump(mode="json", exclude_none=True)
    return item


# --- the toolbox ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Op:
    """One store call a tool needs; the sync and async dispatchers run it."""

    method: Literal["get", "search", "write", "invalidate"]
    args: tuple[Any, ...]
    quiet: bool = False  # a host-side lookup, not an agent search: no search event


_Steps = Generator[_Op, Any, dict[str, Any]]


class MemoryToolbox:
    """The five memory tools for one conversation, bound to one scope.

    ``scope`` is where saves go and what reads see (with visible match, the records
    shared above it too); ``agent`` is the author of saves and applies the agent
    convention to reads; ``conversation_id`` goes into every save's provenance.
    ``policy`` gates the tools. ``clock`` decides what "expired" means for
    ``memory_get`` (defaults to the current time; tests pass the store's clock).
    Nothing touches the store until a tool is called.
    """

    def __init__(
        self,
        store: MemoryStore,
        scope: Mapping[str, str],
        *,
        agent: str | None = None,
        conversation_id: str | None = None,
        policy: MemoryPolicy | None = None,
        scope_match: ScopeMatch = "visible",
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.scope: Scope = canonical_scope(scope)
        self.agent = agent
        self.conversation_id = conversation_id
        self.policy = policy or MemoryPolicy()
        self.scope_match: ScopeMatch = scope_match
        self.view: Scope = read_view(self.scope, agent, scope_match)
        self.provenance = Provenance(source=TOOL_SOURCE, author=agent, conversation_id=conversation_id)
        self._clock = clock

    # --- what the host hands the model ---------------------------------------------

    def allowed_tools(self) -> list[str]:
        """The tools this policy allows, in a stable order (none when memory is off)."""
        return [name for name in TOOL_NAMES if self.policy.denial(name) is None]

    def openai_tools(self) -> list[dict[str, Any]]:
        return openai_tools(self.allowed_tools())

    def anthropic_tools(self) -> list[dict[str, Any]]:
        return anthropic_tools(self.allowed_tools())

    def manual(self) -> str:
        return memory_manual()

    # --- dispatch --------------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
        """Run tool ``name`` with the model's ``arguments`` (a dict, or the JSON string
        some APIs hand over). Always returns a JSON-serialisable dict; never raises."""
        steps = self._start(name, arguments)
        if isinstance(steps, dict):
            return steps
        try:
            op = next(steps)
            while True:
                op = steps.send(self._run(op))
        except StopIteration as done:
            result: dict[str, Any] = done.value
            return result
        except Exception as exc:  # nothing escapes into the agent loop
            return self._failure(name, exc)

    async def acall(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
        """The async twin of :meth:`call`, through the store's async methods."""
        steps = self._start(name, arguments)
        if isinstance(steps, dict):
            return steps
        try:
            op = next(steps)
            while True:
                op = steps.send(await self._arun(op))
        except StopIteration as done:
            result: dict[str, Any] = done.value
            return result
        except Exception as exc:
            return self._failure(name, exc)

    def _start(self, name: str, arguments: Mapping[str, Any] | str | None) -> _Steps | dict[str, Any]:
        spec = TOOL_SPECS.get(name)
        if spec is None:
            return tool_error("unknown_tool", f"There is no tool {name!r}.", tools=list(TOOL_NAMES))
        denial = self.policy.denial(name)
        if denial is not None:
            return tool_error("policy_denied", _DENIAL_MESSAGES[denial], reason=denial)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return tool_error("invalid_arguments", f"Arguments are not valid JSON ({exc.msg}).")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return tool_error("invalid_arguments", "Arguments must be a JSON object.")
        try:
            args = spec.args.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = validation_problems(exc)
            summary = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems[:5])
            return tool_error("invalid_arguments", f"Invalid arguments for {name}: {summary}", problems=problems)
        handler: Callable[[Any], _Steps] = getattr(self, f"_{name}")
        return handler(args)

    def _run(self, op: _Op) -> Any:
        if op.method == "search" and op.quiet:
            return self.store.search(*op.args, emit_event=False)
        return getattr(self.store, op.method)(*op.args)

    async def _arun(self, op: _Op) -> Any:
        if op.method == "search" and op.quiet:
            return await self.store.asearch(*op.args, emit_event=False)
        method: Callable[..., Coroutine[Any, Any, Any]] = getattr(self.store, "a" + op.method)
        return await method(*op.args)

    def _failure(self, name: str, exc: Exception) -> dict[str, Any]:
        if isinstance(exc, MemoryNotFoundError | MemoryScopeError):
            return not_found()  # never say whether the id exists elsewhere
        if isinstance(exc, MemoryValidationError):
            return tool_error("invalid_arguments", exc.message, problems=exc.problems)
        if isinstance(exc, ValidationError):  # a value the store's own models refuse
            problems = validation_problems(exc)
            summary = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems)
            return tool_error("invalid_arguments", summary, problems=problems)
        if isinstance(exc, MemoryLimitError):
            return tool_error("too_large", exc.message)
        if isinstance(exc, MemoryConflictError):
            return tool_error("conflict", exc.message)
        if isinstance(exc, MemoryBusyError):
            return tool_error("busy", "Memory is busy right now; try again in a moment.", retryable=True)
        if isinstance(exc, MemoryStoreError):
            # corrupt rows, schema trouble: the host must see the details, the model must not
            log.error("memory tool %s failed: %s", name, exc.message, extra={"memory_error": exc.to_dict()})
            return tool_error("storage_error", "Memory could not be read or written; carry on without it.")
        log.exception("memory tool %s failed unexpectedly", name)
        return tool_error("internal_error", "The memory tool failed; carry on without it.")

    # --- reading helpers ---------------------------------------------------------------

    def _visible(self, record: MemoryRecord | None) -> MemoryRecord | None:
        """``record`` if the agent may see it: in its view, its agent's or shared, live."""
        if record is None:
            return None
        if not scope_matches(record.scope, self.view, self.scope_match):
            return None
        if not visible_to_agent(record.scope, self.agent) or not record.is_live(self._clock()):
            return None
        return record

    def _query(self, args: _Filters, query: str | None) -> MemorySearchQuery:
        return MemorySearchQuery(
            scope=self.view,
            scope_match=self.scope_match,
            query=query,
            kinds=tuple(args.kinds) if args.kinds is not None else None,
            tags=tuple(args.tags) if args.tags is not None else None,
            keys=tuple(args.keys) if args.keys is not None else None,
            key_match=args.key_match,
            agent=self.agent,
            limit=args.limit,
        )

    def _results(self, hits: list[Any]) -> dict[str, Any]:
        items = [project(hit.record, self.scope) for hit in hits]
        return bounded_results(items, self.policy.max_result_chars)

    # --- the tools -------------------------------------------------------------------

    def _memory_search(self, args: SearchArgs) -> _Steps:
        query = args.query.strip() if args.query and args.query.strip() else None
        hits = yield _Op("search", (self._query(args, query),))
        return self._results(hits)

    def _memory_list(self, args: ListArgs) -> _Steps:
        hits = yield _Op("search", (self._query(args, None),))
        return self._results(hits)

    def _memory_get(self, args: GetArgs) -> _Steps:
        record = self._visible((yield _Op("get", (args.id,))))
        if record is None:
            return not_found()
        item = project(record, self.scope, full=True)
        bounded = bounded_results([item], self.policy.max_result_chars)
        return {"ok": True, "memory": bounded["results"][0], "truncated": bounded["truncated"]}

    def _memory_invalidate(self, args: InvalidateArgs) -> _Steps:
        record = self._visible((yield _Op("get", (args.id,))))
        if record is None:
            return not_found()
        if record.scope != self.scope:
            return _not_writable()
        updated: MemoryRecord = yield _Op("invalidate", (args.id, args.reason))
        return {"ok": True, "invalidated": updated.id}

    def _memory_save(self, args: SaveArgs) -> _Steps:
        if args.supersedes is not None:
            old = self._visible((yield _Op("get", (args.supersedes,))))
            if old is None:
                return not_found()
            if old.scope != self.scope:
                return _not_writable()
        if args.target is not None:
            holder = yield from self._target_holder(args)
            if holder is not None:
                return self._conflict(holder, args)
        write = MemoryWriteInput(
            scope=self.scope,
            kind=args.kind,
            content=args.content,
            provenance=self.provenance,
            key=args.key,
            tags=tuple(args.tags),
            target=args.target,
            payload=args.payload,
            supersedes=args.supersedes,
        )
        [record] = yield _Op("write", ([write],))
        return {"ok": True, "saved": project(record, self.scope), "superseded": record.supersedes}

    def _target_holder(self, args: SaveArgs) -> Generator[_Op, Any, MemoryRecord | None]:
        limit = min(TARGET_SCAN_LIMIT, self.store.capabilities().max_limit)
        query = MemorySearchQuery(scope=self.scope, limit=limit, targeted=True)
        hits = yield _Op("search", (query,), quiet=True)
        for hit in hits:
            record: MemoryRecord = hit.record
            if record.scope == self.scope and record.target == args.target and record.id != args.supersedes:
                return record
        return None

    def _conflict(self, holder: MemoryRecord, args: SaveArgs) -> dict[str, Any]:
        existing: dict[str, Any] = {"id": holder.id}
        if self.policy.agent_reads:
            existing = project(holder, self.scope)
        return tool_error(
            "conflict",
            "A memory already holds this target; nothing was saved. Supersede it or choose another target.",
            existing=existing,
            resolutions=[
                {
                    "action": "supersede",
                    "how": f"call memory_save again with the same arguments and supersedes={holder.id!r}",
                },
                {"action": "rekey", "how": "call memory_save again with a different target (or none)"},
            ],
        )


def _not_writable() -> dict[str, Any]:
    return tool_error(
        "not_writable",
        "That memory is shared beyond this conversation and cannot be changed from here. Save a new memory instead.",
    )


def run_tool(toolbox: MemoryToolbox, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
    """:meth:`MemoryToolbox.call`, answered as the compact JSON string a tool result carries."""
    return dumps(toolbox.call(name, arguments))


async def arun_tool(toolbox: MemoryToolbox, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
    return dumps(await toolbox.acall(name, arguments))


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MEMORY_MANUAL",
    "NOT_FOUND_MESSAGE",
    "TOOL_NAMES",
    "TOOL_SOURCE",
    "GetArgs",
    "InvalidateArgs",
    "ListArgs",
    "MemoryPolicy",
    "MemoryToolbox",
    "SaveArgs",
    "SearchArgs",
    "anthropic_tools",
    "arun_tool",
    "bounded_results",
    "dumps",
    "input_schema",
    "memory_manual",
    "openai_tools",
    "project",
    "run_tool",
]
