"""Memory for a pydantic-ai agent: a toolset with the memory tools bound to a scope,
whose instructions carry the memory manual and the turn-1 recall block.

::

    memory = AgentMemory(store, {"tenant": "acme", "user": "dana"}, agent="planner")
    agent = Agent("openai:gpt-5", instructions="You plan trips.", toolsets=[memory.toolset()])
    result = await agent.run("Book me a flight to Lisbon")

:class:`AgentMemory` is one conversation's memory, like the
:class:`~memory_admin.toolbox.MemoryToolbox` it wraps: the host binds the scope and no
tool takes one. The toolset's tools have the toolbox's JSON schemas and answer with its
JSON envelopes (a bad argument or a store error is an ``{"ok": false, …}`` answer the
model reads, never an exception into the run). Its instructions are the memory manual
and the recall block for the run's user prompt, assembled once (before the first model
request) and kept for the conversation. A policy that turns memory off leaves the
toolset empty and its instructions blank.

Needs the ``pydantic-ai`` extra: ``pip install 'memory-admin[pydantic-ai]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_admin.integrations import require_extra
from memory_admin.recall import RecallResult, aassemble_recall
from memory_admin.store.protocol import MemoryStore
from memory_admin.toolbox import TOOL_SPECS, MemoryPolicy, MemoryToolbox, input_schema, memory_manual

require_extra("pydantic_ai", "pydantic-ai", "memory_admin.integrations.pydantic_ai")

from pydantic_ai import RunContext, Tool  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402


def prompt_text(prompt: object) -> str | None:
    """The text of a run's user prompt (a string, or the text parts of a sequence)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list | tuple):
        parts = [part for part in prompt if isinstance(part, str)]
        return " ".join(parts) if parts else None
    return None


class AgentMemory:
    """One conversation's memory for a pydantic-ai agent, bound to ``scope``.

    ``agent``, ``conversation_id`` and ``policy`` are the toolbox's; ``recall`` holds
    keyword arguments for :func:`~memory_admin.recall.aassemble_recall`.
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
        """The conversation's turn-1 recall, once the first model request assembled it."""

    def tools(self) -> list[Tool[Any]]:
        """The tools the policy allows, with the toolbox's schemas."""
        return [self._tool(name) for name in self.toolbox.allowed_tools()]

    def _tool(self, name: str) -> Tool[Any]:
        async def run(**arguments: Any) -> dict[str, Any]:
            return await self.toolbox.acall(name, arguments)

        description = TOOL_SPECS[name].description
        return Tool.from_schema(run, name=name, description=description, json_schema=input_schema(name))

    def toolset(self) -> FunctionToolset[Any]:
        """The tools and their instructions (the manual and the recall block), as one toolset."""
        return FunctionToolset(self.tools(), instructions=self.instructions)

    async def recall(self, message: str | None) -> RecallResult:
        """The turn-1 recall block for ``message``: assembled on the first call, then kept."""
        if self.recalled is None:
            toolbox = self.toolbox
            self.recalled = await aassemble_recall(
                toolbox.store, toolbox.scope, message, agent=toolbox.agent, **self._recall_options
            )
        return self.recalled

    async def instructions(self, ctx: RunContext[Any]) -> str:
        """The memory manual and the recall block for the run's prompt."""
        policy = self.toolbox.policy
        if policy.denial("memory_save") is not None:
            return ""  # memory off or incognito: no tools to explain, nothing recalled
        block = (await self.recall(prompt_text(ctx.prompt))).block if policy.agent_reads else ""
        return "\n\n".join(part for part in (memory_manual(), block) if part)


__all__ = ["AgentMemory", "prompt_text"]
