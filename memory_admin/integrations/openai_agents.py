"""Memory for an OpenAI Agents SDK agent: the memory tools as function tools and the
turn-1 recall block as dynamic instructions.

::

    memory = AgentMemory(store, {"tenant": "acme", "user": "dana"}, agent="planner")
    agent = Agent(name="planner", instructions=memory.instructions("You plan trips."), tools=memory.tools())
    result = await Runner.run(agent, "Book me a flight to Lisbon")

:class:`AgentMemory` is one conversation's memory, like the
:class:`~memory_admin.toolbox.MemoryToolbox` it wraps: the scope is bound by the host,
no tool takes one. :meth:`AgentMemory.tools` are ``FunctionTool``\\ s with the toolbox's
strict schemas (:func:`~memory_admin.toolbox.input_schema` with ``strict=True``), which
pass the SDK's strict mode; a tool answers with the toolbox's JSON and never raises
into the run. :meth:`AgentMemory.instructions` is an instructions function: your
instructions, the memory manual, and the recall block for the conversation's first
user message, assembled once (at the first model call) and kept for the conversation.

Needs the ``openai-agents`` extra: ``pip install 'memory-admin[openai-agents]'``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from memory_admin.integrations import require_extra
from memory_admin.recall import RecallResult, aassemble_recall
from memory_admin.store.protocol import MemoryStore
from memory_admin.toolbox import TOOL_SPECS, MemoryPolicy, MemoryToolbox, dumps, input_schema, memory_manual

require_extra("agents", "openai-agents", "memory_admin.integrations.openai_agents")

from agents import Agent, FunctionTool, RunContextWrapper  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402

Instructions = Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]


def first_user_text(items: object) -> str | None:
    """The text of the first user message among an SDK run's input items (or of a
    plain string input)."""
    if isinstance(items, str):
        return items
    if not isinstance(items, list | tuple):
        return None
    for item in items:
        if not isinstance(item, Mapping) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            parts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
            if parts:
                return " ".join(str(part) for part in parts)
    return None


class AgentMemory:
    """One conversation's memory for an OpenAI Agents SDK agent, bound to ``scope``.

    ``agent``, ``conversation_id`` and ``policy`` are the toolbox's
    (:class:`~memory_admin.toolbox.MemoryToolbox`); ``recall`` holds keyword arguments
    for :func:`~memory_admin.recall.aassemble_recall` (``budget_chars``, ``max_hits`` …).
    """

    def __init__(
        self,
        store: MemoryStore,
        scope: Mapping[str, str],
        *,
        agent: str | None = None,
        conversation_id: str | None = None,
        policy: MemoryPolicy | None = None,
        recall: Mapping[str, Any] | None = None,
    ) -> None:
        self.toolbox = MemoryToolbox(store, scope, agent=agent, conversation_id=conversation_id, policy=policy)
        self._recall_options = dict(recall or {})
        self.recalled: RecallResult | None = None
        """The conversation's turn-1 recall, once the first model call assembled it."""

    def tools(self) -> list[FunctionTool]:
        """The tools the policy allows, as strict function tools."""
        return [self._tool(name) for name in self.toolbox.allowed_tools()]

    def _tool(self, name: str) -> FunctionTool:
        async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
            return dumps(await self.toolbox.acall(name, arguments))

        return FunctionTool(
            name=name,
            description=TOOL_SPECS[name].description,
            params_json_schema=input_schema(name, strict=True),
            on_invoke_tool=invoke,
            strict_json_schema=True,
        )

    async def recall(self, message: str | None) -> RecallResult:
        """The turn-1 recall block for ``message``: assembled on the first call, then kept."""
        if self.recalled is None:
            toolbox = self.toolbox
            self.recalled = await aassemble_recall(
                toolbox.store, toolbox.scope, message, agent=toolbox.agent, **self._recall_options
            )
        return self.recalled

    def instructions(self, base: str = "") -> Instructions:
        """An instructions function: ``base``, the memory manual and the recall block."""

        async def instructions(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            policy = self.toolbox.policy
            if policy.denial("memory_save") is not None:
                return base  # memory off or incognito: no tools to explain, nothing recalled
            block = ""
            if policy.agent_reads:
                block = (await self.recall(first_user_text(ctx.turn_input))).block
            return "\n\n".join(part for part in (base, memory_manual(), block) if part)

        return instructions


__all__ = ["AgentMemory", "first_user_text"]
