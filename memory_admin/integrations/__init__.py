"""memory_admin inside the agent frameworks developers build on.

One module per framework, each behind its own extra, none imported by
``import memory_admin``:

* :mod:`memory_admin.integrations.langgraph` — :class:`MemoryAdminStore`, a LangGraph
  ``BaseStore`` (extra ``langgraph``): put supersedes, delete invalidates, the tenant
  never comes from the namespace;
* :mod:`memory_admin.integrations.pydantic_ai` — the memory tools as a pydantic-ai
  toolset and the turn-1 recall block as instructions (extra ``pydantic-ai``);
* :mod:`memory_admin.integrations.openai_agents` — the memory tools as OpenAI Agents SDK
  function tools that pass its strict mode, recall as dynamic instructions (extra
  ``openai-agents``).

See docs/integrations.md.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def require_extra(module: str, extra: str, integration: str) -> ModuleType:
    """Import a framework an integration is built on, or say which extra brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"{integration} needs the {extra} extra: pip install 'memory-admin[{extra}]' ({exc})",
            name=exc.name or module,
        ) from exc
