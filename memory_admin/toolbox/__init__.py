"""The agent's memory tools: save, search, list, get, invalidate and learnings, bound to one scope.

:class:`MemoryToolbox` is built by the host for one conversation, with the scope the
host derives from who the conversation is for. The model never names a scope: no tool
takes one, and an argument the tool does not define (``scope`` included) is a
validation error, not silently dropped. What the model can reach:

* **writes** go to exactly the bound scope, with provenance filled in by the toolbox
  (source ``agent-toolbox``, the agent as author, the conversation id);
* **reads** use *visible* match: the bound scope's records, records shared above it
  (``{tenant}``), and — with ``agent`` — that agent's private records; never a
  sibling's (another user's) and never another agent's. This is the recall block's
  view too (:func:`memory_admin.scope.read_view`), so what an agent saves is what it
  recalls. Invalidated and expired records are invisible to the agent.

Every tool answers with a JSON-serialisable dict, ``{"ok": true, ...}`` or
``{"ok": false, "error": {"code": ..., "message": ...}}``; nothing raises into the
agent loop, store errors included. Read results are bounded: ``limit`` defaults to 5
and may not exceed 10, and the whole answer stays under the policy's character cap
(measured on compact JSON) with ``truncated``/``omitted`` saying what was cut.

``memory_get`` answers a missing, deleted, foreign-scope, invalidated or expired id
with one byte-identical not-found, so the agent learns nothing about records it may
not see. A second ``memory_save`` with the same target in the same scope returns a
conflict envelope instead of a duplicate: supersede the holder, corroborate it (this
conversation's provenance joins its ``supports``: recurrence evidence for promotion), or
choose another target. A learning a person approved into the agent's composition (the
guarded tier) is not the agent's to retire: ``memory_invalidate`` and a superseding save
answer ``needs_review``. ``memory_learnings`` lists what was promoted, demoted, sent for
review or rejected since a time, with content and provenance, bounded like every read.
Policy gates (memory disabled, incognito, agent reads disabled) deny
before any storage call. There is no delete tool: forgetting is a host operation.
"""

from __future__ import annotations

from memory_admin.toolbox.box import (
    MemoryToolbox,
    arun_tool,
    run_tool,
)
from memory_admin.toolbox.results import (
    bounded_results,
    dumps,
    project,
)
from memory_admin.toolbox.tools import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MEMORY_MANUAL,
    NOT_FOUND_MESSAGE,
    TOOL_NAMES,
    TOOL_SOURCE,
    TOOL_SPECS,
    GetArgs,
    InvalidateArgs,
    ListArgs,
    MemoryPolicy,
    SaveArgs,
    SearchArgs,
    anthropic_tools,
    input_schema,
    memory_manual,
    openai_tools,
)

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MEMORY_MANUAL",
    "NOT_FOUND_MESSAGE",
    "TOOL_NAMES",
    "TOOL_SOURCE",
    "TOOL_SPECS",
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
