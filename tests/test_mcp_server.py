"""The MCP server, end to end: spawned as a subprocess and driven by the SDK's own client."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from memory_admin.store import SqliteMemoryStore
from memory_admin.toolbox import TOOL_NAMES, TOOL_SOURCE, input_schema, memory_manual
from tests.support.optional import needs_extra

# the server and its client come with the mcp extra
pytest.importorskip("mcp", reason=needs_extra("mcp"))

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from memory_admin.mcp_server import parse_config

ROOT = Path(__file__).resolve().parents[1]
DANA = {"tenant": "acme", "user": "dana"}


def run_client(
    args: list[str], script: Callable[[ClientSession], Awaitable[Any]], env: dict[str, str] | None = None
) -> Any:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memory_admin.mcp_server", *args], env=env, cwd=str(ROOT)
    )

    async def main() -> Any:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                initialized = await session.initialize()
                return initialized, await script(session)

    return anyio.run(main)


def answer(result: Any) -> dict[str, Any]:
    """A tool result's JSON, checked to agree between text and structured content."""
    [block] = result.content
    parsed = json.loads(block.text)
    assert parsed == result.structured_content
    assert result.is_error is (not parsed["ok"])
    return parsed  # type: ignore[no-any-return]


def test_a_real_mcp_client_uses_the_five_tools(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    with SqliteMemoryStore(path) as store:
        bobs = store.write(
            [
                {
                    "scope": {"tenant": "acme", "user": "bob"},
                    "kind": "fact",
                    "content": "Bob likes window seats.",
                    "provenance": {"source": "host"},
                }
            ]
        )[0]

    async def script(session: ClientSession) -> dict[str, Any]:
        tools = await session.list_tools()
        saved = answer(await session.call_tool("memory_save", {"content": "Dana prefers window seats.", "key": "seat"}))
        found = answer(await session.call_tool("memory_search", {"query": "window seats"}))
        widened = answer(await session.call_tool("memory_search", {"query": "window", "scope": {"tenant": "acme"}}))
        foreign = answer(await session.call_tool("memory_get", {"id": bobs.id}))
        got = answer(await session.call_tool("memory_get", {"id": saved["saved"]["id"]}))
        retired = answer(await session.call_tool("memory_invalidate", {"id": saved["saved"]["id"], "reason": "test"}))
        listed = answer(await session.call_tool("memory_list", {}))
        return {
            "tools": tools.tools,
            "saved": saved,
            "found": found,
            "widened": widened,
            "foreign": foreign,
            "got": got,
            "retired": retired,
            "listed": listed,
        }

    args = [
        "--store",
        f"sqlite:///{path}",
        "--scope",
        "tenant=acme,user=dana",
        "--agent",
        "tester",
        "--conversation-id",
        "mcp-1",
    ]
    initialized, seen = run_client(args, script)

    assert initialized.instructions == memory_manual()
    assert [tool.name for tool in seen["tools"]] == list(TOOL_NAMES)
    assert all(tool.input_schema == input_schema(tool.name) for tool in seen["tools"])
    assert seen["saved"]["ok"] is True
    assert [item["content"] for item in seen["found"]["results"]] == ["Dana prefers window seats."]
    assert seen["widened"]["error"]["code"] == "invalid_arguments"
    assert seen["foreign"]["error"]["code"] == "not_found"
    assert seen["got"]["memory"]["provenance"] == {
        "source": TOOL_SOURCE,
        "author": "tester",
        "conversation_id": "mcp-1",
    }
    assert seen["retired"] == {"ok": True, "invalidated": seen["saved"]["saved"]["id"]}
    assert seen["listed"]["count"] == 0

    with SqliteMemoryStore(path) as store:
        record = store.get(seen["saved"]["saved"]["id"])
        assert record is not None and record.scope == DANA and record.invalid_reason == "test"


def test_configuration_from_the_environment_and_policy(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    env = {
        "MEMORY_STORE_URL": f"sqlite:///{path}",
        "MEMORY_SCOPE": "tenant=acme,user=dana",
        "MEMORY_AGENT": "env-agent",
        "MEMORY_AGENT_READS": "0",
    }

    async def script(session: ClientSession) -> dict[str, Any]:
        tools = await session.list_tools()
        saved = answer(await session.call_tool("memory_save", {"content": "Saved with reads off."}))
        denied = answer(await session.call_tool("memory_search", {"query": "saved"}))
        return {"tools": [tool.name for tool in tools.tools], "saved": saved, "denied": denied}

    _, seen = run_client([], script, env=env)
    assert seen["tools"] == ["memory_save", "memory_invalidate"]
    assert seen["saved"]["ok"] is True
    assert seen["denied"]["error"]["reason"] == "agent_reads_disabled"
    with SqliteMemoryStore(path) as store:
        record = store.get(seen["saved"]["saved"]["id"])
        assert record is not None and record.provenance.author == "env-agent" and record.scope == DANA


def test_command_line_wins_over_the_environment() -> None:
    env = {"MEMORY_SCOPE": "tenant=globex", "MEMORY_AGENT": "env", "MEMORY_INCOGNITO": "1"}
    config = parse_config(["--scope", "tenant=acme,user=dana", "--agent", "cli", "--store", "memory://"], env)
    assert (config.scope, config.agent, config.store_url) == (DANA, "cli", "memory://")
    assert config.policy.incognito is True and config.policy.agent_reads is True


@pytest.mark.parametrize(
    "argv", [[], ["--scope", "user=dana"], ["--scope", "tenant"]], ids=["none", "no-tenant", "bad"]
)
def test_a_missing_or_bad_scope_stops_the_server(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_config(argv, {})
    assert stopped.value.code == 2
