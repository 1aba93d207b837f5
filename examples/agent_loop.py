"""An agent host loop with memory, and no LLM: the model's turns are scripted.

Run it with ``python examples/agent_loop.py`` (a throwaway SQLite file) or point it at
a store: ``python examples/agent_loop.py --store sqlite:///var/memory.sqlite3``.

Conversation 1: the user introduces herself; the "model" saves what is worth keeping
through the toolbox, then corrects one fact by superseding it. Conversation 2, in a
new toolbox as a new process would build it: the host assembles the turn-1 recall
block from the first user message, and the answer comes from memory.

What a real host does differently is only the model call: hand ``toolbox.openai_tools()``
or ``toolbox.anthropic_tools()`` to the model with ``memory_manual()`` and the recall
block in the system prompt, and pass each tool call to ``toolbox.call(name, arguments)``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory_admin import open_store
from memory_admin.recall import RecallResult, assemble_recall
from memory_admin.scope import format_scope, parse_scope_text
from memory_admin.store import BaseMemoryStore
from memory_admin.toolbox import MemoryToolbox, dumps, memory_manual

ToolCall = tuple[str, dict[str, Any]]


@contextmanager
def opened_store(url: str | None) -> Iterator[BaseMemoryStore]:
    """The store at ``url``, or a SQLite file in a temporary directory removed afterwards."""
    if url is not None:
        with open_store(url) as store:
            yield store
        return
    with (
        tempfile.TemporaryDirectory(prefix="memory-example-") as folder,
        open_store(f"sqlite:///{Path(folder) / 'memory.sqlite3'}") as store,
    ):
        yield store


def say(who: str, text: str) -> None:
    print(f"  {who:>9}: {text}")


def host_turn(toolbox: MemoryToolbox, calls: list[ToolCall]) -> list[dict[str, Any]]:
    """What the host does with the model's tool calls: run each, hand the JSON back."""
    results = []
    for name, arguments in calls:
        # models send arguments as a JSON string; the toolbox takes either form
        result = toolbox.call(name, json.dumps(arguments))
        say("tool", f"{name}({json.dumps(arguments)}) -> {dumps(result)}")
        results.append(result)
    return results


def first_conversation(store: BaseMemoryStore, scope: dict[str, str], agent: str) -> None:
    print("\n=== Conversation 1 ===")
    first = "Hi! I'm Dana Reyes. I always fly with a window seat, and my coffee is espresso, no milk."
    recall = assemble_recall(store, scope, first, agent=agent)
    print(f"  recall block: {recall.block or '(empty: nothing remembered yet)'}")
    toolbox = MemoryToolbox(store, scope, agent=agent, conversation_id="conv-1")
    say("user", first)
    host_turn(
        toolbox,
        [
            ("memory_save", {"kind": "profile", "key": "name", "content": "The user is Dana Reyes."}),
            ("memory_save", {"kind": "preference", "key": "seat", "content": "Dana prefers a window seat."}),
            ("memory_save", {"kind": "preference", "key": "coffee", "content": "Dana takes espresso, no milk."}),
        ],
    )
    say("assistant", "Nice to meet you, Dana. Noted: window seat, espresso with no milk.")

    correction = "Actually, make that an aisle seat from now on; it's easier on my knee."
    say("user", correction)
    [found] = host_turn(toolbox, [("memory_search", {"query": "seat", "kinds": ["preference"]})])
    old_id = found["results"][0]["id"]
    host_turn(
        toolbox,
        [
            (
                "memory_save",
                {
                    "kind": "preference",
                    "key": "seat",
                    "content": "Dana prefers an aisle seat (easier on her knee).",
                    "supersedes": old_id,
                },
            ),
            # a model cannot widen its reach: an argument no tool defines is refused
            ("memory_search", {"query": "seat", "scope": {"tenant": "acme"}}),
        ],
    )
    say("assistant", "Updated: aisle seats from now on.")


def second_conversation(store: BaseMemoryStore, scope: dict[str, str], agent: str) -> RecallResult:
    print("\n=== Conversation 2 (a new session: nothing carried over but the store) ===")
    first = "Can you book my flight to Lisbon on Friday? Pick the seat I like."
    # the host assembles recall once the first message exists, before the first prompt
    recall = assemble_recall(store, scope, first, agent=agent)
    system_prompt = memory_manual() + "\n" + recall.block
    report = recall.report
    print(f"  system prompt: {len(system_prompt)} characters (manual + recall block)")
    print(
        f"  recall report: {report.count} memories, {report.chars}/{report.budget_chars} characters, "
        f"tiers {report.tiers}, truncated={report.truncated}, fallback={report.fallback}"
    )
    print(recall.block)
    say("user", first)
    # the scripted "model" reads its memory block, as a real one would
    seat = "aisle" if "aisle seat" in recall.block else "window" if "window seat" in recall.block else "any"
    name = "Dana" if "Dana Reyes" in recall.block else "there"
    say("assistant", f"Hi {name}! Booking Lisbon on Friday with an {seat} seat, as you prefer.")
    return recall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--store", help="store URL (default: a temporary SQLite file)")
    parser.add_argument("--scope", default="tenant=acme,user=dana", help="the user's memory scope")
    parser.add_argument("--agent", default="travel-assistant")
    options = parser.parse_args(argv)
    scope = parse_scope_text(options.scope)
    with opened_store(options.store) as store:
        print(f"store: {store.capabilities().backend}, scope: {format_scope(scope)}, agent: {options.agent}")
        first_conversation(store, scope, options.agent)
        recall = second_conversation(store, scope, options.agent)
    remembered = "aisle seat" in recall.block and "window seat" not in recall.block
    print("\nThe second conversation remembered the corrected seat." if remembered else "\nRecall missed it.")
    return 0 if remembered else 1


if __name__ == "__main__":
    sys.exit(main())
