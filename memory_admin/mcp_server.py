"""An MCP server over stdio exposing the six memory tools for one bound scope.

Start it with the scope the host derives for the user (the model never chooses it)::

    python -m memory_admin.mcp_server --store sqlite:///var/memory.sqlite3 \\
        --scope tenant=acme,user=dana --agent planner

Every option can come from the environment instead: ``MEMORY_STORE_URL``,
``MEMORY_SCOPE``, ``MEMORY_AGENT``, ``MEMORY_CONVERSATION_ID``, ``MEMORY_AGENT_READS``
(``0`` turns reads off), ``MEMORY_INCOGNITO`` (``1``), ``MEMORY_ENABLED`` (``0``) and
``MEMORY_MAX_RESULT_CHARS``. A command-line option wins over its variable.

The tools, their JSON schemas and their answers are exactly
:class:`~memory_admin.toolbox.MemoryToolbox`'s: a tool answer is one text block
holding the compact JSON, the same object as structured content, and ``isError`` when
``ok`` is false. The server's instructions are :func:`~memory_admin.toolbox.memory_manual`.
Logs go to standard error; standard output carries the protocol.

Needs the ``mcp`` extra: ``pip install 'memory-admin[mcp]'``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_admin import __version__
from memory_admin.errors import MemoryStoreError
from memory_admin.scope import parse_scope_text
from memory_admin.store import default_store_url, open_store
from memory_admin.toolbox import TOOL_NAMES, TOOL_SPECS, MemoryPolicy, MemoryToolbox, dumps, input_schema, memory_manual

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server

log = logging.getLogger("memory_admin.mcp_server")

SERVER_NAME = "memory-admin"


@dataclass(frozen=True)
class ServerConfig:
    store_url: str
    scope: dict[str, str]
    agent: str | None
    conversation_id: str | None
    policy: MemoryPolicy


def _flag(value: str | None, default: bool) -> bool:
    if value is None or not value.strip():
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def parse_config(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> ServerConfig:
    """The server's configuration from the command line, then the environment.

    Raises :class:`SystemExit` (argparse's usage error) for a missing or bad scope.
    """
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(
        prog="python -m memory_admin.mcp_server",
        description="Serve the memory tools for one scope over MCP (stdio).",
    )
    parser.add_argument("--store", default=env.get("MEMORY_STORE_URL"), help="store URL (env MEMORY_STORE_URL)")
    parser.add_argument(
        "--scope", default=env.get("MEMORY_SCOPE"), help="bound scope, e.g. tenant=acme,user=dana (env MEMORY_SCOPE)"
    )
    parser.add_argument("--agent", default=env.get("MEMORY_AGENT"), help="the agent's name (env MEMORY_AGENT)")
    parser.add_argument(
        "--conversation-id",
        default=env.get("MEMORY_CONVERSATION_ID"),
        help="recorded in every save's provenance (env MEMORY_CONVERSATION_ID)",
    )
    parser.add_argument(
        "--no-agent-reads",
        action="store_true",
        default=not _flag(env.get("MEMORY_AGENT_READS"), True),
        help="deny memory_search, memory_list and memory_get (env MEMORY_AGENT_READS=0)",
    )
    parser.add_argument(
        "--incognito",
        action="store_true",
        default=_flag(env.get("MEMORY_INCOGNITO"), False),
        help="deny every tool (env MEMORY_INCOGNITO=1)",
    )
    parser.add_argument(
        "--disabled",
        action="store_true",
        default=not _flag(env.get("MEMORY_ENABLED"), True),
        help="memory off: deny every tool (env MEMORY_ENABLED=0)",
    )
    parser.add_argument(
        "--max-result-chars",
        type=int,
        default=int(env.get("MEMORY_MAX_RESULT_CHARS") or MemoryPolicy().max_result_chars),
        help="cap on one tool answer, in characters (env MEMORY_MAX_RESULT_CHARS)",
    )
    options = parser.parse_args(argv)
    if not options.scope:
        parser.error("a scope is required: --scope tenant=acme,user=dana (or MEMORY_SCOPE)")
    try:
        scope = parse_scope_text(options.scope)
        policy = MemoryPolicy(
            enabled=not options.disabled,
            agent_reads=not options.no_agent_reads,
            incognito=options.incognito,
            max_result_chars=options.max_result_chars,
        )
    except (MemoryStoreError, ValueError) as exc:
        parser.error(str(getattr(exc, "message", exc)))
    return ServerConfig(
        store_url=options.store or default_store_url(),
        scope=scope,
        agent=options.agent or None,
        conversation_id=options.conversation_id or None,
        policy=policy,
    )


def build_server(toolbox: MemoryToolbox) -> Server[Any]:
    """An MCP server whose tools are ``toolbox``'s allowed tools."""
    import mcp_types as types
    from mcp.server.lowlevel.server import Server

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=TOOL_SPECS[name].description, input_schema=input_schema(name))
                for name in toolbox.allowed_tools()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # denied and unknown tools answer through the toolbox too: one error shape everywhere
        result = await toolbox.acall(params.name, dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=dumps(result))],
            structured_content=result,
            is_error=not result.get("ok", False),
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=memory_manual(),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(config: ServerConfig) -> None:
    """Open the store and serve the toolbox over stdin/stdout until the client leaves."""
    from mcp.server.stdio import stdio_server

    store = open_store(config.store_url)
    try:
        toolbox = MemoryToolbox(
            store,
            config.scope,
            agent=config.agent,
            conversation_id=config.conversation_id,
            policy=config.policy,
        )
        server = build_server(toolbox)
        log.info("serving %s for %s (agent %s)", ", ".join(TOOL_NAMES), config.scope, config.agent)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        store.close()


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    config = parse_config(argv)
    try:
        import anyio
        import mcp  # noqa: F401  (only to say which extra is missing)
    except ImportError:  # pragma: no cover - depends on the installed extras
        print("The MCP server needs the mcp extra: pip install 'memory-admin[mcp]'", file=sys.stderr)
        return 2
    try:
        anyio.run(serve, config)
    except MemoryStoreError as exc:
        print(f"memory_admin.mcp_server: {exc.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
